//! How the gate's changes are reported: each check's rule name (breaking or ratcheted), what to
//! do about it, and the lint findings of a CRD compared with its baseline revision.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use super::{Config, Enforcement, Scope, Step, compare, source};
use crate::manifests::lint::{Finding, Severity};

/// The revision a run compares with (`--against`) and the gate's configuration.
#[derive(Debug)]
pub struct Baseline {
    pub crds: source::Revision,
    pub config: Config,
}

impl Baseline {
    /// `crd`'s breaking changes since the CRD of the same name, as lint findings located at
    /// the version they concern (a served-version pair: its newer version).
    pub fn findings(&self, crd: &CustomResourceDefinition) -> Vec<Finding> {
        let name = crd.metadata.name.as_deref().unwrap_or_default();
        let Some((old, _)) = self.crds.get(name) else {
            return Vec::new();
        };
        let Ok(new) = serde_json::to_value(crd) else {
            return Vec::new();
        };
        compare(old, &new, &self.config)
            .into_iter()
            .map(|change| {
                let version = match &change.scope {
                    Scope::Crd => String::new(),
                    Scope::Version(v) => v.clone(),
                    Scope::Served(pair) => {
                        pair.rsplit(" -> ").next().unwrap_or_default().to_owned()
                    }
                };
                let mut message = change.message.clone();
                if let Scope::Served(pair) = &change.scope {
                    message = format!("between served versions {pair}: {message}");
                }
                Finding {
                    severity: match change.enforcement {
                        Enforcement::Error => Severity::Error,
                        _ => Severity::Warning,
                    },
                    rule: rule(change.check, change.ratcheted),
                    version,
                    path: match &change.field {
                        Some(field) => change.path.child(Step::Field(field.clone())).fields(),
                        None => change.path.fields(),
                    },
                    message,
                    fix: change.help(),
                }
            })
            .collect()
    }
}

/// The report's rule name of a check: `breaking/<crdify's name>`, or `ratcheted/<name>` for a
/// tightened validation that ratcheting makes safe for existing objects (their own class, with
/// its own enforcement: `ratcheting` in the config).
pub fn rule(check: &str, ratcheted: bool) -> &'static str {
    const RULES: &[(&str, &str, &str)] = &[
        ("scope", "breaking/scope", "breaking/scope"),
        (
            "existingFieldRemoval",
            "breaking/existingFieldRemoval",
            "breaking/existingFieldRemoval",
        ),
        (
            "storedVersionRemoval",
            "breaking/storedVersionRemoval",
            "breaking/storedVersionRemoval",
        ),
        ("default", "breaking/default", "breaking/default"),
        (
            "description",
            "breaking/description",
            "breaking/description",
        ),
        ("enum", "breaking/enum", "ratcheted/enum"),
        ("maximum", "breaking/maximum", "ratcheted/maximum"),
        ("maxItems", "breaking/maxItems", "ratcheted/maxItems"),
        ("maxLength", "breaking/maxLength", "ratcheted/maxLength"),
        (
            "maxProperties",
            "breaking/maxProperties",
            "ratcheted/maxProperties",
        ),
        ("minimum", "breaking/minimum", "ratcheted/minimum"),
        ("minItems", "breaking/minItems", "ratcheted/minItems"),
        ("minLength", "breaking/minLength", "ratcheted/minLength"),
        (
            "minProperties",
            "breaking/minProperties",
            "ratcheted/minProperties",
        ),
        ("nullable", "breaking/nullable", "breaking/nullable"),
        ("pattern", "breaking/pattern", "ratcheted/pattern"),
        ("required", "breaking/required", "breaking/required"),
        ("type", "breaking/type", "breaking/type"),
    ];
    RULES.iter().find(|(name, _, _)| *name == check).map_or(
        "breaking/unhandled",
        |(_, plain, ratchet)| {
            if ratcheted { ratchet } else { plain }
        },
    )
}

/// What to do about each check's changes, for the report's `help:`.
pub(super) fn help(check: &str) -> &'static str {
    match check {
        "scope" => {
            "a CRD's scope cannot change for existing objects: keep the scope, or publish a new kind (or group) and migrate"
        }
        "existingFieldRemoval" => {
            "keep the field (deprecate it in its doc comment), or add a new version without it and a conversion webhook (`kopgen create api` + `kopgen create webhook --conversion`)"
        }
        "storedVersionRemoval" => {
            "keep the version (served: false is enough) until every object is migrated to the storage version and the version is removed from status.storedVersions"
        }
        "required" => {
            "give the new field a default (`#[serde(default)]` with `#[schemars(default = ..)]`) or make it an `Option`, or add a new version with a conversion"
        }
        "enum" => {
            "allow the old values again, or add a new version with a conversion; validation ratcheting (Kubernetes 1.33+) lets existing objects keep a removed value while updates leave it unchanged; an added value breaks clients that match on every value (`additionPolicy: Allow` in the compat config accepts additions)"
        }
        "default" => {
            "keep the old default: objects stored without the field change meaning when read; or add a new version with the new default"
        }
        "type" => {
            "keep the type, or add a new field (or version with a conversion) of the new type"
        }
        "nullable" => {
            "keep `nullable` as it was (an `Option` field serialized without `null`), or add a new version"
        }
        "description" => {
            "a description change can change a field's meaning for clients; set `description` to Warn or None in the compat config if it does not"
        }
        "unhandled" => {
            "a schema keyword no check understands changed; review it, and set `unhandledEnforcement` in the compat config if it is safe"
        }
        _ => {
            "loosen the validation again, or keep it for a new version only; validation ratcheting (Kubernetes 1.33+) lets existing objects keep a value the new rule refuses as long as updates leave that field unchanged"
        }
    }
}
