//! A project's CRDs as `kopgen manifests` writes them: kube-derive's `crd()` with the settings
//! the project records in its PROJECT file, so that the YAML in git, the project's drift test
//! and a CRD the operator builds at run time never disagree.

mod descriptions;
#[cfg(any(test, feature = "testing"))]
mod drift;
mod kubernetes;

use std::{fmt, path::Path};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

#[cfg(any(test, feature = "testing"))]
pub use drift::{committed_crds_match, every_crd_file_has_a_kind};

/// How a project's CRDs depart from kube-derive's `crd()`: read from its PROJECT file, where
/// `kopgen edit` records them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Settings {
    /// controller-gen's `maxDescLen` (PROJECT's `maxDescLen`): descriptions longer than this
    /// many characters are cut at the last word boundary and end in `...`; `0` drops them;
    /// `None` keeps them whole. Embedded Kubernetes types carry most of a large CRD's bytes in
    /// their descriptions.
    pub max_desc_len: Option<usize>,
    /// PROJECT's `kubernetesTypes: openapi` (what `kopgen init` writes): Kubernetes types
    /// inside the schema carry what Kubernetes' own OpenAPI documents say of them, as
    /// controller-gen writes them for the Go types: list and map semantics for server-side
    /// apply, defaults, `Quantity` as int-or-string, `metav1.Condition`'s validations, and
    /// `ObjectMeta` in templates as the fields an embedded object keeps. `false`
    /// (`kubernetesTypes: kube-derive`, or no key) leaves kube-derive's output as it is.
    pub kubernetes_annotations: bool,
}

/// A PROJECT file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file exists and could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The PROJECT file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a PROJECT kopgen wrote, or a setting has the wrong type.
    #[error("{path} is not a kopgen PROJECT file: {message}")]
    Parse {
        /// The PROJECT file.
        path: String,
        /// What is wrong, and where.
        message: String,
    },
}

/// The keys of PROJECT the CRDs depend on; the others are kopgen's business.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProjectKeys {
    #[serde(default)]
    max_desc_len: Option<usize>,
    #[serde(default)]
    kubernetes_types: Option<String>,
}

impl Settings {
    /// Settings that cut descriptions to `max` characters (`0` drops them).
    pub fn with_max_desc_len(mut self, max: Option<usize>) -> Self {
        self.max_desc_len = max;
        self
    }

    /// The settings of a PROJECT file's text, for an operator that embeds it
    /// (`include_str!("../PROJECT")`) to build its CRDs at run time.
    pub fn from_project(text: &str) -> Result<Self, SettingsError> {
        let keys: ProjectKeys = serde_saphyr::from_str(text).map_err(|e| SettingsError::Parse {
            path: "PROJECT".into(),
            message: e.to_string(),
        })?;
        let kubernetes_annotations = match keys.kubernetes_types.as_deref() {
            None | Some("kube-derive") => false,
            Some("openapi") => true,
            Some(other) => {
                return Err(SettingsError::Parse {
                    path: "PROJECT".into(),
                    message: format!(
                        "kubernetesTypes is `{other}`; it is `openapi` or `kube-derive`"
                    ),
                });
            }
        };
        Ok(Settings {
            max_desc_len: keys.max_desc_len,
            kubernetes_annotations,
        })
    }

    /// The settings of the project in `root` (its PROJECT file); kube-derive's output as it is
    /// when there is no PROJECT.
    pub fn load(root: &Path) -> Result<Self, SettingsError> {
        let path = root.join("PROJECT");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(source) => {
                return Err(SettingsError::Read {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        Settings::from_project(&text).map_err(|e| match e {
            SettingsError::Parse { message, .. } => SettingsError::Parse {
                path: path.display().to_string(),
                message,
            },
            other => other,
        })
    }

    /// `K`'s CRD as `kopgen manifests` writes it for one version.
    pub fn crd<K: CustomResourceExt>(&self) -> CustomResourceDefinition {
        let mut crd = K::crd();
        self.apply(&mut crd);
        crd
    }

    /// Settings that give Kubernetes types Kubernetes' own annotations, or not.
    pub fn with_kubernetes_annotations(mut self, on: bool) -> Self {
        self.kubernetes_annotations = on;
        self
    }

    /// Applies the settings to a CRD that kube-derive built.
    pub fn apply(&self, crd: &mut CustomResourceDefinition) {
        // Before descriptions are cut: Kubernetes types are found by theirs.
        if self.kubernetes_annotations {
            kubernetes::enrich(crd);
        }
        if let Some(max) = self.max_desc_len {
            descriptions::truncate(crd, max);
        }
    }
}

impl fmt::Display for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let types = match self.kubernetes_annotations {
            true => "kubernetesTypes: openapi",
            false => "kubernetesTypes: kube-derive",
        };
        match self.max_desc_len {
            None => write!(f, "PROJECT's {types}, descriptions whole"),
            Some(max) => write!(f, "PROJECT's {types}, maxDescLen: {max}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(
        kube::CustomResource,
        serde::Serialize,
        serde::Deserialize,
        Clone,
        Debug,
        schemars::JsonSchema,
    )]
    #[kube(group = "example.com", version = "v1", kind = "Shelf")]
    struct ShelfSpec {
        /// How many books the shelf holds before it asks for another.
        capacity: i32,
        /// Labels.
        labels: std::collections::BTreeMap<String, String>,
    }

    fn descriptions(crd: &CustomResourceDefinition) -> Vec<String> {
        let json = serde_json::to_value(crd).expect("a CRD serializes");
        let mut found = Vec::new();
        fn walk(value: &serde_json::Value, found: &mut Vec<String>) {
            match value {
                serde_json::Value::Object(map) => {
                    for (key, value) in map {
                        match (key.as_str(), value) {
                            ("description", serde_json::Value::String(text)) => {
                                found.push(text.clone())
                            }
                            _ => walk(value, found),
                        }
                    }
                }
                serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
                _ => {}
            }
        }
        walk(&json, &mut found);
        found.sort();
        found
    }

    #[test]
    fn project_settings_cut_descriptions_at_a_word_and_zero_drops_them() {
        let whole = Settings::from_project("domain: example.com\nversion: '3'\n").expect("parses");
        assert_eq!(whole, Settings::default());
        assert_eq!(
            descriptions(&whole.crd::<Shelf>()),
            descriptions(&Shelf::crd())
        );

        let cut = Settings::from_project("maxDescLen: 20\nprojectName: demo\n").expect("parses");
        assert_eq!(cut.max_desc_len, Some(20));
        let texts = descriptions(&cut.crd::<Shelf>());
        assert!(
            texts.contains(&"How many books the...".to_string()),
            "{texts:?}"
        );
        assert!(texts.contains(&"Labels.".to_string()), "{texts:?}");

        let none = Settings::default().with_max_desc_len(Some(0));
        assert!(descriptions(&none.crd::<Shelf>()).is_empty());
    }

    #[derive(
        kube::CustomResource,
        serde::Serialize,
        serde::Deserialize,
        Clone,
        Debug,
        schemars::JsonSchema,
    )]
    #[kube(
        group = "example.com",
        version = "v1",
        kind = "Batch",
        status = "BatchStatus"
    )]
    struct BatchSpec {
        /// The pods to run.
        template: k8s_openapi::api::core::v1::PodTemplateSpec,
        /// What each may use.
        resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    }

    #[derive(serde::Serialize, serde::Deserialize, Clone, Debug, schemars::JsonSchema)]
    struct BatchStatus {
        conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    }

    fn at<'a>(crd: &'a serde_json::Value, path: &str) -> &'a serde_json::Value {
        let pointer = format!("/spec/versions/0/schema/openAPIV3Schema{path}");
        crd.pointer(&pointer).unwrap_or(&serde_json::Value::Null)
    }

    #[test]
    fn kubernetes_types_carry_kubernetes_annotations_where_they_are_embedded() {
        let plain = serde_json::to_value(Batch::crd()).expect("serializes");
        let settings = Settings::from_project("kubernetesTypes: openapi\n").expect("parses");
        let enriched = serde_json::to_value(settings.crd::<Batch>()).expect("serializes");
        let pod = "/properties/spec/properties/template/properties/spec/properties";
        let containers = format!("{pod}/containers");
        assert_eq!(
            at(&enriched, &format!("{containers}/x-kubernetes-list-type")),
            "map"
        );
        assert_eq!(
            at(
                &enriched,
                &format!("{containers}/x-kubernetes-list-map-keys")
            ),
            &serde_json::json!(["name"])
        );
        let port = format!("{containers}/items/properties/ports/items");
        assert_eq!(
            at(&enriched, &format!("{port}/properties/protocol/default")),
            "TCP"
        );
        assert_eq!(
            at(&enriched, &format!("{port}/required")),
            &serde_json::json!(["containerPort"])
        );
        let limits = "/properties/spec/properties/resources/properties/limits/additionalProperties";
        assert_eq!(
            at(&enriched, &format!("{limits}/x-kubernetes-int-or-string")),
            true
        );
        assert!(at(&plain, &format!("{limits}/anyOf")).is_null());
        assert_eq!(at(&enriched, &format!("{limits}/anyOf/0/type")), "integer");
        let meta = "/properties/spec/properties/template/properties/metadata";
        assert_eq!(
            at(&enriched, &format!("{meta}/description")),
            at(&plain, &format!("{meta}/description"))
        );
        assert!(at(&enriched, &format!("{meta}/properties/labels")).is_object());
        assert!(at(&enriched, &format!("{meta}/properties/managedFields")).is_null());
        let status = "/properties/status/properties/conditions/items/properties/status";
        assert_eq!(
            at(&enriched, &format!("{status}/enum")),
            &serde_json::json!(["True", "False", "Unknown"])
        );
        assert!(at(&plain, &format!("{status}/enum")).is_null());
        // Everything else is kube-derive's, and the whole still reads as a CRD.
        assert_eq!(
            at(
                &enriched,
                "/properties/spec/properties/template/description"
            ),
            "The pods to run."
        );
        let kind_of = Settings::default().crd::<Batch>();
        assert_eq!(serde_json::to_value(kind_of).expect("serializes"), plain);
    }

    #[test]
    fn a_project_file_with_a_wrong_setting_is_an_error_naming_it() {
        let error = Settings::from_project("kubernetesTypes: yes\n").expect_err("not a mode");
        assert!(error.to_string().contains("kubernetesTypes"), "{error}");
        let error = Settings::from_project("maxDescLen: many\n").expect_err("not a number");
        assert!(error.to_string().contains("maxDescLen"), "{error}");
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            Settings::load(dir.path()).expect("no PROJECT"),
            Settings::default()
        );
        std::fs::write(dir.path().join("PROJECT"), "maxDescLen: -1\n").expect("write");
        let error = Settings::load(dir.path()).expect_err("negative");
        assert!(error.to_string().contains("PROJECT"), "{error}");
    }
}
