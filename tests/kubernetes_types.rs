//! Kubernetes types inside a project's CRDs carry Kubernetes' own annotations (PROJECT's
//! `kubernetesTypes: openapi`, the default for new projects): `kopgen manifests` writes them
//! statically and by compiling alike, they are what the runtime's `Settings` makes of `crd()`
//! (which the project's drift test checks), and `kubernetesTypes: kube-derive` gives `crd()`
//! back byte for byte.

mod support;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopgen_runtime::crds::Settings;

const TYPES: &str = r#"use k8s_openapi::api::core::v1::{PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A batch of pods.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "apps.example.com", version = "v1", kind = "Batch", namespaced)]
#[kube(status = "BatchStatus")]
#[serde(rename_all = "camelCase")]
pub struct BatchSpec {
    /// The pods to run.
    pub template: PodTemplateSpec,
    /// What each may use.
    pub resources: Option<ResourceRequirements>,
}

/// What was observed.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct BatchStatus {
    /// The conditions.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
"#;

const CRD: &str = "config/crd/bases/apps.example.com_batches.yaml";

/// A project (crate `name`) with a kind `Batch` and no controller.
fn batch_project(session: &support::Session, name: &str) -> std::path::PathBuf {
    let project = session.init_project(name, &[]);
    support::create_api_ok(
        &project,
        &[
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Batch",
            "--controller=false",
        ],
    );
    project
}

fn read_crd(project: &std::path::Path) -> (String, CustomResourceDefinition) {
    let text = std::fs::read_to_string(project.join(CRD)).expect("the CRD");
    let crd = serde_yaml::from_str(&text).expect("a CRD");
    (text, crd)
}

#[test]
fn kubernetes_types_carry_kubernetes_annotations_in_every_path_and_can_be_turned_off() {
    let session = support::Session::new();
    let project = batch_project(&session, "ktypes-batch");
    let project_file = std::fs::read_to_string(project.join("PROJECT")).expect("PROJECT");
    assert!(
        project_file.contains("kubernetesTypes: openapi\n"),
        "{project_file}"
    );
    std::fs::write(project.join("src/api/apps/v1/batch.rs"), TYPES).expect("write");
    let sample = project.join("config/samples/apps_v1_batch.yaml");
    let text = std::fs::read_to_string(&sample).expect("the sample");
    let text = text.replace(
        "  # TODO(user): Add fields here\n  foo: bar\n",
        "  template:\n    spec:\n      containers:\n      - name: run\n        image: busybox\n",
    );
    std::fs::write(&sample, text).expect("write");
    let run = support::run_kopgen(&project, &["edit", "--max-desc-len", "60"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let (enriched_text, enriched) = read_crd(&project);
    for annotation in [
        "x-kubernetes-list-map-keys:\n",
        "x-kubernetes-list-type: map\n",
        "x-kubernetes-map-type: atomic\n",
        "default: TCP\n",
        "x-kubernetes-int-or-string: true\n",
        "- Unknown\n",
    ] {
        assert!(
            enriched_text.contains(annotation),
            "{annotation:?} missing from {CRD}"
        );
    }

    // kube-derive's schema as it is, on request, and `--check` agrees with the switch.
    let run = support::run_kopgen(&project, &["edit", "--kubernetes-types", "kube-derive"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let (plain_text, plain) = read_crd(&project);
    assert!(!plain_text.contains("x-kubernetes-list-map-keys"));
    let check = support::run_kopgen(&project, &["manifests", "--check"]);
    assert_eq!(check.status, 0, "{}{}", check.stdout, check.stderr);

    // The runtime's settings make of the plain CRD (descriptions whole) what kopgen wrote.
    let run = support::run_kopgen(&project, &["edit", "--max-desc-len", "none"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let (_, whole) = read_crd(&project);
    assert_ne!(whole, plain);
    let mut by_runtime = whole;
    Settings::default()
        .with_kubernetes_annotations(true)
        .with_max_desc_len(Some(60))
        .apply(&mut by_runtime);
    assert_eq!(by_runtime, enriched);

    // By compiling the crate, the same bytes as from the source.
    let run = support::run_kopgen(&project, &["edit", "--kubernetes-types", "openapi"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let (statically, _) = read_crd(&project);
    let compiled = std::process::Command::new(env!("CARGO_BIN_EXE_kopgen"))
        .args(["manifests", "--derive", "compile", "--check"])
        .current_dir(&project)
        .env("CARGO_TARGET_DIR", support::shared_target_dir())
        .output()
        .expect("kopgen runs");
    assert!(
        compiled.status.success(),
        "{}{}",
        String::from_utf8_lossy(&compiled.stdout),
        String::from_utf8_lossy(&compiled.stderr)
    );
    assert_eq!(read_crd(&project).0, statically);
}

/// An edit whose `manifests` fails (here a lint error in the user's types) changes nothing:
/// PROJECT is put back, and the CRDs stay as they were.
#[test]
fn an_edit_whose_manifests_fail_changes_nothing() {
    let session = support::Session::new();
    let project = batch_project(&session, "ktypes-refused");
    let types = TYPES.replace(
        "    pub resources: Option<ResourceRequirements>,\n",
        "    pub resources: Option<ResourceRequirements>,\n    /// Anything.\n    pub anything: serde_json::Value,\n",
    );
    std::fs::write(project.join("src/api/apps/v1/batch.rs"), types).expect("write");
    let before = support::tree(&project);
    for edit in [
        &["edit", "--max-desc-len", "10"][..],
        &["edit", "--kubernetes-types", "kube-derive"],
        &["edit", "--helm"],
    ] {
        let run = support::run_kopgen(&project, edit);
        assert_ne!(run.status, 0, "{edit:?}");
        assert!(
            run.stderr.contains("error[untyped]") && run.stderr.contains("nothing changed"),
            "{edit:?}: {}",
            run.stderr
        );
        assert_eq!(support::tree(&project), before, "{edit:?} changed files");
    }
}
