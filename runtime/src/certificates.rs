//! Self-managed webhook certificates (`--webhook-cert-secret`), for clusters without
//! cert-manager (controller-runtime#3038): the manager keeps its own CA and serving certificate
//! in a Secret, and keeps `caBundle` current on its webhook configurations and on the CRDs it
//! converts, with server-side apply.
//!
//! The serving certificate is renewed long before the CA, so that they never expire together
//! (kubebuilder#5253); a renewed CA is added to the bundle beside the old one until the old one
//! expires, so a replica still serving the old certificate stays trusted. Every replica runs
//! this (each serves webhooks); the Secret's resourceVersion decides which renewal is kept, and
//! every replica updates the `caBundle`s before it serves a new certificate.

use std::time::Duration;

use k8s_openapi::{
    ByteString,
    api::{
        admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
        core::v1::Secret,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client, Resource,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::json;
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};
use x509_parser::{certificate::X509Certificate, extensions::GeneralName};

use crate::{Error, Result, tls::Tls};

// The manager reads and writes its Secret, and sets caBundle on its own webhook configurations
// and CRDs; config/selfmanaged grants exactly that (rules restricted by resourceNames).

/// How long a CA is valid, and how long before its end a new one is made.
const CA_LIFETIME: time::Duration = time::Duration::days(3650);
const CA_RENEW_BEFORE: time::Duration = time::Duration::days(365);
/// How long a serving certificate is valid, and how long before its end a new one is made
/// (cert-manager's defaults: 90 days, renewed at two thirds).
const LEAF_LIFETIME: time::Duration = time::Duration::days(90);
const LEAF_RENEW_BEFORE: time::Duration = time::Duration::days(30);
/// Certificates start a little in the past, for clocks that lag the manager's.
const CLOCK_SKEW: time::Duration = time::Duration::hours(1);

/// The Secret's keys, cert-manager's names plus the CA's key.
const CA_CERT: &str = "ca.crt";
const CA_KEY: &str = "ca.key";
const TLS_CERT: &str = "tls.crt";
const TLS_KEY: &str = "tls.key";

/// What the Secret holds: every CA still trusted (the current one first), the current CA's
/// key, and the serving certificate and key, all PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    /// The CAs to trust (PEM, the newest first while an older one is still in use).
    pub ca_bundle: String,
    /// The newest CA's key.
    pub ca_key: String,
    /// The serving certificate.
    pub cert: String,
    /// Its key.
    pub key: String,
}

/// Where the certificates live and who must trust them.
#[derive(Clone)]
pub struct SelfManaged {
    /// Client for the API server.
    pub client: Client,
    /// The manager's name: the Secret's `managed-by` label, and (with `-certificates`) the
    /// field manager of the `caBundle`s.
    pub manager: String,
    /// The manager's namespace, home of the Secret.
    pub namespace: String,
    /// The Secret that keeps the CA and the serving certificate.
    pub secret: String,
    /// The names the serving certificate is valid for (the webhook Service's DNS names).
    pub hosts: Vec<String>,
    /// The MutatingWebhookConfiguration whose `caBundle`s are kept current.
    pub mutating_configuration: String,
    /// The ValidatingWebhookConfiguration whose `caBundle`s are kept current.
    pub validating_configuration: String,
    /// CRDs whose conversion webhook this manager serves.
    pub crds: Vec<String>,
    /// How often the certificate and the `caBundle`s are checked.
    pub check_every: Duration,
}

impl SelfManaged {
    /// Makes sure the Secret holds a good CA and serving certificate and that every `caBundle`
    /// trusts them; returns what to serve.
    pub async fn ensure(&self) -> Result<Keys> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        let existing = api.get_opt(&self.secret).await?;
        let current = existing.as_ref().and_then(keys_of);
        let keys = match renew(current.as_ref(), &self.hosts, now())? {
            None => current.ok_or_else(|| Error::Certificate("no keys to serve".into()))?,
            Some(renewed) if self.store(&api, existing, &renewed).await? => {
                info!(secret = %self.secret, "stored a renewed webhook certificate");
                renewed
            }
            // Another replica renewed first: serve what it stored.
            Some(_) => api
                .get_opt(&self.secret)
                .await?
                .as_ref()
                .and_then(keys_of)
                .ok_or_else(|| {
                    Error::Certificate(format!("Secret {} is incomplete", self.secret))
                })?,
        };
        self.trust(&keys.ca_bundle).await?;
        Ok(keys)
    }

    /// Checks every `check_every` and serves a new certificate as soon as it is trusted.
    pub async fn run(self, tls: Tls, mut serving: Keys, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(self.check_every) => {}
            }
            match self.ensure().await {
                Ok(keys) if keys.cert != serving.cert || keys.key != serving.key => {
                    let (cert, key) = (
                        keys.cert.clone().into_bytes(),
                        keys.key.clone().into_bytes(),
                    );
                    match tls.reload(cert, key).await {
                        Ok(()) => {
                            info!(secret = %self.secret, "serving the renewed webhook certificate");
                            serving = keys;
                        }
                        Err(error) => warn!(%error, "the renewed certificate does not load"),
                    }
                }
                Ok(_) => {}
                Err(error) => warn!(%error, "cannot check the webhook certificate"),
            }
        }
    }

    /// Creates the Secret, or replaces it if nobody changed it since it was read; `false` if
    /// somebody did (or created it first).
    async fn store(
        &self,
        api: &Api<Secret>,
        existing: Option<Secret>,
        keys: &Keys,
    ) -> Result<bool> {
        let data = [
            (CA_CERT, &keys.ca_bundle),
            (CA_KEY, &keys.ca_key),
            (TLS_CERT, &keys.cert),
            (TLS_KEY, &keys.key),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), ByteString(value.clone().into_bytes())))
        .collect();
        let written = match existing {
            None => {
                let secret = Secret {
                    metadata: ObjectMeta {
                        name: Some(self.secret.clone()),
                        labels: Some(
                            [(
                                "app.kubernetes.io/managed-by".to_owned(),
                                self.manager.clone(),
                            )]
                            .into(),
                        ),
                        ..ObjectMeta::default()
                    },
                    type_: Some("kubernetes.io/tls".to_owned()),
                    data: Some(data),
                    ..Secret::default()
                };
                api.create(&PostParams::default(), &secret).await
            }
            Some(mut secret) => {
                // Kept: the resourceVersion, so a concurrent renewal makes this one fail.
                secret.data = Some(data);
                api.replace(&self.secret, &PostParams::default(), &secret)
                    .await
            }
        };
        match written {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(error) => Err(error.into()),
        }
    }

    /// Sets `caBundle` wherever the API server calls this manager, where it differs.
    async fn trust(&self, bundle: &str) -> Result<()> {
        let encoded = serde_json::to_value(ByteString(bundle.as_bytes().to_vec()))?;
        let params = PatchParams::apply(&format!("{}-certificates", self.manager)).force();

        self.trust_configuration::<MutatingWebhookConfiguration>(
            &self.mutating_configuration,
            |c| {
                let webhooks = c.webhooks.unwrap_or_default().into_iter();
                webhooks
                    .map(|w| (w.name, w.client_config.ca_bundle))
                    .collect()
            },
            bundle,
            &encoded,
            &params,
        )
        .await?;
        self.trust_configuration::<ValidatingWebhookConfiguration>(
            &self.validating_configuration,
            |c| {
                let webhooks = c.webhooks.unwrap_or_default().into_iter();
                webhooks
                    .map(|w| (w.name, w.client_config.ca_bundle))
                    .collect()
            },
            bundle,
            &encoded,
            &params,
        )
        .await?;
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        for name in &self.crds {
            let Some(crd) = crds.get_opt(name).await? else {
                continue;
            };
            let Some(webhook) = crd
                .spec
                .conversion
                .filter(|c| c.strategy == "Webhook")
                .and_then(|c| c.webhook)
            else {
                continue;
            };
            let current = webhook.client_config.and_then(|c| c.ca_bundle);
            if current.as_ref().map(|b| &b.0[..]) == Some(bundle.as_bytes()) {
                continue;
            }
            let patch = json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": { "name": name },
                "spec": {
                    "conversion": { "webhook": { "clientConfig": { "caBundle": encoded } } },
                },
            });
            crds.patch(name, &params, &Patch::Apply(patch)).await?;
            info!(crd = %name, "caBundle updated");
        }
        Ok(())
    }
}

/// Each webhook of a configuration: its name and `caBundle`.
type Webhooks = Vec<(String, Option<ByteString>)>;

impl SelfManaged {
    /// Sets `caBundle` on the webhooks of configuration `name` (if it exists) whose bundle
    /// differs.
    async fn trust_configuration<C>(
        &self,
        name: &str,
        webhooks: fn(C) -> Webhooks,
        bundle: &str,
        encoded: &serde_json::Value,
        params: &PatchParams,
    ) -> Result<()>
    where
        C: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
    {
        let api: Api<C> = Api::all(self.client.clone());
        let Some(configuration) = api.get_opt(name).await? else {
            return Ok(());
        };
        let stale: Vec<String> = webhooks(configuration)
            .into_iter()
            .filter(|(_, current)| current.as_ref().map(|b| &b.0[..]) != Some(bundle.as_bytes()))
            .map(|(webhook, _)| webhook)
            .collect();
        if stale.is_empty() {
            return Ok(());
        }
        let patch = webhooks_patch(&C::kind(&()), name, &stale, encoded);
        api.patch(name, params, &Patch::Apply(patch)).await?;
        info!(configuration = %name, "caBundle updated");
        Ok(())
    }
}

/// An apply configuration that sets only `caBundle`, on the named webhooks.
fn webhooks_patch(
    kind: &str,
    name: &str,
    webhooks: &[String],
    bundle: &serde_json::Value,
) -> serde_json::Value {
    let webhooks: Vec<_> = webhooks
        .iter()
        .map(|webhook| json!({ "name": webhook, "clientConfig": { "caBundle": bundle } }))
        .collect();
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": { "name": name },
        "webhooks": webhooks,
    })
}

fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

/// The Secret's keys, if it has all four.
fn keys_of(secret: &Secret) -> Option<Keys> {
    let data = secret.data.as_ref()?;
    let text = |key: &str| String::from_utf8(data.get(key)?.0.clone()).ok();
    Some(Keys {
        ca_bundle: text(CA_CERT)?,
        ca_key: text(CA_KEY)?,
        cert: text(TLS_CERT)?,
        key: text(TLS_KEY)?,
    })
}

/// What the Secret should hold at `now`, or `None` when `current` is good as it is: a CA with
/// more than `CA_RENEW_BEFORE` (a year) left (else a new one, the old kept in the bundle until it
/// expires) and a serving certificate for `hosts`, signed by that CA, with more than
/// `LEAF_RENEW_BEFORE` (30 days) left.
pub fn renew(
    current: Option<&Keys>,
    hosts: &[String],
    now: OffsetDateTime,
) -> Result<Option<Keys>> {
    let bundle = current
        .map(|keys| certificates(&keys.ca_bundle))
        .unwrap_or_default();
    let usable_ca = current.zip(bundle.first()).filter(|(keys, ca)| {
        check(ca, |cert| {
            remaining(cert, now) > CA_RENEW_BEFORE && key_matches(cert, &keys.ca_key)
        })
    });
    let (ca, ca_key) = match usable_ca {
        Some((keys, ca)) => (ca.clone(), keys.ca_key.clone()),
        None => new_ca(now)?,
    };
    // The current CA first, then the others until they expire.
    let mut trusted = vec![ca.clone()];
    trusted.extend(
        bundle
            .into_iter()
            .filter(|other| *other != ca)
            .filter(|other| check(other, |cert| remaining(cert, now) > time::Duration::ZERO)),
    );

    let usable_leaf = current.filter(|keys| {
        certificates(&keys.cert).first().is_some_and(|leaf| {
            check(leaf, |cert| {
                remaining(cert, now) > LEAF_RENEW_BEFORE
                    && key_matches(cert, &keys.key)
                    && covers(cert, hosts)
                    && check(&ca, |ca| {
                        cert.verify_signature(Some(ca.public_key())).is_ok()
                    })
            })
        })
    });
    let (cert, key) = match usable_leaf {
        Some(keys) => (keys.cert.clone(), keys.key.clone()),
        None => {
            let ca_ends =
                not_after(&ca).ok_or_else(|| Error::Certificate("the CA does not parse".into()))?;
            new_leaf(&ca, &ca_key, hosts, now, (now + LEAF_LIFETIME).min(ca_ends))?
        }
    };
    let renewed = Keys {
        ca_bundle: trusted.concat(),
        ca_key,
        cert,
        key,
    };
    Ok((current != Some(&renewed)).then_some(renewed))
}

/// The PEM blocks of the certificates in `text`, each on its own.
fn certificates(text: &str) -> Vec<String> {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    text.split_inclusive(END)
        .filter(|part| part.ends_with(END))
        .filter_map(|part| {
            part.find(BEGIN)
                .map(|start| format!("{}\n", &part[start..]))
        })
        .collect()
}

/// `test` of the certificate in the PEM `block`; false if it does not parse.
fn check(block: &str, test: impl FnOnce(&X509Certificate<'_>) -> bool) -> bool {
    let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(block.as_bytes()) else {
        return false;
    };
    pem.parse_x509().is_ok_and(|cert| test(&cert))
}

fn not_after(block: &str) -> Option<OffsetDateTime> {
    let mut ends = None;
    check(block, |cert| {
        ends = Some(cert.validity().not_after.to_datetime());
        true
    });
    ends
}

fn remaining(cert: &X509Certificate<'_>, now: OffsetDateTime) -> time::Duration {
    cert.validity().not_after.to_datetime() - now
}

/// Whether `key` (PEM) is the private key of `cert`.
fn key_matches(cert: &X509Certificate<'_>, key: &str) -> bool {
    KeyPair::from_pem(key)
        .is_ok_and(|pair| pair.public_key_raw() == &cert.public_key().subject_public_key.data[..])
}

/// Whether `cert` is valid for every name in `hosts`.
fn covers(cert: &X509Certificate<'_>, hosts: &[String]) -> bool {
    let Ok(Some(names)) = cert.subject_alternative_name() else {
        return hosts.is_empty();
    };
    hosts.iter().all(|host| {
        names.value.general_names.iter().any(|name| match name {
            GeneralName::DNSName(dns) => dns == host,
            GeneralName::IPAddress(ip) => match host.parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V4(v4)) => v4.octets()[..] == **ip,
                Ok(std::net::IpAddr::V6(v6)) => v6.octets()[..] == **ip,
                Err(_) => false,
            },
            _ => false,
        })
    })
}

fn certificate_error(error: rcgen::Error) -> Error {
    Error::Certificate(error.to_string())
}

/// A new CA, named for the moment it was made so that two CAs in a bundle are told apart.
fn new_ca(now: OffsetDateTime) -> Result<(String, String)> {
    let key = KeyPair::generate().map_err(certificate_error)?;
    let mut params = CertificateParams::default();
    params.distinguished_name.push(
        DnType::CommonName,
        format!("kopgen webhook CA {}", now.unix_timestamp()),
    );
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = now - CLOCK_SKEW;
    params.not_after = now + CA_LIFETIME;
    let cert = params.self_signed(&key).map_err(certificate_error)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// A serving certificate for `hosts`, signed by the CA, valid until `ends`.
fn new_leaf(
    ca_pem: &str,
    ca_key: &str,
    hosts: &[String],
    now: OffsetDateTime,
    ends: OffsetDateTime,
) -> Result<(String, String)> {
    let ca_key = KeyPair::from_pem(ca_key).map_err(certificate_error)?;
    let issuer = Issuer::from_ca_cert_pem(ca_pem, ca_key).map_err(certificate_error)?;
    let mut params = CertificateParams::new(hosts.to_vec()).map_err(certificate_error)?;
    if let Some(host) = hosts.first() {
        params
            .distinguished_name
            .push(DnType::CommonName, host.clone());
    }
    params.use_authority_key_identifier_extension = true;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = now - CLOCK_SKEW;
    params.not_after = ends;
    let key = KeyPair::generate().map_err(certificate_error)?;
    let cert = params.signed_by(&key, &issuer).map_err(certificate_error)?;
    Ok((cert.pem(), key.serialize_pem()))
}

#[cfg(test)]
#[path = "certificates_tests.rs"]
mod tests;
