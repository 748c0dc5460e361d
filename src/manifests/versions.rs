//! The crate versions whose `crd()` kopgen reproduces, and the check that a user's crate uses
//! them: on other versions the static derivation could differ from the user's own `crd()`
//! without a word, so kopgen says so (at once, in every mode but `--derive=compile`, which builds that crate).

use std::path::{Path, PathBuf};

/// (crate, major.minor) of every crate whose behaviour shapes a CRD, as kopgen's own
/// `Cargo.lock` has them (a unit test keeps the two equal).
pub const REPRODUCED: &[(&str, &str)] = &[
    ("kube-derive", "5.0"),
    ("kube-core", "5.0"),
    ("schemars", "1.2"),
    ("k8s-openapi", "0.29"),
];

/// A crate of the user's that kopgen does not reproduce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The file the versions were read from (`Cargo.lock`, or `Cargo.toml` where there is none).
    pub file: PathBuf,
    pub krate: String,
    pub found: String,
    pub expected: &'static str,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: the crate uses {} {}, and kopgen reproduces {} {}",
            self.file.display(),
            self.krate,
            self.found,
            self.krate,
            self.expected
        )
    }
}

/// The `Cargo.toml` of the crate whose library sources `path` is (or holds): the nearest
/// manifest above it, when `path` is its directory or under its `src/`. Files elsewhere (a
/// crate's `tests/`, loose files) belong to no library kopgen could compile.
pub fn crate_manifest(path: &Path) -> Option<PathBuf> {
    let path = std::fs::canonicalize(path).ok()?;
    let dir = path
        .ancestors()
        .find(|dir| dir.join("Cargo.toml").is_file())?;
    (path == dir || path.starts_with(dir.join("src"))).then(|| dir.join("Cargo.toml"))
}

/// The versions the crate of `manifest` uses that kopgen does not reproduce: from the nearest
/// `Cargo.lock` (the crate's, or its workspace's), else from the requirements in `Cargo.toml`.
pub fn mismatches(manifest: &Path) -> Vec<Mismatch> {
    let dir = manifest.parent().unwrap_or(Path::new("."));
    let lock = dir
        .ancestors()
        .map(|d| d.join("Cargo.lock"))
        .find(|lock| lock.is_file());
    let (file, versions) = match lock {
        Some(lock) => {
            let text = crate::regular_file::read_to_string(&lock).unwrap_or_default();
            let versions = locked_versions(&text);
            (lock, versions)
        }
        None => {
            let text = crate::regular_file::read_to_string(manifest).unwrap_or_default();
            (manifest.to_path_buf(), required_versions(&text))
        }
    };
    let mut found = Vec::new();
    for (krate, expected) in REPRODUCED {
        for version in versions.iter().filter(|(name, _)| name == krate) {
            if !same_minor(&version.1, expected) {
                found.push(Mismatch {
                    file: file.clone(),
                    krate: (*krate).to_owned(),
                    found: version.1.clone(),
                    expected,
                });
            }
        }
    }
    found
}

/// Whether `version` (`5.0.3`, `5`, `^0.29`) is within `expected` (`5.0`). A requirement that
/// names only a major version is taken at its word (cargo may pick any minor).
fn same_minor(version: &str, expected: &str) -> bool {
    let version = version.trim_start_matches(['^', '=', '~', ' ']);
    let mut parts = version.split('.');
    let mut want = expected.split('.');
    let (major, minor) = (parts.next(), parts.next());
    let (want_major, want_minor) = (want.next(), want.next());
    major == want_major && (minor.is_none() || minor == want_minor)
}

/// Every `[[package]]` name and version in a `Cargo.lock`.
fn locked_versions(lock: &str) -> Vec<(String, String)> {
    let Ok(value) = lock.parse::<toml::Table>() else {
        return Vec::new();
    };
    value
        .get("package")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let name = p.get("name")?.as_str()?;
            let version = p.get("version")?.as_str()?;
            Some((name.to_owned(), version.to_owned()))
        })
        .collect()
}

/// The version requirements of the dependencies in a `Cargo.toml` (`kube` stands for
/// kube-derive and kube-core, which it re-exports at its own version).
fn required_versions(manifest: &str) -> Vec<(String, String)> {
    let Ok(value) = manifest.parse::<toml::Table>() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for table in ["dependencies", "dev-dependencies", "build-dependencies"] {
        let Some(deps) = value.get(table).and_then(toml::Value::as_table) else {
            continue;
        };
        for (name, spec) in deps {
            let version = match spec {
                toml::Value::String(v) => Some(v.as_str()),
                toml::Value::Table(t) => t.get("version").and_then(toml::Value::as_str),
                _ => None,
            };
            let Some(version) = version else { continue };
            let names: &[&str] = if name == "kube" {
                &["kube-derive", "kube-core"]
            } else {
                &[]
            };
            for krate in names.iter().copied().chain(std::iter::once(name.as_str())) {
                found.push((krate.to_owned(), version.to_owned()));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The versions kopgen says it reproduces are the ones it is built with.
    #[test]
    fn reproduced_versions_are_kopgens_own() {
        let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock"))
            .expect("Cargo.lock");
        let locked = locked_versions(&lock);
        for (krate, expected) in REPRODUCED {
            if *krate == "kube-derive" {
                // kopgen does not link kube-derive; kube-core moves in step with it.
                continue;
            }
            let version = locked
                .iter()
                .find(|(name, _)| name == krate)
                .map(|(_, v)| v.as_str())
                .unwrap_or_else(|| panic!("{krate} in Cargo.lock"));
            assert!(
                same_minor(version, expected),
                "{krate} {version} vs {expected}"
            );
        }
    }

    #[test]
    fn requirements_and_locks_are_compared_by_minor_version() {
        assert!(same_minor("5.0.3", "5.0"));
        assert!(same_minor("^5", "5.0"));
        assert!(!same_minor("4.0.0", "5.0"));
        assert!(!same_minor("0.28.1", "0.29"));
        let manifest = "[dependencies]\nkube = { version = \"4\", features = [\"derive\"] }\nschemars = \"1.2\"\n";
        let required = required_versions(manifest);
        assert!(required.contains(&("kube-derive".into(), "4".into())));
        assert!(required.contains(&("schemars".into(), "1.2".into())));
    }
}
