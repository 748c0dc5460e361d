//! The breaking-change gate against crdify's own cases, against Rust before/after pairs, and
//! as a project runs it (`make crd-compat` against the last commit).

mod support;

use std::{collections::BTreeSet, path::Path, process::Command};

use kopgen::compat::{self, Change, Config, Enforcement, Scope, source};
use serde_json::Value;

/// A verdict as crdify's JSON output states it: (validator, version, property, check, level,
/// message). Unhandled changes are compared by presence: crdify prints a Go struct diff.
type Verdict = (String, String, String, String, String, String);

fn expected(path: &Path) -> BTreeSet<Verdict> {
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("expected.json"))
        .expect("expected.json parses");
    let mut out = BTreeSet::new();
    let mut results = |validator: &str, version: &str, property: &str, results: &Value| {
        for result in results.as_array().into_iter().flatten() {
            let name = result["name"].as_str().unwrap_or_default();
            for (level, key) in [("error", "errors"), ("warning", "warnings")] {
                for message in result[key].as_array().into_iter().flatten() {
                    let mut message = message.as_str().unwrap_or_default().to_owned();
                    if name == "unhandled" {
                        message.clear();
                    }
                    out.insert((
                        validator.to_owned(),
                        version.to_owned(),
                        property.to_owned(),
                        name.to_owned(),
                        level.to_owned(),
                        message,
                    ));
                }
            }
        }
    };
    results("crd", "", "", &json["crdValidation"]);
    for (validator, key) in [
        ("same", "sameVersionValidation"),
        ("served", "servedVersionValidation"),
    ] {
        for version in json[key].as_array().into_iter().flatten() {
            let name = version["version"].as_str().unwrap_or_default();
            for property in version["propertyComparisons"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let path = property["property"].as_str().unwrap_or_default();
                results(validator, name, path, &property["comparisonResults"]);
            }
        }
    }
    out
}

fn verdict(change: &Change) -> Verdict {
    let level = match change.enforcement {
        Enforcement::Error => "error",
        _ => "warning",
    };
    let message = if change.check == "unhandled" {
        String::new()
    } else {
        change.message.clone()
    };
    let (validator, version, property) = match (&change.scope, change.check) {
        (_, "scope" | "existingFieldRemoval" | "storedVersionRemoval") => {
            ("crd", String::new(), String::new())
        }
        (Scope::Version(v), _) => ("same", v.clone(), change.path.to_string()),
        (Scope::Served(pair), _) => ("served", pair.clone(), change.path.to_string()),
        (Scope::Crd, _) => ("crd", String::new(), String::new()),
    };
    (
        validator.to_owned(),
        version,
        property,
        change.check.to_owned(),
        level.to_owned(),
        message,
    )
}

fn only_crd(file: &Path) -> Value {
    let revision = source::load(&file.display().to_string(), None, Path::new("/")).expect("loads");
    assert_eq!(revision.len(), 1, "{} holds one CRD", file.display());
    revision.into_values().next().expect("one").0
}

#[test]
fn crdify_cases_give_crdifys_verdicts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crdify");
    let mut cases: Vec<_> = std::fs::read_dir(&root)
        .expect("fixtures")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 20, "crdify's cases are all there");
    let mut disagreements = Vec::new();
    println!("{:<24} {:>8} {:>8}  agree", "case", "crdify", "kopgen");
    for case in &cases {
        let old = only_crd(&case.join("a.yaml"));
        let new = only_crd(&case.join("b.yaml"));
        let want = expected(&case.join("expected.json"));
        let got: BTreeSet<Verdict> = compat::compare(&old, &new, &Config::crdify())
            .iter()
            .map(verdict)
            .collect();
        let name = case
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        println!(
            "{name:<24} {:>8} {:>8}  {}",
            want.len(),
            got.len(),
            want == got
        );
        if want != got {
            disagreements.push(format!(
                "{name}:\n  only crdify: {:#?}\n  only kopgen: {:#?}",
                want.difference(&got).collect::<Vec<_>>(),
                got.difference(&want).collect::<Vec<_>>()
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// `kopgen manifests` of `dir/api.rs` into `dir/crds`, with `extra` flags: whether it
/// succeeded, and what it printed on stderr.
fn manifests(dir: &Path, extra: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kopgen"))
        .current_dir(dir)
        .args(["manifests", "--paths", "api.rs", "--output-dir", "crds"])
        .args(["--derive", "static"])
        .args(extra)
        .output()
        .expect("kopgen runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Derives `source` (one Rust API file) into `dir`: the previous revision.
fn derive(source: &str, dir: &Path) {
    std::fs::write(dir.join("api.rs"), source).expect("write api.rs");
    let (ok, stderr) = manifests(dir, &[]);
    assert!(ok, "{stderr}");
}

/// `dir/api.rs` replaced by `source`, then gated against the previous revision.
fn gate(source: &str, dir: &Path, extra: &[&str]) -> (bool, String) {
    std::fs::write(dir.join("api.rs"), source).expect("write api.rs");
    let mut args = vec!["--against", "crds"];
    args.extend_from_slice(extra);
    manifests(dir, &args)
}

const BEFORE: &str = r#"use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

fn default_size() -> i32 {
    3
}

#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "apps.example.com", version = "v1", kind = "Blog", namespaced)]
pub struct BlogSpec {
    /// How many replicas.
    #[schemars(range(min = 1, max = 10))]
    pub replicas: i32,
    pub mode: Mode,
    /// The title.
    pub title: Option<String>,
    pub tags: Vec<String>,
    #[serde(default = "default_size")]
    pub size: i32,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
pub enum Mode {
    Managed,
    Unmanaged,
}
"#;

/// Each rule's Rust change, the rule it trips and the line of the field that caused it.
const CHANGES: &[(&str, &str, &str, &str, usize)] = &[
    // The struct that lost the field.
    (
        "a field removed",
        "    /// The title.\n    pub title: Option<String>,\n",
        "",
        "breaking/existingFieldRemoval",
        11,
    ),
    // The new field.
    (
        "a new required field",
        "    pub tags: Vec<String>,\n",
        "    pub tags: Vec<String>,\n    pub owner: String,\n",
        "breaking/required",
        19,
    ),
    (
        "a maximum decreased",
        "max = 10",
        "max = 5",
        "ratcheted/maximum",
        12,
    ),
    (
        "a minimum increased",
        "min = 1,",
        "min = 2,",
        "ratcheted/minimum",
        12,
    ),
    (
        "an enum value removed",
        "    Unmanaged,\n",
        "",
        "ratcheted/enum",
        15,
    ),
    (
        "a type changed",
        "pub title: Option<String>",
        "pub title: Option<i64>",
        "breaking/type",
        16,
    ),
    (
        "a pattern added",
        "    pub title: Option<String>,",
        "    #[schemars(regex(pattern = \"^[a-z]+$\"))]\n    pub title: Option<String>,",
        "ratcheted/pattern",
        16,
    ),
    (
        "a scope changed",
        "kind = \"Blog\", namespaced)",
        "kind = \"Blog\")",
        "breaking/scope",
        11,
    ),
    (
        "a default changed",
        "    3\n",
        "    4\n",
        "breaking/default",
        19,
    ),
    (
        "a maxLength added",
        "    pub title: Option<String>,",
        "    #[schemars(length(max = 10))]\n    pub title: Option<String>,",
        "ratcheted/maxLength",
        16,
    ),
    (
        "a maxItems added",
        "    pub tags: Vec<String>,",
        "    #[schemars(length(max = 3))]\n    pub tags: Vec<String>,",
        "ratcheted/maxItems",
        18,
    ),
    (
        "a minLength added",
        "    pub title: Option<String>,",
        "    #[schemars(length(min = 1))]\n    pub title: Option<String>,",
        "ratcheted/minLength",
        16,
    ),
    (
        "nullable removed",
        "    pub title: Option<String>,",
        "    #[serde(default)]\n    pub title: String,",
        "breaking/nullable",
        16,
    ),
    // int32 to int64: the same type, another format, which no check claims.
    (
        "a format changed",
        "pub replicas: i32",
        "pub replicas: i64",
        "breaking/unhandled",
        12,
    ),
];

#[test]
fn each_rule_is_reported_at_the_rust_field_that_caused_it() {
    for (what, from, to, check, line) in CHANGES {
        let dir = tempfile::tempdir().expect("tempdir");
        derive(BEFORE, dir.path());
        let after = BEFORE.replacen(from, to, 1);
        assert_ne!(after, BEFORE, "{what}: the change applies");
        let (ok, stderr) = gate(&after, dir.path(), &["--check"]);
        assert!(!ok, "{what}: the gate fails the run\n{stderr}");
        let wanted = format!("error[{check}]: api.rs:{line}:");
        assert!(
            stderr.contains(&wanted),
            "{what}: wanted `{wanted}` in\n{stderr}"
        );
        assert!(
            stderr.contains("help: "),
            "{what}: says what to do\n{stderr}"
        );
    }
}

#[test]
fn compatible_changes_pass_the_gate() {
    let dir = tempfile::tempdir().expect("tempdir");
    derive(BEFORE, dir.path());
    // A new optional field, an added enum value (allowed by kopgen's defaults), a loosened
    // bound and a reworded doc comment.
    let after = BEFORE
        .replacen(
            "    pub tags: Vec<String>,\n",
            "    pub tags: Vec<String>,\n    pub note: Option<String>,\n",
            1,
        )
        .replacen("    Unmanaged,\n", "    Unmanaged,\n    Paused,\n", 1)
        .replacen("max = 10", "max = 20", 1)
        .replacen("/// The title.", "/// The title, shown on the page.", 1);
    let (ok, stderr) = gate(&after, dir.path(), &[]);
    assert!(ok, "{stderr}");
    // A changed doc comment is a changed description: reported, not fatal (kopgen's default).
    assert!(
        stderr.contains("warning[breaking/description]: api.rs:16:"),
        "{stderr}"
    );
    assert!(!stderr.contains("error["), "{stderr}");
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=kopgen",
            "-c",
            "user.email=kopgen@example.com",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

fn make_crd_compat(project: &Path) -> (bool, String) {
    let out = Command::new("make")
        .current_dir(project)
        .args(["crd-compat", "CRD_BASE=HEAD"])
        .arg(format!("KOPGEN={}", env!("CARGO_BIN_EXE_kopgen")))
        .output()
        .expect("make runs");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// A scaffolded project gates its CRDs against git with `make crd-compat`, configured by
/// `config/crd/compat.yaml`.
#[test]
fn a_project_gates_its_crds_against_the_last_commit() {
    if !support::need(
        "make",
        "a_project_gates_its_crds_against_the_last_commit",
        "install make",
    ) || !support::need(
        "git",
        "a_project_gates_its_crds_against_the_last_commit",
        "install git",
    ) {
        return;
    }
    let session = support::Session::new();
    let project = session.init_project("gated", &[]);
    support::create_api_ok(&project, support::BLOG);
    git(&project, &["init", "-q"]);
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-qm", "first release"]);
    let (ok, output) = make_crd_compat(&project);
    assert!(ok, "nothing changed yet:\n{output}");

    let types = project.join("src/api/apps/v1alpha1/blog.rs");
    let text = std::fs::read_to_string(&types).expect("types");
    let field = "    pub foo: Option<String>,\n";
    assert!(text.contains(field), "the scaffolded example field");
    let line = text[..text.find(field).expect("field")].lines().count() + 2;
    std::fs::write(
        &types,
        text.replacen(field, &format!("{field}    pub replicas: i32,\n"), 1),
    )
    .expect("edit");
    // The sample keeps up, so that only the gate speaks.
    let sample = project.join("config/samples/apps_v1alpha1_blog.yaml");
    let text = std::fs::read_to_string(&sample).expect("sample");
    std::fs::write(
        &sample,
        text.replacen("  foo: bar", "  foo: bar\n  replicas: 1", 1),
    )
    .expect("edit");
    let (ok, output) = make_crd_compat(&project);
    assert!(!ok, "a new required field fails the gate:\n{output}");
    assert!(
        output.contains(&format!(
            "error[breaking/required]: src/api/apps/v1alpha1/blog.rs:{line}:"
        )),
        "at the new field (line {line}):\n{output}"
    );

    // The project's config decides: required changes as warnings.
    let config = project.join("config/crd/compat.yaml");
    let mut text = std::fs::read_to_string(&config).expect("compat.yaml");
    text.push_str("  - name: required\n    enforcement: Warn\n");
    std::fs::write(&config, text).expect("write");
    let (ok, output) = make_crd_compat(&project);
    // Only the gate passes now: `--check` still sees the CRD file out of date.
    assert!(output.contains("warning[breaking/required]"), "{output}");
    assert!(!output.contains("error[breaking/"), "{output}");
    assert!(
        !ok && output.contains("out of date"),
        "the stale CRD file still fails --check:\n{output}"
    );
}

const TWO_VERSIONS: &str = r#"pub mod v1alpha1 {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
    #[kube(group = "apps.example.com", version = "v1alpha1", kind = "Blog", namespaced)]
    pub struct BlogSpec {
        pub title: String,
    }
}

pub mod v1 {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
    #[kube(group = "apps.example.com", version = "v1", kind = "Blog", namespaced, storage = false)]
    pub struct BlogSpec {
        pub title: String,
    }
}
"#;

/// Dropping the version objects were stored in (the previous revision's storage version)
/// strands them: refused at the kind.
#[test]
fn removing_the_stored_version_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    derive(TWO_VERSIONS, dir.path());
    let v1_only = TWO_VERSIONS[TWO_VERSIONS.find("pub mod v1 {").expect("v1")..]
        .replace(", storage = false", "");
    let (ok, stderr) = gate(&v1_only, dir.path(), &[]);
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("error[breaking/storedVersionRemoval]: api.rs:8:")
            && stderr.contains("stored versions removed : [v1alpha1]"),
        "{stderr}"
    );
}

/// A CRD named with a newline and an ANSI escape cannot forge `crd diff`'s output (a fake
/// "0 error(s)" line): names from input are printed escaped. A CRD without a name, and one
/// defined twice in one file, are refused saying so.
#[test]
fn crd_diff_prints_names_from_input_escaped_and_names_what_is_wrong() {
    let session = support::Session::new();
    let crd = |name: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {name}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {{kind: W, plural: ws}}\n  versions: []\n"
        )
    };
    let forged = "\"ws.example.com\\n0 CRD(s) compared: 0 error(s), 0 warning(s)\\u001b[2K\"";
    session.write("old.yaml", &crd(forged));
    session.write("new.yaml", "");
    let run = support::run_kopgen(session.path(), &["crd", "diff", "old.yaml", "new.yaml"]);
    assert_ne!(run.status, 0);
    assert!(
        run.stdout
            .lines()
            .all(|l| !l.starts_with("0 CRD(s) compared: 0 error(s)")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(r"\n0 CRD(s)") && run.stdout.contains(r"\u{1b}"),
        "{}",
        run.stdout
    );

    session.write("nameless.yaml", &crd("\"\""));
    let run = support::run_kopgen(
        session.path(),
        &["crd", "diff", "nameless.yaml", "new.yaml"],
    );
    assert!(
        run.stderr.contains("has no metadata.name"),
        "{}",
        run.stderr
    );

    session.write(
        "twice.yaml",
        &format!("{}---\n{}", crd("ws.example.com"), crd("ws.example.com")),
    );
    let run = support::run_kopgen(session.path(), &["crd", "diff", "twice.yaml", "new.yaml"]);
    assert!(
        run.stderr
            .contains("CRD ws.example.com is defined twice in ")
            && run.stderr.contains("twice.yaml"),
        "{}",
        run.stderr
    );
}
