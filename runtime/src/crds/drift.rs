//! What a project's `tests/crds.rs` checks: the CRDs committed in `config/crd/bases/` are
//! exactly what the Rust types generate (kube-derive's `crd()` with the project's
//! [`Settings`], merged across versions as `kopgen manifests` merges them), and no CRD file is
//! left without a kind in the code.

use std::{collections::BTreeMap, path::Path};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use super::Settings;

/// Kubernetes' version priority, the order kopgen merges versions in: GA, then beta, then
/// alpha, higher numbers first.
fn priority(version: &str) -> (u8, i64, i64) {
    let rest = version.trim_start_matches('v');
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major: i64 = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let (level, minor) = match (tail.strip_prefix("beta"), tail.strip_prefix("alpha")) {
        _ if tail.is_empty() => (0, "0"),
        (Some(minor), _) => (1, minor),
        (_, Some(minor)) => (2, minor),
        _ => (3, "0"),
    };
    (level, -major, -minor.parse::<i64>().unwrap_or(0))
}

/// Every CRD kopgen writes for `versions` (each kind's `crd()` per version), by file name
/// (`<group>_<plural>.yaml`), merged across versions as kopgen merges them.
fn expected_files(
    versions: Vec<CustomResourceDefinition>,
) -> BTreeMap<String, CustomResourceDefinition> {
    let mut by_file: BTreeMap<String, Vec<CustomResourceDefinition>> = BTreeMap::new();
    for crd in versions {
        let file = format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural);
        by_file.entry(file).or_default().push(crd);
    }
    by_file
        .into_iter()
        .map(|(file, mut crds)| {
            crds.sort_by_key(|crd| priority(&crd.spec.versions[0].name));
            let merged = if crds.len() == 1 {
                crds.remove(0)
            } else {
                let storage = crds
                    .iter()
                    .find(|crd| crd.spec.versions[0].storage)
                    .map(|crd| crd.spec.versions[0].name.clone())
                    .expect("one version is the storage version");
                kube::core::crd::merge_crds(crds, &storage).expect("versions merge")
            };
            (file, merged)
        })
        .collect()
}

/// The settings of the project whose `config/crd/bases/` is `bases`: its PROJECT file's.
fn project_settings(bases: &Path) -> Settings {
    Settings::load(project_root(bases)).unwrap_or_else(|e| panic!("{e}"))
}

/// The project whose `config/crd/bases/` is `bases`.
fn project_root(bases: &Path) -> &Path {
    bases.ancestors().nth(3).unwrap_or(bases)
}

/// Panics unless each CRD of `versions` is committed in `bases`, equal to what the types give
/// with the settings of the project's PROJECT file (`bases` is its `config/crd/bases/`).
pub fn committed_crds_match(versions: Vec<CustomResourceDefinition>, bases: &Path) {
    let settings = project_settings(bases);
    let versions = versions
        .into_iter()
        .map(|mut crd| {
            settings.apply(&mut crd);
            crd
        })
        .collect();
    let patches = project_root(bases).join("config/crd/bases-patches");
    for (file, mut expected) in expected_files(versions) {
        patch(&mut expected, &patches.join(&file));
        let path = bases.join(&file);
        let committed = std::fs::read_to_string(&path)
            .unwrap_or_else(|_| panic!("{} is missing: run `make manifests`", path.display()));
        // Compared as CRDs, not as text: a file written in another YAML style (an older
        // kopgen's, a formatter's) holds the same CRD.
        let committed: CustomResourceDefinition = serde_saphyr::from_str(&committed)
            .unwrap_or_else(|e| panic!("{} is not a CRD: {e}", path.display()));
        assert!(
            committed == expected,
            "{} is out of date with the Rust types ({settings}): run `make manifests`",
            path.display()
        );
    }
}

/// Applies the project's patch of a CRD (`config/crd/bases-patches/<file>`, a JSON Patch written in
/// YAML), as `kopgen manifests` applies it after the settings, if there is one.
fn patch(crd: &mut CustomResourceDefinition, path: &Path) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let patch: json_patch::Patch = serde_saphyr::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not a JSON patch: {e}", path.display()));
    let mut doc = serde_json::to_value(&*crd).expect("a CRD serializes");
    json_patch::patch(&mut doc, &patch).unwrap_or_else(|e| {
        panic!(
            "{} does not apply: {e}: run `make manifests`",
            path.display()
        )
    });
    *crd = serde_json::from_value(doc)
        .unwrap_or_else(|e| panic!("{} leaves no CRD: {e}", path.display()));
}

/// Panics if a CRD file in `bases` belongs to no kind of `versions`.
pub fn every_crd_file_has_a_kind(versions: Vec<CustomResourceDefinition>, bases: &Path) {
    let expected = expected_files(versions);
    let Ok(entries) = std::fs::read_dir(bases) else {
        assert!(
            expected.is_empty(),
            "config/crd/bases is missing: run `make manifests`"
        );
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        assert!(
            !file.ends_with(".yaml") || expected.contains_key(&file),
            "config/crd/bases/{file} belongs to no kind in the code: delete it, \
             or list the kind in `versions()` of tests/crds.rs"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_merge_in_kubernetes_priority() {
        let mut versions = vec!["v1alpha1", "v2", "v1beta1", "v1", "v1beta2", "v10"];
        versions.sort_by_key(|v| priority(v));
        assert_eq!(
            versions,
            ["v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha1"]
        );
    }
}
