//! The kube-rs path the manifests bench compares with: change one field, rebuild a crdgen
//! harness (kube-derive) incrementally and run it, in a scaffolded operator, a synthetic
//! project and the parity fixture corpus.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::{manifests, median, run_to_exit, rust_files, time};

/// Median of `measure` over `samples` runs, each after a different field is added after
/// `anchor` in `file`, so that every run sees a changed file; `file` is restored afterwards.
pub(crate) fn after_field_changes(
    file: &Path,
    anchor: &str,
    samples: usize,
    mut measure: impl FnMut() -> Duration,
) -> Duration {
    let original = std::fs::read_to_string(file).expect("read");
    assert!(
        original.contains(anchor),
        "{} has no `{anchor}`",
        file.display()
    );
    let mut times = Vec::new();
    for i in 0..samples {
        let changed = original.replacen(anchor, &format!("{anchor}\n    pub edit{i}: i32,"), 1);
        std::fs::write(file, changed).expect("write");
        times.push(measure());
    }
    std::fs::write(file, original).expect("restore");
    median(times)
}

/// One line comparing the kube-rs path with kopgen.
pub(crate) fn print_speedup(label: &str, kube: Duration, kopgen: Duration) {
    println!(
        "kube-rs path, {label} (incremental rebuild + run of crdgen after one field change) {:.2} s; \
         kopgen {:.2} ms ({:.0}x)",
        kube.as_secs_f64(),
        kopgen.as_secs_f64() * 1e3,
        kube.as_secs_f64() / kopgen.as_secs_f64(),
    );
}

/// The kube-rs path in an operator as `kopgen init` and `create api` scaffold it (controllers,
/// manager, metrics: what a real operator compiles): a crdgen example printing `Blog::crd()`,
/// rebuilt incrementally and run after one field of `BlogSpec` changes.
pub(crate) fn kube_path_operator(scratch: &Path) {
    let project = scratch.join("blog-operator");
    let _ = std::fs::remove_dir_all(&project);
    let kopgen = env!("CARGO_BIN_EXE_kopgen");
    for args in [
        vec!["init", "--domain", "example.com", "--path"],
        vec![
            "create",
            "api",
            "--group",
            "apps",
            "--version",
            "v1alpha1",
            "--kind",
            "Blog",
            "--path",
        ],
    ] {
        let status = Command::new(kopgen)
            .args(&args)
            .arg(&project)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("kopgen");
        assert!(status.success());
    }
    std::fs::create_dir_all(project.join("examples")).expect("mkdir");
    std::fs::write(
        project.join("examples/crdgen.rs"),
        "use kube::CustomResourceExt;\n\nfn main() {\n    print!(\"{}\", serde_yaml::to_string(&blog_operator::api::apps::v1alpha1::Blog::crd()).unwrap());\n}\n",
    )
    .expect("write");
    let types = project.join("src/api/apps/v1alpha1/blog.rs");
    let anchor = "pub foo: Option<String>,";
    let run = || cargo_run(&project, &["--example", "crdgen"]);
    let _cold = run();
    let kube = after_field_changes(&types, anchor, 3, run);
    let paths = vec![project.join("src")];
    let ours = time(20, || manifests(&paths));
    print_speedup("scaffolded operator", kube, ours);
}

/// The kube-rs path on the synthetic project: a crdgen binary over its 500 kinds, rebuilt
/// incrementally after one field changes (the first, cold build is not timed).
pub(crate) fn kube_path_synthetic(dir: &Path, kinds: usize, kopgen_time: Duration) {
    let harness = dir.with_file_name(format!("crdgen-k{kinds}"));
    std::fs::create_dir_all(&harness).expect("mkdir");
    std::fs::write(
        harness.join("Cargo.toml"),
        format!(
            "[package]\nname = \"bench-synthetic\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
             [lib]\npath = \"{}\"\n\n[[bin]]\nname = \"crdgen\"\npath = \"main.rs\"\n\n[dependencies]\n\
             k8s-openapi = {{ version = \"0.29\", features = [\"latest\", \"schemars\"] }}\n\
             kube = {{ version = \"5\", default-features = false, features = [\"derive\"] }}\n\
             schemars = \"1\"\nserde = {{ version = \"1\", features = [\"derive\"] }}\nserde_json = \"1\"\nserde_yaml = \"0.9\"\n",
            dir.join("src/lib.rs").display()
        ),
    )
    .expect("write");
    let mut main = String::from("use kube::CustomResourceExt;\n\nfn main() {\n");
    for k in 0..kinds {
        main.push_str(&format!(
            "    print!(\"{{}}\", serde_yaml::to_string(&bench_synthetic::kinds::kind{k}::Kind{k}::crd()).unwrap());\n"
        ));
    }
    main.push_str("}\n");
    std::fs::write(harness.join("main.rs"), main).expect("write");
    let run = || cargo_run(&harness, &["--bin", "crdgen"]);
    let cold = run();
    println!(
        "kube-rs path, {kinds} kinds: cold build + run {:.1} s",
        cold.as_secs_f64()
    );
    let file = dir.join("src/kinds/kind0.rs");
    let kube = after_field_changes(&file, "pub tags: Vec<String>,", 1, run);
    print_speedup(&format!("{kinds} kinds"), kube, kopgen_time);
}

/// The cargo target directory kopgen's tests share with generated projects.
fn shared_target() -> PathBuf {
    std::env::var_os("KOPGEN_TEST_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/kopgen/target")
        })
}

/// Wall time of `cargo run --quiet <args>` in `dir` (an incremental rebuild, then the run).
pub(crate) fn cargo_run(dir: &Path, args: &[&str]) -> Duration {
    let mut command = Command::new("cargo");
    command
        .args(["run", "--quiet"])
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", shared_target());
    run_to_exit(command)
}

/// The kube-rs path: after one field changes, rebuild the crdgen harness and run it.
pub(crate) fn kube_path(kopgen_time: Duration, kopgen_process: Duration) {
    let target = shared_target();
    let harness = target.with_file_name("parity-harness");
    if !harness.join("Cargo.toml").exists() {
        println!("kube-rs path: run `cargo test --test parity` first to create the harness");
        return;
    }
    let file = harness.join("src/fixtures/basic.rs");
    let kube = after_field_changes(&file, "pub foo: Option<String>,", 3, || {
        cargo_run(&harness, &[])
    });
    print_speedup("fixture corpus, in process", kube, kopgen_time);
    print_speedup("fixture corpus, kopgen as a process", kube, kopgen_process);
}

/// A crate of the parity harnesses' sources together (the fixture corpus and the kopium round
/// trips of `../shared/corpus/crds/`), printing every `crd()`: the kube-rs path's crdgen for
/// both. `None` (with a notice) until `cargo test --test parity` has made the harnesses.
pub(crate) fn union_harness() -> Option<PathBuf> {
    let target = shared_target();
    let parts = ["parity-harness", "realworld-harness"].map(|h| target.with_file_name(h));
    if parts.iter().any(|h| !h.join("src/fixtures").is_dir()) {
        println!(
            "corpus + kopium round trips: run `cargo test --test parity` (with kopium installed) first"
        );
        return None;
    }
    let union = target.with_file_name("bench-union-harness");
    let fixtures = union.join("src/fixtures");
    std::fs::create_dir_all(&fixtures).expect("mkdir");
    let mut mods = String::new();
    let mut calls = String::new();
    for part in &parts {
        for file in rust_files(&part.join("src/fixtures")) {
            let name = file
                .file_stem()
                .expect("stem")
                .to_string_lossy()
                .into_owned();
            let target_file = fixtures.join(format!("{name}.rs"));
            let text = std::fs::read_to_string(&file).expect("read");
            if std::fs::read_to_string(&target_file).ok().as_deref() != Some(text.as_str()) {
                std::fs::write(&target_file, text).expect("write");
            }
            mods.push_str(&format!("pub mod {name};\n"));
            calls.push_str(&format!("    fixtures::{name}::kopgen_print_crds();\n"));
        }
    }
    let manifest = std::fs::read_to_string(parts[0].join("Cargo.toml"))
        .expect("harness manifest")
        .replace("kopgen-parity-harness", "kopgen-bench-union-harness");
    std::fs::write(union.join("Cargo.toml"), manifest).expect("write");
    std::fs::write(union.join("src/fixtures.rs"), mods).expect("write");
    std::fs::write(
        union.join("src/main.rs"),
        format!("#![allow(dead_code, unused_imports)]\nmod fixtures;\n\nfn main() {{\n{calls}}}\n"),
    )
    .expect("write");
    Some(union)
}
