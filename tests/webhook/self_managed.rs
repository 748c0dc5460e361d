//! Self-managed serving certificates: renewals keep every caBundle right.

use std::{collections::BTreeMap, path::Path, process::Command};

use base64::Engine as _;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use serde_json::Value;

use super::{EDITS, Manager, blog, kubectl_in};
use crate::support::control_plane::{ControlPlane, Options, free_port};
use crate::support::webhook_tls::pointed_at;
use crate::support::{self, eventually, kubectl_ok};

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
