//! The kinds a crate defines, with where they live: what `kopgen init --adopt` records in PROJECT
//! and names in the drift test it writes. Read from the source as `manifests` reads it, without
//! deriving a schema.

use super::{discover::Source, error::ManifestError, index::Index};

/// One version of one kind of the crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindVersion {
    pub group: String,
    pub kind: String,
    pub version: String,
    pub plural: String,
    pub namespaced: bool,
    /// The generated root type's path inside the crate (`crate::api::v1::Blog`), as another
    /// crate names it when it is public (`None` when nothing outside the crate can).
    pub public_path: Option<String>,
    /// Where the root type is, inside the crate (`crate::crd::Blog`), public or not.
    pub path: String,
}

/// Every version of every kind of `sources` (a crate read from its root), sorted by group,
/// kind and version.
pub fn kinds(sources: &[Source]) -> Result<Vec<KindVersion>, ManifestError> {
    let cfg = super::cfg::Cfg::new(None, &[]);
    let mut index = Index::build(sources, cfg).map_err(ManifestError::Many)?;
    super::impls::link(&mut index);
    let kinds = super::kinds::find(&index).map_err(ManifestError::Many)?;
    let mut found = Vec::new();
    for kind in &kinds {
        for cr in &kind.versions {
            let item = &index.items[cr.item];
            let root = cr
                .attrs
                .root
                .clone()
                .unwrap_or_else(|| cr.kind().to_owned());
            found.push(KindVersion {
                group: kind.group.clone(),
                kind: kind.kind.clone(),
                version: cr.version().to_owned(),
                plural: cr.plural(),
                namespaced: cr.attrs.namespaced,
                // A macro's generated type is named where the macro puts it (see `kinds`).
                public_path: (cr.generated.clone())
                    .or_else(|| index.public_path(&item.module, &root)),
                path: (cr.generated.clone()).unwrap_or_else(|| format!("{}::{root}", item.module)),
            });
        }
    }
    found.sort_by(|a, b| (&a.group, &a.kind, &a.version).cmp(&(&b.group, &b.kind, &b.version)));
    Ok(found)
}
