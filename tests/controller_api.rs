//! The runtime's controller API as a user writes it, on a real control plane: a project whose
//! Blog controller has two child kinds, a status field of its own, pruning and a requeue after
//! a computed delay, and whose cluster-scoped Tenant keeps its child in another namespace
//! (`tests/fixtures/controller_api/`). The project's own test (`api.rs` there) checks each on
//! etcd and kube-apiserver.

mod support;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/controller_api");

#[test]
fn several_kinds_own_status_pruning_requeue_and_other_namespaces_work_on_a_real_control_plane() {
    let test = "several_kinds_own_status_pruning_requeue_and_other_namespaces_work";
    let Some(assets) = support::control_plane_assets() else {
        support::skip(test, "no control-plane binaries (run .ci/control-plane.sh)");
        return;
    };
    let session = support::Session::new();
    let project = session.init_project("apitest", &[]);
    for args in [
        "--group apps --version v1 --kind Blog",
        "--group platform --version v1 --kind Tenant --namespaced=false",
    ] {
        let args: Vec<&str> = args.split_whitespace().collect();
        support::create_api_ok(&project, &args);
    }
    let copy = |fixture: &str, to: &str| {
        std::fs::copy(format!("{FIXTURES}/{fixture}"), project.join(to))
            .unwrap_or_else(|e| panic!("{fixture}: {e}"));
    };
    copy(
        "blog_controller.rs",
        "src/controllers/apps/blog_controller.rs",
    );
    copy(
        "tenant_controller.rs",
        "src/controllers/platform/tenant_controller.rs",
    );
    copy("api.rs", "tests/api.rs");
    // The user's status fields, beside the scaffolded ones.
    let types = project.join("src/api/apps/v1/blog.rs");
    let text = std::fs::read_to_string(&types).expect("types");
    let anchor = "    pub observed_generation: Option<i64>,\n";
    assert!(text.contains(anchor), "{text}");
    let fields = "\n    /// Pages published.\n    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub pages: Option<i64>,\n\n    /// Reconciles so far.\n    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub checks: Option<i64>,\n";
    let text = text.replacen(anchor, &format!("{anchor}{fields}"), 1);
    // Its scaffolded test builds the status by hand.
    let text = text.replacen(
        "            observed_generation: Some(3),\n",
        "            observed_generation: Some(3),\n            ..BlogStatus::default()\n",
        1,
    );
    std::fs::write(&types, text).expect("write types");
    let run = support::run_kopgen(&project, &["manifests"]);
    assert_eq!(run.status, 0, "kopgen manifests:\n{}", run.stderr);

    support::cargo_ok(&project, &["fmt", "--all", "--", "--check"]);
    support::cargo_ok(
        &project,
        &["clippy", "--all-targets", "--", "-D", "warnings"],
    );
    // The scaffolded tests (mocked API) still pass on the user's controllers, beside the
    // project's own test on the control plane.
    support::project_tests_ok(&project, &assets, "the_whole_api_on_a_real_control_plane");
}
