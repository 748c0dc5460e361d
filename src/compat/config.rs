//! The gate's configuration: crdify's file format (so the same file drives crdify), read
//! strictly, plus one key of kopgen's own, `ratcheting`.
//!
//! ```yaml
//! unhandledEnforcement: Error      # Error | Warn | None
//! conversion: Ignore               # Ignore: no served-version checks with a conversion webhook
//! ratcheting: Warn                 # enforcement of tightened validations ratcheting covers
//! validations:
//!   - name: enum
//!     enforcement: Error
//!     configuration:
//!       additionPolicy: Allow
//! ```

use std::{collections::BTreeMap, path::Path};

use serde::Deserialize;

/// Where a project keeps its gate configuration.
pub const PATH: &str = "config/crd/compat.yaml";

/// What a detected change does to the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum Enforcement {
    /// Reported, and the run fails.
    Error,
    /// Reported; the run goes on.
    Warn,
    /// Not reported.
    None,
}

/// `Allow` or `Disallow`, for the checks crdify lets loosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Policy {
    Allow,
    Disallow,
}

/// The checks crdify has, each configurable by name.
pub const CHECKS: &[&str] = &[
    "scope",
    "existingFieldRemoval",
    "storedVersionRemoval",
    "default",
    "description",
    "enum",
    "maximum",
    "maxItems",
    "maxLength",
    "maxProperties",
    "minimum",
    "minItems",
    "minLength",
    "minProperties",
    "nullable",
    "pattern",
    "required",
    "type",
];

/// The policies each check accepts under `configuration`.
const POLICIES: &[(&str, &[&str])] = &[
    ("enum", &["additionPolicy"]),
    ("pattern", &["removalPolicy"]),
    ("nullable", &["additionPolicy", "removalPolicy"]),
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    enforcement: BTreeMap<&'static str, Enforcement>,
    policies: BTreeMap<(&'static str, &'static str), Policy>,
    unhandled: Enforcement,
    ignore_conversion: bool,
    ratcheting: Option<Enforcement>,
}

impl Config {
    /// crdify's defaults: every check an error, nothing loosened.
    pub fn crdify() -> Config {
        Config {
            enforcement: BTreeMap::new(),
            policies: BTreeMap::new(),
            unhandled: Enforcement::Error,
            ignore_conversion: false,
            ratcheting: None,
        }
    }

    /// kopgen's defaults, where no config file says otherwise: crdify's, except that an added
    /// enum value is allowed, a changed description is a warning (doc comments are
    /// descriptions, and most edits of them change no meaning), and versions of a CRD with a
    /// conversion webhook may differ (converting between them is the webhook's job).
    pub fn kopgen() -> Config {
        let mut config = Config::crdify();
        config
            .policies
            .insert(("enum", "additionPolicy"), Policy::Allow);
        config.enforcement.insert("description", Enforcement::Warn);
        config.ignore_conversion = true;
        config
    }

    /// Reads a config file over kopgen's defaults.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        // A FIFO or `/dev/zero` where the file belongs is refused, not read for ever.
        let text = crate::regular_file::read_to_string(path).map_err(|e| ConfigError {
            file: path.display().to_string(),
            line: 0,
            message: format!("cannot read it: {e}"),
        })?;
        Config::parse(&text).map_err(|(line, message)| ConfigError {
            file: path.display().to_string(),
            line,
            message,
        })
    }

    /// Parses a config file's text over kopgen's defaults; errors carry a line (0: unknown).
    pub fn parse(text: &str) -> Result<Config, (usize, String)> {
        let file: Option<File> = crate::yaml::from_str(text).map_err(|e| (e.line, e.message))?;
        let file = file.unwrap_or_default();
        let mut config = Config::kopgen();
        if let Some(unhandled) = file.unhandled_enforcement {
            config.unhandled = unhandled;
        }
        if let Some(conversion) = file.conversion {
            config.ignore_conversion = conversion == Conversion::Ignore;
        }
        config.ratcheting = file.ratcheting;
        for validation in file.validations {
            let Some(&name) = CHECKS.iter().find(|c| **c == validation.name) else {
                return Err((
                    0,
                    format!(
                        "unknown validation {:?}; the validations are: {}",
                        validation.name,
                        CHECKS.join(", ")
                    ),
                ));
            };
            config.enforcement.insert(name, validation.enforcement);
            let allowed = POLICIES
                .iter()
                .find(|(check, _)| *check == name)
                .map_or(&[][..], |(_, keys)| *keys);
            for (key, policy) in validation.configuration {
                let Some(&key) = allowed.iter().find(|k| **k == key) else {
                    return Err((
                        0,
                        format!(
                            "validation {name} has no configuration {key:?}{}",
                            if allowed.is_empty() {
                                String::new()
                            } else {
                                format!(" (it has: {})", allowed.join(", "))
                            }
                        ),
                    ));
                };
                config.policies.insert((name, key), policy);
            }
        }
        Ok(config)
    }

    /// The enforcement of `check`'s changes; `ratchetable`: validation ratcheting covers them.
    pub fn enforcement(&self, check: &str, ratchetable: bool) -> Enforcement {
        let base = if check == "unhandled" {
            self.unhandled
        } else {
            self.enforcement
                .get(check)
                .copied()
                .unwrap_or(Enforcement::Error)
        };
        match self.ratcheting {
            Some(ratcheting) if ratchetable && base != Enforcement::None => ratcheting,
            _ => base,
        }
    }

    /// A check's `Allow`/`Disallow` setting (`Disallow` unless configured).
    pub fn policy(&self, check: &str, key: &str) -> Policy {
        self.policies
            .iter()
            .find(|((c, k), _)| *c == check && *k == key)
            .map_or(Policy::Disallow, |(_, p)| *p)
    }

    /// Whether served versions go unchecked when the new revision has a conversion webhook.
    pub fn ignores_conversion(&self) -> bool {
        self.ignore_conversion
    }
}

/// A config file that cannot be used, at its line.
#[derive(Debug, thiserror::Error)]
#[error("{file}{}: {message}", if *.line > 0 { format!(":{}", .line) } else { String::new() })]
pub struct ConfigError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    #[serde(default)]
    validations: Vec<Validation>,
    unhandled_enforcement: Option<Enforcement>,
    conversion: Option<Conversion>,
    ratcheting: Option<Enforcement>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Validation {
    name: String,
    enforcement: Enforcement,
    #[serde(default)]
    configuration: BTreeMap<String, Policy>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
enum Conversion {
    None,
    Ignore,
}
