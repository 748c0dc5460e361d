//! The generated manager under faults and handovers, on a real control plane: requests held,
//! the API server cut off, RBAC withdrawn, a reconcile that blocks while its leadership is
//! taken, and a leader change under a replica that serves webhooks.

mod support;

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use support::blog::{
    Manager, Proxy, SERVICE_ACCOUNT, apiserver_port, apply, blog, converged, deploy_blog_project,
    deploy_edited_blog_project, first_log, get, lease_holder, spawn_manager,
};
use support::control_plane::{Options, free_port};
use support::webhook_tls::{certificates, pointed_at, write_certificates};
use support::{eventually, http_get, kubectl_ok};

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

/// The scaffolded controller, with a `desired` that blocks its thread (as a blocking cloud
/// SDK's call would) for Blogs annotated `test.example.com/block`.
const BLOCKING: &[(&str, &str)] = &[(
    "        let _ = observed;\n",
    "        let _ = observed;\n        if blog.annotations().contains_key(\"test.example.com/block\") {\n            eprintln!(\"blocking in desired\");\n            std::thread::sleep(std::time::Duration::from_secs(8));\n            eprintln!(\"unblocked\");\n        }\n",
)];

/// A reconcile blocked while another replica takes the Lease writes nothing once it resumes:
/// no child, no status; the manager stops, saying it lost the Lease. (The elector runs on a
/// thread of its own, so it learns of the loss while the controller's thread is blocked; each
/// write checks leadership first.)
#[test]
fn a_reconcile_blocked_past_its_leadership_writes_nothing_after_it() {
    let test = "a_reconcile_blocked_past_its_leadership_writes_nothing_after_it";
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    let session = support::Session::new();
    let binary = deploy_edited_blog_project(&plane, &session, BLOCKING);
    let kubeconfig = plane.kubeconfig_as(SERVICE_ACCOUNT).expect("kubeconfig");
    let mut leader = Manager::start(&binary, &kubeconfig, "manager-1", session.path());
    let context = || format!("--- manager-1\n{}\n{}", first_log(&session), plane.logs());
    eventually("manager-1 holds the Lease", &context, || {
        (lease_holder(&plane).as_deref() == Some("manager-1")).then_some(())
    });
    apply(&plane, &blog("before", "v1", "x"));
    converged(&plane, "before", "x", &context);

    let blocked = blog("blocked", "v1", "x").replace(
        "  namespace: default\n",
        "  namespace: default\n  annotations:\n    test.example.com/block: \"yes\"\n",
    );
    apply(&plane, &blocked);
    eventually("the reconcile blocks", &context, || {
        first_log(&session)
            .contains("blocking in desired")
            .then_some(())
    });
    // Another replica takes the Lease while manager-1's thread is blocked.
    let now = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%S.000000Z"])
        .output()
        .expect("date");
    let taken = format!(
        r#"{{"spec":{{"holderIdentity":"intruder","leaseDurationSeconds":60,"renewTime":"{}"}}}}"#,
        String::from_utf8_lossy(&now.stdout).trim()
    );
    kubectl_ok(
        &plane,
        &[
            "patch",
            "lease",
            support::blog::LEASE,
            "-n",
            "demo-system",
            "--type=merge",
            "-p",
            &taken,
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let exited = loop {
        if let Ok(Some(status)) = leader.child.try_wait() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "manager-1 kept running:\n{}",
            context()
        );
        thread::sleep(Duration::from_millis(100));
    };
    let log = leader.log();
    assert!(!exited.success(), "{log}");
    assert!(log.contains("another replica holds the Lease"), "{log}");
    // Whatever resumed after the block found its leadership gone.
    assert_eq!(
        get(&plane, "configmap", "blocked", "default"),
        None,
        "{log}"
    );
    let blog = get(&plane, "blogs.apps.example.com", "blocked", "default").expect("the Blog");
    assert!(blog["status"]["conditions"].is_null(), "{blog}\n{log}");
}

/// A replica serving webhooks stays ready through a leader change: the standby answers
/// `/readyz` and the API server's webhook calls while another leads, and goes on answering,
/// never unready, as the leader leaves and it takes over the reconciles (warm standbys: its
/// caches were filled before it led).
#[test]
fn a_webhook_replica_stays_ready_through_a_leader_change() {
    let test = "a_webhook_replica_stays_ready_through_a_leader_change";
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    let session = support::Session::new();
    let project = session.init_demo(&[]);
    support::create_api_ok(
        &project,
        &["--group", "apps", "--version", "v1", "--kind", "Blog"],
    );
    let created = support::run_kopgen(
        &project,
        &[
            "create",
            "webhook",
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Blog",
            "--defaulting",
        ],
    );
    assert_eq!(created.status, 0, "{}", created.stderr);
    let module = project.join("src/webhooks/apps_v1_blog.rs");
    let code = std::fs::read_to_string(&module).expect("webhook module");
    let todo = "        // TODO(user): fill in defaults, e.g.\n        // self.spec.replicas.get_or_insert(1);\n";
    assert!(code.contains(todo), "{code}");
    let default = "        self.spec.foo.get_or_insert_with(|| \"defaulted\".into());\n";
    std::fs::write(&module, code.replacen(todo, default, 1)).expect("write");
    assert_eq!(support::run_kopgen(&project, &["manifests"]).status, 0);
    let binary = support::build_manager(&project, "demo");
    let crds = project.join("config/crd/bases").display().to_string();
    kubectl_ok(&plane, &["apply", "--server-side", "-f", &crds]);
    kubectl_ok(&plane, &["create", "namespace", "demo-system"]);
    let certs = session.path().join("certs");
    std::fs::create_dir_all(&certs).expect("mkdir");
    let tls = certificates("leader change CA");
    write_certificates(&certs, &tls);
    let cert_path = format!("--webhook-cert-path={}", certs.display());
    let replica = |name: &'static str, port: u16| {
        let port = format!("--webhook-port={port}");
        Manager::start_with(
            &binary,
            &plane.kubeconfig(),
            name,
            session.path(),
            &[&port, &cert_path],
        )
    };
    let standby_port = free_port().expect("port");
    let mut leader = replica("manager-1", free_port().expect("port"));
    let logs = || {
        let second = std::fs::read_to_string(session.join("manager-2.log")).unwrap_or_default();
        format!(
            "--- manager-1\n{}\n--- manager-2\n{second}\n{}",
            first_log(&session),
            plane.logs()
        )
    };
    eventually("manager-1 holds the Lease", &logs, || {
        (lease_holder(&plane).as_deref() == Some("manager-1")).then_some(())
    });
    let standby = replica("manager-2", standby_port);
    eventually("the standby is ready", &logs, || {
        http_get(standby.probes, "/readyz").filter(|(code, _)| *code == 200)
    });
    // The API server calls the standby's webhooks only.
    let manifests = std::fs::read_to_string(project.join("config/webhook/manifests.yaml"))
        .expect("config/webhook/manifests.yaml");
    let configurations = pointed_at(&manifests, standby_port, &tls.ca);
    let out = plane.kubectl_with_input(&["apply", "-f", "-"], &configurations);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let defaulted = |name: &str| {
        let out = plane.kubectl_with_input(
            &[
                "create",
                "--dry-run=server",
                "-o",
                "jsonpath={.spec.foo}",
                "-f",
                "-",
            ],
            &blog(name, "v1", "null"),
        );
        (out.status.success() && out.stdout == b"defaulted").then_some(())
    };
    eventually("the standby's webhook defaults", &logs, || {
        defaulted("probe")
    });

    // From now on the standby's readiness is watched every 100 ms.
    let (stop, polls, unready) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let watcher = {
        let (stop, polls, unready, probes) =
            (stop.clone(), polls.clone(), unready.clone(), standby.probes);
        thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                if http_get(probes, "/readyz").map(|(code, _)| code) != Some(200) {
                    unready.fetch_add(1, Ordering::SeqCst);
                }
                polls.fetch_add(1, Ordering::SeqCst);
                thread::sleep(Duration::from_millis(100));
            }
        })
    };
    assert_eq!(leader.terminate(), Some(0), "{}", logs());
    eventually("manager-2 holds the Lease", &logs, || {
        (lease_holder(&plane).as_deref() == Some("manager-2")).then_some(())
    });
    // A Blog created after the handover is defaulted by the new leader's webhook and
    // reconciled by it.
    let out = plane.kubectl_with_input(&["create", "-f", "-"], &blog("after", "v1", "null"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    converged(&plane, "after", "defaulted", &logs);
    defaulted("probe-after").unwrap_or_else(|| panic!("the webhook answers:\n{}", logs()));
    stop.store(true, Ordering::SeqCst);
    watcher.join().expect("watcher");
    let (polls, unready) = (polls.load(Ordering::SeqCst), unready.load(Ordering::SeqCst));
    eprintln!("standby /readyz through the handover: {polls} polls, {unready} not 200");
    assert!(polls >= 10, "{polls} polls");
    assert_eq!(
        unready,
        0,
        "the standby was unready {unready} times:\n{}",
        logs()
    );
}
