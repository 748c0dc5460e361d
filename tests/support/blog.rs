//! The demo project's Blog operator (one kind, apps/v1 Blog, a ConfigMap per Blog), installed
//! on a real control plane as `make deploy` would and its manager run out of the cluster as
//! the manager's ServiceAccount: what the tests of the running manager share.

use std::{
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command},
    thread,
    time::{Duration, Instant},
};

use serde_json::Value;

use super::control_plane::{ControlPlane, free_port};
use super::{eventually, kubectl_ok};

/// Who the manager runs as: the generated RBAC is all that authorizes it.
pub const SERVICE_ACCOUNT: &str = "system:serviceaccount:demo-system:demo-controller-manager";
/// The manager's leader-election Lease, in demo-system.
pub const LEASE: &str = "demo.example.com";

/// A manager process of the generated project, with its probe and metrics ports.
pub struct Manager {
    pub name: &'static str,
    pub child: Child,
    pub probes: u16,
    pub metrics: u16,
    pub log: PathBuf,
}

impl Manager {
    /// Starts the manager `binary` as replica `name` with leader election on, its log in `dir`.
    pub fn start(binary: &Path, kubeconfig: &Path, name: &'static str, dir: &Path) -> Manager {
        Manager::start_with(binary, kubeconfig, name, dir, &[])
    }

    /// [`Manager::start`] with more flags.
    pub fn start_with(
        binary: &Path,
        kubeconfig: &Path,
        name: &'static str,
        dir: &Path,
        args: &[&str],
    ) -> Manager {
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
            .args(args)
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

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGTERM, as the kubelet does, and waits for the exit code.
    pub fn terminate(&mut self) -> Option<i32> {
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

pub fn kubectl(plane: &ControlPlane, args: &[&str]) -> std::process::Output {
    plane.kubectl().args(args).output().expect("kubectl runs")
}

pub fn apply(plane: &ControlPlane, yaml: &str) {
    let out = plane.kubectl_with_input(&["apply", "--server-side", "-f", "-"], yaml);
    assert!(
        out.status.success(),
        "apply failed: {}\n{yaml}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The object as JSON, or `None` if it does not exist.
pub fn get(plane: &ControlPlane, resource: &str, name: &str, namespace: &str) -> Option<Value> {
    let out = kubectl(
        plane,
        &["get", resource, name, "-n", namespace, "-o", "json"],
    );
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).expect("kubectl prints JSON"))
}

/// Removes `foo` from the Blog's spec.
pub fn drop_foo(plane: &ControlPlane, name: &str) {
    let patch = r#"{"spec":{"foo":null}}"#;
    let args = ["patch", "blogs.apps.example.com", name, "-n", "default"];
    kubectl_ok(plane, &[&args[..], &["--type=merge", "-p", patch]].concat());
}

pub fn blog(name: &str, version: &str, value: &str) -> String {
    format!(
        "apiVersion: apps.example.com/{version}\nkind: Blog\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  foo: {value}\n"
    )
}

/// Waits until the Blog's ConfigMap holds `foo` and is controlled by the Blog, and the Blog's
/// status says Ready for its current generation.
pub fn converged(plane: &ControlPlane, name: &str, value: &str, context: &dyn Fn() -> String) {
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

pub fn lease_holder(plane: &ControlPlane) -> Option<String> {
    let lease = get(plane, "lease", LEASE, "demo-system")?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_owned)
}

/// Scaffolds a project with one kind (Blog, apps/v1), installs it as `make deploy` does (the
/// CRD, the namespace, the RBAC) and builds its manager, whose binary it returns.
pub fn deploy_blog_project(plane: &ControlPlane, session: &super::Session) -> PathBuf {
    deploy_edited_blog_project(plane, session, &[])
}

/// [`deploy_blog_project`], with each `(scaffolded, written)` of `edits` replaced in the Blog's
/// controller first, as a user would write it.
pub fn deploy_edited_blog_project(
    plane: &ControlPlane,
    session: &super::Session,
    edits: &[(&str, &str)],
) -> PathBuf {
    let project = session.init_demo(&[]);
    super::create_api_ok(
        &project,
        &["--group", "apps", "--version", "v1", "--kind", "Blog"],
    );
    super::edits::edit_blog_controller(&project, edits);
    assert_eq!(super::run_kopgen(&project, &["manifests"]).status, 0);
    let binary = super::build_manager(&project, "demo");
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
pub fn spawn_manager(binary: &Path, kubeconfig: &Path, log: &Path, args: &[&str]) -> Child {
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

pub fn refused_log(session: &super::Session) -> String {
    std::fs::read_to_string(session.join("manager-0.log")).unwrap_or_default()
}

pub fn first_log(session: &super::Session) -> String {
    std::fs::read_to_string(session.join("manager-1.log")).unwrap_or_default()
}

/// A TCP proxy between one manager and the API server that the test can cut, as a network
/// partition would (open connections are shut and new ones closed at once), or hold: what the
/// manager sends waits while what the API server sends (watch events) still arrives.
pub struct Proxy {
    port: u16,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    hold: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Proxy {
    pub fn start(upstream: u16) -> Proxy {
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

    pub fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn hold(&self, on: bool) {
        self.hold.store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// A kubeconfig that reaches the API server through this proxy, written beside `kubeconfig`.
    pub fn kubeconfig(&self, plane: &ControlPlane, kubeconfig: &Path) -> PathBuf {
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

pub fn apiserver_port(plane: &ControlPlane) -> u16 {
    plane
        .server
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port")
}
