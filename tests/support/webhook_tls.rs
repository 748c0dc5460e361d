//! Certificates for a manager's webhook server run out of the cluster, and the webhook
//! configurations pointed at it by URL (as controller-runtime's envtest does).

use std::{net::Ipv4Addr, path::Path};

use base64::Engine as _;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
use serde_json::Value;

/// A CA and the serving certificate it signed for 127.0.0.1, as PEM.
pub struct Certificates {
    pub ca: String,
    pub cert: String,
    pub key: String,
}

pub fn certificates(name: &str) -> Certificates {
    let ca_key = KeyPair::generate().expect("key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, name);
    let ca_pem = ca.self_signed(&ca_key).expect("CA").pem();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().expect("key");
    let mut serving = CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
    serving
        .subject_alt_names
        .push(SanType::IpAddress(Ipv4Addr::LOCALHOST.into()));
    let cert = serving.signed_by(&key, &issuer).expect("certificate");
    Certificates {
        ca: ca_pem,
        cert: cert.pem(),
        key: key.serialize_pem(),
    }
}

pub fn write_certificates(dir: &Path, certificates: &Certificates) {
    std::fs::write(dir.join("tls.crt"), &certificates.cert).expect("write");
    std::fs::write(dir.join("tls.key"), &certificates.key).expect("write");
}

/// config/webhook/manifests.yaml with each webhook sent to `https://127.0.0.1:<port><path>`
/// and trusting `ca`, as JSON documents for `kubectl apply`.
pub fn pointed_at(manifests: &str, port: u16, ca: &str) -> String {
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca);
    let mut docs = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(manifests) {
        let Ok(mut doc) = <Value as serde::Deserialize>::deserialize(doc) else {
            continue;
        };
        if doc.is_null() {
            continue;
        }
        for webhook in doc["webhooks"].as_array_mut().expect("webhooks") {
            let path = webhook["clientConfig"]["service"]["path"]
                .as_str()
                .expect("a service path")
                .to_owned();
            webhook["clientConfig"] = serde_json::json!({
                "url": format!("https://127.0.0.1:{port}{path}"),
                "caBundle": bundle,
            });
        }
        docs.push(doc.to_string());
    }
    docs.join("\n")
}
