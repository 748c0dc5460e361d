//! A project's CRDs as `kopgen manifests` writes them: kube-derive's `crd()` with the settings
//! the project records in its PROJECT file, so that the YAML in git, the project's drift test
//! and a CRD the operator builds at run time never disagree.

#[cfg(any(test, feature = "testing"))]
mod drift;

use std::{fmt, path::Path};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
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
        Ok(Settings {
            max_desc_len: keys.max_desc_len,
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

    /// Applies the settings to a CRD that kube-derive built.
    pub fn apply(&self, crd: &mut CustomResourceDefinition) {
        let Some(max) = self.max_desc_len else {
            return;
        };
        for version in &mut crd.spec.versions {
            let schema = version.schema.as_mut();
            if let Some(schema) = schema.and_then(|s| s.open_api_v3_schema.as_mut()) {
                truncate_descriptions(schema, max);
            }
        }
    }
}

impl fmt::Display for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.max_desc_len {
            None => f.write_str("descriptions whole"),
            Some(max) => write!(f, "PROJECT's maxDescLen: {max}"),
        }
    }
}

/// Cuts every description under `schema` to `max` characters at the last word boundary, with
/// `...` after it, as controller-gen does; `0` drops them. `kopgen manifests` does the same.
fn truncate_descriptions(schema: &mut JSONSchemaProps, max: usize) {
    if let Some(description) = &schema.description {
        if max == 0 {
            schema.description = None;
        } else if description.chars().count() > max {
            let cut: String = description.chars().take(max).collect();
            let shortened = match cut.rfind(char::is_whitespace) {
                Some(n) if n > 0 => format!("{}...", &cut[..n]),
                _ => format!("{cut}..."),
            };
            schema.description = Some(shortened);
        }
    }
    for child in schema.properties.iter_mut().flat_map(|p| p.values_mut()) {
        truncate_descriptions(child, max);
    }
    if let Some(JSONSchemaPropsOrBool::Schema(child)) = &mut schema.additional_properties {
        truncate_descriptions(child, max);
    }
    match &mut schema.items {
        Some(JSONSchemaPropsOrArray::Schema(child)) => truncate_descriptions(child, max),
        Some(JSONSchemaPropsOrArray::Schemas(children)) => children
            .iter_mut()
            .for_each(|c| truncate_descriptions(c, max)),
        None => {}
    }
    for branch in [&mut schema.any_of, &mut schema.one_of, &mut schema.all_of]
        .into_iter()
        .flatten()
    {
        branch
            .iter_mut()
            .for_each(|c| truncate_descriptions(c, max));
    }
    if let Some(not) = &mut schema.not {
        truncate_descriptions(not, max);
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

    #[test]
    fn a_project_file_with_a_wrong_setting_is_an_error_naming_it() {
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
