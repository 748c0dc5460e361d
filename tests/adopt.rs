//! `kopgen init --adopt`: an existing kube-rs operator (tests/fixtures/adopt/widget-operator,
//! with its own crdgen that edits `crd()` and its own Makefile) becomes a kopgen project with
//! its sources byte for byte unchanged; its crdgen's edits move into a CRD patch; `create api`
//! adds a second kind beside its layout; and the crate still builds and its tests pass.

mod support;

use std::path::{Path, PathBuf};

use support::{Session, Tree, fails_cleanly_in, run_kopgen, tree};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/adopt/widget-operator")
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read fixture").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

fn ok(dir: &Path, args: &[&str]) -> support::Run {
    let run = run_kopgen(dir, args);
    assert_eq!(
        run.status, 0,
        "kopgen {args:?}:\n{}\n{}",
        run.stdout, run.stderr
    );
    run
}

fn under<'a>(tree: &'a Tree, dir: &str) -> Vec<(&'a String, &'a Option<Vec<u8>>)> {
    tree.iter()
        .filter(|(path, _)| path.starts_with(dir))
        .collect()
}

/// A second kind added to an adopted crate (types only: its manager is its own).
const GADGET: [&str; 9] = [
    "create",
    "api",
    "--group",
    "widgets",
    "--version",
    "v1",
    "--kind",
    "Gadget",
    "--controller=false",
];

const CRD: &str = "config/crd/bases/widgets.example.io_widgets.yaml";

fn crd(project: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(project.join(CRD)).expect("the CRD");
    serde_yaml::from_str(&text).expect("YAML")
}

fn spec_required(crd: &serde_json::Value) -> &serde_json::Value {
    &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"]
}

#[test]
fn an_existing_operator_is_adopted_with_its_sources_unchanged() {
    let session = Session::new();
    let project = session.join("widget-operator");
    copy(&fixture(), &project);
    let before = tree(&project);

    let run = ok(&project, &["init", "--adopt"]);
    assert!(
        run.stdout
            .contains("the Makefile's own `install` target is kept"),
        "{}",
        run.stdout
    );
    let after = tree(&project);
    // Not one byte of the crate's sources changed.
    assert_eq!(under(&before, "src/"), under(&after, "src/"));
    // Its Makefile keeps its own targets, with kopgen's appended where it had none.
    let makefile = session.read("widget-operator/Makefile");
    let original = String::from_utf8(before["Makefile"].clone().expect("a file")).expect("text");
    assert!(makefile.starts_with(&original), "{makefile}");
    assert_eq!(makefile.matches("\ninstall:").count(), 1, "{makefile}");
    assert!(makefile.contains("\nmanifests:") && makefile.contains("\ncrd-compat:"));
    let manifest = session.read("widget-operator/Cargo.toml");
    assert!(
        manifest.contains("[dev-dependencies]\nkopgen-runtime = {"),
        "{manifest}"
    );
    let project_file = session.read("widget-operator/PROJECT");
    for needle in [
        "adopted: true",
        "domain: example.io",
        "kubernetesTypes: kube-derive",
        "path: crate::crd::Widget",
        "projectName: widget-operator",
    ] {
        assert!(project_file.contains(needle), "{needle}:\n{project_file}");
    }
    assert!(
        session
            .read("widget-operator/tests/crds.rs")
            .contains("widget_operator::crd::Widget::crd(),")
    );
    assert!(project.join(".github/workflows/kopgen.yml").is_file());
    // The CRD is the crate's own `crd()` (no patch yet: `note` is required).
    assert_eq!(
        spec_required(&crd(&project)),
        &serde_json::json!(["image", "note"])
    );
    ok(&project, &["manifests", "--check"]);
    let again = fails_cleanly_in(&project, &["init", "--adopt"]);
    assert!(again.contains("already a kopgen project"), "{again}");

    // The crdgen's edits, as a patch `manifests` applies and `--check` holds to.
    session.write(
        "widget-operator/config/crd/bases-patches/widgets.example.io_widgets.yaml",
        "# Old objects lack `note`; Helm keeps the CRD on uninstall.\n\
         - op: test\n  path: /spec/versions/0/schema/openAPIV3Schema/properties/spec/required/1\n  value: note\n\
         - op: remove\n  path: /spec/versions/0/schema/openAPIV3Schema/properties/spec/required/1\n\
         - op: add\n  path: /metadata/annotations\n  value:\n    helm.sh/resource-policy: keep\n",
    );
    let before_check = tree(&project);
    let stale = run_kopgen(&project, &["manifests", "--check"]);
    assert_ne!(stale.status, 0, "the patch is not applied yet");
    assert!(
        stale.stdout.contains("helm.sh/resource-policy"),
        "{}",
        stale.stdout
    );
    assert!(tree(&project) == before_check, "--check wrote");
    ok(&project, &["manifests"]);
    let patched = crd(&project);
    assert_eq!(spec_required(&patched), &serde_json::json!(["image"]));
    assert_eq!(
        patched["metadata"]["annotations"]["helm.sh/resource-policy"],
        "keep"
    );
    ok(&project, &["manifests", "--check"]);

    // A second kind, beside the crate's layout: kopgen's `api` module, declared in lib.rs.
    let refused = fails_cleanly_in(&project, &GADGET[..GADGET.len() - 1]);
    assert!(refused.contains("--controller=false"), "{refused}");
    ok(&project, &GADGET);
    let lib = session.read("widget-operator/src/lib.rs");
    let original_lib =
        String::from_utf8(before["src/lib.rs"].clone().expect("a file")).expect("text");
    assert!(
        lib.starts_with(&original_lib) && lib.ends_with("pub mod api;\n"),
        "{lib}"
    );
    assert_eq!(after["src/crd.rs"], tree(&project)["src/crd.rs"]);
    assert!(project.join("src/api/widgets/v1/gadget.rs").is_file());
    assert!(
        project
            .join("config/crd/bases/widgets.example.io_gadgets.yaml")
            .is_file()
    );
    ok(&project, &["manifests", "--check"]);

    // The crate builds; its own crdgen prints what kopgen wrote; the drift test (with the
    // patch) and the new kind's tests pass.
    support::cargo_ok(&project, &["test"]);
    let crdgen = support::cargo(&project, &["run", "--quiet", "--bin", "crdgen"]);
    assert!(
        crdgen.status.success(),
        "{}",
        String::from_utf8_lossy(&crdgen.stderr)
    );
    let theirs: serde_json::Value =
        serde_yaml::from_slice(&crdgen.stdout).expect("crdgen prints YAML");
    assert_eq!(theirs, crd(&project), "their crdgen and kopgen agree");
}

#[test]
fn adopting_refuses_what_it_cannot_adopt_and_changes_nothing() {
    let session = Session::new();
    // An older kube: upgrade first.
    let project = session.join("old");
    copy(&fixture(), &project);
    let manifest = session
        .read("old/Cargo.toml")
        .replace("version = \"5\"", "version = \"1\"");
    session.write("old/Cargo.toml", &manifest);
    let e = fails_cleanly_in(&project, &["init", "--adopt"]);
    assert!(e.contains("upgrade the crate to them first"), "{e}");
    // A workspace's member, adopted from its own directory: its versions are the workspace's
    // (its lock, else its `[workspace.dependencies]`).
    let member = session.join("workspace/widgets");
    copy(&fixture(), &member);
    let manifest = session.read("workspace/widgets/Cargo.toml").replace(
        "kube = { version = \"5\", default-features = false,",
        "kube = { workspace = true,",
    );
    session.write("workspace/widgets/Cargo.toml", &manifest);
    session.write(
        "workspace/Cargo.toml",
        "[workspace]\nmembers = [\"widgets\"]\nresolver = \"2\"\n\n\
         [workspace.dependencies]\nkube = { version = \"3.0.0\", default-features = false }\n",
    );
    let e = fails_cleanly_in(&member, &["init", "--adopt"]);
    assert!(
        e.contains("Cargo.toml: the crate uses kube-core 3.0.0"),
        "{e}"
    );
    session.write(
        "workspace/Cargo.lock",
        "version = 4\n\n[[package]]\nname = \"kube-derive\"\nversion = \"3.1.0\"\n",
    );
    let e = fails_cleanly_in(&member, &["init", "--adopt"]);
    assert!(
        e.contains("Cargo.lock: the crate uses kube-derive 3.1.0"),
        "{e}"
    );
    // Not a crate.
    std::fs::create_dir_all(session.join("empty")).expect("mkdir");
    let e = fails_cleanly_in(&session.join("empty"), &["init", "--adopt"]);
    assert!(e.contains("no Cargo.toml"), "{e}");
    // Groups without a shared domain.
    let mixed = session.join("mixed");
    copy(&fixture(), &mixed);
    let other = session
        .read("mixed/src/crd.rs")
        .replace("widgets.example.io", "widgets.other.dev");
    session.write("mixed/src/second.rs", &other.replace("Widget", "Thing"));
    session.write(
        "mixed/src/lib.rs",
        "pub mod crd;\npub mod defaults;\npub mod second;\npub mod third;\n",
    );
    // A kind whose schema is written by hand: only compiling the crate gives its CRD.
    session.write(
        "mixed/src/third.rs",
        "use kube::CustomResource;\nuse schemars::JsonSchema;\nuse serde::{Deserialize, Serialize};\n\
         #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n\
         #[kube(group = \"widgets.example.io\", version = \"v1\", kind = \"Knob\")]\n\
         pub struct KnobSpec { pub level: Level }\n\
         #[derive(Deserialize, Serialize, Clone, Debug)]\npub struct Level(pub u8);\n\
         impl JsonSchema for Level {\n    fn schema_name() -> std::borrow::Cow<'static, str> { \"Level\".into() }\n\
         \x20   fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema { schemars::json_schema!({\"type\": \"integer\"}) }\n}\n",
    );
    let e = fails_cleanly_in(&mixed, &["init", "--adopt"]);
    assert!(e.contains("pass --domain"), "{e}");
    let run = ok(&mixed, &["init", "--adopt", "--domain", "example.io"]);
    assert!(
        run.stdout
            .contains("config/crd/bases/widgets.example.io_knobs.yaml need compiling the crate"),
        "{}",
        run.stdout
    );
    assert!(mixed.join(CRD).is_file());
}

/// An adopted member of a workspace: cargo makes the runtime's copy (a `path` dependency inside
/// the workspace) a member too, whatever the workspace's `exclude` says, so the copy must not
/// bring its own tests into `cargo test --workspace`, nor a Kubernetes version into the
/// workspace's builds: a library of the workspace picks it here.
#[test]
fn an_adopted_workspace_member_brings_no_tests_or_kubernetes_version_of_the_runtimes() {
    let session = Session::new();
    let member = session.join("workspace/widgets");
    copy(&fixture(), &member);
    let manifest = session
        .read("workspace/widgets/Cargo.toml")
        .replace(
            "features = [\"latest\", \"schemars\"]",
            "features = [\"schemars\"]",
        )
        .replace(
            "[dependencies]\n",
            "[dependencies]\ncommon = { path = \"../common\" }\n",
        );
    session.write("workspace/widgets/Cargo.toml", &manifest);
    session.write(
        "workspace/common/Cargo.toml",
        "[package]\nname = \"common\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
         [dependencies]\nk8s-openapi = { version = \"0.29\", features = [\"v1_33\"] }\n",
    );
    session.write("workspace/common/src/lib.rs", "");
    session.write(
        "workspace/Cargo.toml",
        "[workspace]\nmembers = [\"common\", \"widgets\"]\nresolver = \"2\"\n",
    );
    ok(&member, &["init", "--adopt"]);

    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(session.join("workspace"))
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let runtime = packages
        .iter()
        .find(|p| p["name"] == "kopgen-runtime")
        .expect("the runtime's copy is a package of the workspace");
    let members = metadata["workspace_members"].as_array().expect("members");
    assert!(
        members.contains(&runtime["id"]),
        "cargo's rule: {members:?}"
    );
    for target in runtime["targets"].as_array().expect("targets") {
        if target["kind"] == serde_json::json!(["lib"]) {
            assert_eq!(target["test"], false, "{target}");
            assert_eq!(target["doctest"], false, "{target}");
        }
    }
    for dependency in runtime["dependencies"].as_array().expect("dependencies") {
        if dependency["name"] == "k8s-openapi" {
            let features = dependency["features"].as_array().expect("features");
            assert!(
                !features.iter().any(|f| {
                    let f = f.as_str().unwrap_or_default();
                    f == "latest" || f == "earliest" || f.starts_with("v1_")
                }),
                "the runtime's {} k8s-openapi enables a version: {features:?}",
                dependency["kind"]
            );
        }
    }
}

#[test]
fn a_binary_crate_is_adopted_without_a_drift_test() {
    let session = Session::new();
    let project = session.join("bin-only");
    copy(&fixture(), &project);
    std::fs::remove_file(project.join("src/lib.rs")).expect("rm");
    std::fs::remove_dir_all(project.join("src/bin")).expect("rm");
    session.write(
        "bin-only/src/main.rs",
        "mod crd;\nmod defaults;\n\nfn main() {}\n",
    );
    let before = tree(&project);
    let run = ok(&project, &["init", "--adopt"]);
    assert!(run.stdout.contains("no drift test"), "{}", run.stdout);
    assert!(!project.join("tests/crds.rs").exists());
    assert!(!project.join("vendor").exists());
    // Cargo.toml untouched: nothing to depend on.
    assert_eq!(before["Cargo.toml"], tree(&project)["Cargo.toml"]);
    assert!(project.join(CRD).is_file());
    ok(&project, &["manifests", "--check"]);
    // `create api` declares kopgen's module in main.rs.
    ok(&project, &GADGET);
    assert!(
        session
            .read("bin-only/src/main.rs")
            .ends_with("pub mod api;\n")
    );
    ok(&project, &["manifests", "--check"]);
}

/// GitHub runs only the workflows at a repository's root: a crate below it (a workspace's
/// member, a monorepo's crate) gets a workflow whose steps run in its directory, and a note
/// saying where the workflow must go; a crate at the root gets neither.
#[test]
fn a_crate_below_its_repository_gets_a_workflow_that_runs_in_its_directory() {
    let session = Session::new();
    std::fs::create_dir_all(session.join("shop/.git")).expect("mkdir");
    let member = session.join("shop/operators/widgets");
    copy(&fixture(), &member);
    let run = ok(&member, &["init", "--adopt"]);
    let note = "move .github/workflows/kopgen.yml to ";
    assert!(run.stdout.contains(note), "{}", run.stdout);
    assert!(
        run.stdout.contains("run in `operators/widgets`"),
        "{}",
        run.stdout
    );
    let workflow = session.read("shop/operators/widgets/.github/workflows/kopgen.yml");
    assert!(
        workflow.contains("    defaults:\n      run:\n        working-directory: \"operators/widgets\"\n    steps:"),
        "{workflow}"
    );
    let parsed: serde_json::Value = serde_saphyr::from_str(&workflow).expect("YAML");
    assert_eq!(
        parsed["jobs"]["manifests"]["defaults"]["run"]["working-directory"],
        "operators/widgets"
    );

    // A directory name YAML or GitHub's `${{ }}` would read otherwise is not written into the
    // workflow: the note says to set it.
    std::fs::create_dir_all(session.join("odd/.git")).expect("mkdir");
    let member = session.join("odd/op ${{ x }}");
    copy(&fixture(), &member);
    let run = ok(&member, &["init", "--adopt"]);
    assert!(
        run.stdout
            .contains("and set its job's `defaults.run.working-directory` to `op ${{ x }}`"),
        "{}",
        run.stdout
    );
    let workflow =
        std::fs::read_to_string(member.join(".github/workflows/kopgen.yml")).expect("workflow");
    assert!(!workflow.contains("working-directory"), "{workflow}");

    std::fs::create_dir_all(session.join("alone/.git")).expect("mkdir");
    copy(&fixture(), &session.join("alone"));
    let run = ok(&session.join("alone"), &["init", "--adopt"]);
    assert!(!run.stdout.contains(note), "{}", run.stdout);
    let workflow = session.read("alone/.github/workflows/kopgen.yml");
    assert!(!workflow.contains("working-directory"), "{workflow}");
}
