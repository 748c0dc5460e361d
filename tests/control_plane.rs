//! What kopgen writes, proven against a real kube-apiserver (etcd and kube-apiserver started
//! from the binaries `.ci/control-plane.sh` builds; see `tests/support/mod.rs`).
//!
//! - Every CRD kopgen derives from the parity fixtures and from kopium's Rust for the real-world
//!   corpus is applied with server-side apply, and the lint agrees with the server: the server
//!   rejects exactly the CRDs the lint reports errors on. The server compiles the CEL rules.
//! - The samples of a scaffolded project are accepted by a server-side dry run.

mod support;

use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopgen::manifests::{self, lint};
use support::control_plane::{ControlPlane, Options};

/// One CRD kopgen derived, with what the lint said of it.
struct Derived {
    origin: String,
    name: String,
    yaml: String,
    lint_errors: Vec<String>,
}

/// Every kind kopgen derives from `path` (lint off, so a CRD the lint refuses is still written
/// and can be shown to the server). Kinds kopgen refuses are left out: there is no CRD to apply.
fn derive(origin: &str, path: &Path) -> Vec<Derived> {
    let sources = manifests::discover::sources(&[path.to_path_buf()])
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let options = manifests::Options {
        lint: false,
        ..manifests::Options::default()
    };
    let Ok(kinds) = manifests::derive_kinds(&sources, &options) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for kind in kinds {
        let Ok((output, _)) = kind.result else {
            continue;
        };
        let crd: CustomResourceDefinition =
            serde_yaml::from_str(&output.contents).expect("kopgen writes a CRD");
        let lint_errors = lint::check(&crd)
            .into_iter()
            .filter(|f| f.severity == lint::Severity::Error)
            .map(|f| format!("{} at {}: {}", f.rule, f.path.join("."), f.message))
            .collect();
        out.push(Derived {
            origin: origin.to_owned(),
            name: crd.metadata.name.clone().unwrap_or_default(),
            yaml: output.contents,
            lint_errors,
        });
    }
    out
}

fn fixture_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crds");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("fixtures")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    files
}

/// What the server said of one CRD: accepted, or its refusal; and its warnings.
struct Verdict {
    refusal: Option<String>,
    warnings: Vec<String>,
}

fn apply(plane: &ControlPlane, yaml: &str) -> Verdict {
    let out = plane.kubectl_with_input(
        &[
            "apply",
            "--server-side",
            "--field-manager=kopgen-test",
            "-f",
            "-",
        ],
        yaml,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warnings = stderr
        .lines()
        .filter(|l| l.starts_with("Warning:"))
        .map(str::to_owned)
        .collect();
    let refusal = (!out.status.success()).then(|| {
        stderr
            .lines()
            .filter(|l| !l.starts_with("Warning:"))
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ")
    });
    Verdict { refusal, warnings }
}

#[test]
fn every_crd_is_accepted_by_the_api_server_exactly_when_the_lint_passes() {
    let test = "every_crd_is_accepted_by_the_api_server_exactly_when_the_lint_passes";
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    let mut crds = Vec::new();
    for file in fixture_files() {
        let origin = format!(
            "fixture {}",
            file.file_name().unwrap_or_default().to_string_lossy()
        );
        crds.extend(derive(&origin, &file));
    }
    let fixtures = crds.len();
    let scratch = tempfile::tempdir().expect("tempdir");
    if let Some(sources) = support::corpus::kopium_sources(scratch.path(), test) {
        for kopium in sources {
            crds.extend(derive(&format!("kopium {}", kopium.name), &kopium.path));
        }
    }
    assert!(fixtures >= 60, "only {fixtures} fixture CRDs were derived");

    let (mut accepted, mut refused) = (0, 0);
    let mut disagreements = Vec::new();
    let mut warned = std::collections::BTreeSet::new();
    for crd in &crds {
        let verdict = apply(&plane, &crd.yaml);
        warned.extend(verdict.warnings);
        match (&verdict.refusal, crd.lint_errors.is_empty()) {
            (None, true) => accepted += 1,
            (Some(_), false) => refused += 1,
            (None, false) => disagreements.push(format!(
                "{} ({}): accepted by the server, but the lint says: {}",
                crd.name,
                crd.origin,
                crd.lint_errors.join("; ")
            )),
            (Some(why), true) => disagreements.push(format!(
                "{} ({}): refused by the server, the lint is silent: {why}",
                crd.name, crd.origin
            )),
        }
    }
    eprintln!(
        "{} CRDs: {accepted} accepted, {refused} refused (both as the lint predicted), {} disagreements",
        crds.len(),
        disagreements.len()
    );
    for warning in &warned {
        eprintln!("server {warning}");
    }
    assert!(
        disagreements.is_empty(),
        "the lint and the API server disagree:\n{}\n{}",
        disagreements.join("\n"),
        plane.logs()
    );
    assert!(accepted > refused, "{accepted} accepted, {refused} refused");
}

/// The samples `create api` writes are objects the API server accepts once the CRDs are in.
#[test]
fn the_samples_of_a_scaffolded_project_pass_a_server_side_dry_run() {
    let test = "the_samples_of_a_scaffolded_project_pass_a_server_side_dry_run";
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    let session = support::Session::new();
    let project = session.init_demo(&[]);
    for args in [
        "--group apps --version v1alpha1 --kind Blog",
        "--group apps --version v1 --kind Blog",
        "--group db --version v1 --kind Tenant --namespaced=false",
        "--group platform-engineering --version v1beta1 --kind ApplicationNetworkPolicyBinding",
    ] {
        let args: Vec<&str> = args.split_whitespace().collect();
        support::create_api_ok(&project, &args);
    }
    install_crds(&plane, &project);
    let samples = project.join("config/samples");
    let mut count = 0;
    for entry in std::fs::read_dir(&samples).expect("samples") {
        let path = entry.expect("entry").path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name == "kustomization.yaml" {
            continue;
        }
        count += 1;
        let out = plane
            .kubectl()
            .args(["apply", "--server-side", "--dry-run=server", "-f"])
            .arg(&path)
            .output()
            .expect("kubectl");
        assert!(
            out.status.success(),
            "{name} refused: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(count, 4, "one sample per kind and version");
}

/// `make install`: the project's `config/crd` applied server-side, each CRD established.
fn install_crds(plane: &ControlPlane, project: &Path) {
    let crds = plane
        .kubectl()
        .args(["kustomize"])
        .arg(project.join("config/crd"))
        .output()
        .expect("kubectl kustomize");
    assert!(crds.status.success(), "{crds:?}");
    let install = plane.kubectl_with_input(
        &["apply", "--server-side", "-f", "-"],
        &String::from_utf8_lossy(&crds.stdout),
    );
    assert!(install.status.success(), "make install failed: {install:?}");
    wait_established(plane);
}

/// Waits until every CRD is established, so objects of its kinds can be created.
pub fn wait_established(plane: &ControlPlane) {
    let out = plane
        .kubectl()
        .args([
            "wait",
            "--for=condition=Established",
            "crd",
            "--all",
            "--timeout=60s",
        ])
        .output()
        .expect("kubectl wait");
    assert!(out.status.success(), "CRDs not established: {out:?}");
}

/// A minimal CRD of `widgets.compat.example.com` with the given versions (storage first).
fn widget_crd(versions: &[&str]) -> String {
    let mut out = String::from(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.compat.example.com\nspec:\n  group: compat.example.com\n  names:\n    kind: Widget\n    plural: widgets\n    singular: widget\n    listKind: WidgetList\n  scope: Namespaced\n  versions:\n",
    );
    for (i, version) in versions.iter().enumerate() {
        out.push_str(&format!(
            "  - name: {version}\n    served: true\n    storage: {}\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              size:\n                type: integer\n",
            i == 0
        ));
    }
    out
}

/// `kopgen crd diff kube:// NEW` reads the cluster's stored versions: a version objects are
/// stored in may not go, and the API server agrees (it refuses that CRD).
#[test]
fn the_gate_reads_stored_versions_from_the_cluster_and_the_server_agrees() {
    let test = "the_gate_reads_stored_versions_from_the_cluster_and_the_server_agrees";
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    let install = plane.kubectl_with_input(
        &["apply", "--server-side", "-f", "-"],
        &widget_crd(&["v1alpha1"]),
    );
    assert!(install.status.success(), "{install:?}");
    wait_established(&plane);
    let object = plane.kubectl_with_input(
        &["apply", "-f", "-"],
        "apiVersion: compat.example.com/v1alpha1\nkind: Widget\nmetadata:\n  name: one\n  namespace: default\nspec:\n  size: 1\n",
    );
    assert!(object.status.success(), "{object:?}");
    // v1 becomes the storage version: v1alpha1 stays in status.storedVersions.
    let moved = plane.kubectl_with_input(
        &["apply", "--server-side", "-f", "-"],
        &widget_crd(&["v1", "v1alpha1"]),
    );
    assert!(moved.status.success(), "{moved:?}");

    let session = support::Session::new();
    session.write("new/widgets.yaml", &widget_crd(&["v1"]));
    let path = format!(
        "{}:{}",
        plane.assets().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kopgen"))
        .current_dir(session.path())
        .env("KUBECONFIG", plane.kubeconfig())
        .env("PATH", path)
        .args(["crd", "diff", "kube://", "new"])
        .output()
        .expect("kopgen runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("error[breaking/storedVersionRemoval]: CRD widgets.compat.example.com: stored versions removed : [v1alpha1]"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let refused =
        plane.kubectl_with_input(&["apply", "--server-side", "-f", "-"], &widget_crd(&["v1"]));
    assert!(!refused.status.success(), "the server refuses it too");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("storedVersions"),
        "{refused:?}"
    );
}

/// A sample that breaks a CEL rule of its CRD fails `kopgen manifests --check`, and the API
/// server refuses the same sample; the good sample passes both.
#[test]
fn a_sample_failing_a_cel_rule_fails_the_check_and_the_server() {
    let test = "a_sample_failing_a_cel_rule_fails_the_check_and_the_server";
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    let session = support::Session::new();
    let project = session.init_project("celsamples", &[]);
    support::create_api_ok(&project, support::BLOG);
    let types = project.join("src/api/apps/v1alpha1/blog.rs");
    let text = std::fs::read_to_string(&types).expect("types");
    let rule = "    validation = Rule::new(\"!has(self.spec.foo) || self.spec.foo.startsWith('b')\").message(\"foo starts with b\"),\n";
    let edited = text
        .replacen("    namespaced,\n", &format!("    namespaced,\n{rule}"), 1)
        .replacen("use kube::", "use kube::core::Rule;\nuse kube::", 1);
    assert_ne!(edited, text);
    std::fs::write(&types, edited).expect("edit");
    support::run_kopgen(&project, &["manifests"]);
    let check = support::run_kopgen(&project, &["manifests", "--check"]);
    assert_eq!(
        check.status, 0,
        "the scaffolded sample keeps the rule: {}",
        check.stderr
    );

    install_crds(&plane, &project);

    let sample = project.join("config/samples/apps_v1alpha1_blog.yaml");
    let good = std::fs::read_to_string(&sample).expect("sample");
    let dry_run = |yaml: &str| {
        plane.kubectl_with_input(
            &["apply", "--server-side", "--dry-run=server", "-f", "-"],
            yaml,
        )
    };
    let accepted = dry_run(&good);
    assert!(accepted.status.success(), "{accepted:?}");

    let bad = good.replace("foo: bar", "foo: zap");
    assert_ne!(bad, good);
    std::fs::write(&sample, &bad).expect("write");
    let stderr = support::fails_cleanly_in(&project, &["manifests", "--check"]);
    assert!(
        stderr.contains("error[sample]: config/samples/apps_v1alpha1_blog.yaml:1: Blog blog-sample: foo starts with b"),
        "{stderr}"
    );
    let refused = dry_run(&bad);
    assert!(!refused.status.success(), "the server refuses it too");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("foo starts with b"),
        "{refused:?}"
    );
}

/// The samples check against the API server, rule by rule and sample by sample: for each, the
/// check passes exactly when a server-side dry run of `kubectl apply` with the same sample is
/// admitted (CEL's integer types and code points, YAML 1.1's booleans, octals and boolean keys
/// as kubectl reads them).
#[test]
fn the_samples_check_agrees_with_the_api_server() {
    let test = "the_samples_check_agrees_with_the_api_server";
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    let session = support::Session::new();
    let project = session.init_project("celdiff", &[]);
    support::create_api_ok(&project, support::BLOG);
    let types = project.join("src/api/apps/v1alpha1/blog.rs");
    let scaffolded = std::fs::read_to_string(&types).expect("types");
    let fields = "    #[serde(default)]\n    pub num: i64,\n    #[serde(default)]\n    pub text: String,\n    #[serde(default)]\n    pub flag: bool,\n    #[serde(default)]\n    pub list: Vec<i64>,\n    #[serde(default)]\n    pub y: i64,\n";
    let sample = project.join("config/samples/apps_v1alpha1_blog.yaml");
    let head = "apiVersion: apps.example.com/v1alpha1\nkind: Blog\nmetadata:\n  name: blog-sample\n  namespace: default\nspec:\n";
    let cases: &[(&str, &str)] = &[
        ("self.spec.num == 5", "  num: 5\n"),
        ("self.spec.num in [1, 5, 7]", "  num: 5\n"),
        ("self.spec.num in [1, 7]", "  num: 5\n"),
        ("size(self.spec.text) == 1", "  text: \"é\"\n"),
        ("size(self.spec.text) == 2", "  text: \"é\"\n"),
        ("!!self.spec.flag", "  flag: true\n"),
        ("self.spec.list.all(x, x > 0)", "  list: [1, 2]\n"),
        ("self.spec.list.all(x, x > 0)", "  list: [1, -2]\n"),
        // As kubectl reads YAML (1.1): an octal, a boolean, a key that is a boolean.
        ("self.spec.num == 8", "  num: 010\n"),
        ("self.spec.text.startsWith('y')", "  text: yes\n"),
        ("self.spec.text.startsWith('y')", "  text: \"yes\"\n"),
        ("self.spec.y == 1", "  y: 1\n"),
    ];
    let mut disagreements = Vec::new();
    for (rule, spec) in cases {
        let rule_line = format!("    validation = Rule::new({rule:?}),\n");
        let edited = scaffolded
            .replacen(
                "    namespaced,\n",
                &format!("    namespaced,\n{rule_line}"),
                1,
            )
            .replacen("use kube::", "use kube::core::Rule;\nuse kube::", 1)
            .replacen(
                "    pub foo: Option<String>,\n",
                &format!("    pub foo: Option<String>,\n{fields}"),
                1,
            );
        std::fs::write(&types, edited).expect("edit");
        let yaml = format!("{head}{spec}");
        std::fs::write(&sample, &yaml).expect("sample");
        let _ = support::run_kopgen(&project, &["manifests", "--derive", "static"]);
        let checked =
            support::run_kopgen(&project, &["manifests", "--check", "--derive", "static"]);
        let kopgen_admits = checked.status == 0;
        install_crds(&plane, &project);
        let server = plane.kubectl_with_input(
            &["apply", "--server-side", "--dry-run=server", "-f", "-"],
            &yaml,
        );
        let server_admits = server.status.success();
        if kopgen_admits != server_admits {
            disagreements.push(format!(
                "{rule} with {}: kopgen {}, the API server {}\n{}{}",
                spec.trim(),
                if kopgen_admits { "admits" } else { "refuses" },
                if server_admits { "admits" } else { "refuses" },
                checked.stderr,
                String::from_utf8_lossy(&server.stderr)
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}
