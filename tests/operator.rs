//! The generated operator, end to end on a real control plane (etcd, kube-apiserver and
//! kube-controller-manager for garbage collection; see `tests/support/mod.rs`).
//!
//! A project with kinds in two groups, two versions of one kind and a controller for a
//! built-in kind is scaffolded, its manifests generated and applied as `make deploy` would,
//! and its manager binary run out of the cluster with a kubeconfig that impersonates the
//! manager's ServiceAccount: the generated RBAC is all that authorizes it, so a missing
//! marker is a 403 and a failed test. The audit log then shows which granted verbs were used.

#[path = "operator/integration.rs"]
mod integration;
#[path = "operator/permissions.rs"]
mod permissions;
mod support;

use std::{
    collections::BTreeSet,
    process::Command,
    thread,
    time::{Duration, Instant},
};

use permissions::{used_as_granted, used_permissions};
use serde_json::Value;
use support::blog::{
    Manager, SERVICE_ACCOUNT, apply, blog, converged, deploy_blog_project, drop_foo, first_log,
    get, lease_holder, refused_log,
};
use support::control_plane::{ControlPlane, Options};
use support::{eventually, http_get, kubectl_ok};

/// `GET url` over HTTPS with curl (the manager's certificate is self-signed): the status code
/// and body.
fn https_get(url: &str, token: Option<&str>) -> (u16, String) {
    let mut curl = Command::new("curl");
    curl.args(["-sSk", "--max-time", "10", "-w", "\n%{http_code}", url]);
    if let Some(token) = token {
        curl.args(["-H", &format!("Authorization: Bearer {token}")]);
    }
    let out = curl.output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

#[test]
fn the_generated_operator_works_on_a_real_control_plane() {
    let test = "the_generated_operator_works_on_a_real_control_plane";
    let options = Options {
        garbage_collection: true,
        audit: true,
        ..Options::default()
    };
    if !support::need("curl", test, "apt install curl") {
        return;
    }
    let Some(plane) = support::control_plane(test, options) else {
        return;
    };
    let mut timings: Vec<(String, Duration)> = Vec::new();
    let mut step = Instant::now();
    let mut lap = |name: &str, timings: &mut Vec<(String, Duration)>| {
        timings.push((name.to_owned(), step.elapsed()));
        step = Instant::now();
    };

    // Scaffold: kinds in two groups, two versions of Blog (v1 stores and has the controller),
    // and a controller for Deployments.
    let session = support::Session::new();
    let project = session.init_demo(&[]);
    for args in [
        "--group apps --version v1 --kind Blog --finalizer",
        "--group apps --version v1alpha1 --kind Blog",
        "--group platform --version v1 --kind Tenant --namespaced=false",
        "--group apps --version v1 --kind Deployment --resource=false",
    ] {
        let args: Vec<&str> = args.split_whitespace().collect();
        support::create_api_ok(&project, &args);
    }
    let run = support::run_kopgen(&project, &["manifests"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    lap("scaffold and kopgen manifests", &mut timings);
    let binary = support::build_manager(&project, "demo");
    lap("cargo build (shared target dir)", &mut timings);

    // Install as `make deploy` does: CRDs, namespace, RBAC, the manager's Deployment (which
    // nothing runs here: there is no kubelet).
    let rendered = kubectl_ok(
        &plane,
        &[
            "kustomize",
            &project.join("config/default").display().to_string(),
        ],
    );
    apply(&plane, &rendered);
    kubectl_ok(
        &plane,
        &[
            "wait",
            "--for=condition=Established",
            "crd",
            "--all",
            "--timeout=60s",
        ],
    );
    lap("install config/default", &mut timings);

    // A probe port in use stops the manager at once, with the address in the error.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let taken_port = taken.local_addr().expect("addr").port();
    let blocked = Command::new(&binary)
        .args([
            &format!("--health-probe-bind-address=127.0.0.1:{taken_port}"),
            "--metrics-bind-address=0",
        ])
        .env("KUBECONFIG", plane.kubeconfig())
        .output()
        .expect("the manager runs");
    let said = String::from_utf8_lossy(&blocked.stderr);
    assert!(
        !blocked.status.success(),
        "a manager without its probe port ran"
    );
    assert!(
        said.contains(&format!(
            "cannot listen on the health probe address 127.0.0.1:{taken_port}"
        )),
        "{said}"
    );
    drop(taken);

    // Impersonation really restricts: a ServiceAccount without the generated RBAC is refused
    // (so the runs below are authorized by that RBAC alone, not by the admin's token).
    let nobody = plane
        .kubeconfig_as("system:serviceaccount:demo-system:nobody")
        .expect("kubeconfig");
    let mut refused = Manager::start(&binary, &nobody, "manager-0", session.path());
    eventually(
        "a manager without RBAC is refused",
        &|| refused_log(&session),
        || refused_log(&session).contains("forbidden").then_some(()),
    );
    // Leader election is refused first; nothing is reported as a failed reconcile.
    assert!(
        !refused_log(&session).contains("reconcile failed"),
        "{}",
        refused_log(&session)
    );
    refused.terminate();
    lap("without RBAC: forbidden", &mut timings);

    let sa_kubeconfig = plane.kubeconfig_as(SERVICE_ACCOUNT).expect("kubeconfig");
    let mut first = Manager::start(&binary, &sa_kubeconfig, "manager-1", session.path());
    let context = || {
        let second = std::fs::read_to_string(session.join("manager-2.log")).unwrap_or_default();
        let first = first_log(&session);
        format!(
            "--- manager-1\n{first}\n--- manager-2\n{second}\n{}",
            plane.logs()
        )
    };
    eventually("manager-1 answers /readyz", &context, || {
        http_get(first.probes, "/readyz").filter(|(code, _)| *code == 200)
    });
    assert_eq!(
        http_get(first.probes, "/healthz").map(|(code, _)| code),
        Some(200)
    );
    eventually("manager-1 holds the Lease", &context, || {
        (lease_holder(&plane).as_deref() == Some("manager-1")).then_some(())
    });
    lap("manager ready and leader", &mut timings);

    // A Blog gets its ConfigMap (controller owner reference) and a Ready status.
    apply(&plane, &blog("first", "v1", "bar"));
    converged(&plane, "first", "bar", &context);
    let first_blog = get(&plane, "blogs.apps.example.com", "first", "default").expect("blog");
    // Every write to the Blog, from the audit log: who set or dropped the finalizer.
    let writes = || {
        std::fs::read_to_string(plane.audit_log())
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"resource\":\"blogs\"") && !l.contains("\"verb\":\"watch\""))
            .filter(|l| !l.contains("\"verb\":\"list\"") && !l.contains("\"verb\":\"get\""))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        first_blog["metadata"]["finalizers"],
        serde_json::json!(["apps.example.com/finalizer"]),
        "scaffolded with --finalizer: {first_blog:#}\n--- writes to blogs\n{}\n{}",
        writes(),
        context()
    );
    lap("create: child and Ready status", &mut timings);

    // A spec edit updates the child.
    apply(&plane, &blog("first", "v1", "baz"));
    converged(&plane, "first", "baz", &context);
    lap("spec edit reaches the child", &mut timings);

    // A key the spec no longer asks for is removed from the child.
    drop_foo(&plane, "first");
    eventually("foo is removed from the child", &context, || {
        let cm = get(&plane, "configmap", "first", "default")?;
        cm["data"]["foo"].is_null().then_some(())
    });
    apply(&plane, &blog("first", "v1", "baz"));
    converged(&plane, "first", "baz", &context);
    // The same as the first change of a new Blog: the child was created with a plain create,
    // whose fields only an apply that first takes them over can remove.
    apply(&plane, &blog("fresh", "v1", "once"));
    converged(&plane, "fresh", "once", &context);
    drop_foo(&plane, "fresh");
    eventually("foo is removed from a created child", &context, || {
        let cm = get(&plane, "configmap", "fresh", "default")?;
        cm["data"]["foo"].is_null().then_some(())
    });
    let managers = kubectl_ok(
        &plane,
        &[
            "get",
            "configmap",
            "fresh",
            "-n",
            "default",
            "--show-managed-fields",
            "-o",
            "jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation} {end}",
        ],
    );
    assert_eq!(
        managers.trim(),
        "demo-manager/Apply",
        "the create's fields were handed to the apply"
    );
    kubectl_ok(
        &plane,
        &["delete", "blogs.apps.example.com", "fresh", "-n", "default"],
    );
    lap("a removed spec field leaves the child", &mut timings);

    // An edit of the child by someone else is repaired.
    kubectl_ok(
        &plane,
        &[
            "patch",
            "configmap",
            "first",
            "-n",
            "default",
            "--type=merge",
            "-p",
            r#"{"data":{"foo":"tampered"}}"#,
        ],
    );
    converged(&plane, "first", "baz", &context);
    lap("drift in the child repaired", &mut timings);

    // The events the controller emits reach the API server.
    let events = kubectl_ok(
        &plane,
        &["get", "events.events.k8s.io", "-n", "default", "-o", "json"],
    );
    assert!(
        events.contains("\"kind\": \"Blog\""),
        "no event about a Blog: {events}"
    );

    // Written as v1alpha1, read as v1 (the storage version), and reconciled.
    apply(&plane, &blog("older", "v1alpha1", "old"));
    let as_v1 = kubectl_ok(
        &plane,
        &[
            "get",
            "blogs.v1.apps.example.com",
            "older",
            "-n",
            "default",
            "-o",
            "json",
        ],
    );
    let as_v1: Value = serde_json::from_str(&as_v1).expect("json");
    assert_eq!(as_v1["apiVersion"], "apps.example.com/v1");
    assert_eq!(as_v1["spec"]["foo"], "old");
    converged(&plane, "older", "old", &context);
    lap("v1alpha1 object read as v1 and reconciled", &mut timings);

    // A cluster-scoped kind of the second group: its child lives in the manager's namespace,
    // and deleting the child is repaired at once (the owner is found across scopes), not at
    // the next resync.
    apply(
        &plane,
        "apiVersion: platform.example.com/v1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  foo: hot\n",
    );
    let tenant_child = || get(&plane, "configmap", "tenant-acme", "demo-system");
    let uid = eventually("the Tenant's ConfigMap", &context, || {
        let cm = tenant_child()?;
        (cm["metadata"]["ownerReferences"][0]["kind"] == "Tenant")
            .then(|| cm["metadata"]["uid"].clone())
    });
    kubectl_ok(
        &plane,
        &["delete", "configmap", "tenant-acme", "-n", "demo-system"],
    );
    let repair = Instant::now();
    eventually(
        "the deleted child of a cluster-scoped owner is recreated",
        &context,
        || {
            tenant_child()
                .filter(|cm| cm["metadata"]["uid"] != uid)
                .map(drop)
        },
    );
    let cross_scope_repair = repair.elapsed();
    assert!(
        cross_scope_repair < Duration::from_secs(10),
        "{cross_scope_repair:?}"
    );
    lap(
        "cluster-scoped kind: child deleted and recreated",
        &mut timings,
    );

    // An object of the child's name that the Blog does not control is never taken over.
    apply(
        &plane,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: taken\n  namespace: default\ndata:\n  mine: \"yes\"\n",
    );
    apply(&plane, &blog("taken", "v1", "theirs"));
    eventually("the Blog reports the conflict", &context, || {
        let blog = get(&plane, "blogs.apps.example.com", "taken", "default")?;
        blog["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| {
                c["type"] == "Ready" && c["status"] == "False" && c["reason"] == "ChildNotOwned"
            })
            .then_some(())
    });
    let untouched = get(&plane, "configmap", "taken", "default").expect("still there");
    assert!(
        untouched["metadata"]["ownerReferences"].is_null(),
        "{untouched}"
    );
    assert_eq!(untouched["data"], serde_json::json!({"mine": "yes"}));
    lap(
        "a foreign object of the child's name is left alone",
        &mut timings,
    );

    // The built-in kind's controller watches Deployments.
    apply(
        &plane,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx\n",
    );
    eventually("the Deployment is observed", &context, || {
        first_log(&session)
            .contains("observed Deployment")
            .then_some(())
    });
    lap("second group and built-in kind", &mut timings);

    // Metrics are served over HTTPS to tokens allowed to read them: 401 without a token, 403
    // for a ServiceAccount without the metrics-reader role, 200 with it. The manager checks
    // with the API server as its ServiceAccount, so config/rbac's metrics-auth-role is proven.
    let url = format!("https://127.0.0.1:{}/metrics", first.metrics);
    assert_eq!(https_get(&url, None).0, 401);
    for account in ["stranger", "scraper"] {
        kubectl_ok(
            &plane,
            &["create", "serviceaccount", account, "-n", "default"],
        );
    }
    kubectl_ok(
        &plane,
        &[
            "create",
            "clusterrolebinding",
            "scraper-metrics",
            "--clusterrole=demo-metrics-reader",
            "--serviceaccount=default:scraper",
        ],
    );
    let token = |account: &str| kubectl_ok(&plane, &["create", "token", account, "-n", "default"]);
    let (code, body) = https_get(&url, Some(token("stranger").trim()));
    assert_eq!(code, 403, "{body}");
    let (code, metrics) = https_get(&url, Some(token("scraper").trim()));
    assert_eq!(code, 200, "{metrics}\n{}", context());
    assert!(metrics.contains("# EOF"), "{metrics}");
    lap("metrics: 401, 403, 200 over HTTPS", &mut timings);

    // controller-runtime's names, as Kubebuilder's dashboards read them: every query of the
    // scaffolded dashboards finds its metric and labels, and the counts follow what this test
    // did (reconciles that succeeded, the foreign ConfigMap's failures, one leader).
    let problems = support::dashboards::problems(&project, &metrics);
    assert!(problems.is_empty(), "{}\n{metrics}", problems.join("\n"));
    let value = |series: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{series} missing from\n{metrics}"))
    };
    assert!(
        value(r#"controller_runtime_reconcile_total{controller="apps-blog",result="success"}"#)
            >= 1.0
    );
    assert!(value(r#"controller_runtime_reconcile_errors_total{controller="apps-blog"}"#) >= 1.0);
    assert!(value(r#"workqueue_retries_total{name="apps-blog",controller="apps-blog"}"#) >= 1.0);
    assert_eq!(
        value(r#"leader_election_master_status{name="demo.example.com"}"#),
        1.0
    );
    assert!(value("process_resident_memory_bytes") > 0.0);
    // Once nothing changes, nothing waits.
    eventually("the work queues drain", &context, || {
        let (_, now) = https_get(&url, Some(token("scraper").trim()));
        let depths: Vec<&str> = now
            .lines()
            .filter(|l| l.starts_with("workqueue_depth{"))
            .collect();
        (!depths.is_empty() && depths.iter().all(|l| l.ends_with(" 0"))).then_some(())
    });
    lap(
        "metrics: controller-runtime's names, dashboards' queries",
        &mut timings,
    );

    // Deleting the Blog runs the finalizer; the garbage collector removes the ConfigMap.
    kubectl_ok(
        &plane,
        &[
            "delete",
            "blogs.apps.example.com",
            "first",
            "-n",
            "default",
            "--wait=false",
        ],
    );
    eventually("the Blog is gone (finalizer removed)", &context, || {
        get(&plane, "blogs.apps.example.com", "first", "default")
            .is_none()
            .then_some(())
    });
    lap("delete: cleanup ran, finalizer removed", &mut timings);
    // kube-controller-manager's garbage collector notices a new CRD's kind at its next
    // discovery (every 30 s), so this wait is its, not the operator's.
    eventually("its ConfigMap is garbage-collected", &context, || {
        get(&plane, "configmap", "first", "default")
            .is_none()
            .then_some(())
    });
    lap("delete: child garbage-collected", &mut timings);

    // A second manager waits; SIGTERM to the leader hands over at once.
    let mut second = Manager::start(&binary, &sa_kubeconfig, "manager-2", session.path());
    eventually("manager-2 answers /readyz", &context, || {
        http_get(second.probes, "/readyz").filter(|(code, _)| *code == 200)
    });
    thread::sleep(Duration::from_secs(3));
    assert_eq!(
        lease_holder(&plane).as_deref(),
        Some("manager-1"),
        "one leader"
    );
    let waiting = second.log();
    assert!(
        waiting.contains("waiting for leadership") && !waiting.contains("became leader"),
        "manager-2 must wait while manager-1 leads:\n{waiting}"
    );
    let handover = Instant::now();
    let code = first.terminate();
    assert_eq!(
        code,
        Some(0),
        "manager-1 exits 0 on SIGTERM:\n{}",
        first.log()
    );
    let released = lease_holder(&plane);
    assert_ne!(
        released.as_deref(),
        Some("manager-1"),
        "manager-1 released the Lease"
    );
    eventually("manager-2 takes the Lease", &context, || {
        (lease_holder(&plane).as_deref() == Some("manager-2")).then_some(())
    });
    let took_over = handover.elapsed();
    // The leader released the Lease; a follower tries every 2 s.
    assert!(
        took_over < Duration::from_secs(15),
        "hand-over took {took_over:?}, more than the lease duration"
    );
    apply(&plane, &blog("after", "v1", "new"));
    converged(&plane, "after", "new", &context);
    lap(
        "leader hand-over and reconcile by the new leader",
        &mut timings,
    );
    assert_eq!(second.terminate(), Some(0), "{}", second.log());

    // RBAC: nothing was forbidden, and the audit log shows what was used of what was granted.
    let rbac = kubectl_ok(
        &plane,
        &[
            "kustomize",
            &project.join("config/rbac").display().to_string(),
        ],
    );
    let used = used_as_granted(&plane, &rbac, &[&first, &second]);
    eprintln!("end-to-end steps:");
    for (name, took) in &timings {
        eprintln!("  {name:<50} {:>8.2} s", took.as_secs_f64());
    }
    eprintln!(
        "  leader hand-over after SIGTERM: {:.2} s",
        took_over.as_secs_f64()
    );
    eprintln!("RBAC verbs used: {used}");
}

/// An API server without streaming lists (the `WatchList` feature off, as by default in
/// Kubernetes 1.33) refuses the caches' streaming watches: the manager lists instead, with the
/// `list` its RBAC grants, and works as before.
#[test]
fn without_streaming_lists_the_manager_lists_instead() {
    let test = "without_streaming_lists_the_manager_lists_instead";
    let options = Options {
        audit: true,
        feature_gates: Some("WatchList=false"),
        ..Options::default()
    };
    let Some(plane) = support::control_plane(test, options) else {
        return;
    };
    let session = support::Session::new();
    let binary = deploy_blog_project(&plane, &session);
    let kubeconfig = plane.kubeconfig_as(SERVICE_ACCOUNT).expect("kubeconfig");
    let mut manager = Manager::start(&binary, &kubeconfig, "manager-1", session.path());
    apply(&plane, &blog("first", "v1", "a"));
    let context = || format!("--- manager-1\n{}\n{}", first_log(&session), plane.logs());
    converged(&plane, "first", "a", &context);

    let log = manager.log();
    assert!(log.contains("refused a streaming list"), "{log}");
    let used = used_permissions(&plane);
    for resource in ["apps.example.com/blogs", "/configmaps"] {
        let listed = ("list".to_owned(), resource.to_owned());
        assert!(used.contains(&listed), "{resource} not listed: {used:?}");
    }
    // The refusals are 422s; nothing was a 403, and no watch failed.
    assert!(
        !log.contains("code: 403") && !log.contains("watch failed"),
        "{log}"
    );
    assert_eq!(manager.terminate(), Some(0), "{log}");
}
