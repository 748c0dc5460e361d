//! The Kubebuilder book's tutorials written with kopgen, as a user would: `init`, `create api`,
//! the user's types and controller (`tests/fixtures/tutorials/`), `manifests`; then the
//! project's own checks (fmt, clippy, its scaffolded mocked-API tests) and the tutorial's
//! behaviour on etcd and kube-apiserver, from a test of the project's own.

mod support;

use std::path::Path;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tutorials");

/// Replaces `scaffolded` with `written` in the project's `file`, which must hold it.
fn edit(project: &Path, file: &str, scaffolded: &str, written: &str) {
    let path = project.join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert!(
        text.contains(scaffolded),
        "{scaffolded}\nnot in {file}:\n{text}"
    );
    std::fs::write(&path, text.replacen(scaffolded, written, 1)).expect("write");
}

fn copy(project: &Path, fixture: &str, to: &str) {
    std::fs::copy(format!("{FIXTURES}/{fixture}"), project.join(to))
        .unwrap_or_else(|e| panic!("{fixture}: {e}"));
}

/// Writes the user's `fixture` over the scaffolded `to`, keeping the scaffolded tests (the
/// `#[cfg(test)]` module at its end), which must pass on the user's code unchanged.
fn write_keeping_tests(project: &Path, fixture: &str, to: &str) {
    let path = project.join(to);
    let scaffolded = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{to}: {e}"));
    let tests = scaffolded
        .find("#[cfg(test)]")
        .map(|start| &scaffolded[start..])
        .unwrap_or_else(|| panic!("no tests in {to}"));
    let written = std::fs::read_to_string(format!("{FIXTURES}/{fixture}")).expect("fixture");
    std::fs::write(&path, format!("{written}\n{tests}")).expect("write");
}

/// `manifests`, the project's fmt and clippy, then its tests, among them its control-plane test
/// `test`, which must pass by name.
fn check(project: &Path, assets: &Path, test: &str) {
    let run = support::run_kopgen(project, &["manifests"]);
    assert_eq!(run.status, 0, "kopgen manifests:\n{}", run.stderr);
    support::cargo_ok(project, &["fmt", "--all", "--", "--check"]);
    support::cargo_ok(
        project,
        &["clippy", "--all-targets", "--", "-D", "warnings"],
    );
    support::project_tests_ok(project, assets, test);
}

/// Getting Started: a Memcached's Deployment follows `size` (bounded by the schema), its
/// Available and Progressing conditions follow the Deployment, and its finalizer's cleanup
/// runs on deletion.
#[test]
fn memcached_of_getting_started_works_on_a_real_control_plane() {
    let test = "memcached_of_getting_started_works_on_a_real_control_plane";
    let Some(assets) = support::control_plane_assets() else {
        support::skip(test, "no control-plane binaries (run .ci/control-plane.sh)");
        return;
    };
    let session = support::Session::new();
    let project = session.init_project("memcached-operator", &[]);
    let kind = [
        "--group",
        "cache",
        "--version",
        "v1alpha1",
        "--kind",
        "Memcached",
    ];
    support::create_api_ok(&project, &kind);
    edit(
        &project,
        "src/api/cache/v1alpha1/memcached.rs",
        "    /// An example field: the controller copies it into the ConfigMap it manages for each\n    /// Memcached. Replace it with the fields that describe your desired state.\n    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub foo: Option<String>,\n",
        "    /// The number of Memcached instances.\n    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    #[schemars(range(min = 1, max = 3))]\n    pub size: Option<i32>,\n",
    );
    edit(
        &project,
        "config/samples/cache_v1alpha1_memcached.yaml",
        "  # TODO(user): Add fields here\n  foo: bar\n",
        "  size: 1\n",
    );
    write_keeping_tests(
        &project,
        "memcached_controller.rs",
        "src/controllers/cache/memcached_controller.rs",
    );
    copy(&project, "memcached_test.rs", "tests/memcached.rs");
    check(
        &project,
        &assets,
        "memcached_follows_its_size_and_reports_its_conditions",
    );
}

/// The user's webhook code, replacing the scaffold's TODOs: the tutorial's defaults and its
/// two refusals, with the field at fault.
const CRONJOB_WEBHOOK_EDITS: &[(&str, &str)] = &[
    (
        "use kopgen_runtime::webhook::{\n    self, Defaulter, Denied, Review, Routes, Validator, Verdict, Warnings,\n};\n",
        "use std::str::FromStr;\n\nuse kopgen_runtime::webhook::{\n    self, Defaulter, Denied, FieldError, Review, Routes, Validator, Verdict, Warnings,\n};\nuse kube::ResourceExt;\n",
    ),
    (
        "use crate::api::batch::v1::CronJob;\n",
        "use crate::api::batch::v1::{ConcurrencyPolicy, CronJob};\n",
    ),
    (
        "        // TODO(user): fill in defaults, e.g.\n        // self.spec.replicas.get_or_insert(1);\n        let _ = review;\n",
        "        let _ = review;\n        let spec = &mut self.spec;\n        spec.concurrency_policy\n            .get_or_insert(ConcurrencyPolicy::Allow);\n        spec.suspend.get_or_insert(false);\n        spec.successful_jobs_history_limit.get_or_insert(3);\n        spec.failed_jobs_history_limit.get_or_insert(1);\n",
    ),
    (
        "        // TODO(user): refuse what must not be stored.\n        let _ = review;\n        Ok(Warnings::new())\n",
        "        let _ = review;\n        let mut errors = Vec::new();\n        // Job names are the CronJob's name and 11 more characters, within 63.\n        let name = self.name_any();\n        if name.len() > 52 {\n            let detail = \"must be no more than 52 characters\";\n            errors.push(FieldError::invalid(\"metadata.name\", &name, detail));\n        }\n        let schedule = &self.spec.schedule;\n        if let Err(error) = cron::Schedule::from_str(schedule) {\n            let detail = error.to_string();\n            errors.push(FieldError::invalid(\"spec.schedule\", schedule, &detail));\n        }\n        match errors.is_empty() {\n            true => Ok(Warnings::new()),\n            false => Err(Denied::invalid(errors)),\n        }\n",
    ),
];

/// The CronJob tutorial: Jobs on a schedule (every two seconds), the history pruned to its
/// limits, suspend, the Forbid and Replace policies, the defaulting and validating webhooks,
/// and a v2 whose structured schedule converts to and from v1 (failing where v1 holds more).
#[test]
fn cronjob_of_the_tutorial_works_on_a_real_control_plane() {
    let test = "cronjob_of_the_tutorial_works_on_a_real_control_plane";
    let Some(assets) = support::control_plane_assets() else {
        support::skip(test, "no control-plane binaries (run .ci/control-plane.sh)");
        return;
    };
    let session = support::Session::new();
    let project = session.init_project("cronjob-tutorial", &[]);
    let kind = ["--group", "batch", "--version", "v1", "--kind", "CronJob"];
    support::create_api_ok(&project, &kind);
    // The tutorial's second version, converted through v1, the hub.
    let v2 = ["--group", "batch", "--version", "v2", "--kind", "CronJob"];
    support::create_api_ok(&project, &[&v2[..], &["--controller=false"]].concat());
    let mut webhook = vec!["create", "webhook"];
    webhook.extend(kind);
    webhook.extend(["--defaulting", "--programmatic-validation"]);
    webhook.extend(["--conversion", "--spoke", "v2"]);
    let run = support::run_kopgen(&project, &webhook);
    assert_eq!(run.status, 0, "{}", run.stderr);
    // The crates the tutorial's Go code gets from robfig/cron and the standard library.
    edit(
        &project,
        "Cargo.toml",
        "tracing = \"0.1\"\n",
        "tracing = \"0.1\"\ncron = \"0.15\"\nchrono = { version = \"0.4\", default-features = false, features = [\"clock\", \"std\"] }\n",
    );
    edit(
        &project,
        "Cargo.toml",
        "serde-saphyr = \"2\"\n",
        "serde-saphyr = \"2\"\njson-patch = \"4\"\n",
    );
    copy(&project, "cronjob_types.rs", "src/api/batch/v1/cron_job.rs");
    copy(
        &project,
        "cronjob_v2_types.rs",
        "src/api/batch/v2/cron_job.rs",
    );
    write_keeping_tests(
        &project,
        "cronjob_conversion.rs",
        "src/webhooks/batch_v1_cron_job_conversion.rs",
    );
    edit(
        &project,
        "config/samples/batch_v1_cron_job.yaml",
        "  # TODO(user): Add fields here\n  foo: bar\n",
        "  schedule: \"0 */1 * * * *\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers:\n          - name: hello\n            image: busybox\n            args: [\"date\"]\n",
    );
    edit(
        &project,
        "config/samples/batch_v2_cron_job.yaml",
        "  # TODO(user): Add fields here\n  foo: bar\n",
        "  schedule:\n    second: \"0\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers:\n          - name: hello\n            image: busybox\n            args: [\"date\"]\n",
    );
    // With tests of its own: the scaffolded ones check a controller whose children follow from
    // the spec alone, and a CronJob's follow from the clock.
    copy(
        &project,
        "cronjob_controller.rs",
        "src/controllers/batch/cron_job_controller.rs",
    );
    for (scaffolded, written) in CRONJOB_WEBHOOK_EDITS {
        edit(
            &project,
            "src/webhooks/batch_v1_cron_job.rs",
            scaffolded,
            written,
        );
    }
    copy(&project, "cronjob_test.rs", "tests/cronjob.rs");
    // The PodTemplateSpec a CronJob embeds brings most of the CRD's bytes, in descriptions:
    // PROJECT's maxDescLen cuts them for `manifests` and for the project's drift test alike.
    let bases = project.join("config/crd/bases/batch.example.com_cronjobs.yaml");
    let run = support::run_kopgen(&project, &["manifests"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let whole = std::fs::metadata(&bases).map(|m| m.len()).expect("the CRD");
    let run = support::run_kopgen(&project, &["edit", "--max-desc-len", "80"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let cut = std::fs::metadata(&bases).map(|m| m.len()).expect("the CRD");
    assert!(cut * 4 < whole * 3, "{whole} bytes, then {cut}");
    check(
        &project,
        &assets,
        "cronjob_runs_on_schedule_prunes_its_history_and_follows_its_policies",
    );
}

/// The book's "Watching Resources" (a ConfigDeployment whose Deployment follows the ConfigMap
/// its spec names, through an index of the references and a watch) with the label trigger and
/// readiness from the Deployment's availability, and a cluster-scoped Tenant that owns its
/// Namespace and ClusterRole.
#[test]
fn watching_resources_works_on_a_real_control_plane() {
    let test = "watching_resources_works_on_a_real_control_plane";
    let Some(assets) = support::control_plane_assets() else {
        support::skip(test, "no control-plane binaries (run .ci/control-plane.sh)");
        return;
    };
    let session = support::Session::new();
    let project = session.init_project("watching-tutorial", &[]);
    let kind = [
        "--group",
        "apps",
        "--version",
        "v1",
        "--kind",
        "ConfigDeployment",
    ];
    support::create_api_ok(&project, &kind);
    let tenant = ["--group", "tenancy", "--version", "v1", "--kind", "Tenant"];
    support::create_api_ok(&project, &[&tenant[..], &["--namespaced=false"]].concat());
    edit(
        &project,
        "src/api/apps/v1/config_deployment.rs",
        "    /// An example field: the controller copies it into the ConfigMap it manages for each\n    /// ConfigDeployment. Replace it with the fields that describe your desired state.\n    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub foo: Option<String>,\n",
        "    /// Name of an existing ConfigMap in the same namespace, to add to the Deployment.\n    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub config_map: Option<String>,\n",
    );
    edit(
        &project,
        "config/samples/apps_v1_config_deployment.yaml",
        "spec:\n  # TODO(user): Add fields here\n  foo: bar\n",
        "spec: {}\n",
    );
    write_keeping_tests(
        &project,
        "configdeployment_controller.rs",
        "src/controllers/apps/config_deployment_controller.rs",
    );
    write_keeping_tests(
        &project,
        "tenant_controller.rs",
        "src/controllers/tenancy/tenant_controller.rs",
    );
    // A ConfigDeployment is ready once its pods run, and no kubelet runs on the test's control
    // plane: its own test reports the Deployment available, where the generic one cannot.
    edit(
        &project,
        "tests/integration.rs",
        "converges_and_cleans_up!(\n    apps_v1_config_deployment,\n    \"config/samples/apps_v1_config_deployment.yaml\"\n);\n",
        "",
    );
    copy(&project, "configdeployment_test.rs", "tests/watching.rs");
    check(
        &project,
        &assets,
        "config_deployment_follows_what_it_references_and_tenant_owns_cluster_scoped_children",
    );
}
