//! The chart installed on a real control plane.

use super::*;

/// `helm install` of the chart on a real control plane, where the manager (run here, as the
/// chart's ServiceAccount: there is no kubelet) reconciles a sample; `helm uninstall` leaves the
/// CRD and the objects of its kind.
#[test]
fn the_chart_installs_and_the_operator_reconciles_on_a_real_control_plane() {
    let test = "the_chart_installs_and_the_operator_reconciles_on_a_real_control_plane";
    if !tool(test) {
        return;
    }
    let Some(plane) = support::control_plane(test, support::control_plane::Options::default())
    else {
        return;
    };
    let session = support::Session::new();
    let project = session.init_project("helmdemo", &[]);
    support::create_api_ok(
        &project,
        &["--group", "apps", "--version", "v1", "--kind", "Blog"],
    );
    ok(&project, "edit --helm");
    let binary = support::build_manager(&project, "helmdemo");
    let kubeconfig = plane.kubeconfig().display().to_string();
    helm_ok(
        &project,
        &format!(
            "install helmdemo dist/chart --namespace helmdemo-system --create-namespace --kubeconfig {kubeconfig}"
        ),
    );
    kubectl(
        &plane,
        "wait --for=condition=Established crd/blogs.apps.example.com --timeout=60s",
    );
    let deployment = kubectl(
        &plane,
        "get deployment -n helmdemo-system helmdemo-controller-manager -o json",
    );
    assert!(deployment.contains("--leader-elect"), "{deployment}");
    assert!(
        !deployment.contains("--shards"),
        "off by default: {deployment}"
    );

    let as_chart = plane
        .kubeconfig_as("system:serviceaccount:helmdemo-system:helmdemo-controller-manager")
        .expect("kubeconfig");
    let log = session.join("manager.log");
    let mut manager = start(&binary, &as_chart, &log);
    let context = || std::fs::read_to_string(&log).unwrap_or_default();
    let sample =
        std::fs::read_to_string(project.join("config/samples/apps_v1_blog.yaml")).expect("sample");
    let applied = plane
        .kubectl()
        .args(["apply", "-n", "default", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(sample.as_bytes())?;
            child.wait()
        })
        .expect("kubectl apply");
    assert!(applied.success());
    eventually("the sample is Ready", &context, || {
        let out = plane
            .kubectl()
            .args([
                "get",
                "blogs.apps.example.com",
                "-n",
                "default",
                "-o",
                "json",
            ])
            .output()
            .ok()?;
        let list: Value = serde_json::from_slice(&out.stdout).ok()?;
        let blog = list["items"].get(0)?;
        blog["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
            .then_some(())
    });
    let _ = manager.kill();
    let _ = manager.wait();

    helm_ok(
        &project,
        &format!("uninstall helmdemo --namespace helmdemo-system --kubeconfig {kubeconfig}"),
    );
    let gone = plane
        .kubectl()
        .args([
            "get",
            "deployment",
            "-n",
            "helmdemo-system",
            "helmdemo-controller-manager",
        ])
        .output()
        .expect("kubectl");
    assert!(
        !gone.status.success(),
        "the Deployment outlived the release"
    );
    kubectl(&plane, "get crd blogs.apps.example.com");
    let left = kubectl(&plane, "get blogs.apps.example.com -n default -o name");
    assert!(!left.trim().is_empty(), "the sample went with the release");
}

/// kubectl with the words of `line` as arguments, which must succeed: its output.
fn kubectl(plane: &support::control_plane::ControlPlane, line: &str) -> String {
    kubectl_ok(plane, &line.split_whitespace().collect::<Vec<_>>())
}

fn start(binary: &Path, kubeconfig: &Path, log: &PathBuf) -> Child {
    let out = std::fs::File::create(log).expect("log");
    Command::new(binary)
        .args([
            "--health-probe-bind-address=127.0.0.1:0",
            "--metrics-bind-address=0",
        ])
        .env("KUBECONFIG", kubeconfig)
        .env("POD_NAMESPACE", "helmdemo-system")
        .stdout(out.try_clone().expect("log"))
        .stderr(out)
        .spawn()
        .expect("the manager starts")
}
