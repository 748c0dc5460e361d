//! The crate versions whose `crd()` kopgen reproduces, and the check that a user's crate uses
//! them: on other versions the static derivation could differ from the user's own `crd()`
//! without a word, so kopgen says so (at once, in every mode but `--derive=compile`, which builds that crate).

use std::collections::{HashMap, HashSet};
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
    let dir = crate_dir(manifest);
    let lock = dir
        .ancestors()
        .map(|d| d.join("Cargo.lock"))
        .find(|lock| lock.is_file());
    let own = crate::regular_file::read_to_string(manifest).unwrap_or_default();
    let (file, versions) = match lock {
        Some(lock) => {
            let text = crate::regular_file::read_to_string(&lock).unwrap_or_default();
            let versions = locked_versions(&text, Root::of(&own).as_ref());
            (lock, versions)
        }
        None => {
            let workspace = workspace(&dir).dependencies;
            (manifest.to_path_buf(), required_versions(&own, &workspace))
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

/// The directory of the crate of `manifest`, absolute, so that a walk up from it reaches its
/// workspace from a relative path (`.`) too.
pub(super) fn crate_dir(manifest: &Path) -> PathBuf {
    let dir = manifest.parent().unwrap_or(Path::new("."));
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// The tables of a manifest that hold dependency tables: the manifest itself (`[dependencies]`)
/// and each `[target.'cfg(..)']`.
pub(super) fn dependency_sections(manifest: &toml::Table) -> impl Iterator<Item = &toml::Table> {
    let targets = manifest.get("target").and_then(toml::Value::as_table);
    let targets = targets.into_iter().flat_map(|t| t.values());
    std::iter::once(manifest).chain(targets.filter_map(toml::Value::as_table))
}

/// One dependency as a manifest section declares it.
pub(super) struct Dependency<'a> {
    /// Its key (`alias` in `alias = { package = "real" }`).
    pub alias: &'a str,
    /// The package it is, as the lock names it.
    pub package: &'a str,
    pub own: &'a toml::Value,
    /// The workspace's entry it inherits (`{ workspace = true }`).
    pub inherited: Option<&'a toml::Value>,
}

/// The dependencies of `section`'s table `key` (`dependencies`, `dev-dependencies`, ...), with
/// what they inherit from `workspace` (its `[workspace.dependencies]`).
pub(super) fn dependencies<'a>(
    section: &'a toml::Table,
    key: &str,
    workspace: &'a toml::Table,
) -> impl Iterator<Item = Dependency<'a>> {
    let deps = section.get(key).and_then(toml::Value::as_table);
    deps.into_iter().flatten().map(|(alias, own)| {
        let package = own.get("package").and_then(toml::Value::as_str);
        let inherits = own.get("workspace").and_then(toml::Value::as_bool) == Some(true);
        Dependency {
            alias,
            package: package.unwrap_or(alias),
            own,
            inherited: workspace.get(alias).filter(|_| inherits),
        }
    })
}

/// A crate as its manifest names it: its package, and the dependencies only its tests, examples
/// and benches use (`[dev-dependencies]`), which never shape what its `crd()` returns.
struct Root {
    name: String,
    dev_only: HashSet<String>,
}

impl Root {
    fn of(manifest: &str) -> Option<Self> {
        let table: toml::Table = manifest.parse().ok()?;
        let name = table.get("package")?.get("name")?.as_str()?.to_owned();
        let packages = |section: &toml::Table, key: &str| -> Vec<String> {
            let none = toml::Table::new();
            let deps = dependencies(section, key, &none);
            deps.map(|dependency| dependency.package.to_owned())
                .collect()
        };
        let mut normal = HashSet::new();
        let mut dev_only = HashSet::new();
        for section in dependency_sections(&table) {
            normal.extend(packages(section, "dependencies"));
            normal.extend(packages(section, "build-dependencies"));
            dev_only.extend(packages(section, "dev-dependencies"));
        }
        dev_only.retain(|name| !normal.contains(name));
        Some(Self { name, dev_only })
    }
}

/// The name and version of every package in a `Cargo.lock` that the crate `root` builds its
/// library and binaries with: reached from its package but not through its dev-only
/// dependencies (a test harness on an older kube does not shape `crd()`). Every package when
/// the lock does not have the crate.
fn locked_versions(lock: &str, root: Option<&Root>) -> Vec<(String, String)> {
    let Ok(value) = lock.parse::<toml::Table>() else {
        return Vec::new();
    };
    let listed = value.get("package").and_then(toml::Value::as_array);
    let packages: Vec<(&str, &str, Vec<&str>)> = (listed.into_iter().flatten())
        .filter_map(|p| {
            let dependencies = p.get("dependencies").and_then(toml::Value::as_array);
            let dependencies = dependencies.into_iter().flatten();
            Some((
                p.get("name")?.as_str()?,
                p.get("version")?.as_str()?,
                dependencies.filter_map(toml::Value::as_str).collect(),
            ))
        })
        .collect();
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (index, (name, _, _)) in packages.iter().enumerate() {
        by_name.entry(name).or_default().push(index);
    }
    let start = root.and_then(|root| by_name.get(root.name.as_str())?.first().copied());
    let reached = match (root, start) {
        (Some(root), Some(start)) => {
            let mut reached = vec![false; packages.len()];
            reached[start] = true;
            let mut stack = vec![start];
            while let Some(at) = stack.pop() {
                for dependency in &packages[at].2 {
                    // `name`, or `name version [(source)]` where the lock has several versions.
                    let mut parts = dependency.split(' ');
                    let name = parts.next().unwrap_or_default();
                    let version = parts.next();
                    if at == start && root.dev_only.contains(name) {
                        continue;
                    }
                    let candidates = by_name.get(name).into_iter().flatten();
                    let found = candidates
                        .copied()
                        .find(|&i| version.is_none_or(|version| packages[i].1 == version));
                    if let Some(next) = found.filter(|&next| !reached[next]) {
                        reached[next] = true;
                        stack.push(next);
                    }
                }
            }
            reached
        }
        _ => vec![true; packages.len()],
    };
    (packages.iter().zip(reached))
        .filter(|(_, reached)| *reached)
        .map(|((name, version, _), _)| ((*name).to_owned(), (*version).to_owned()))
        .collect()
}

/// The workspace a crate belongs to.
pub(super) struct Workspace {
    /// Its directory: the `path`s of its dependencies are relative to it.
    pub root: PathBuf,
    /// Its `[workspace.dependencies]`, where a member's `kube = { workspace = true }` is
    /// resolved.
    pub dependencies: toml::Table,
}

/// The workspace of the crate in `dir`: the nearest manifest with a `[workspace]` from `dir` up
/// (the crate's own, for a workspace's root package); `dir` alone when there is none.
pub(super) fn workspace(dir: &Path) -> Workspace {
    let declared = dir.ancestors().find_map(|root| {
        let text = crate::regular_file::read_to_string(&root.join("Cargo.toml")).ok()?;
        let table = text.parse::<toml::Table>().ok()?;
        let workspace = table.get("workspace")?.as_table()?;
        let dependencies = workspace
            .get("dependencies")
            .and_then(toml::Value::as_table);
        Some((root, dependencies.cloned().unwrap_or_default()))
    });
    let (root, dependencies) = declared.unwrap_or((dir, toml::Table::new()));
    Workspace {
        root: root.to_path_buf(),
        dependencies,
    }
}

/// The version requirements of the dependencies in a `Cargo.toml` (`kube` stands for
/// kube-derive and kube-core, which it re-exports at its own version); a dependency inherited
/// from the workspace has the workspace's requirement.
fn required_versions(manifest: &str, workspace: &toml::Table) -> Vec<(String, String)> {
    let Ok(value) = manifest.parse::<toml::Table>() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for table in ["dependencies", "build-dependencies"] {
        for dependency in dependencies(&value, table, workspace) {
            let name = dependency.alias;
            let version = match dependency.inherited.unwrap_or(dependency.own) {
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
            for krate in names.iter().copied().chain(std::iter::once(name)) {
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
        let locked = locked_versions(&lock, None);
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

    /// What a crate builds with is what its own dependencies reach (kube re-exported by another
    /// crate included); a test harness on another kube, reached only through a dev-dependency,
    /// is not.
    #[test]
    fn a_lock_is_read_from_the_crates_own_dependencies() {
        let lock = r#"
            [[package]]
            name = "op"
            version = "0.1.0"
            dependencies = ["envtest", "kube 5.0.0", "wrapper"]
            [[package]]
            name = "envtest"
            version = "0.2.0"
            dependencies = ["kube 3.1.0"]
            [[package]]
            name = "wrapper"
            version = "1.0.0"
            dependencies = ["kube 5.0.0 (registry+https://github.com/rust-lang/crates.io-index)"]
            [[package]]
            name = "kube"
            version = "5.0.0"
            dependencies = ["kube-derive 5.0.0"]
            [[package]]
            name = "kube"
            version = "3.1.0"
            dependencies = ["kube-derive 3.1.0"]
            [[package]]
            name = "kube-derive"
            version = "5.0.0"
            [[package]]
            name = "kube-derive"
            version = "3.1.0"
        "#;
        let derives = |manifest: &str| -> Vec<String> {
            let root = Root::of(manifest).expect("a package");
            let mut found: Vec<String> = locked_versions(lock, Some(&root))
                .into_iter()
                .filter(|(name, _)| name == "kube-derive")
                .map(|(_, version)| version)
                .collect();
            found.sort();
            found
        };
        let package = "[package]\nname = \"op\"\n";
        let dev = format!(
            "{package}[dependencies]\nkube = \"5\"\n[dev-dependencies]\nenvtest = \"0.2\"\n"
        );
        assert_eq!(derives(&dev), ["5.0.0"]);
        let normal = format!("{package}[dependencies]\nkube = \"5\"\nenvtest = \"0.2\"\n");
        assert_eq!(derives(&normal), ["3.1.0", "5.0.0"]);
        let renamed = format!(
            "{package}[dev-dependencies]\nharness = {{ package = \"envtest\", version = \"0.2\" }}\n"
        );
        assert_eq!(derives(&renamed), ["5.0.0"]);
        assert_eq!(
            locked_versions(lock, None).len(),
            7,
            "without the crate: every package"
        );
    }

    #[test]
    fn requirements_and_locks_are_compared_by_minor_version() {
        assert!(same_minor("5.0.3", "5.0"));
        assert!(same_minor("^5", "5.0"));
        assert!(!same_minor("4.0.0", "5.0"));
        assert!(!same_minor("0.28.1", "0.29"));
        let manifest = "[dependencies]\nkube = { version = \"4\", features = [\"derive\"] }\nschemars = \"1.2\"\n";
        let required = required_versions(manifest, &toml::Table::new());
        assert!(required.contains(&("kube-derive".into(), "4".into())));
        assert!(required.contains(&("schemars".into(), "1.2".into())));
        let member = "[dependencies]\nkube = { workspace = true, features = [\"derive\"] }\n";
        let workspace: toml::Table = "kube = { version = \"3.0.0\" }".parse().expect("toml");
        let required = required_versions(member, &workspace);
        assert!(required.contains(&("kube-core".into(), "3.0.0".into())));
    }
}
