//! The generated operator, end to end on a real control plane (etcd, kube-apiserver and
//! kube-controller-manager for garbage collection; see `tests/support/mod.rs`).
//!
//! A project with kinds in two groups, two versions of one kind and a controller for a
//! built-in kind is scaffolded, its manifests generated and applied as `make deploy` would,
//! and its manager binary run out of the cluster with a kubeconfig that impersonates the
//! manager's ServiceAccount: the generated RBAC is all that authorizes it, so a missing
//! marker is a 403 and a failed test. The audit log then shows which granted verbs were used.

mod support;

use std::{
    collections::BTreeSet,
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command},
    thread,
    time::{Duration, Instant},
};

use serde_json::Value;
use support::control_plane::{ControlPlane, Options, free_port};
use support::{eventually, http_get, kubectl_ok};

const SERVICE_ACCOUNT: &str = "system:serviceaccount:demo-system:demo-controller-manager";
const LEASE: &str = "demo.example.com";

/// A manager process of the generated project, with its probe and metrics ports.
struct Manager {
    name: &'static str,
    child: Child,
    probes: u16,
    metrics: u16,
    log: PathBuf,
}

impl Manager {
    fn start(binary: &Path, kubeconfig: &Path, name: &'static str, dir: &Path) -> Manager {
        let (probes, metrics) = (free_port().expect("port"), free_port().expect("port"));
        let log = dir.join(format!("{name}.log"));
        let out = std::fs::File::create(&log).expect("log");
        let child = Command::new(binary)
            .args([
                &format!("--health-probe-bind-address=127.0.0.1:{probes}"),
                &format!("--metrics-bind-address=127.0.0.1:{metrics}"),
                "--leader-elect",
                "--leader-election-namespace=demo-system",
                &format!("--leader-election-identity={name}"),
            ])
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "info,demo=debug")
            // The home of a cluster-scoped kind's children, as in the Deployment.
            .env("POD_NAMESPACE", "demo-system")
            .stdout(out.try_clone().expect("log"))
            .stderr(out)
            .spawn()
            .expect("the manager starts");
        Manager {
            name,
            child,
            probes,
            metrics,
            log,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGTERM, as the kubelet does, and waits for the exit code.
    fn terminate(&mut self) -> Option<i32> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            thread::sleep(Duration::from_millis(100));
        }
        None
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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

fn kubectl(plane: &ControlPlane, args: &[&str]) -> std::process::Output {
    plane.kubectl().args(args).output().expect("kubectl runs")
}

fn apply(plane: &ControlPlane, yaml: &str) {
    let out = plane.kubectl_with_input(&["apply", "--server-side", "-f", "-"], yaml);
    assert!(
        out.status.success(),
        "apply failed: {}\n{yaml}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The object as JSON, or `None` if it does not exist.
fn get(plane: &ControlPlane, resource: &str, name: &str, namespace: &str) -> Option<Value> {
    let out = kubectl(
        plane,
        &["get", resource, name, "-n", namespace, "-o", "json"],
    );
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).expect("kubectl prints JSON"))
}

/// Removes `foo` from the Blog's spec.
fn drop_foo(plane: &ControlPlane, name: &str) {
    let patch = r#"{"spec":{"foo":null}}"#;
    let args = ["patch", "blogs.apps.example.com", name, "-n", "default"];
    kubectl_ok(plane, &[&args[..], &["--type=merge", "-p", patch]].concat());
}

fn blog(name: &str, version: &str, value: &str) -> String {
    format!(
        "apiVersion: apps.example.com/{version}\nkind: Blog\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  foo: {value}\n"
    )
}

/// Waits until the Blog's ConfigMap holds `foo` and is controlled by the Blog, and the Blog's
/// status says Ready for its current generation.
fn converged(plane: &ControlPlane, name: &str, value: &str, context: &dyn Fn() -> String) {
    eventually(
        &format!("ConfigMap of {name} holds foo={value}"),
        context,
        || {
            let blog = get(plane, "blogs.apps.example.com", name, "default")?;
            let cm = get(plane, "configmap", name, "default")?;
            let owner = &cm["metadata"]["ownerReferences"][0];
            (cm["data"]["foo"] == value
                && owner["uid"] == blog["metadata"]["uid"]
                && owner["controller"] == true
                && owner["kind"] == "Blog")
                .then_some(())
        },
    );
    eventually(
        &format!("{name} is Ready at its generation"),
        context,
        || {
            let blog = get(plane, "blogs.apps.example.com", name, "default")?;
            let ready = blog["status"]["conditions"]
                .as_array()?
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            (ready && blog["status"]["observedGeneration"] == blog["metadata"]["generation"])
                .then_some(())
        },
    );
}

fn lease_holder(plane: &ControlPlane) -> Option<String> {
    let lease = get(plane, "lease", LEASE, "demo-system")?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_owned)
}

/// (verb, group/resource[/subresource]) of every request the manager's ServiceAccount made.
fn used_permissions(plane: &ControlPlane) -> BTreeSet<(String, String)> {
    let log = std::fs::read_to_string(plane.audit_log()).unwrap_or_default();
    let mut used = BTreeSet::new();
    for line in log.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let user = event["impersonatedUser"]["username"].as_str();
        if user != Some(SERVICE_ACCOUNT) {
            continue;
        }
        let object = &event["objectRef"];
        let mut resource = format!(
            "{}/{}",
            object["apiGroup"].as_str().unwrap_or(""),
            object["resource"].as_str().unwrap_or("")
        );
        if let Some(sub) = object["subresource"].as_str() {
            resource = format!("{resource}/{sub}");
        }
        let verb = event["verb"].as_str().unwrap_or("").to_owned();
        // Server-side apply that creates the object is authorized as `create` too.
        if verb == "patch" && event["responseStatus"]["code"] == 201 {
            used.insert(("create".to_owned(), resource.clone()));
        }
        used.insert((verb, resource));
    }
    used
}

/// (verb, group/resource) of every rule the ServiceAccount holds through config/rbac.
fn granted_permissions(rbac_yaml: &str) -> BTreeSet<(String, String)> {
    let mut granted = BTreeSet::new();
    for doc in serde_yaml::Deserializer::from_str(rbac_yaml) {
        let Ok(doc) = <serde_yaml::Value as serde::Deserialize>::deserialize(doc) else {
            continue;
        };
        let kind = doc["kind"].as_str().unwrap_or_default();
        let name = doc["metadata"]["name"].as_str().unwrap_or_default();
        // The roles bound to the manager (the project's, the leader election's and the metrics
        // authentication's), not the per-kind admin/editor/viewer roles meant for people.
        let bound = [
            "demo-manager-role",
            "demo-leader-election-role",
            "demo-metrics-auth-role",
        ];
        if !(kind == "ClusterRole" || kind == "Role") || !bound.contains(&name) {
            continue;
        }
        let rules = doc["rules"].as_sequence().cloned().unwrap_or_default();
        for rule in rules {
            let list = |key: &str| -> Vec<String> {
                rule[key]
                    .as_sequence()
                    .map(|s| {
                        s.iter()
                            .filter_map(|v| v.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            for group in list("apiGroups") {
                for resource in list("resources") {
                    for verb in list("verbs") {
                        granted.insert((verb, format!("{group}/{resource}")));
                    }
                }
            }
        }
    }
    granted
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
    for manager in [&first, &second] {
        let log = manager.log();
        assert!(
            !log.to_lowercase().contains("forbidden"),
            "{} was refused something its RBAC should grant:\n{log}",
            manager.name
        );
    }
    let rbac = kubectl_ok(
        &plane,
        &[
            "kustomize",
            &project.join("config/rbac").display().to_string(),
        ],
    );
    let rbac = rbac
        .replace("name: manager-role", "name: demo-manager-role")
        .replace(
            "name: leader-election-role",
            "name: demo-leader-election-role",
        )
        .replace("name: metrics-auth-role", "name: demo-metrics-auth-role");
    let granted = granted_permissions(&rbac);
    let used = used_permissions(&plane);
    let unused: Vec<String> = granted
        .difference(&used)
        .map(|(verb, resource)| format!("{verb} {resource}"))
        .collect();
    let ungranted: Vec<String> = used
        .difference(&granted)
        .map(|(verb, resource)| format!("{verb} {resource}"))
        .collect();

    eprintln!("end-to-end steps:");
    for (name, took) in &timings {
        eprintln!("  {name:<50} {:>8.2} s", took.as_secs_f64());
    }
    eprintln!(
        "  leader hand-over after SIGTERM: {:.2} s",
        took_over.as_secs_f64()
    );
    eprintln!("RBAC verbs used: {}", used.len());
    eprintln!("RBAC verbs granted but never used: {}", unused.join(", "));
    // Every request was allowed (no 403 above), so anything "used but not granted" would be an
    // error in this accounting, not in the RBAC.
    assert!(ungranted.is_empty(), "used without a grant: {ungranted:?}");
    // Minimal: every granted verb was used, except `update` of the finalizers subresource,
    // which no request uses but OwnerReferencesPermissionEnforcement checks for children
    // whose owner reference blocks owner deletion, and `list` of what the caches watch: they
    // stream their lists here, and list on an API server that cannot (the test below).
    let needless: Vec<&String> = unused
        .iter()
        .filter(|grant| !(grant.starts_with("update ") && grant.ends_with("/finalizers")))
        .filter(|grant| {
            let watched = grant.replacen("list ", "watch ", 1);
            // A `list` is needless only when its `watch` is unused too.
            !grant.starts_with("list ") || unused.contains(&watched)
        })
        .collect();
    assert!(needless.is_empty(), "granted but never used: {needless:?}");
    let listed: Vec<&(String, String)> = used.iter().filter(|(verb, _)| verb == "list").collect();
    assert!(
        listed.is_empty(),
        "the caches list instead of streaming: {listed:?}"
    );
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

/// A manager whose RBAC forbids the watches of its caches (the role lost its rules) is not
/// Ready, and exits once the cache sync timeout has passed, naming the controller and the 403,
/// instead of running forever without reconciling. Its probes listen on IPv6 and IPv4 alike
/// (`:port`, the default form), as an IPv6-only cluster's kubelet needs.
#[test]
fn a_manager_whose_watches_rbac_forbids_is_not_ready_and_exits_naming_why() {
    let test = "a_manager_whose_watches_rbac_forbids_is_not_ready_and_exits_naming_why";
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    let session = support::Session::new();
    let binary = deploy_blog_project(&plane, &session);
    kubectl_ok(
        &plane,
        &[
            "patch",
            "clusterrole",
            "demo-manager-role",
            "--type=json",
            "-p",
            r#"[{"op": "replace", "path": "/rules", "value": []}]"#,
        ],
    );
    let kubeconfig = plane.kubeconfig_as(SERVICE_ACCOUNT).expect("kubeconfig");
    let (probes, metrics) = (free_port().expect("port"), free_port().expect("port"));
    let log = session.join("forbidden.log");
    let mut child = spawn_manager(
        &binary,
        &kubeconfig,
        &log,
        &[
            &format!("--health-probe-bind-address=:{probes}"),
            &format!("--metrics-bind-address=127.0.0.1:{metrics}"),
            "--cache-sync-timeout=6s",
        ],
    );
    let context = || std::fs::read_to_string(&log).unwrap_or_default();
    let ipv6 = std::net::TcpListener::bind("[::1]:0").is_ok();
    let host = if ipv6 { "::1" } else { "127.0.0.1" };
    if !ipv6 {
        eprintln!("notice: {test}: no IPv6 loopback here; probing over IPv4");
    }
    let (code, body) = eventually("the probes answer", &context, || {
        support::http_get_at(host, probes, "/readyz/caches")
    });
    assert_eq!(
        (code, body.as_str()),
        (503, "caches not filled yet"),
        "{}",
        context()
    );
    // Ready all the same: its servers are up (a pod serving webhooks stays in its Service).
    assert_eq!(
        support::http_get_at(host, probes, "/readyz").map(|(code, _)| code),
        Some(200),
        "{}",
        context()
    );
    assert_eq!(
        support::http_get_at("127.0.0.1", probes, "/healthz").map(|(code, _)| code),
        Some(200),
        "IPv4 too"
    );
    let deadline = Instant::now() + support::CONVERGE;
    let status = loop {
        if let Some(status) = child.try_wait().expect("the manager's status") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the manager did not exit\n{}",
            context()
        );
        thread::sleep(Duration::from_millis(200));
    };
    assert!(!status.success(), "{}", context());
    let log = context();
    assert!(
        log.contains("did not fill within") && log.contains("forbidden"),
        "{log}"
    );
}

/// Scaffolds a project with one kind (Blog, apps/v1), installs it as `make deploy` does (the
/// CRD, the namespace, the RBAC) and builds its manager, whose binary it returns.
fn deploy_blog_project(plane: &ControlPlane, session: &support::Session) -> PathBuf {
    let project = session.init_demo(&[]);
    support::create_api_ok(
        &project,
        &["--group", "apps", "--version", "v1", "--kind", "Blog"],
    );
    assert_eq!(support::run_kopgen(&project, &["manifests"]).status, 0);
    let binary = support::build_manager(&project, "demo");
    let rendered = kubectl_ok(
        plane,
        &[
            "kustomize",
            &project.join("config/default").display().to_string(),
        ],
    );
    apply(plane, &rendered);
    binary
}

/// Starts the manager `binary` with `args` as `kubeconfig`'s user in namespace demo-system,
/// its output into `log`.
fn spawn_manager(binary: &Path, kubeconfig: &Path, log: &Path, args: &[&str]) -> Child {
    let out = std::fs::File::create(log).expect("log");
    Command::new(binary)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("POD_NAMESPACE", "demo-system")
        .stdout(out.try_clone().expect("log"))
        .stderr(out)
        .spawn()
        .expect("the manager starts")
}

fn refused_log(session: &support::Session) -> String {
    std::fs::read_to_string(session.join("manager-0.log")).unwrap_or_default()
}

fn first_log(session: &support::Session) -> String {
    std::fs::read_to_string(session.join("manager-1.log")).unwrap_or_default()
}

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

/// A TCP proxy between one manager and the API server that the test can cut, as a network
/// partition would (open connections are shut and new ones closed at once), or hold: what the
/// manager sends waits while what the API server sends (watch events) still arrives.
struct Proxy {
    port: u16,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    hold: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Proxy {
    fn start(upstream: u16) -> Proxy {
        use std::sync::{
            Arc, Mutex,
            atomic::{AtomicBool, Ordering},
        };
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let cut = Arc::new(AtomicBool::new(false));
        let hold = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (flag, streams, held) = (cut.clone(), open.clone(), hold.clone());
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if flag.load(Ordering::SeqCst) {
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                for stream in [&client, &server] {
                    if let Ok(clone) = stream.try_clone() {
                        streams.lock().expect("lock").push(clone);
                    }
                }
                for (mut from, mut to, gate) in [
                    (client.try_clone(), server.try_clone(), Some(held.clone())),
                    (server.try_clone(), client.try_clone(), None),
                ]
                .into_iter()
                .filter_map(|(a, b, gate)| Some((a.ok()?, b.ok()?, gate)))
                {
                    thread::spawn(move || {
                        use std::io::{Read as _, Write as _};
                        let mut buffer = [0u8; 16 << 10];
                        while let Ok(n @ 1..) = from.read(&mut buffer) {
                            while gate.as_ref().is_some_and(|g| g.load(Ordering::SeqCst)) {
                                thread::sleep(Duration::from_millis(10));
                            }
                            if to.write_all(&buffer[..n]).is_err() {
                                break;
                            }
                        }
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        let watcher = cut.clone();
        thread::spawn(move || {
            while !watcher.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(20));
            }
            for stream in open.lock().expect("lock").drain(..) {
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
        });
        Proxy { port, cut, hold }
    }

    fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn hold(&self, on: bool) {
        self.hold.store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// A kubeconfig that reaches the API server through this proxy, written beside `kubeconfig`.
    fn kubeconfig(&self, plane: &ControlPlane, kubeconfig: &Path) -> PathBuf {
        let proxied = kubeconfig.with_extension("proxied");
        std::fs::write(
            &proxied,
            std::fs::read_to_string(kubeconfig)
                .expect("kubeconfig")
                .replace(&plane.server, &format!("https://127.0.0.1:{}", self.port)),
        )
        .expect("write");
        proxied
    }
}

fn apiserver_port(plane: &ControlPlane) -> u16 {
    plane
        .server
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port")
}

/// The work queue's depth on the real control plane: with one reconcile at a time and the
/// manager's requests held, Blogs created meanwhile wait in the queue (depth rises, one worker
/// busy); released, every Blog is reconciled and the depth falls back to 0.
#[test]
fn queue_depth_rises_while_reconciles_are_held_and_falls_back_to_zero() {
    let test = "queue_depth_rises_while_reconciles_are_held_and_falls_back_to_zero";
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    let session = support::Session::new();
    let binary = deploy_blog_project(&plane, &session);
    let proxy = Proxy::start(apiserver_port(&plane));
    let direct = plane.kubeconfig_as(SERVICE_ACCOUNT).expect("kubeconfig");
    let proxied = proxy.kubeconfig(&plane, &direct);
    let (probes, metrics) = (free_port().expect("port"), free_port().expect("port"));
    let log = session.join("held.log");
    let mut manager = spawn_manager(
        &binary,
        &proxied,
        &log,
        &[
            &format!("--health-probe-bind-address=127.0.0.1:{probes}"),
            &format!("--metrics-bind-address=127.0.0.1:{metrics}"),
            "--metrics-secure=false",
            "--max-concurrent-reconciles=1",
        ],
    );
    let context = || std::fs::read_to_string(&log).unwrap_or_default();
    // `/readyz` is up once the servers are; the Blogs' watch must be open (the caches filled)
    // before the proxy holds requests, or no Blog ever reaches the queue.
    eventually("the manager's caches are filled", &context, || {
        http_get(probes, "/readyz/caches").filter(|(code, _)| *code == 200)
    });
    let series = |name: &str| -> Option<f64> {
        let (_, body) = http_get(metrics, "/metrics")?;
        body.lines()
            .find(|l| l.starts_with(name) && l.contains("controller=\"apps-blog\""))?
            .rsplit(' ')
            .next()?
            .parse()
            .ok()
    };

    proxy.hold(true);
    for i in 0..5 {
        apply(&plane, &blog(&format!("held-{i}"), "v1", "x"));
    }
    let held = eventually("Blogs wait in the queue", &context, || {
        let depth = series("workqueue_depth{")?;
        (depth >= 3.0 && series("controller_runtime_active_workers{")? == 1.0).then_some(depth)
    });
    eprintln!("held: workqueue_depth {held}");
    proxy.hold(false);
    for i in 0..5 {
        converged(&plane, &format!("held-{i}"), "x", &context);
    }
    eventually("the queue drains", &context, || {
        (series("workqueue_depth{")? == 0.0).then_some(())
    });
    let _ = manager.kill();
    let _ = manager.wait();
}

/// A leader cut off from the API server stops reconciling (and exits) before a follower can
/// take the Lease: there are never two leaders, even when the old one cannot learn it lost.
#[test]
fn a_leader_cut_off_from_the_api_server_stops_before_another_takes_over() {
    let test = "a_leader_cut_off_from_the_api_server_stops_before_another_takes_over";
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    let session = support::Session::new();
    let binary = deploy_blog_project(&plane, &session);

    let direct = plane.kubeconfig_as(SERVICE_ACCOUNT).expect("kubeconfig");
    let proxy = Proxy::start(apiserver_port(&plane));
    let proxied = proxy.kubeconfig(&plane, &direct);

    let mut leader = Manager::start(&binary, &proxied, "manager-1", session.path());
    let context = || format!("--- manager-1\n{}\n{}", first_log(&session), plane.logs());
    eventually("manager-1 holds the Lease", &context, || {
        (lease_holder(&plane).as_deref() == Some("manager-1")).then_some(())
    });
    let mut follower = Manager::start(&binary, &direct, "manager-2", session.path());
    eventually("manager-2 answers /readyz", &context, || {
        http_get(follower.probes, "/readyz").filter(|(code, _)| *code == 200)
    });

    proxy.cut();
    let cut_at = Instant::now();
    let (mut leader_stopped, mut follower_took) = (None, None);
    while cut_at.elapsed() < Duration::from_secs(40)
        && (leader_stopped.is_none() || follower_took.is_none())
    {
        if leader_stopped.is_none() && leader.child.try_wait().ok().flatten().is_some() {
            leader_stopped = Some(cut_at.elapsed());
        }
        if follower_took.is_none() && lease_holder(&plane).as_deref() == Some("manager-2") {
            follower_took = Some(cut_at.elapsed());
        }
        thread::sleep(Duration::from_millis(50));
    }
    let log = leader.log();
    let stopped = leader_stopped.unwrap_or_else(|| panic!("manager-1 kept running:\n{log}"));
    let took = follower_took.unwrap_or_else(|| panic!("manager-2 never led:\n{}", follower.log()));
    eprintln!(
        "cut at 0 s: manager-1 stopped at {stopped:.2?}, manager-2 took the Lease at {took:.2?}"
    );
    assert!(log.contains("renew deadline"), "{log}");
    assert!(
        stopped < took,
        "two leaders: manager-1 stopped at {stopped:?}, manager-2 led at {took:?}"
    );
    assert_ne!(
        leader.child.wait().ok().and_then(|s| s.code()),
        Some(0),
        "{log}"
    );
    assert_eq!(follower.terminate(), Some(0), "{}", follower.log());
}
