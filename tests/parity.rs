//! `kopgen manifests` against kube-derive: every fixture under `tests/fixtures/crds/` is
//! compiled with kube-derive into a harness binary that prints `crd()` (merged across
//! versions with `merge_crds`, as kopgen does), and each CRD must equal kopgen's output byte
//! for byte (after kopgen's one header line).
//!
//! The harness is a cargo project next to the shared target directory, so only the fixtures
//! recompile between runs.

mod support;

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    path::{Path, PathBuf},
};

use kopgen::manifests::{self, HEADER};
use support::scan;

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crds");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    files
}

fn module_name(path: &Path) -> String {
    path.file_stem()
        .expect("stem")
        .to_string_lossy()
        .replace('-', "_")
}

fn write_if_changed(path: &Path, contents: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(contents) {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, contents).expect("write");
    }
}

/// The harness's manifest: the crates whose `crd()` kopgen reproduces pinned to exactly the
/// versions kopgen is built with, so a new release cannot move the ground truth under the
/// test; the rest is what the fixtures use.
fn harness_toml(name: &str) -> String {
    // Exactly the versions kopgen is built with (kube and kube-derive move with kube-core).
    let lock = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock"))
        .expect("kopgen's Cargo.lock");
    let pin = |krate: &str| {
        let krate = if krate == "kube-derive" {
            "kube-core"
        } else {
            krate
        };
        let entry = lock
            .split("[[package]]")
            .find(|p| p.contains(&format!("name = \"{krate}\"\n")))
            .unwrap_or_else(|| panic!("{krate} in Cargo.lock"));
        let version = entry
            .lines()
            .find_map(|l| l.strip_prefix("version = \""))
            .and_then(|v| v.strip_suffix('"'))
            .expect("version");
        // The YAML writer is pinned too: kopgen's CRDs are its bytes.
        if let Some((_, reproduced)) = manifests::versions::REPRODUCED
            .iter()
            .find(|(k, _)| *k == krate)
        {
            assert!(version.starts_with(reproduced), "{krate} {version}");
        }
        format!("={version}")
    };
    format!(
        r#"[package]
name = "{name}"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
k8s-openapi = {{ version = "{}", features = ["latest", "schemars"] }}
kube = {{ version = "{}", default-features = false, features = ["derive", "cel"] }}
kube-derive = "{}"
kube-core = "{}"
schemars = {{ version = "{}", features = ["chrono04", "jiff02"] }}
chrono = {{ version = "0.4", features = ["serde"] }}
garde = {{ version = "0.23", features = ["derive", "email", "url", "regex"] }}
validator = {{ version = "0.21", features = ["derive"] }}
regex = "1"
jiff = {{ version = "0.2", features = ["serde"] }}
serde = {{ version = "1", features = ["derive", "rc"] }}
serde_json = "1"
serde_yaml = "0.9"
serde-saphyr = "{}"
assert-json-diff = "2"
"#,
        pin("k8s-openapi"),
        pin("kube-core"),
        pin("kube-derive"),
        pin("kube-core"),
        pin("schemars"),
        pin("serde-saphyr"),
    )
}

/// Kinds by (case, group, kind), each with its versions as the harness's own scan found them.
type Groups = BTreeMap<(String, String, String), Vec<scan::Found>>;

/// What kube-derive gave for one kind: the CRD's YAML, or `None` where `crd()` panicked.
type Theirs = Option<String>;

/// What kopgen gave for one kind: the CRD's YAML (without the header), or its errors.
type Ours = Result<String, Refused>;

/// kopgen's errors for one kind.
#[derive(Debug, Clone)]
pub struct Refused {
    text: String,
    /// Every error is one that compiling would not have (`--derive=auto` compiles the kind).
    unsupported: bool,
}

/// The body of a function that prints, for each kind of `groups`, a marker line and the YAML
/// of the merged CRD, or `PANIC` where `crd()` (or `merge_crds`) panics. `root` is the Rust
/// path the kinds' modules are relative to (`self` inside a case's own module, where private
/// kinds are visible too).
fn print_kinds<'g>(
    groups: impl Iterator<Item = (&'g (String, String, String), &'g Vec<scan::Found>)>,
    root: &str,
    merges: &[scan::Merge],
) -> String {
    let mut body = String::from("    use kube::CustomResourceExt as _;\n");
    for ((case, group, kind), versions) in groups {
        let mut versions = versions.clone();
        versions.sort_by_key(|v| scan::priority(&v.version));
        let mut storage = versions
            .iter()
            .find(|v| v.storage)
            .map_or("", |v| v.version.as_str())
            .to_owned();
        let mut crds: Vec<String> = versions
            .iter()
            .map(|v| {
                let module = if v.module.is_empty() {
                    String::new()
                } else {
                    format!("::{}", v.module)
                };
                format!("{root}{module}::{}::crd()", v.root)
            })
            .collect();
        // The source's own merge of this kind's versions, as it writes it.
        // The source's own merge of this kind's versions, as it writes it (a fixture merges
        // at most one kind).
        if let Some(merge) = merges
            .iter()
            .find(|m| versions.len() > 1 && m.types.len() == versions.len())
        {
            crds = merge
                .types
                .iter()
                .map(|t| format!("{root}::{t}::crd()"))
                .collect();
            storage = merge.storage.clone();
        }
        let crd = if crds.len() == 1 {
            crds[0].clone()
        } else {
            format!(
                "kube::core::crd::merge_crds(vec![{}], \"{storage}\").unwrap()",
                crds.join(", ")
            )
        };
        let _ = writeln!(body, "    println!(\"=== {case} {group} {kind}\");");
        let _ = writeln!(
            body,
            "    match std::panic::catch_unwind(|| serde_saphyr::to_string(&{crd}).unwrap()) {{ Ok(yaml) => print!(\"{{yaml}}\"), Err(_) => println!(\"PANIC\") }}"
        );
    }
    body
}

/// A harness main that silences panics (`crd()` may panic; that is an expected result) and
/// then runs `body`.
fn harness_main(prelude: &str, body: &str) -> String {
    format!(
        "#![allow(dead_code, unused_imports)]\n{prelude}\nfn main() {{\n    std::panic::set_hook(Box::new(|_| {{}}));\n{body}}}\n"
    )
}

/// A named Rust source to compile into the harness (as module `name`) and to run kopgen on.
pub struct Case {
    pub name: String,
    pub path: PathBuf,
    pub source: String,
}

/// Compiles `cases` with kube-derive in harness `harness_name`, runs kopgen on each, and returns
/// (kopgen's result, kube-derive's) per (case, group, kind).
pub fn compare(
    harness_name: &str,
    cases: &[Case],
) -> BTreeMap<(String, String, String), (Option<Ours>, Theirs)> {
    let harness = support::shared_target_dir().with_file_name(harness_name);
    let mut ours = BTreeMap::new();
    let mut mods = String::new();
    let mut calls = String::new();
    for case in cases {
        let name = &case.name;
        let mut case_groups = Groups::new();
        for found in scan::file(&case.path, "") {
            case_groups
                .entry((name.clone(), found.group.clone(), found.kind.clone()))
                .or_default()
                .push(found);
        }
        // The case's own module prints its kinds, so that private ones are reachable.
        let printer = format!(
            "\n#[allow(dead_code)]\npub fn kopgen_print_crds() {{\n{}}}\n",
            print_kinds(case_groups.iter(), "self", &scan::merges(&case.path))
        );
        write_if_changed(
            &harness.join(format!("src/fixtures/{name}.rs")),
            &format!("{}{printer}", case.source),
        );
        let _ = writeln!(mods, "pub mod {name};");
        let _ = writeln!(calls, "    fixtures::{name}::kopgen_print_crds();");
        run_kopgen(name, &case.path, &mut ours);
    }
    write_if_changed(
        &harness.join("Cargo.toml"),
        &harness_toml(&format!("kopgen-{harness_name}")),
    );
    write_if_changed(&harness.join("src/fixtures.rs"), &mods);
    write_if_changed(
        &harness.join("src/main.rs"),
        &harness_main("mod fixtures;\n", &calls),
    );
    run_harness(&harness, &ours)
}

/// Runs a harness and pairs each CRD it prints with kopgen's result (`ours`), by marker line.
fn run_harness(
    harness: &Path,
    ours: &BTreeMap<(String, String, String), Ours>,
) -> BTreeMap<(String, String, String), (Option<Ours>, Theirs)> {
    let output = support::cargo(harness, &["run", "--quiet"]);
    assert!(
        output.status.success(),
        "the harness (sources compiled with kube-derive) failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut result = BTreeMap::new();
    for section in stdout.split("=== ").skip(1) {
        let (head, body) = section.split_once('\n').expect("marker line");
        let mut parts = head.split(' ');
        let key = (
            parts.next().unwrap_or_default().to_owned(),
            parts.next().unwrap_or_default().to_owned(),
            parts.next().unwrap_or_default().to_owned(),
        );
        let theirs = (body != "PANIC\n").then(|| body.to_owned());
        result.insert(key.clone(), (ours.get(&key).cloned(), theirs));
    }
    // A CRD kopgen wrote for a type the compiled crate does not have (e.g. a test-only one).
    for (key, ours) in ours {
        result.entry(key.clone()).or_insert_with(|| {
            (
                Some(ours.clone()),
                Some("(kube-derive has no such CRD)\n".into()),
            )
        });
    }
    result
}

/// Runs kopgen on `path` (a file or a crate's `src/`), each kind on its own, recording its
/// results in `ours` under the case `name`.
fn run_kopgen(name: &str, path: &Path, ours: &mut BTreeMap<(String, String, String), Ours>) {
    let sources = manifests::discover::sources(&[path.to_path_buf()])
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let kinds = manifests::derive_kinds(&sources, &manifests::Options::default())
        .unwrap_or_else(|e| panic!("kopgen failed on {}:\n{e}", path.display()));
    for kind in kinds {
        let result = match kind.result {
            Ok((output, _)) => Ok(output
                .contents
                .strip_prefix(HEADER)
                .expect("header")
                .to_owned()),
            Err(errors) => {
                for e in &errors {
                    assert!(
                        e.file.starts_with(path) && e.line > 0,
                        "kopgen's error is not located in {}: {e}",
                        path.display()
                    );
                }
                Err(Refused {
                    text: errors
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("\n"),
                    unsupported: errors.iter().all(|e| e.unsupported),
                })
            }
        };
        ours.insert((name.to_owned(), kind.group, kind.kind), result);
    }
}

/// A crate over several files (`tests/fixtures/crate/src/`), compiled as the harness's library,
/// against kopgen on its `src/`: resolution across files, `crate::`, `super::`, re-exports.
#[test]
fn kopgen_manifests_equals_kube_derive_for_a_crate_over_several_files() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crate/src");
    let harness = support::shared_target_dir().with_file_name("crate-harness");
    let mut groups = Groups::new();
    for found in scan::krate(&source) {
        groups
            .entry(("crate".into(), found.group.clone(), found.kind.clone()))
            .or_default()
            .push(found);
    }
    let mut ours = BTreeMap::new();
    run_kopgen("crate", &source, &mut ours);
    for entry in walkdir::WalkDir::new(&source)
        .into_iter()
        .filter_map(Result::ok)
    {
        if entry.file_type().is_file() {
            let relative = entry.path().strip_prefix(&source).expect("under src");
            write_if_changed(
                &harness.join("src").join(relative),
                &std::fs::read_to_string(entry.path()).expect("read"),
            );
        }
    }
    write_if_changed(
        &harness.join("Cargo.toml"),
        &harness_toml("kopgen-crate-harness"),
    );
    write_if_changed(
        &harness.join("src/main.rs"),
        &harness_main("", &print_kinds(groups.iter(), "kopgen_crate_harness", &[])),
    );
    let results = run_harness(&harness, &ours);
    assert_eq!(results.len(), 1, "one kind (two versions) in the crate");
    assert_all_equal("crate parity", &results);
}

/// Fails with a readable diff for every kind where kopgen and kube-derive disagree: both must
/// give the same CRD byte for byte, or `crd()` panics and kopgen reports a located error.
pub fn assert_all_equal(
    label: &str,
    results: &BTreeMap<(String, String, String), (Option<Ours>, Theirs)>,
) {
    let mut failures = Vec::new();
    let mut refused = 0;
    for (key, (ours, theirs)) in results {
        match (ours, theirs) {
            (Some(Ok(got)), Some(theirs)) if got == theirs => {}
            (Some(Ok(got)), Some(theirs)) => {
                let diff = similar::TextDiff::from_lines(theirs, got);
                failures.push(format!(
                    "{key:?}: kopgen differs from kube-derive (- kube-derive, + kopgen):\n{}",
                    diff.unified_diff().context_radius(3)
                ));
            }
            (Some(Err(e)), None) if !e.unsupported => refused += 1,
            (Some(Err(e)), None) => failures.push(format!(
                "{key:?}: crd() panics, and kopgen's error says compiling would help:\n{}",
                e.text
            )),
            (Some(Ok(_)), None) => failures.push(format!(
                "{key:?}: crd() panics, but kopgen wrote a CRD instead of an error"
            )),
            (Some(Err(e)), Some(_)) => failures.push(format!(
                "{key:?}: crd() succeeds, but kopgen failed:\n{}",
                e.text
            )),
            (None, _) => failures.push(format!("{key:?}: kopgen found no such kind")),
        }
    }
    eprintln!(
        "{label}: {}/{} kinds agree ({refused} where crd() panics and kopgen reports the error)",
        results.len() - failures.len(),
        results.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn kopgen_manifests_equals_kube_derive_for_every_fixture() {
    let cases: Vec<Case> = fixtures()
        .into_iter()
        .map(|path| Case {
            name: module_name(&path),
            source: std::fs::read_to_string(&path).expect("fixture"),
            path,
        })
        .collect();
    assert!(cases.len() >= 16);
    let results = compare("parity-harness", &cases);
    assert_all_equal("fixture parity", &results);
}

/// Every (JSON pointer, scalar) pair of a schema, for a similarity figure.
fn leaves(
    value: &serde_yaml::Value,
    prefix: String,
    out: &mut std::collections::BTreeSet<(String, String)>,
) {
    match value {
        serde_yaml::Value::Mapping(map) => {
            for (k, v) in map {
                let key = k.as_str().unwrap_or_default();
                leaves(v, format!("{prefix}/{key}"), out);
            }
        }
        serde_yaml::Value::Sequence(seq) => {
            for (i, v) in seq.iter().enumerate() {
                leaves(v, format!("{prefix}/{i}"), out);
            }
        }
        other => {
            out.insert((prefix, serde_yaml::to_string(other).unwrap_or_default()));
        }
    }
}

fn similarity(original: &serde_yaml::Value, ours: &serde_yaml::Value) -> (f64, usize, usize) {
    let (mut a, mut b) = (Default::default(), Default::default());
    leaves(&original["spec"]["versions"], String::new(), &mut a);
    leaves(&ours["spec"]["versions"], String::new(), &mut b);
    let common = a.intersection(&b).count();
    let union = a.union(&b).count().max(1);
    (common as f64 / union as f64, a.len(), b.len())
}

/// Real-world CRDs, round-tripped: kopium turns each into kube-derive Rust, and kopgen's CRD for
/// that Rust must equal `crd()` of the same Rust. Also reports how close the result is to the
/// original CRD (kopium and kube-derive lose some details, e.g. validations kopium cannot express).
#[test]
fn real_world_crds_round_trip_through_kopium() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let test = "real_world_crds_round_trip_through_kopium";
    let Some(sources) = support::corpus::kopium_sources(scratch.path(), test) else {
        return;
    };
    let mut cases = Vec::new();
    let mut originals = BTreeMap::new();
    for kopium in sources {
        let original: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(&kopium.original).expect("crd"))
                .expect("yaml");
        originals.insert(kopium.name.clone(), original);
        cases.push(Case {
            name: kopium.name,
            path: kopium.path,
            source: kopium.source,
        });
    }
    let results = compare("realworld-harness", &cases);
    for ((name, group, kind), (ours, _)) in &results {
        if let (Some(Ok(ours)), Some(original)) = (ours, originals.get(name)) {
            let ours: serde_yaml::Value = serde_yaml::from_str(ours).expect("yaml");
            let (score, a, b) = similarity(original, &ours);
            eprintln!(
                "{name:<36} {group}/{kind}: {:.1}% of schema leaves shared with the original ({a} original, {b} kopgen)",
                score * 100.0
            );
        }
    }
    assert_all_equal("real-world parity", &results);
}

/// kube-derive 5.0's own golden tests (the `tests/*.rs` files shipped in the published crate,
/// read from the cargo registry): every kind whose `crd()` succeeds is byte-identical in
/// kopgen, and every kind whose `crd()` panics is an error kopgen locates in the file.
#[test]
fn kopgen_manifests_equals_kube_derive_on_its_own_golden_tests() {
    let harness = support::shared_target_dir().with_file_name("golden-harness");
    write_if_changed(
        &harness.join("Cargo.toml"),
        &harness_toml("kopgen-golden-harness"),
    );
    write_if_changed(&harness.join("src/main.rs"), "fn main() {}\n");
    let tests = kube_derive_tests(&harness);
    let mut cases = Vec::new();
    for entry in std::fs::read_dir(&tests).expect("kube-derive's tests") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "rs") || scan::file(&path, "").is_empty() {
            continue;
        }
        cases.push(Case {
            name: module_name(&path),
            source: std::fs::read_to_string(&path).expect("golden test"),
            path,
        });
    }
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(
        cases.len() >= 5,
        "kube-derive's golden tests: {cases:?}",
        cases = cases.iter().map(|c| &c.name).collect::<Vec<_>>()
    );
    let results = compare("golden-harness", &cases);
    assert_all_equal("kube-derive golden tests", &results);
}

/// The `tests/` directory of the kube-derive the harness at `harness` resolves, as cargo
/// unpacked it in its registry.
fn kube_derive_tests(harness: &Path) -> PathBuf {
    let output = support::cargo(harness, &["metadata", "--format-version", "1"]);
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("metadata");
    let manifest = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == "kube-derive")
        .and_then(|p| p["manifest_path"].as_str())
        .expect("kube-derive in the harness's dependencies");
    Path::new(manifest).with_file_name("tests")
}
