//! The `PROJECT` file: what kopgen scaffolded, with Kubebuilder's field names where they apply,
//! so later commands know the project and can edit it safely.

use std::path::Path;

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub const PROJECT_FILE: &str = "PROJECT";
/// The layout kopgen writes; a future incompatible layout gets a new value.
pub const LAYOUT: &str = "rust.kopgen.dev/v1";
/// The version of the PROJECT file format (Kubebuilder's current one is "3").
pub const FORMAT_VERSION: &str = "3";

#[derive(Debug, Error)]
pub enum ProjectError {
    #[error(
        "{0}: no PROJECT file here. Run this command in a project created by `kopgen init` (or pass --path to one)"
    )]
    NotAProject(String),
    #[error("{path}: cannot read: {message}")]
    Io { path: String, message: String },
    #[error("{path}: invalid PROJECT file: {message}. Restore it from version control")]
    Invalid { path: String, message: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    /// An existing operator made a kopgen project (`kopgen init --adopt`): its sources, its
    /// `main.rs` and its manager are the user's, so commands add kinds and `config/` only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopted: bool,
    pub cli_version: String,
    pub domain: String,
    /// `manifests` renders a Helm chart into `dist/chart/` (`kopgen edit --helm`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub helm: bool,
    pub layout: Vec<String>,
    /// controller-gen's `maxDescLen` for every CRD: `manifests` cuts descriptions to this many
    /// characters (0 drops them), and so do the project's drift test and
    /// `kopgen_runtime::crds::Settings` (`kopgen edit --max-desc-len`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_desc_len: Option<usize>,
    /// What Kubernetes types inside a CRD's schema carry: Kubernetes' own annotations
    /// (`openapi`, what `init` writes), or kube-derive's schema as it is (`kube-derive`, and
    /// no key: projects made before the setting). `kopgen edit --kubernetes-types`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_types: Option<KubernetesTypes>,
    /// The manager watches only its own namespace(s) (Roles instead of ClusterRoles).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub namespaced: bool,
    pub project_name: String,
    #[serde(default)]
    pub resources: Vec<Resource>,
    pub version: String,
    /// Where the webhook server's certificate comes from, once the project has webhooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_certificates: Option<Certificates>,
    /// Keys kopgen does not know (another tool's, or a newer kopgen's): kept as they are.
    #[serde(flatten)]
    pub extra: std::collections::BTreeMap<String, serde_json::Value>,
}

/// What Kubernetes types inside a CRD's schema carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum KubernetesTypes {
    /// What Kubernetes' OpenAPI documents say of them (list and map semantics, defaults,
    /// validations), as controller-gen writes them.
    Openapi,
    /// kube-derive's `crd()` byte for byte.
    KubeDerive,
}

/// Where the webhook server's certificate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Certificates {
    /// cert-manager issues it into a Secret the manager mounts, and injects its CA (Kubebuilder's
    /// layout).
    CertManager,
    /// The manager makes its own CA and certificate, keeps them in a Secret, renews them and sets
    /// `caBundle` itself: no cert-manager needed.
    SelfManaged,
}

impl Certificates {
    /// The mode as PROJECT, the CLI and the chart's values write it.
    pub fn name(self) -> &'static str {
        match self {
            Certificates::CertManager => "cert-manager",
            Certificates::SelfManaged => "self-managed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Present when kopgen scaffolded the types of this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<ResourceApi>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub controller: bool,
    /// Absent for built-in kinds of the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    pub group: String,
    pub kind: String,
    /// Rust path of the type, e.g. `crate::api::apps::v1alpha1::Blog`.
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plural: Option<String>,
    pub version: String,
    /// The webhooks `kopgen create webhook` scaffolded for this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhooks: Option<ResourceWebhooks>,
    /// Keys kopgen does not know: kept as they are.
    #[serde(flatten)]
    pub extra: std::collections::BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceApi {
    pub crd_version: String,
    pub namespaced: bool,
}

/// Kubebuilder's record of a kind's webhooks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceWebhooks {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub defaulting: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub validation: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conversion: bool,
    /// The versions converted to and from this one (the hub).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spoke: Vec<String>,
    /// Kubebuilder writes `v1`; older files may leave it out.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub webhook_version: String,
}

impl Resource {
    /// The full API group: `<group>.<domain>`, or the bare group of a built-in kind.
    /// Whether this is a version of `kind` in `group` whose types this project scaffolded.
    pub fn is_own(&self, domain: &str, group: &str, kind: &str) -> bool {
        self.api.is_some()
            && self.group == group
            && self.kind == kind
            && self.domain.as_deref() == Some(domain)
    }

    /// The plural resource name: the recorded one, or kube-derive's rule for the kind.
    pub fn plural(&self) -> String {
        self.plural
            .clone()
            .unwrap_or_else(|| crate::names::kube_plural(&self.kind))
    }

    pub fn full_group(&self) -> String {
        match &self.domain {
            Some(domain) if !domain.is_empty() => format!("{}.{domain}", self.group),
            _ => self.group.clone(),
        }
    }
}

impl Project {
    /// Whether any kind has a webhook.
    pub fn has_webhooks(&self) -> bool {
        self.resources.iter().any(|r| r.webhooks.is_some())
    }

    /// The CRDs (`plural.group`) that a conversion webhook converts, sorted.
    pub fn converted_crds(&self) -> Vec<String> {
        let crds: std::collections::BTreeSet<String> = (self.resources.iter())
            .filter(|r| r.webhooks.as_ref().is_some_and(|w| w.conversion))
            .map(|r| format!("{}.{}", r.plural(), r.full_group()))
            .collect();
        crds.into_iter().collect()
    }

    pub fn load(root: &Path) -> Result<Self, ProjectError> {
        let path = root.join(PROJECT_FILE);
        let text = match crate::regular_file::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ProjectError::NotAProject(root.display().to_string()));
            }
            Err(e) => {
                return Err(ProjectError::Io {
                    path: path.display().to_string(),
                    message: e.to_string(),
                });
            }
        };
        Self::parse(&text).map_err(|message| ProjectError::Invalid {
            path: path.display().to_string(),
            message,
        })
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let project: Project = crate::yaml::from_str(text).map_err(|e| e.to_string())?;
        // Hand edits must not smuggle a name into paths and manifests that `init` and `create
        // api` would refuse.
        let invalid = |e: crate::names::NameError| e.to_string();
        crate::names::validate_domain(&project.domain).map_err(invalid)?;
        crate::names::validate_project_name(&project.project_name).map_err(invalid)?;
        for resource in project.resources.iter().filter(|r| r.api.is_some()) {
            crate::names::validate_group(&resource.group).map_err(invalid)?;
            crate::names::validate_version(&resource.version).map_err(invalid)?;
            crate::names::validate_kind(&resource.kind).map_err(invalid)?;
            if let Some(plural) = &resource.plural {
                crate::names::validate_plural(plural).map_err(invalid)?;
            }
            // Spokes become module paths in generated Rust: the same rule as `--spoke`.
            for spoke in resource.webhooks.iter().flat_map(|w| &w.spoke) {
                crate::names::validate_version(spoke).map_err(invalid)?;
            }
        }
        if !project.layout.iter().any(|l| l == LAYOUT) {
            return Err(format!(
                "layout {:?} is not one this kopgen knows ({LAYOUT})",
                project.layout
            ));
        }
        Ok(project)
    }

    pub fn render(&self) -> String {
        let body = crate::yaml::to_string(self).unwrap_or_default();
        format!(
            "# Code generated by kopgen. DO NOT EDIT.\n\
             # This file is used to track the info used to scaffold your project\n\
             # and allow the plugins properly work.\n{body}"
        )
    }
}
