//! `kopgen create webhook` on a real control plane: a scaffolded project's defaulting and
//! validating webhooks, filled in as a user would, served by its manager over TLS and called
//! by kube-apiserver through the configurations `kopgen manifests` wrote (pointed at the
//! manager by URL with a test CA, as controller-runtime's envtest does).

#[path = "webhook/conversion.rs"]
mod conversion;
#[path = "webhook/self_managed.rs"]
mod self_managed;
mod support;

use std::{
    path::{Path, PathBuf},
    process::{Child, Command},
};

use serde_json::Value;
use support::control_plane::{ControlPlane, Options, free_port};
use support::webhook_tls::{certificates, pointed_at, write_certificates};
use support::{eventually, http_get, kubectl_ok};

/// The user's code, replacing the scaffold's TODOs: a default, a refusal, a warning and a
/// rule that needs the old object.
const EDITS: &[(&str, &str)] = &[
    (
        "        // TODO(user): fill in defaults, e.g.\n        // self.spec.replicas.get_or_insert(1);\n        let _ = review;\n",
        "        self.spec.foo.get_or_insert_with(|| \"defaulted\".into());\n        let _ = review;\n",
    ),
    (
        "        // TODO(user): refuse what must not be stored.\n        let _ = review;\n        Ok(Warnings::new())\n",
        "        let _ = review;\n        match self.spec.foo.as_deref() {\n            Some(foo @ \"forbidden\") => Err(Denied::invalid([webhook::FieldError::invalid(\n                \"spec.foo\",\n                foo,\n                \"must not be forbidden\",\n            )])),\n            Some(\"draft\") => Ok(vec![\"foo is a draft\".into()]),\n            _ => Ok(Warnings::new()),\n        }\n",
    ),
    (
        "        // TODO(user): compare `old` and `self`, e.g. a field that must never change.\n        let _ = old;\n",
        "        if old.spec.foo.as_deref() == Some(\"frozen\") && self.spec.foo != old.spec.foo {\n            return Err(Denied::new(\"foo is frozen\"));\n        }\n",
    ),
];

fn blog(name: &str, value: Option<&str>) -> String {
    let spec = value.map_or("{}".to_owned(), |v| format!("{{\"foo\": \"{v}\"}}"));
    format!(
        "{{\"apiVersion\": \"apps.example.com/v1\", \"kind\": \"Blog\", \"metadata\": {{\"name\": \"{name}\", \"namespace\": \"default\"}}, \"spec\": {spec}}}"
    )
}

/// kubectl with `yaml` on standard input: (success, stdout, stderr).
fn kubectl_in(plane: &ControlPlane, args: &[&str], yaml: &str) -> (bool, String, String) {
    let out = plane.kubectl_with_input(args, yaml);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The generated manager serving its webhooks with the certificate in `certs`.
struct Manager {
    child: Child,
    log: PathBuf,
    webhook_port: u16,
    probes: u16,
}

impl Manager {
    /// Starts the manager against `plane` and waits until it is ready.
    fn start(binary: &Path, plane: &ControlPlane, certs: &Path, dir: &Path) -> Manager {
        let webhook_port = free_port().expect("port");
        let certs = format!("--webhook-cert-path={}", certs.display());
        Manager::start_as(
            binary,
            plane,
            &plane.kubeconfig(),
            webhook_port,
            &[&certs],
            dir,
        )
    }

    /// Starts the manager with `kubeconfig`, serving webhooks on `webhook_port`, with more
    /// `args`, and waits until it is ready.
    fn start_as(
        binary: &Path,
        plane: &ControlPlane,
        kubeconfig: &Path,
        webhook_port: u16,
        args: &[&str],
        dir: &Path,
    ) -> Manager {
        let probes = free_port().expect("port");
        let log = dir.join("manager.log");
        let out = std::fs::File::create(&log).expect("log");
        let child = Command::new(binary)
            .args([
                &format!("--health-probe-bind-address=127.0.0.1:{probes}"),
                "--metrics-bind-address=0",
                &format!("--webhook-port={webhook_port}"),
            ])
            .args(args)
            .env("KUBECONFIG", kubeconfig)
            .stdout(out.try_clone().expect("log"))
            .stderr(out)
            .spawn()
            .expect("the manager starts");
        let manager = Manager {
            child,
            log,
            webhook_port,
            probes,
        };
        eventually("the manager is ready", &|| manager.context(plane), || {
            http_get(probes, "/readyz").filter(|(code, _)| *code == 200)
        });
        manager
    }

    /// The manager's and the control plane's logs, for a failure message.
    fn context(&self, plane: &ControlPlane) -> String {
        format!(
            "--- manager\n{}\n{}",
            std::fs::read_to_string(&self.log).unwrap_or_default(),
            plane.logs()
        )
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn webhooks_default_validate_and_reload_their_certificate_on_a_real_control_plane() {
    let test = "webhooks_default_validate_and_reload_their_certificate_on_a_real_control_plane";
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    let session = support::Session::new();
    let project = session.init_demo(&[]);
    support::create_api_ok(
        &project,
        &["--group", "apps", "--version", "v1", "--kind", "Blog"],
    );
    let run = support::run_kopgen(
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
            "--programmatic-validation",
        ],
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    support::edits::edit_scaffolded(&project.join("src/webhooks/apps_v1_blog.rs"), EDITS);
    let run = support::run_kopgen(&project, &["manifests"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let binary = support::build_manager(&project, "demo");

    let certs = session.path().join("certs");
    std::fs::create_dir_all(&certs).expect("mkdir");
    let first = certificates("webhook test CA 1");
    write_certificates(&certs, &first);
    let crds = project.join("config/crd/bases").display().to_string();
    kubectl_ok(&plane, &["apply", "--server-side", "-f", &crds]);
    kubectl_ok(
        &plane,
        &["wait", "--for=condition=Established", "crd", "--all"],
    );

    // Run from a laptop (`make run` without ENABLE_WEBHOOKS=false), no certificate: the
    // manager stops at once and says what to do.
    let missing = Command::new(&binary)
        .args([
            "--health-probe-bind-address=127.0.0.1:0",
            "--metrics-bind-address=0",
        ])
        .arg(format!(
            "--webhook-cert-path={}",
            session.path().join("none").display()
        ))
        .env("KUBECONFIG", plane.kubeconfig())
        .env_remove("ENABLE_WEBHOOKS")
        .output()
        .expect("the manager runs");
    let said = String::from_utf8_lossy(&missing.stderr).to_string()
        + &String::from_utf8_lossy(&missing.stdout);
    assert!(!missing.status.success(), "{said}");
    assert!(
        said.contains("tls.crt does not exist") && said.contains("ENABLE_WEBHOOKS=false"),
        "{said}"
    );

    let manager = Manager::start(&binary, &plane, &certs, session.path());
    let (webhook_port, probes) = (manager.webhook_port, manager.probes);
    let context = || manager.context(&plane);

    let manifests = std::fs::read_to_string(project.join("config/webhook/manifests.yaml"))
        .expect("config/webhook/manifests.yaml");
    let configurations = pointed_at(&manifests, webhook_port, &first.ca);
    let (ok, _, stderr) = kubectl_in(&plane, &["apply", "-f", "-"], &configurations);
    assert!(ok, "{stderr}");

    // Defaulting: a Blog without foo is stored with the default.
    let defaulted = |name: &str| {
        let (ok, stdout, _) = kubectl_in(
            &plane,
            &["create", "--dry-run=server", "-o", "json", "-f", "-"],
            &blog(name, None),
        );
        let object: Value = serde_json::from_str(&stdout).ok().filter(|_| ok)?;
        (object["spec"]["foo"] == "defaulted").then_some(())
    };
    eventually("a dry run gets the default", &context, || {
        defaulted("probe")
    });
    let (ok, _, stderr) = kubectl_in(&plane, &["create", "-f", "-"], &blog("plain", None));
    assert!(ok, "{stderr}");
    let out = plane
        .kubectl()
        .args(["get", "blog", "plain", "-o", "jsonpath={.spec.foo}"])
        .output()
        .expect("kubectl");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "defaulted");

    // Validation: a refusal naming the field, a warning, an update judged against the old
    // object.
    let (ok, _, stderr) = kubectl_in(
        &plane,
        &["create", "-f", "-"],
        &blog("bad", Some("forbidden")),
    );
    assert!(!ok, "a forbidden Blog was admitted");
    // A 422 Invalid with the field as its cause: kubectl prints it as for the API server's
    // own validation (from `details.causes`), which it does only for that status.
    assert!(
        stderr.contains(
            "The Blog \"bad\" is invalid: spec.foo: Invalid value: \"forbidden\": must not be forbidden"
        ),
        "{stderr}"
    );
    let (ok, _, stderr) = kubectl_in(
        &plane,
        &["create", "-f", "-"],
        &blog("draft", Some("draft")),
    );
    assert!(ok, "{stderr}");
    assert!(stderr.contains("Warning: foo is a draft"), "{stderr}");
    let (ok, _, stderr) = kubectl_in(
        &plane,
        &["create", "-f", "-"],
        &blog("cold", Some("frozen")),
    );
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = kubectl_in(
        &plane,
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        &blog("cold", Some("thawed")),
    );
    assert!(!ok, "a frozen field changed");
    assert!(stderr.contains("foo is frozen"), "{stderr}");

    // A large object's UPDATE: its review carries the object twice, past axum's 2 MB; the
    // webhooks take controller-runtime's 7 MiB.
    let large = |fill: &str| fill.repeat(1_100_000);
    let (ok, _, stderr) = kubectl_in(
        &plane,
        &["create", "-f", "-"],
        &blog("large", Some(&large("a"))),
    );
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = kubectl_in(
        &plane,
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        &blog("large", Some(&large("b"))),
    );
    assert!(ok, "the UPDATE of a large object was refused: {stderr}");
    let (ok, _, stderr) = kubectl_in(
        &plane,
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        &blog("plain", Some("edited")),
    );
    assert!(ok, "an allowed update was refused: {stderr}");

    // A key that does not match the certificate fails /healthz; the old pair keeps serving.
    let second = certificates("webhook test CA 2");
    std::fs::write(certs.join("tls.key"), &second.key).expect("write");
    eventually("/healthz reports the broken pair", &context, || {
        http_get(probes, "/healthz").filter(|(code, _)| *code == 500)
    });
    assert!(defaulted("still-served").is_some(), "{}", context());
    // A new pair from another CA is loaded in place: with the configurations trusting only the
    // new CA, the API server reaches the webhook only through the reloaded certificate.
    write_certificates(&certs, &second);
    eventually("/healthz is back", &context, || {
        http_get(probes, "/healthz").filter(|(code, _)| *code == 200)
    });
    let configurations = pointed_at(&manifests, webhook_port, &second.ca);
    let (ok, _, stderr) = kubectl_in(&plane, &["apply", "-f", "-"], &configurations);
    assert!(ok, "{stderr}");
    eventually("the reloaded certificate serves", &context, || {
        defaulted("after-rotation")
    });
}
