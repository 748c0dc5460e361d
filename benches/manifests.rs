//! `kopgen manifests` speed, against the parse floor and the kube-rs path.
//!
//! Run: `cargo bench --bench manifests`. It reports, for synthetic projects of 10 to 500 kinds
//! (20 structs each, so 500 kinds = 10,000 structs) and for the parity fixture corpus:
//! - `manifests`: wall time of what `kopgen manifests` does but writing (read, parse, derive, lint, serialize);
//! - `parse floor`: reading the same files and `syn::parse_file` on each;
//! - per struct: manifests time / structs, which should stay flat as projects grow;
//! - the same as processes, start to exit: the `kopgen` binary (`manifests --stdout`) against
//!   this bench binary reading and parsing the files, so process start and the cost of touching
//!   fresh memory count on both sides;
//! - where the time goes, stage by stage (discover, parse, schemas, render);
//! - use-resolution through 0 to 20 glob imports that do not hold the names a kind uses (three
//!   made it exponential once): the time should grow about linearly with the globs.
//!
//! With `KOPGEN_BENCH_KUBE=1` it also measures the kube-rs path on the fixture corpus:
//! change one field, rebuild the crdgen harness (kube-derive) incrementally and run it.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

#[path = "manifests/kube_path.rs"]
mod kube_path;

use kube_path::{
    after_field_changes, cargo_run, kube_path, kube_path_operator, kube_path_synthetic,
    print_speedup, union_harness,
};

/// The allocator the `kopgen` binary runs on, so that in-process figures and the floor process
/// compare with it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub(crate) fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// What `kopgen manifests` does (read, parse, derive, lint, serialize), without writing.
pub(crate) fn manifests(paths: &[PathBuf]) -> usize {
    let sources = kopgen::manifests::discover::sources(paths).expect("sources");
    let options = kopgen::manifests::Options {
        lint: true,
        ..Default::default()
    };
    kopgen::manifests::generate_with(&sources, &options)
        .expect("manifests")
        .outputs
        .len()
}

/// Median wall time of `f`, each run on a fresh thread: proc-macro2 keeps every parsed file's
/// text in a thread-local source map for the thread's life, which a `kopgen` process (one run
/// per process) never accumulates; reusing one thread would measure that growth too.
pub(crate) fn time<T: Send>(runs: usize, f: impl Fn() -> T + Sync) -> Duration {
    let _warm = time_once(&f);
    median((0..runs).map(|_| time_once(&f)).collect())
}

/// A crate with `kinds` custom resources, each a spec with 19 nested structs.
fn synthetic(root: &Path, kinds: usize) -> usize {
    let src = root.join("src");
    std::fs::create_dir_all(src.join("kinds")).expect("mkdir");
    let mut lib = String::from("pub mod kinds;\n");
    let mut mods = String::new();
    let mut structs = 0;
    for k in 0..kinds {
        let mut file = String::from(
            "use kube::CustomResource;\nuse schemars::JsonSchema;\nuse serde::{Deserialize, Serialize};\n\
             use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;\n\n",
        );
        for s in 0..19 {
            let next = if s < 18 {
                format!("    pub next: Option<Part{}>,\n", s + 1)
            } else {
                String::new()
            };
            file.push_str(&format!(
                "/// Part {s} of kind {k}.\n#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]\n\
                 #[serde(rename_all = \"camelCase\")]\npub struct Part{s} {{\n    /// A name.\n    pub name: String,\n\
                 \x20   pub replica_count: Option<i32>,\n    pub labels: std::collections::BTreeMap<String, String>,\n\
                 \x20   pub tags: Vec<String>,\n{next}}}\n\n"
            ));
            structs += 1;
        }
        file.push_str(&format!(
            "/// Kind {k}.\n#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n\
             #[kube(group = \"bench.example.com\", version = \"v1\", kind = \"Kind{k}\", namespaced, status = \"Kind{k}Status\")]\n\
             pub struct Kind{k}Spec {{\n    pub root: Part0,\n    #[serde(default)]\n    pub size: i32,\n}}\n\n\
             #[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]\npub struct Kind{k}Status {{\n    pub conditions: Vec<Condition>,\n}}\n"
        ));
        structs += 2;
        std::fs::write(src.join(format!("kinds/kind{k}.rs")), file).expect("write");
        mods.push_str(&format!("pub mod kind{k};\n"));
    }
    std::fs::write(src.join("lib.rs"), lib.split_off(0)).expect("write");
    std::fs::write(src.join("kinds/mod.rs"), mods).expect("write");
    structs
}

/// Modules of k8s-openapi a crate may glob-import, as real operators do (`use ..::core::v1::*;`).
const GLOB_GROUPS: [&str; 20] = [
    "core::v1",
    "apps::v1",
    "batch::v1",
    "networking::v1",
    "rbac::v1",
    "policy::v1",
    "storage::v1",
    "autoscaling::v2",
    "autoscaling::v1",
    "coordination::v1",
    "discovery::v1",
    "events::v1",
    "node::v1",
    "scheduling::v1",
    "certificates::v1",
    "admissionregistration::v1",
    "authentication::v1",
    "authorization::v1",
    "flowcontrol::v1",
    "apiserverinternal::v1alpha1",
];

/// A crate whose one kind names two Kubernetes types through `globs` glob imports (and two local
/// modules that glob-re-export each other), so every name is looked up through every glob.
fn globs(root: &Path, globs: usize) {
    let src = root.join("src");
    std::fs::create_dir_all(&src).expect("mkdir");
    let uses: String = GLOB_GROUPS[..globs]
        .iter()
        .map(|group| format!("use k8s_openapi::api::{group}::*;\n"))
        .collect();
    let named = if globs == 0 {
        "use k8s_openapi::api::core::v1::{LocalObjectReference, ServicePort};\n"
    } else {
        ""
    };
    std::fs::write(
        src.join("lib.rs"),
        format!(
            "use kube::CustomResource;\nuse schemars::JsonSchema;\nuse serde::{{Deserialize, Serialize}};\n\
             {uses}{named}pub mod a {{ pub use super::b::*; }}\npub mod b {{ pub use super::a::*; }}\nuse a::*;\n\
             #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n\
             #[kube(group = \"bench.example.com\", version = \"v1\", kind = \"App\", namespaced)]\n\
             pub struct AppSpec {{ pub target: Option<LocalObjectReference>, pub port: Option<ServicePort> }}\n"
        ),
    )
    .expect("write");
}

/// One run of `f` on a fresh thread (see [`time`]).
fn time_once<T: Send>(f: impl Fn() -> T + Sync) -> Duration {
    std::thread::scope(|s| {
        s.spawn(|| {
            let start = Instant::now();
            std::hint::black_box(f());
            start.elapsed()
        })
        .join()
        .expect("bench thread")
    })
}

pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        .map(|e| e.into_path())
        .collect()
}

/// How many structs the sources under `dir` declare (at least 1), for the cost per struct.
fn structs_in(dir: &Path) -> usize {
    rust_files(dir)
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .matches("pub struct")
                .count()
        })
        .sum::<usize>()
        .max(1)
}

fn parse_floor(dir: &Path) -> usize {
    rust_files(dir)
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).expect("read");
            syn::parse_file(&text)
                .map(|file| file.items.len())
                .unwrap_or(0)
        })
        .sum()
}

fn report(label: &str, dir: &Path, structs: usize, runs: usize) -> Duration {
    let paths = vec![dir.to_path_buf()];
    let manifests = time(runs, || manifests(&paths));
    let floor = time(runs, || parse_floor(dir));
    println!(
        "{label:<28} manifests {:>9.2} ms   parse floor {:>8.2} ms   ratio {:>5.2}x   per struct {:>6.1} µs",
        manifests.as_secs_f64() * 1e3,
        floor.as_secs_f64() * 1e3,
        manifests.as_secs_f64() / floor.as_secs_f64(),
        manifests.as_secs_f64() * 1e6 / structs as f64
    );
    manifests
}

/// Median wall time of `runs` fresh processes, each running `command` to its exit: what a
/// user or CI job waits for, with process start and first-touched memory included.
fn time_processes(runs: usize, mut command: impl FnMut() -> Command) -> Duration {
    let mut once = || {
        let mut command = command();
        command.stderr(std::process::Stdio::null());
        run_to_exit(command)
    };
    let _warm = once();
    median((0..runs).map(|_| once()).collect())
}

/// Wall time of `command` from start to exit, its output discarded; it must succeed.
pub(crate) fn run_to_exit(mut command: Command) -> Duration {
    let start = Instant::now();
    let status = command
        .stdout(std::process::Stdio::null())
        .status()
        .expect("process starts");
    let elapsed = start.elapsed();
    assert!(status.success(), "{command:?}: {status}");
    elapsed
}

/// The `kopgen` binary's `manifests --stdout` on `dir`, against this bench binary run as a
/// process that only reads and parses the same files (same allocator, similar size).
fn report_processes(label: &str, dir: &Path, runs: usize) -> Duration {
    let kopgen = time_processes(runs, || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kopgen"));
        command
            .args(["manifests", "--stdout", "--lint", "warn", "--paths"])
            .arg(dir);
        command
    });
    let floor = time_processes(runs, || {
        let mut command = Command::new(std::env::current_exe().expect("bench binary"));
        command.env(FLOOR_CHILD, dir);
        command
    });
    println!(
        "{label:<28} kopgen    {:>9.2} ms   floor process {:>6.2} ms   ratio {:>5.2}x   (processes, start to exit)",
        kopgen.as_secs_f64() * 1e3,
        floor.as_secs_f64() * 1e3,
        kopgen.as_secs_f64() / floor.as_secs_f64(),
    );
    kopgen
}

/// Where the time of one run goes, stage by stage: finding and reading the files; parsing and
/// indexing them and finding the kinds; building every version's schema (on the parsing
/// thread: syn's spans live there); rendering the CRDs (transforms, merge, lint, YAML, on
/// every core), and of it the YAML writing alone; the rest (locating findings, sorting) is
/// what the whole run takes beyond these.
fn report_stages(label: &str, dir: &Path, runs: usize) {
    use kopgen::manifests::{cfg::Cfg, derive, discover, impls, index::Index, kinds, schema};
    let paths = vec![dir.to_path_buf()];
    let discover_time = time(runs, || discover::sources(&paths).expect("sources").len());
    let sources = discover::sources(&paths).expect("sources");
    let schemas_of = |build: bool| {
        let mut index = Index::build(&sources, Cfg::default()).expect("index");
        impls::link(&mut index);
        let kinds = kinds::find(&index).expect("kinds");
        if !build {
            return Vec::new();
        }
        let mut builder = schema::Builder::new(&index);
        kinds
            .iter()
            .map(|kind| derive::schemas(&index, kind, &mut builder))
            .collect()
    };
    let parse_time = time(runs, || schemas_of(false).len());
    let schemas_time = time(runs, || schemas_of(true).len()).saturating_sub(parse_time);
    let schemas: Vec<derive::Schemas> =
        std::thread::scope(|s| s.spawn(|| schemas_of(true)).join().expect("schemas"));
    let options = kopgen::manifests::Options {
        lint: true,
        ..Default::default()
    };
    let clone_time = time(runs, || schemas.clone().len());
    let render_time = time(runs, || {
        derive::render_all(schemas.clone(), &options, 256 << 20).len()
    })
    .saturating_sub(clone_time);
    let crds: Vec<CustomResourceDefinition> = kopgen::manifests::generate_with(&sources, &options)
        .expect("manifests")
        .outputs
        .iter()
        .map(|o| serde_yaml::from_str(&o.contents).expect("YAML"))
        .collect();
    let yaml_time = time(runs, || {
        crds.iter()
            .map(|crd| kopgen::yaml::to_string(crd).expect("YAML").len())
            .sum::<usize>()
    });
    let total = time(runs, || manifests(&paths));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let rest = total.saturating_sub(discover_time + parse_time + schemas_time + render_time);
    println!(
        "{label:<28} stages: discover+read {:.2} ms, parse+index {:.2} ms, schemas {:.2} ms, \
         render {:.2} ms on {} threads (YAML alone, one thread: {:.2} ms), rest {:.2} ms; total {:.2} ms",
        ms(discover_time),
        ms(parse_time),
        ms(schemas_time),
        ms(render_time),
        rayon::current_num_threads(),
        ms(yaml_time),
        ms(rest),
        ms(total),
    );
}

/// Set to a directory, this bench binary only reads and parses its files, and exits.
const FLOOR_CHILD: &str = "KOPGEN_BENCH_FLOOR_CHILD";

fn main() {
    if let Some(dir) = std::env::var_os(FLOOR_CHILD) {
        std::hint::black_box(parse_floor(Path::new(&dir)));
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run small then.
    let quick = !std::env::args().any(|a| a == "--bench");
    let scratch = tempfile::tempdir().expect("tempdir");
    // `KOPGEN_BENCH_DIR` keeps the synthetic projects there, for profiling `kopgen manifests` on them.
    let scratch_root = std::env::var_os("KOPGEN_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| scratch.path().to_path_buf());
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crds");
    let corpus = report(
        "fixture corpus",
        &fixtures,
        structs_in(&fixtures),
        if quick { 1 } else { 20 },
    );
    let corpus_process = report_processes("fixture corpus", &fixtures, if quick { 1 } else { 20 });
    report_stages("fixture corpus", &fixtures, if quick { 1 } else { 20 });
    // The fixture corpus beside the kopium round trips of the real-world CRDs, as the parity
    // tests leave them in their harnesses (`cargo test --test parity` first).
    let union = union_harness();
    let union_time = union.as_ref().map(|dir| {
        let src = dir.join("src/fixtures");
        let time = report(
            "corpus + kopium round trips",
            &src,
            structs_in(&src),
            if quick { 1 } else { 20 },
        );
        let process = report_processes("corpus + kopium", &src, if quick { 1 } else { 20 });
        report_stages("corpus + kopium", &src, if quick { 1 } else { 20 });
        (time, process)
    });
    let sizes: &[usize] = if quick { &[10] } else { &[10, 50, 100, 500] };
    for &kinds in sizes {
        let dir = scratch_root.join(format!("k{kinds}"));
        let structs = synthetic(&dir, kinds);
        let runs = if kinds >= 500 { 5 } else { 10 };
        report(
            &format!("{kinds} kinds / {structs} structs"),
            &dir.join("src"),
            structs,
            if quick { 1 } else { runs },
        );
        report_processes(
            &format!("{kinds} kinds"),
            &dir.join("src"),
            if quick { 1 } else { runs },
        );
    }
    let glob_counts: &[usize] = if quick { &[3] } else { &[0, 1, 3, 10, 20] };
    for &count in glob_counts {
        let dir = scratch_root.join(format!("globs{count}"));
        globs(&dir, count);
        let paths = vec![dir.join("src")];
        let took = time(if quick { 1 } else { 20 }, || manifests(&paths));
        println!(
            "{:<28} manifests {:>9.2} ms",
            format!("{count} glob imports"),
            took.as_secs_f64() * 1e3
        );
    }
    if std::env::var_os("KOPGEN_BENCH_KUBE").is_some() {
        kube_path(corpus, corpus_process);
        if let (Some(dir), Some((time, process))) = (&union, union_time) {
            let kube = after_field_changes(
                &dir.join("src/fixtures/basic.rs"),
                "pub foo: Option<String>,",
                3,
                || cargo_run(dir, &[]),
            );
            print_speedup("corpus + kopium round trips, in process", kube, time);
            print_speedup(
                "corpus + kopium round trips, kopgen as a process",
                kube,
                process,
            );
        }
        kube_path_operator(&scratch_root);
        if !quick {
            let kinds = 500;
            let dir = scratch_root.join(format!("k{kinds}"));
            let paths = vec![dir.join("src")];
            let ours = time(3, || manifests(&paths));
            kube_path_synthetic(&dir, kinds, ours);
        }
    }
}
