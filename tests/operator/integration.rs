//! `make test-integration` of a generated project.

use super::*;

/// `make test-integration` of a generated project: each kind's scaffolded integration test
/// runs against the control plane of `KUBEBUILDER_ASSETS` and passes, by name.
#[test]
fn make_test_integration_runs_each_kinds_test_on_a_real_control_plane() {
    let test = "make_test_integration_runs_each_kinds_test_on_a_real_control_plane";
    if !support::need("make", test, "apt install make") {
        return;
    }
    let Some(assets) = support::control_plane_assets() else {
        support::skip(test, "no control-plane binaries (run .ci/control-plane.sh)");
        return;
    };
    let session = support::Session::new();
    // Not "demo": its `cargo test` builds the manager into the shared target directory, where
    // the other tests' "demo" managers are built.
    let project = session.init_project("itest", &[]);
    for args in [
        "--group apps --version v1 --kind Blog",
        "--group apps --version v1alpha1 --kind Blog",
        "--group db --version v1 --kind Tenant --namespaced=false",
        "--group platform-engineering --version v1beta1 --kind ApplicationNetworkPolicyBinding",
        "--group apps --version v1 --kind Deployment --resource=false",
    ] {
        let args: Vec<&str> = args.split_whitespace().collect();
        support::create_api_ok(&project, &args);
    }
    let output = Command::new("make")
        .arg("test-integration")
        .arg(format!("KOPGEN={}", env!("CARGO_BIN_EXE_kopgen")))
        .current_dir(&project)
        .env("KUBEBUILDER_ASSETS", &assets)
        .env("CARGO_TARGET_DIR", support::shared_target_dir())
        .env("SOURCE_DATE_EPOCH", support::SOURCE_DATE_EPOCH)
        .env_remove("RUSTFLAGS")
        .output()
        .expect("make runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "make test-integration failed:\n{stdout}\n{stderr}"
    );
    assert!(!stderr.contains("skipped"), "a test did not run:\n{stderr}");
    let ran = support::reported_tests(&stdout);
    let expected: Vec<(String, String)> = [
        "apps_v1_blog",
        "db_v1_tenant",
        "platform_engineering_v1beta1_application_network_policy_binding",
    ]
    .iter()
    .map(|name| (name.to_string(), "ok".to_string()))
    .collect::<std::collections::BTreeSet<_>>()
    .into_iter()
    .collect();
    assert_eq!(ran, expected, "{stdout}");
}
