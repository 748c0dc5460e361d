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

use kopgen::manifests::{self, HEADER, ResourceInfo};

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

const HARNESS_TOML: &str = r#"[package]
name = "kopgen-parity-harness"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
k8s-openapi = { version = "0.29", features = ["latest", "schemars"] }
kube = { version = "5", default-features = false, features = ["derive"] }
schemars = "1"
serde = { version = "1", features = ["derive", "rc"] }
serde_json = "1"
serde_yaml = "0.9"
"#;

/// Builds the harness main: for each fixture and each (group, kind) in it, print a marker line
/// and the YAML of the merged CRD.
fn harness_main(groups: &BTreeMap<(String, String, String), Vec<ResourceInfo>>) -> String {
    let mut main = String::from(
        "#![allow(dead_code, unused_imports)]\nmod fixtures;\n\nuse kube::CustomResourceExt;\n\nfn main() {\n",
    );
    for ((fixture, group, kind), versions) in groups {
        let storage = versions
            .iter()
            .find(|v| v.storage)
            .map_or("", |v| v.version.as_str());
        let crds: Vec<String> = versions
            .iter()
            .map(|v| {
                let module = v.module.strip_prefix("crate").unwrap_or(&v.module);
                format!("crate::fixtures::{fixture}{module}::{}::crd()", v.root)
            })
            .collect();
        let _ = writeln!(main, "    println!(\"=== {fixture} {group} {kind}\");");
        if crds.len() == 1 {
            let _ = writeln!(
                main,
                "    print!(\"{{}}\", serde_yaml::to_string(&{}).unwrap());",
                crds[0]
            );
        } else {
            let _ = writeln!(
                main,
                "    print!(\"{{}}\", serde_yaml::to_string(&kube::core::crd::merge_crds(vec![{}], \"{storage}\").unwrap()).unwrap());",
                crds.join(", ")
            );
        }
    }
    main.push_str("}\n");
    main
}

#[test]
fn kopgen_manifests_equals_kube_derive_for_every_fixture() {
    let fixtures = fixtures();
    assert!(!fixtures.is_empty());
    let harness = support::shared_target_dir().with_file_name("parity-harness");
    let mut groups: BTreeMap<(String, String, String), Vec<ResourceInfo>> = BTreeMap::new();
    let mut expected: BTreeMap<(String, String, String), String> = BTreeMap::new();
    let mut mods = String::new();
    for fixture in &fixtures {
        let name = module_name(fixture);
        let source = std::fs::read_to_string(fixture).expect("fixture");
        write_if_changed(&harness.join(format!("src/fixtures/{name}.rs")), &source);
        let _ = writeln!(mods, "pub mod {name};");
        let paths = vec![fixture.clone()];
        let resources =
            manifests::resources(&paths).unwrap_or_else(|e| panic!("{}: {e}", fixture.display()));
        assert!(
            !resources.is_empty(),
            "{}: no CustomResource",
            fixture.display()
        );
        for info in resources {
            groups
                .entry((name.clone(), info.group.clone(), info.kind.clone()))
                .or_default()
                .push(info);
        }
        let outputs = manifests::generate(&paths)
            .unwrap_or_else(|e| panic!("kopgen failed on {}:\n{e}", fixture.display()));
        for output in outputs {
            let body = output
                .contents
                .strip_prefix(HEADER)
                .expect("header")
                .to_owned();
            let crd: serde_yaml::Value = serde_yaml::from_str(&body).expect("yaml");
            let group = crd["spec"]["group"].as_str().expect("group").to_owned();
            let kind = crd["spec"]["names"]["kind"]
                .as_str()
                .expect("kind")
                .to_owned();
            expected.insert((name.clone(), group, kind), body);
        }
    }
    write_if_changed(&harness.join("Cargo.toml"), HARNESS_TOML);
    write_if_changed(&harness.join("src/fixtures.rs"), &mods);
    write_if_changed(&harness.join("src/main.rs"), &harness_main(&groups));
    let output = support::cargo(&harness, &["run", "--quiet"]);
    assert!(
        output.status.success(),
        "the harness (fixtures compiled with kube-derive) failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut actual: BTreeMap<(String, String, String), String> = BTreeMap::new();
    for section in stdout.split("=== ").skip(1) {
        let (head, body) = section.split_once('\n').expect("marker line");
        let mut parts = head.split(' ');
        let key = (
            parts.next().unwrap_or_default().to_owned(),
            parts.next().unwrap_or_default().to_owned(),
            parts.next().unwrap_or_default().to_owned(),
        );
        actual.insert(key, body.to_owned());
    }
    let mut failures = Vec::new();
    for (key, want) in &actual {
        match expected.get(key) {
            Some(got) if got == want => {}
            Some(got) => {
                let diff = similar::TextDiff::from_lines(want, got);
                failures.push(format!(
                    "{key:?}: kopgen differs from kube-derive (- kube-derive, + kopgen):\n{}",
                    diff.unified_diff().context_radius(3)
                ));
            }
            None => failures.push(format!("{key:?}: kopgen wrote no CRD")),
        }
    }
    let equal = actual.len() - failures.len();
    eprintln!("parity: {equal}/{} CRDs equal byte for byte", actual.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
