//! The Kubernetes version a user's crate builds k8s-openapi for: the schemas of Kubernetes types
//! differ between versions (new fields, new descriptions), so the static derivation compares a
//! kind's embedded types with that version's, and a crdgen `kopgen manifests` compiles must
//! build with the same one.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::cfg::Cfg;
use super::library::k8s_versions::{EARLIEST, LATEST};
use super::versions::{
    Dependency, Workspace, crate_dir, dependencies, dependency_sections, workspace,
};

/// The dependency tables of what the crate's build (not its tests) compiles.
const BUILT: &[&str] = &["dependencies", "build-dependencies"];

/// Path dependencies followed at most, so that a manifest tree of any shape is read in bounded
/// time (a real workspace has tens).
const MAX_PATH_CRATES: usize = 256;

/// The Kubernetes version a crate's k8s-openapi is built for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct K8sVersion {
    /// Its feature (`v1_33`), `latest` and `earliest` resolved.
    pub feature: String,
    /// Whether the crate's build enables it: its own dependencies, or a library of its
    /// workspace it depends on by `path`. k8s-openapi tells a library to leave the choice to
    /// the binary that uses it and to enable a version only for its tests and examples
    /// (`[dev-dependencies]`): built alone, such a library names none, so a program that
    /// builds it (the crdgen `kopgen manifests` compiles) must, and must not where the build
    /// has one already (k8s-openapi refuses two).
    pub enabled_by_the_crate: bool,
}

impl K8sVersion {
    /// `1.33`, as k8s-openapi's `K8S_OPENAPI_ENABLED_VERSION` takes it.
    pub fn number(&self) -> String {
        self.feature.trim_start_matches("v").replacen('_', ".", 1)
    }
}

/// The Kubernetes version the crate of `manifest` selects with a k8s-openapi feature (`v1_33`,
/// `earliest`): from its dependencies, else from those of the libraries it depends on by `path`
/// (a workspace's own crates: cargo builds one k8s-openapi for them all), else from its
/// dev-dependencies (what its tests, the drift test among them, build with), else `latest`,
/// which is what kopgen builds a crate that names none with.
pub fn k8s_version(manifest: &Path, cfg: &Cfg) -> K8sVersion {
    let table = manifest_table(manifest);
    let dir = crate_dir(manifest);
    let workspace = workspace(&dir);
    let own = k8s_openapi_features(&table, &workspace.dependencies, cfg, BUILT);
    let built =
        version_in(own).or_else(|| enabled_by_path_dependencies(&table, cfg, &dir, &workspace));
    match built {
        Some(feature) => K8sVersion {
            feature,
            enabled_by_the_crate: true,
        },
        None => {
            let tests = ["dev-dependencies"];
            let tests = k8s_openapi_features(&table, &workspace.dependencies, cfg, &tests);
            K8sVersion {
                feature: version_in(tests).unwrap_or_else(|| LATEST.to_owned()),
                enabled_by_the_crate: false,
            }
        }
    }
}

fn manifest_table(manifest: &Path) -> toml::Table {
    let text = crate::regular_file::read_to_string(manifest).unwrap_or_default();
    text.parse().unwrap_or_default()
}

/// The version feature among k8s-openapi `features`, `latest` and `earliest` resolved.
fn version_in(features: Vec<String>) -> Option<String> {
    features
        .into_iter()
        .find_map(|feature| match feature.as_str() {
            "latest" => Some(LATEST.to_owned()),
            "earliest" => Some(EARLIEST.to_owned()),
            other if other.starts_with("v1_") => Some(other.to_owned()),
            _ => None,
        })
}

/// The features the crate's k8s-openapi dependencies of the kinds `keys` are built with: those
/// they list, and those the crate's own enabled features turn on for them
/// (`[features] default = ["k8s-openapi/v1_33"]`; cargo applies these to dependencies and
/// build-dependencies only).
fn k8s_openapi_features(
    table: &toml::Table,
    workspace: &toml::Table,
    cfg: &Cfg,
    keys: &[&str],
) -> Vec<String> {
    let declared = dependency_sections(table).flat_map(|section| {
        keys.iter()
            .flat_map(move |key| dependencies(section, key, workspace).map(move |d| (*key, d)))
    });
    let mut features = Vec::new();
    for (key, dependency) in declared.filter(|(_, d)| d.package == "k8s-openapi") {
        features.extend(listed_features(&dependency));
        if key != "dev-dependencies" {
            features.extend(cfg.features_of(dependency.alias).map(str::to_owned));
        }
    }
    features
}

/// The features a dependency's `features = [..]` turns on, its own and those of the workspace's
/// entry it inherits.
fn listed_features(dependency: &Dependency<'_>) -> Vec<String> {
    let specs = std::iter::once(dependency.own).chain(dependency.inherited);
    let listed = specs.filter_map(|spec| spec.get("features")?.as_array());
    let listed = listed.flatten().filter_map(toml::Value::as_str);
    listed.map(str::to_owned).collect()
}

/// The version a library the crate builds with, reached through `path` dependencies, enables
/// (with its default features, those the dependency names and those the crate's enabled
/// features turn on in it): k8s-openapi asks libraries not to, but a workspace's own library
/// often does, and then the crate's build has that version whether the crate names one or not.
/// Registry dependencies are not read: the published libraries leave it alone. `table` is the
/// crate's manifest, in `root`, a member of `root_workspace`, built with `cfg`'s features.
fn enabled_by_path_dependencies(
    table: &toml::Table,
    cfg: &Cfg,
    root: &Path,
    root_workspace: &Workspace,
) -> Option<String> {
    let mut seen = HashSet::from([(root.to_path_buf(), Vec::new())]);
    let mut pending = path_dependencies(table, cfg, root, root_workspace);
    while let Some((dir, features)) = pending.pop() {
        if seen.len() > MAX_PATH_CRATES || !seen.insert((dir.clone(), features.clone())) {
            continue;
        }
        let manifest = dir.join("Cargo.toml");
        let table = manifest_table(&manifest);
        let workspace = workspace(&dir);
        let cfg = Cfg::new(Some(&manifest), &features);
        let enabled = k8s_openapi_features(&table, &workspace.dependencies, &cfg, BUILT);
        if let Some(version) = version_in(enabled) {
            return Some(version);
        }
        pending.extend(path_dependencies(&table, &cfg, &dir, &workspace));
    }
    None
}

/// The crates the crate in `dir` (its manifest `table`, built with `cfg`'s features) depends on
/// by `path` (its own or the one it inherits from `[workspace.dependencies]`, relative to the
/// workspace), outside its tests: each one's directory and the features turned on in it, by
/// the dependency's `features` or by the crate's own (`default = ["common/k8s"]`).
fn path_dependencies(
    table: &toml::Table,
    cfg: &Cfg,
    dir: &Path,
    workspace: &Workspace,
) -> Vec<(PathBuf, Vec<String>)> {
    let mut found = Vec::new();
    for section in dependency_sections(table) {
        for key in BUILT {
            for dependency in dependencies(section, key, &workspace.dependencies) {
                let path = |spec: &toml::Value| spec.get("path")?.as_str().map(str::to_owned);
                let own = path(dependency.own).map(|path| dir.join(path));
                let inherited =
                    (dependency.inherited.and_then(path)).map(|path| workspace.root.join(path));
                let Some(path) = own.or(inherited) else {
                    continue;
                };
                let mut features = listed_features(&dependency);
                features.extend(cfg.features_of(dependency.alias).map(str::to_owned));
                features.sort();
                features.dedup();
                found.push((std::fs::canonicalize(&path).unwrap_or(path), features));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary names its Kubernetes version in its dependencies; a library, as k8s-openapi
    /// asks, only in its dev-dependencies (what its tests build with), or nowhere.
    #[test]
    fn the_kubernetes_version_is_the_crates_else_its_tests_else_latest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let manifest = dir.path().join("Cargo.toml");
        let version = |text: &str| {
            std::fs::write(&manifest, format!("[package]\nname = \"op\"\n{text}")).expect("write");
            let cfg = Cfg::new(Some(&manifest), &["extra".to_owned()]);
            let found = k8s_version(&manifest, &cfg);
            (found.feature, found.enabled_by_the_crate)
        };
        let binary =
            "[dependencies]\nk8s-openapi = { version = \"0.29\", features = [\"v1_34\"] }\n";
        assert_eq!(version(binary), ("v1_34".into(), true));
        let earliest =
            "[dependencies.k8s-openapi]\nversion = \"0.29\"\nfeatures = [\"earliest\"]\n";
        assert_eq!(version(earliest), (EARLIEST.into(), true));
        let library = "[dependencies]\nk8s-openapi = { version = \"0.29\", features = [\"schemars\"] }\n\
                       [dev-dependencies]\nk8s-openapi = { version = \"0.29\", features = [\"v1_35\"] }\n";
        assert_eq!(version(library), ("v1_35".into(), false));
        // By a feature, the crate's default ones or those kopgen is told of (`--features`).
        let by_feature = |features: &str| {
            format!(
                "[features]\n{features}\n[dependencies]\nk8s = {{ package = \"k8s-openapi\", version = \"0.29\" }}\n\
                 [dev-dependencies]\nk8s-openapi = {{ version = \"0.29\", features = [\"v1_35\"] }}\n"
            )
        };
        let default = by_feature("default = [\"k8s\"]\nk8s = [\"k8s?/v1_34\"]");
        assert_eq!(version(&default), ("v1_34".into(), true));
        let extra = by_feature("extra = [\"k8s/earliest\"]");
        assert_eq!(version(&extra), (EARLIEST.into(), true));
        let off = by_feature("other = [\"k8s/v1_34\"]");
        assert_eq!(version(&off), ("v1_35".into(), false));
        let through_kube = "[dependencies]\nkube = \"5\"\n";
        assert_eq!(version(through_kube), (LATEST.into(), false));
        let number = |feature: &str| {
            let version = K8sVersion {
                feature: feature.into(),
                enabled_by_the_crate: false,
            };
            version.number()
        };
        assert_eq!(number("v1_35"), "1.35");
        assert_eq!(number(LATEST), LATEST.replace("v1_", "1."));
    }

    /// A workspace's library that enables a version decides it for the crate that depends on
    /// it by `path`, directly or through another library, or through `[workspace.dependencies]`.
    #[test]
    fn a_version_a_path_dependency_enables_is_the_crates() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |path: &str, text: &str| {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        };
        let package = |name: &str| format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\n");
        write(
            "Cargo.toml",
            "[workspace]\nmembers = [\"op\", \"api\", \"common\"]\n\n[workspace.dependencies]\n\
             common = { path = \"common\" }\n",
        );
        write(
            "common/Cargo.toml",
            &format!(
                "{}[dependencies]\nk8s-openapi = {{ version = \"0.29\", features = [\"v1_33\"] }}\n",
                package("common")
            ),
        );
        let op = dir.path().join("op/Cargo.toml");
        let version = |dependencies: &str| {
            write("op/Cargo.toml", &format!("{}{dependencies}", package("op")));
            let found = k8s_version(&op, &Cfg::new(Some(&op), &[]));
            (found.feature, found.enabled_by_the_crate)
        };
        let enabled = ("v1_33".to_owned(), true);
        assert_eq!(
            version("[dependencies]\ncommon = { path = \"../common\" }\n"),
            enabled
        );
        assert_eq!(
            version("[dependencies]\ncommon = { workspace = true }\n"),
            enabled
        );
        // Through a library that names no version itself, and depends back on the crate.
        write(
            "api/Cargo.toml",
            &format!(
                "{}[dependencies]\nop = {{ path = \"../op\" }}\ncommon = {{ path = \"../common\" }}\n",
                package("api")
            ),
        );
        assert_eq!(
            version("[dependencies]\napi = { path = \"../api\" }\n"),
            enabled
        );
        // By a feature of the library that the crate turns on.
        write(
            "flagged/Cargo.toml",
            &format!(
                "{}[features]\nk8s = [\"k8s-openapi/v1_34\"]\n\n\
                 [dependencies]\nk8s-openapi = \"0.29\"\n",
                package("flagged")
            ),
        );
        assert_eq!(
            version("[dependencies]\nflagged = { path = \"../flagged\", features = [\"k8s\"] }\n"),
            ("v1_34".to_owned(), true)
        );
        assert_eq!(
            version("[dependencies]\nflagged = { path = \"../flagged\" }\n"),
            (LATEST.to_owned(), false)
        );
        // By a feature of the crate's own that turns the library's on, when it is enabled.
        let flagged = "[dependencies]\nflagged = { path = \"../flagged\", optional = true }\n";
        assert_eq!(
            version(&format!(
                "[features]\ndefault = [\"kube\"]\nkube = [\"flagged?/k8s\", \"dep:flagged\"]\n\n{flagged}"
            )),
            ("v1_34".to_owned(), true)
        );
        assert_eq!(
            version(&format!(
                "[features]\nkube = [\"flagged/k8s\"]\n\n{flagged}"
            )),
            (LATEST.to_owned(), false)
        );
        // Only what the crate's build has: a library its tests use does not count.
        assert_eq!(
            version("[dev-dependencies]\ncommon = { path = \"../common\" }\n"),
            (LATEST.to_owned(), false)
        );
        // A library that depends on the crate itself, and names no version: no endless walk.
        write(
            "api/Cargo.toml",
            &format!(
                "{}[dependencies]\nop = {{ path = \"../op\" }}\n",
                package("api")
            ),
        );
        assert_eq!(
            version("[dependencies]\napi = { path = \"../api\" }\n"),
            (LATEST.to_owned(), false)
        );
    }

    /// A workspace's root package inherits from its own `[workspace.dependencies]`.
    #[test]
    fn a_root_package_inherits_from_its_own_workspace() {
        let dir = tempfile::tempdir().expect("tempdir");
        let manifest = dir.path().join("Cargo.toml");
        std::fs::write(
            &manifest,
            "[package]\nname = \"op\"\nversion = \"0.1.0\"\n\n[workspace]\n\n\
             [workspace.dependencies]\nk8s-openapi = { version = \"0.29\", features = [\"v1_34\"] }\n\n\
             [dependencies]\nk8s-openapi = { workspace = true }\n",
        )
        .expect("write");
        let found = k8s_version(&manifest, &Cfg::new(Some(&manifest), &[]));
        assert_eq!(
            (found.feature.as_str(), found.enabled_by_the_crate),
            ("v1_34", true)
        );
    }
}
