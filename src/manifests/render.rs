//! The render stage: from the derived versions of one kind to its YAML file (transforms, merge
//! with kube-core's `merge_crds`, description limit, lint, serialization with serde_yaml).

use super::{
    HEADER, Options,
    crd::{self, Derived},
    error::SourceError,
    lint,
    transform::Transforms,
};

/// One kind's file and the lint findings on its CRD (located in the source by the caller).
pub struct Rendered {
    pub contents: String,
    pub crd_name: String,
    pub findings: Vec<lint::Finding>,
}

/// Renders one kind, its versions in the order they are merged: each version through the
/// transforms, then one CRD as `merge_crds` builds it (with `storage`, the version the crate's
/// own `merge_crds` call stores).
pub fn render(
    versions: Vec<Derived>,
    storage: Option<&str>,
    transforms: &mut Transforms,
    options: &Options,
) -> Result<Rendered, Vec<SourceError>> {
    let Some(first) = versions.first() else {
        return Err(Vec::new());
    };
    let first_at = first.at.clone();
    // The crate's `merge_crds` call names the storage version; else `#[kube(storage)]` does.
    let stored: Vec<(String, SourceError)> = versions
        .iter()
        .filter(|d| storage.map_or(d.storage(), |s| d.version() == s))
        .map(|d| (d.version().to_owned(), d.at.clone()))
        .collect();
    let mut crds = Vec::with_capacity(versions.len());
    let mut errors = Vec::new();
    for derived in versions {
        match crd::render(derived, transforms) {
            Ok(rendered) => crds.push(rendered),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let kind = crds
        .first()
        .map(|c| c.spec.names.kind.clone())
        .unwrap_or_default();
    let mut merged = if crds.len() == 1 {
        crds.remove(0)
    } else {
        match stored.as_slice() {
            [(version, _)] => kube_core::crd::merge_crds(crds, version).map_err(|e| {
                vec![first_at
                    .reworded(format!("cannot merge the versions of {kind}: {e}"))
                    .help("kube's merge_crds needs every version of a kind to agree on `namespaced`, the group and the names (plural, singular, short names, categories); make them the same")]
            })?,
            [] => {
                return Err(vec![
                    first_at
                        .reworded(format!("no version of {kind} is the storage version"))
                        .help("exactly one version needs storage (the default); remove `storage = false` from one"),
                ]);
            }
            [(a, at), (b, b_at), ..] => {
                let second = format!("{}:{}", b_at.file.display(), b_at.line);
                return Err(vec![
                    at.reworded(format!(
                        "{a} and {b} (at {second}) are both storage versions of {kind}"
                    ))
                    .help("mark all but one version with #[kube(storage = false)], or merge them in the crate with merge_crds(vec![..], \"<storage version>\")"),
                ]);
            }
        }
    };
    if let Some(max) = options.max_desc_len {
        lint::truncate_descriptions(&mut merged, max);
    }
    let findings = if options.lint {
        lint::check(&merged)
    } else {
        Vec::new()
    };
    let yaml =
        serde_yaml::to_string(&merged).map_err(|e| vec![first_at.reworded(e.to_string())])?;
    Ok(Rendered {
        contents: format!("{HEADER}{yaml}"),
        crd_name: merged.metadata.name.clone().unwrap_or_default(),
        findings,
    })
}
