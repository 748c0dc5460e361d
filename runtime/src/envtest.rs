// A real Kubernetes control plane for tests, as controller-runtime's envtest starts one: etcd
// and kube-apiserver (and, for garbage collection, kube-controller-manager) from the binaries in
// `KUBEBUILDER_ASSETS`, on free loopback ports, with a test CA, serving certificates, a token
// for an admin user and a kubeconfig. Everything is torn down when the value is dropped, also
// when a test panics.
//
// It is written without kube so that it can start a cluster for any client: `kubeconfig()` is a
// file both kubectl and `kube::Config` read.
#![allow(dead_code)]

use std::{
    fs,
    io::Write,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    thread,
    time::{Duration, Instant},
};

/// The binaries the control plane needs; `kube-controller-manager` only for garbage collection.
const REQUIRED: [&str; 3] = ["etcd", "kube-apiserver", "kubectl"];

/// Records who did what to which resource, once per request, without bodies; Leases (small)
/// with them, so that a test can follow who held what when (leader election, shards).
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  resources:
  - group: coordination.k8s.io
    resources: [leases]
- level: Metadata
";

/// How long etcd and kube-apiserver get to become ready before the test fails.
const READY_TIMEOUT: Duration = Duration::from_secs(90);

/// The directory of control-plane binaries named by `KUBEBUILDER_ASSETS`, or why there is none.
pub fn assets() -> Result<PathBuf, String> {
    let dir = std::env::var_os("KUBEBUILDER_ASSETS")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| {
            "KUBEBUILDER_ASSETS is not set (`make setup-envtest` fetches the binaries)".to_string()
        })?;
    for bin in REQUIRED {
        if !dir.join(bin).is_file() {
            return Err(format!(
                "KUBEBUILDER_ASSETS={} has no `{bin}`",
                dir.display()
            ));
        }
    }
    Ok(dir)
}

/// Prints why a test did not run, where `cargo test` shows it without `--nocapture`: libtest
/// captures `print!` and `eprint!`, not writes to the stderr handle.
pub fn skip_notice(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "notice: {test} skipped: {why}");
}

/// A running etcd and kube-apiserver (and optionally kube-controller-manager).
pub struct ControlPlane {
    dir: tempfile::TempDir,
    assets: PathBuf,
    /// Children in start order; dropped in reverse.
    processes: Vec<(&'static str, Child)>,
    /// `https://127.0.0.1:<port>` of the API server.
    pub server: String,
    admin_token: String,
}

/// What to start besides etcd and kube-apiserver.
#[derive(Default, Clone, Copy)]
pub struct Options {
    /// kube-controller-manager with the garbage collector and the namespace controller, so
    /// that owned objects are collected and deleted namespaces go away.
    pub garbage_collection: bool,
    /// An audit log of every request's metadata (who did what to which resource), read back
    /// with `ControlPlane::audit_log`: what a manager actually used of the RBAC it was given.
    pub audit: bool,
    /// kube-apiserver `--feature-gates`, if any: e.g. `WatchList=false` makes it an API server
    /// without streaming lists (Kubernetes 1.33's default), to test a client's fallback.
    pub feature_gates: Option<&'static str>,
}

impl ControlPlane {
    /// Starts a control plane from `KUBEBUILDER_ASSETS`, or returns why it cannot.
    pub fn start(options: Options) -> Result<Self, String> {
        Self::start_in(assets()?, options)
    }

    /// Starts a control plane from the binaries in `assets`.
    ///
    /// Ports are picked free and then handed to etcd and the API server, so another process
    /// (a test starting its own control plane at the same moment) can take one in between:
    /// such a start is retried on fresh ports, a few times.
    pub fn start_in(assets: PathBuf, options: Options) -> Result<Self, String> {
        for bin in REQUIRED {
            if !assets.join(bin).is_file() {
                return Err(format!("{} has no `{bin}`", assets.display()));
            }
        }
        let mut attempt = 1;
        loop {
            match Self::start_once(assets.clone(), options) {
                Err(why) if attempt < PORT_ATTEMPTS && why.contains("address already in use") => {
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    fn start_once(assets: PathBuf, options: Options) -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix("control-plane-")
            .tempdir()
            .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
        let mut plane = ControlPlane {
            assets,
            processes: Vec::new(),
            server: String::new(),
            admin_token: random_token()?,
            dir,
        };
        plane.write_credentials()?;
        plane.start_etcd_and_apiserver(options)?;
        plane.wait_ready()?;
        if options.garbage_collection {
            plane.start_controller_manager()?;
        }
        Ok(plane)
    }

    /// The directory holding the binaries this control plane runs.
    pub fn assets(&self) -> &Path {
        &self.assets
    }

    /// The CA certificate that signed the API server's serving certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }

    /// The CA's key: tests that serve webhooks sign their certificates with it.
    pub fn ca_key_file(&self) -> PathBuf {
        self.dir.path().join("ca.key")
    }

    /// A kubeconfig for a cluster administrator (a member of `system:masters`).
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("admin.kubeconfig")
    }

    /// A kubeconfig that authenticates as the administrator and impersonates `user`, so that
    /// what it may do is decided by RBAC for `user` alone. For a ServiceAccount, pass
    /// `system:serviceaccount:<namespace>:<name>`; the API server adds its groups.
    pub fn kubeconfig_as(&self, user: &str) -> Result<PathBuf, String> {
        let name: String = user
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let path = self.dir.path().join(format!("{name}.kubeconfig"));
        write(&path, &self.kubeconfig_text(Some(user)))?;
        Ok(path)
    }

    /// The audit log (JSON lines of `audit.k8s.io/v1` events), when started with `audit`.
    pub fn audit_log(&self) -> PathBuf {
        self.dir.path().join("audit.log")
    }

    /// `kubectl` with the admin kubeconfig.
    pub fn kubectl(&self) -> Command {
        let mut command = Command::new(self.assets.join("kubectl"));
        command.arg("--kubeconfig").arg(self.kubeconfig());
        command
    }

    /// Runs `kubectl args...` as the administrator, feeding `stdin` to it.
    pub fn kubectl_with_input(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = self
            .kubectl()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl starts");
        if let Some(mut input) = child.stdin.take() {
            input
                .write_all(stdin.as_bytes())
                .expect("kubectl reads its input");
        }
        child.wait_with_output().expect("kubectl runs")
    }

    /// The last lines each process wrote, for a failure message.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for (name, _) in &self.processes {
            let log =
                fs::read_to_string(self.dir.path().join(format!("{name}.log"))).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(30)..];
            out.push_str(&format!("--- {name} (last {} lines)\n", tail.len()));
            for line in tail {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// A CA, the API server's serving certificate, the ServiceAccount token signing key, the
    /// admin token and the admin kubeconfig.
    fn write_credentials(&mut self) -> Result<(), String> {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let fail = |e: rcgen::Error| format!("cannot generate test certificates: {e}");
        let ca_key = KeyPair::generate().map_err(fail)?;
        let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "control-plane test CA");
        let ca_cert = ca.self_signed(&ca_key).map_err(fail)?;
        write(&self.dir.path().join("ca.crt"), &ca_cert.pem())?;
        write(&self.dir.path().join("ca.key"), &ca_key.serialize_pem())?;
        let issuer = Issuer::new(ca, ca_key);

        let serving_key = KeyPair::generate().map_err(fail)?;
        let serving = CertificateParams::new(vec![
            "127.0.0.1".to_string(),
            "localhost".to_string(),
            "kubernetes.default.svc".to_string(),
        ])
        .map_err(fail)?
        .signed_by(&serving_key, &issuer)
        .map_err(fail)?;
        write(&self.dir.path().join("apiserver.crt"), &serving.pem())?;
        write(
            &self.dir.path().join("apiserver.key"),
            &serving_key.serialize_pem(),
        )?;

        let signing = KeyPair::generate().map_err(fail)?;
        write(&self.dir.path().join("sa.key"), &signing.serialize_pem())?;
        write(&self.dir.path().join("sa.pub"), &signing.public_key_pem())?;
        write(
            &self.dir.path().join("tokens.csv"),
            &format!("{},admin,admin-uid,system:masters\n", self.admin_token),
        )?;
        Ok(())
    }

    fn start_etcd_and_apiserver(&mut self, options: Options) -> Result<(), String> {
        let client_port = free_port()?;
        let peer_port = free_port()?;
        let etcd_url = format!("http://127.0.0.1:{client_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let etcd_args = vec![
            format!("--data-dir={}", self.path("etcd")),
            format!("--listen-client-urls={etcd_url}"),
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=default={peer_url}"),
            "--unsafe-no-fsync=true".to_string(),
        ];
        self.spawn("etcd", "etcd", &etcd_args)?;

        let port = free_port()?;
        self.server = format!("https://127.0.0.1:{port}");
        let mut apiserver_args = vec![
            format!("--etcd-servers={etcd_url}"),
            format!("--secure-port={port}"),
            "--bind-address=127.0.0.1".to_string(),
            format!("--cert-dir={}", self.path("certs")),
            format!("--tls-cert-file={}", self.path("apiserver.crt")),
            format!("--tls-private-key-file={}", self.path("apiserver.key")),
            format!("--client-ca-file={}", self.path("ca.crt")),
            format!("--token-auth-file={}", self.path("tokens.csv")),
            format!("--service-account-key-file={}", self.path("sa.pub")),
            format!("--service-account-signing-key-file={}", self.path("sa.key")),
            "--service-account-issuer=https://kubernetes.default.svc".to_string(),
            "--service-cluster-ip-range=10.0.0.0/24".to_string(),
            "--authorization-mode=RBAC".to_string(),
            "--allow-privileged=true".to_string(),
            // No pods run here, so nothing needs ServiceAccount admission (as in envtest).
            "--disable-admission-plugins=ServiceAccount".to_string(),
        ];
        if let Some(gates) = options.feature_gates {
            apiserver_args.push(format!("--feature-gates={gates}"));
        }
        if options.audit {
            write(&self.dir.path().join("audit-policy.yaml"), AUDIT_POLICY)?;
            apiserver_args.extend([
                format!("--audit-policy-file={}", self.path("audit-policy.yaml")),
                format!("--audit-log-path={}", self.audit_log().display()),
                "--audit-log-mode=blocking".to_string(),
                // One file, never rotated (the default rotates at 100 MB): tests read it whole.
                "--audit-log-maxsize=0".to_string(),
            ]);
        }
        self.spawn("kube-apiserver", "kube-apiserver", &apiserver_args)?;
        write(&self.kubeconfig(), &self.kubeconfig_text(None))?;
        Ok(())
    }

    fn start_controller_manager(&mut self) -> Result<(), String> {
        let args = vec![
            format!("--kubeconfig={}", self.kubeconfig().display()),
            "--controllers=garbagecollector,namespace".to_string(),
            "--leader-elect=false".to_string(),
            "--secure-port=0".to_string(),
        ];
        self.spawn("kube-controller-manager", "kube-controller-manager", &args)
    }

    fn spawn(&mut self, name: &'static str, binary: &str, args: &[String]) -> Result<(), String> {
        let log = fs::File::create(self.dir.path().join(format!("{name}.log")))
            .map_err(|e| format!("cannot create the log of {name}: {e}"))?;
        let err = log
            .try_clone()
            .map_err(|e| format!("cannot share the log of {name}: {e}"))?;
        let child = Command::new(self.assets.join(binary))
            .args(args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {binary}: {e}"))?;
        self.processes.push((name, child));
        Ok(())
    }

    /// Waits until `/readyz` of the API server answers `ok`, failing early when a process exits.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            for (name, child) in &mut self.processes {
                if let Ok(Some(status)) = child.try_wait() {
                    let name = *name;
                    return Err(format!("{name} exited with {status}\n{}", self.logs()));
                }
            }
            let probe = self
                .kubectl()
                .args(["get", "--raw", "/readyz", "--request-timeout=5s"])
                .output();
            if let Ok(out) = probe
                && out.status.success()
                && out.stdout.starts_with(b"ok")
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "the API server was not ready within {READY_TIMEOUT:?}\n{}",
                    self.logs()
                ));
            }
            thread::sleep(Duration::from_millis(250));
        }
    }

    fn kubeconfig_text(&self, impersonate: Option<&str>) -> String {
        let impersonation = impersonate
            .map(|user| format!("    as: \"{user}\"\n"))
            .unwrap_or_default();
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: {server}
    certificate-authority: {ca}
users:
- name: test
  user:
    token: {token}
{impersonation}contexts:
- name: test
  context:
    cluster: test
    user: test
    namespace: default
current-context: test
",
            server = self.server,
            ca = self.ca_file().display(),
            token = self.admin_token,
        )
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        while let Some((_, mut child)) = self.processes.pop() {
            terminate(&mut child);
        }
    }
}

/// SIGTERM, then SIGKILL after a grace period: etcd and the API server shut down cleanly on
/// SIGTERM, and a test must not hang on one that does not.
fn terminate(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// How often a start that lost a port race is tried.
const PORT_ATTEMPTS: u32 = 4;

/// A port free on the loopback interface at the time of asking.
pub fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| format!("no free loopback port: {e}"))
}

fn write(path: &Path, contents: &str) -> Result<(), String> {
    fs::write(path, contents).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A bearer token nobody can guess from outside the test: 16 bytes of `/dev/urandom`.
fn random_token() -> Result<String, String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .map_err(|e| format!("cannot read /dev/urandom: {e}"))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}
