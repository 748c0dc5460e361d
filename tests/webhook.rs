//! `kopgen create webhook` on a real control plane: a scaffolded project's defaulting and
//! validating webhooks, filled in as a user would, served by its manager over TLS and called
//! by kube-apiserver through the configurations `kopgen manifests` wrote (pointed at the
//! manager by URL with a test CA, as controller-runtime's envtest does).

mod support;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Child, Command},
};

use base64::Engine as _;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
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
    let module = project.join("src/webhooks/apps_v1_blog.rs");
    let mut code = std::fs::read_to_string(&module).expect("webhook module");
    for (scaffolded, written) in EDITS {
        assert!(code.contains(scaffolded), "{scaffolded}\nnot in\n{code}");
        code = code.replacen(scaffolded, written, 1);
    }
    std::fs::write(&module, code).expect("write");
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

/// The user's conversion: v1alpha1 calls the field `legacyFoo`, v1 (the hub) `foo`.
const CONVERSION_EDITS: &[(&str, &str, &str)] = &[
    (
        "src/api/apps/v1alpha1/blog.rs",
        "    pub foo: Option<String>,\n",
        "    pub legacy_foo: Option<String>,\n",
    ),
    (
        "src/webhooks/apps_v1_blog_conversion.rs",
        "            spec: same_fields(spoke.spec)?,\n",
        "            spec: v1::BlogSpec {\n                foo: spoke.spec.legacy_foo,\n            },\n",
    ),
    (
        "src/webhooks/apps_v1_blog_conversion.rs",
        "            spec: same_fields(hub.spec)?,\n",
        "            spec: v1alpha1::BlogSpec {\n                legacy_foo: hub.spec.foo,\n            },\n",
    ),
];

/// Values to store, from a fixed-seed generator: a property checked on many generated objects,
/// the same ones every run.
fn generated_values(count: usize) -> Vec<String> {
    let alphabet: Vec<char> = "abcXYZ019 -_.:/\\\"'{}[]#&*!|>%@`éß日本\u{1F600}"
        .chars()
        .collect();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..count)
        .map(|_| {
            let len = (next() % 40) as usize;
            (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect()
        })
        .collect()
}

#[test]
fn objects_stored_as_the_hub_read_as_each_spoke_and_back_without_loss() {
    let test = "objects_stored_as_the_hub_read_as_each_spoke_and_back_without_loss";
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    let session = support::Session::new();
    session.ok(&[
        "init",
        "--path",
        "conv",
        "--project-name",
        "conv",
        "--domain",
        "example.com",
    ]);
    let project = session.join("conv");
    for version in ["v1", "v1alpha1", "v1beta1"] {
        support::create_api_ok(
            &project,
            &[
                "--group",
                "apps",
                "--version",
                version,
                "--kind",
                "Blog",
                "--controller=false",
            ],
        );
    }
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
            "--conversion",
            "--spoke",
            "v1alpha1,v1beta1",
        ],
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    // v1alpha1 renames the field (the user's conversion, below); v1beta1 keeps the scaffolded one.
    for (file, scaffolded, written) in CONVERSION_EDITS {
        let path = project.join(file);
        let code = std::fs::read_to_string(&path).expect("read");
        assert!(
            code.contains(scaffolded),
            "{scaffolded}\nnot in {file}:\n{code}"
        );
        std::fs::write(&path, code.replacen(scaffolded, written, 1)).expect("write");
    }
    let run = support::run_kopgen(&project, &["manifests"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let binary = support::build_manager(&project, "conv");

    let certs = session.path().join("certs");
    std::fs::create_dir_all(&certs).expect("mkdir");
    let pair = certificates("conversion test CA");
    write_certificates(&certs, &pair);
    let manager = Manager::start(&binary, &plane, &certs, session.path());
    let webhook_port = manager.webhook_port;
    let context = || manager.context(&plane);

    // The CRD as config/crd builds it (with the conversion patch), its webhook pointed at the
    // manager by URL.
    let crd = plane
        .kubectl()
        .args([
            "kustomize",
            &project.join("config/crd").display().to_string(),
        ])
        .output()
        .expect("kubectl");
    assert!(
        crd.status.success(),
        "{}",
        String::from_utf8_lossy(&crd.stderr)
    );
    let mut crd: Value = serde_yaml::from_slice(&crd.stdout).expect("one CRD");
    let path = &crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["path"];
    assert_eq!(path, "/convert", "{crd}");
    crd["spec"]["conversion"]["webhook"]["clientConfig"] = serde_json::json!({
        "url": format!("https://127.0.0.1:{webhook_port}/convert"),
        "caBundle": base64::engine::general_purpose::STANDARD.encode(&pair.ca),
    });
    let (ok, _, stderr) = kubectl_in(
        &plane,
        &["apply", "--server-side", "-f", "-"],
        &crd.to_string(),
    );
    assert!(ok, "{stderr}");
    kubectl_ok(
        &plane,
        &["wait", "--for=condition=Established", "crd", "--all"],
    );

    let read = |version: &str, name: &str| -> Option<Value> {
        let resource = format!("blogs.{version}.apps.example.com");
        let out = plane
            .kubectl()
            .args(["get", &resource, name, "-o", "json"])
            .output()
            .ok()?;
        serde_json::from_slice(&out.stdout)
            .ok()
            .filter(|_| out.status.success())
    };
    let object = |version: &str, name: &str, field: &str, value: &str| {
        serde_json::json!({
            "apiVersion": format!("apps.example.com/{version}"),
            "kind": "Blog",
            "metadata": {"name": name, "namespace": "default", "labels": {"case": name}},
            "spec": {field: value},
        })
        .to_string()
    };
    // The first read through the webhook waits for the API server to trust it.
    let (ok, _, stderr) = kubectl_in(
        &plane,
        &["create", "-f", "-"],
        &object("v1", "warmup", "foo", "x"),
    );
    assert!(ok, "{stderr}");
    eventually("v1alpha1 is served through /convert", &context, || {
        read("v1alpha1", "warmup").filter(|o| o["spec"]["legacyFoo"] == "x")
    });

    let values = generated_values(25);
    for (i, value) in values.iter().enumerate() {
        let name = format!("case-{i}");
        // Stored as the hub...
        let (ok, _, stderr) = kubectl_in(
            &plane,
            &["create", "-f", "-"],
            &object("v1", &name, "foo", value),
        );
        assert!(ok, "{value:?}: {stderr}");
        let mut stored = value.clone();
        for (spoke_version, field) in [("v1alpha1", "legacyFoo"), ("v1beta1", "foo")] {
            // ...read as each spoke...
            let spoke =
                read(spoke_version, &name).unwrap_or_else(|| panic!("{value:?}\n{}", context()));
            assert_eq!(
                spoke["apiVersion"],
                format!("apps.example.com/{spoke_version}")
            );
            assert_eq!(spoke["spec"][field], stored.as_str(), "{spoke:#}");
            assert_eq!(spoke["metadata"]["labels"]["case"], name.as_str());
            // ...written as it, read as the hub.
            let changed = format!("{stored}~");
            let (ok, _, stderr) = kubectl_in(
                &plane,
                &["apply", "--server-side", "--force-conflicts", "-f", "-"],
                &object(spoke_version, &name, field, &changed),
            );
            assert!(ok, "{changed:?}: {stderr}");
            let hub = read("v1", &name).unwrap_or_else(|| panic!("{changed:?}\n{}", context()));
            assert_eq!(hub["spec"]["foo"], changed.as_str(), "{hub:#}");
            assert!(hub["spec"].get("legacyFoo").is_none(), "{hub:#}");
            stored = changed;
        }
    }
}

/// A CA valid for `days` more days and a serving certificate for 127.0.0.1 it signed, valid for
/// `leaf_days`: (CA, CA key, certificate, key), PEM.
fn expiring(name: &str, days: i64, leaf_days: i64) -> (String, String, String, String) {
    let now = time::OffsetDateTime::now_utc();
    let ca_key = KeyPair::generate().expect("key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, name);
    ca.not_before = now - time::Duration::days(1);
    ca.not_after = now + time::Duration::days(days);
    let ca_pem = ca.self_signed(&ca_key).expect("CA").pem();
    let ca_key_pem = ca_key.serialize_pem();
    let (cert, key) = signed_by(&ca_pem, &ca_key_pem, leaf_days);
    (ca_pem, ca_key_pem, cert, key)
}

/// A serving certificate for 127.0.0.1 signed by the CA, valid for `days` more days.
fn signed_by(ca: &str, ca_key: &str, days: i64) -> (String, String) {
    let now = time::OffsetDateTime::now_utc();
    let issuer =
        Issuer::from_ca_cert_pem(ca, KeyPair::from_pem(ca_key).expect("CA key")).expect("CA");
    let key = KeyPair::generate().expect("key");
    let mut serving = CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("params");
    serving.not_before = now - time::Duration::days(1);
    serving.not_after = now + time::Duration::days(days);
    let cert = serving.signed_by(&key, &issuer).expect("certificate");
    (cert.pem(), key.serialize_pem())
}

/// The self-managed certificate's Secret, its values decoded.
fn secret(plane: &ControlPlane) -> Option<BTreeMap<String, String>> {
    let out = plane
        .kubectl()
        .args(["get", "secret", SECRET, "-n", "demo-system", "-o", "json"])
        .output()
        .expect("kubectl");
    let secret: Value = serde_json::from_slice(&out.stdout).ok()?;
    let data = secret["data"].as_object()?;
    let decode = |v: &Value| {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(v.as_str()?)
            .ok()?;
        String::from_utf8(bytes).ok()
    };
    data.iter()
        .map(|(key, value)| Some((key.clone(), decode(value)?)))
        .collect()
}

/// Replaces the Secret's values given in `values`.
fn write_secret(plane: &ControlPlane, values: &[(&str, &str)]) {
    let data: serde_json::Map<String, Value> = values
        .iter()
        .map(|(key, value)| {
            let encoded = base64::engine::general_purpose::STANDARD.encode(value);
            ((*key).to_owned(), Value::String(encoded))
        })
        .collect();
    let patch = serde_json::json!({ "data": data }).to_string();
    let args = [
        "patch",
        "secret",
        SECRET,
        "-n",
        "demo-system",
        "--type=merge",
        "-p",
        &patch,
    ];
    kubectl_ok(plane, &args);
}

/// Every caBundle the API server uses to reach the manager: each webhook's of both
/// configurations, and the CRD's conversion webhook's, decoded.
fn ca_bundles(plane: &ControlPlane) -> Vec<String> {
    let get = |args: &[&str]| -> Value {
        let out = plane.kubectl().args(args).output().expect("kubectl");
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    };
    let decode = |v: &Value| {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let mut bundles = Vec::new();
    for kind in [
        "mutatingwebhookconfiguration/demo-mutating-webhook-configuration",
        "validatingwebhookconfiguration/demo-validating-webhook-configuration",
    ] {
        let configuration = get(&["get", kind, "-o", "json"]);
        for webhook in configuration["webhooks"].as_array().into_iter().flatten() {
            bundles.push(decode(&webhook["clientConfig"]["caBundle"]));
        }
    }
    let crd = get(&["get", "crd", "blogs.apps.example.com", "-o", "json"]);
    bundles.push(decode(
        &crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"],
    ));
    bundles
}

/// The certificate the webhook server presents, PEM without line breaks.
fn served_certificate(port: u16) -> Option<String> {
    let out = Command::new("curl")
        .args(["-sk", "-o", "/dev/null", "-w", "%{certs}"])
        .arg(format!("https://127.0.0.1:{port}/"))
        .output()
        .ok()?;
    first_certificate(&String::from_utf8_lossy(&out.stdout))
}

/// The first PEM certificate in `text`, without whitespace, to compare two encodings.
fn first_certificate(text: &str) -> Option<String> {
    let begin = text.find("-----BEGIN CERTIFICATE-----")?;
    let end = text[begin..].find("-----END CERTIFICATE-----")? + begin;
    Some(text[begin..end].split_whitespace().collect())
}

/// Whether the webhook server's certificate verifies with the CA `ca` alone.
fn trusted_by(ca: &str, port: u16, dir: &Path) -> bool {
    let file = dir.join("trusted-ca.pem");
    std::fs::write(&file, ca).expect("write");
    Command::new("curl")
        .args(["-s", "-o", "/dev/null", "--cacert"])
        .arg(&file)
        .arg(format!("https://127.0.0.1:{port}/"))
        .status()
        .is_ok_and(|status| status.success())
}

const SECRET: &str = "demo-webhook-server-cert";

#[test]
fn a_self_managed_certificate_keeps_every_ca_bundle_right_across_renewals() {
    let test = "a_self_managed_certificate_keeps_every_ca_bundle_right_across_renewals";
    if !support::need("curl", test, "apt install curl") {
        return;
    }
    let Some(plane) = support::control_plane(test, Options::default()) else {
        return;
    };
    let session = support::Session::new();
    let project = session.init_demo(&[]);
    for version in ["v1", "v1alpha1"] {
        let args = ["--group", "apps", "--version", version, "--kind", "Blog"];
        support::create_api_ok(&project, &args);
    }
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
            "--conversion",
            "--spoke",
            "v1alpha1",
            "--certificates",
            "self-managed",
        ],
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    let module = project.join("src/webhooks/apps_v1_blog.rs");
    let code = std::fs::read_to_string(&module).expect("webhook module");
    let (scaffolded, written) = EDITS[0];
    assert!(code.contains(scaffolded), "{code}");
    std::fs::write(&module, code.replacen(scaffolded, written, 1)).expect("write");
    let run = support::run_kopgen(&project, &["manifests"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    let binary = support::build_manager(&project, "demo");

    // Deployed as `make deploy` would (RBAC of config/selfmanaged included), then each webhook
    // pointed at the manager by URL, trusting CA A: what an earlier manager left behind.
    let webhook_port = free_port().expect("port");
    let rendered = plane
        .kubectl()
        .args([
            "kustomize",
            &project.join("config/default").display().to_string(),
        ])
        .output()
        .expect("kubectl");
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let rendered = String::from_utf8_lossy(&rendered.stdout).into_owned();
    let (ok, _, stderr) = kubectl_in(&plane, &["apply", "--server-side", "-f", "-"], &rendered);
    assert!(ok, "{stderr}");
    let (ca_a, ca_a_key, cert_a, key_a) = expiring("CA A", 200, 60);
    let configurations: String = serde_yaml::Deserializer::from_str(&rendered)
        .filter_map(|doc| <Value as serde::Deserialize>::deserialize(doc).ok())
        .filter(|doc| doc["webhooks"].is_array())
        .map(|doc| serde_yaml::to_string(&doc).expect("yaml"))
        .collect::<Vec<_>>()
        .join("---\n");
    let pointed = pointed_at(&configurations, webhook_port, &ca_a);
    let (ok, _, stderr) = kubectl_in(
        &plane,
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        &pointed,
    );
    assert!(ok, "{stderr}");
    let conversion = serde_json::json!([{
        "op": "replace",
        "path": "/spec/conversion/webhook/clientConfig",
        "value": {
            "url": format!("https://127.0.0.1:{webhook_port}/convert"),
            "caBundle": base64::engine::general_purpose::STANDARD.encode(&ca_a),
        },
    }]);
    let conversion = conversion.to_string();
    let args = [
        "patch",
        "crd",
        "blogs.apps.example.com",
        "--type=json",
        "-p",
        &conversion,
    ];
    kubectl_ok(&plane, &args);
    kubectl_ok(
        &plane,
        &["wait", "--for=condition=Established", "crd", "--all"],
    );
    // CA A has 200 days left: inside the year before its end when a CA is renewed.
    let secret_yaml = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": { "name": SECRET, "namespace": "demo-system" },
        "type": "kubernetes.io/tls",
        "stringData": { "ca.crt": ca_a, "ca.key": ca_a_key, "tls.crt": cert_a, "tls.key": key_a },
    });
    let (ok, _, stderr) = kubectl_in(&plane, &["create", "-f", "-"], &secret_yaml.to_string());
    assert!(ok, "{stderr}");

    // The manager runs as its ServiceAccount: config/rbac and config/selfmanaged are all it has.
    let kubeconfig = plane
        .kubeconfig_as("system:serviceaccount:demo-system:demo-controller-manager")
        .expect("kubeconfig");
    let manager = Manager::start_as(
        &binary,
        &plane,
        &kubeconfig,
        webhook_port,
        &[
            &format!("--webhook-cert-secret={SECRET}"),
            "--webhook-cert-hosts=127.0.0.1",
            "--webhook-cert-check-seconds=1",
            "--leader-election-namespace=demo-system",
        ],
        session.path(),
    );
    let context = || manager.context(&plane);

    // At start: CA A renewed to CA B; the bundle trusts both until A expires; every caBundle
    // is that bundle; the certificate served is the Secret's, signed by B.
    let keys = secret(&plane).unwrap_or_else(|| panic!("no Secret {SECRET}\n{}", context()));
    let bundle = keys["ca.crt"].clone();
    let cas: Vec<&str> = bundle
        .split_inclusive("-----END CERTIFICATE-----\n")
        .collect();
    assert_eq!(cas.len(), 2, "{bundle}");
    assert_eq!(cas[1], ca_a, "CA A stays trusted");
    let ca_b = cas[0].to_owned();
    eventually("every caBundle is the Secret's", &context, || {
        ca_bundles(&plane)
            .iter()
            .all(|b| *b == bundle)
            .then_some(())
    });
    assert_eq!(ca_bundles(&plane).len(), 3, "two webhooks and the CRD");
    assert!(
        trusted_by(&ca_b, webhook_port, session.path()),
        "{}",
        context()
    );
    assert_eq!(
        served_certificate(webhook_port),
        first_certificate(&keys["tls.crt"])
    );
    // Admission and conversion go through the trusted certificate.
    let (ok, _, stderr) = kubectl_in(&plane, &["create", "-f", "-"], &blog("plain", None));
    assert!(ok, "{stderr}\n{}", context());
    let out = plane
        .kubectl()
        .args([
            "get",
            "blogs.v1alpha1.apps.example.com",
            "plain",
            "-o",
            "json",
        ])
        .output()
        .expect("kubectl");
    let spoke: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(
        spoke["apiVersion"],
        "apps.example.com/v1alpha1",
        "{}",
        context()
    );
    assert_eq!(spoke["spec"]["foo"], "defaulted", "{spoke}");

    // A serving certificate 10 days from its end is renewed by the same CA; no caBundle moves.
    let (near_end, near_end_key) = signed_by(&ca_b, &keys["ca.key"], 10);
    write_secret(
        &plane,
        &[("tls.crt", &near_end), ("tls.key", &near_end_key)],
    );
    let renewed = eventually("the certificate is renewed", &context, || {
        secret(&plane).filter(|now| now["tls.crt"] != near_end && now["tls.crt"] != keys["tls.crt"])
    });
    assert_eq!(renewed["ca.crt"], bundle, "the CA stays");
    eventually("the renewed certificate is served", &context, || {
        (served_certificate(webhook_port) == first_certificate(&renewed["tls.crt"])).then_some(())
    });
    assert!(ca_bundles(&plane).iter().all(|b| *b == bundle));
    assert!(
        trusted_by(&ca_b, webhook_port, session.path()),
        "{}",
        context()
    );
    let (ok, _, stderr) = kubectl_in(&plane, &["create", "-f", "-"], &blog("after", None));
    assert!(ok, "{stderr}\n{}", context());

    // A caBundle someone removed is put back.
    let out = plane
        .kubectl()
        .args([
            "patch",
            "validatingwebhookconfiguration",
            "demo-validating-webhook-configuration",
            "--type=json",
            "-p",
            r#"[{"op": "remove", "path": "/webhooks/0/clientConfig/caBundle"}]"#,
        ])
        .output()
        .expect("kubectl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eventually("the removed caBundle is back", &context, || {
        ca_bundles(&plane)
            .iter()
            .all(|b| *b == bundle)
            .then_some(())
    });

    // A deleted Secret is created again, with a new CA that every caBundle then trusts.
    kubectl_ok(&plane, &["delete", "secret", SECRET, "-n", "demo-system"]);
    let recreated = eventually("the Secret is created again", &context, || {
        secret(&plane).filter(|now| now["ca.crt"] != bundle)
    });
    let fresh = recreated["ca.crt"].clone();
    assert_eq!(fresh.matches("BEGIN CERTIFICATE").count(), 1, "{fresh}");
    eventually("every caBundle trusts the new CA", &context, || {
        ca_bundles(&plane).iter().all(|b| *b == fresh).then_some(())
    });
    eventually("the new CA's certificate is served", &context, || {
        trusted_by(&fresh, webhook_port, session.path()).then_some(())
    });
    let (ok, _, stderr) = kubectl_in(&plane, &["create", "-f", "-"], &blog("recreated", None));
    assert!(ok, "{stderr}\n{}", context());
    assert!(!context().contains("forbidden"), "{}", context());
}
