//! How long scaffolding takes (goal: under 50 ms each for `init` and `create api`).
//!
//! Each iteration renders the whole change in memory and writes it to a fresh directory,
//! exactly what the CLI does; building the generated project with cargo is not counted.
//! Run: `cargo bench --bench scaffold`.

use std::path::PathBuf;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use kopgen::scaffold::{
    api::{self, ApiOptions},
    init::{self, InitOptions, License},
};

fn init_options(path: PathBuf) -> InitOptions {
    InitOptions {
        path,
        domain: "example.com".into(),
        project_name: Some("bench-operator".into()),
        owner: None,
        license: License::Apache2,
        namespaced: false,
        force: false,
    }
}

fn api_options(path: PathBuf) -> ApiOptions {
    ApiOptions {
        path,
        group: "apps".into(),
        version: "v1alpha1".into(),
        kind: "Blog".into(),
        plural: None,
        namespaced: true,
        resource: true,
        controller: true,
        finalizer: false,
        force: false,
    }
}

fn scaffold(c: &mut Criterion) {
    c.bench_function("kopgen init", |b| {
        b.iter_batched(
            || tempfile::tempdir().expect("tempdir"),
            |dir| {
                let changes = init::plan(&init_options(dir.path().join("op"))).expect("plan");
                changes.write().expect("write");
                dir
            },
            BatchSize::PerIteration,
        )
    });
    c.bench_function("kopgen create api", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().expect("tempdir");
                init::plan(&init_options(dir.path().to_path_buf()))
                    .expect("plan")
                    .write()
                    .expect("write");
                dir
            },
            |dir| {
                let changes = api::plan(&api_options(dir.path().to_path_buf())).expect("plan");
                changes.write().expect("write");
                dir
            },
            BatchSize::PerIteration,
        )
    });
}

criterion_group!(benches, scaffold);
criterion_main!(benches);
