//! Finds every `#[derive(CustomResource)]` in the index and groups the versions of each kind,
//! so that each becomes one CRD or an error at its source, never nothing.

use std::collections::BTreeMap;

use super::{
    attrs,
    crd::{CustomResource, version_priority},
    error::SourceError,
    index::{Index, ItemKind},
    schema::syn_error,
};

/// The versions of one kind (one CRD), in Kubernetes version priority order.
pub struct Kind {
    pub group: String,
    pub kind: String,
    pub versions: Vec<CustomResource>,
}

impl Kind {
    /// The CRD file name kopgen writes, as controller-gen names it: `<group>_<plural>.yaml`,
    /// after the first version in priority order.
    pub fn file_name(&self) -> String {
        let plural = self.versions.first().map(CustomResource::plural);
        format!("{}_{}.yaml", self.group, plural.unwrap_or_default())
    }
}

/// Every custom resource of the crate, grouped into kinds (sorted by group and kind); the
/// errors of every item that cannot be one, in source order.
pub fn find(index: &Index) -> Result<Vec<Kind>, Vec<SourceError>> {
    let mut errors = Vec::new();
    let mut by_kind: BTreeMap<(String, String), Vec<CustomResource>> = BTreeMap::new();
    for (i, item) in index.items.iter().enumerate() {
        if index.in_test_module(&item.module) {
            continue;
        }
        let (attrs, span) = match &item.kind {
            ItemKind::Struct(s) => (&s.attrs, s.ident.span()),
            ItemKind::Enum(e) => (&e.attrs, e.ident.span()),
            _ => continue,
        };
        if !attrs::derives(attrs, "CustomResource") {
            continue;
        }
        let file = index.file(item).to_path_buf();
        let cr = match attrs::kube_attrs(attrs) {
            Ok(attrs) => CustomResource {
                item: i,
                attrs,
                file,
                span,
            },
            Err(e) => {
                errors.push(syn_error(&file, e));
                continue;
            }
        };
        let missing = ["group", "version", "kind"]
            .into_iter()
            .zip([&cr.attrs.group, &cr.attrs.version, &cr.attrs.kind])
            .find(|(_, value)| value.is_none());
        if let Some((key, _)) = missing {
            errors.push(
                SourceError::at(&cr.file, cr.span, format!("#[kube(...)] needs `{key}`"))
                    .help(format!("add {key} = \"...\" to #[kube(...)]")),
            );
            continue;
        }
        by_kind
            .entry((cr.group().to_owned(), cr.kind().to_owned()))
            .or_default()
            .push(cr);
    }
    let mut kinds = Vec::with_capacity(by_kind.len());
    for ((group, kind), mut versions) in by_kind {
        // Ties (the same version twice) are ordered by place, so the error names the later one.
        versions.sort_by(|a, b| {
            (version_priority(a.version()), &a.file, a.span.start().line).cmp(&(
                version_priority(b.version()),
                &b.file,
                b.span.start().line,
            ))
        });
        for pair in versions.windows(2) {
            if pair[0].version() == pair[1].version() {
                errors.push(
                    at(&pair[1])
                        .reworded(format!(
                            "version {} of {kind} is declared twice (also at {})",
                            pair[1].version(),
                            place(&pair[0])
                        ))
                        .help("each version of a kind needs its own `#[kube(version = ...)]`; remove or rename one"),
                );
            }
        }
        kinds.push(Kind {
            group,
            kind,
            versions,
        });
    }
    errors.extend(collisions(&kinds));
    if errors.is_empty() {
        Ok(kinds)
    } else {
        errors.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
        Err(errors)
    }
}

/// Two kinds whose CRDs would share a name (`<plural>.<group>`) or a file: the API server would
/// keep one, and kopgen would write one over the other.
fn collisions(kinds: &[Kind]) -> Vec<SourceError> {
    let mut seen: BTreeMap<String, &Kind> = BTreeMap::new();
    let mut errors = Vec::new();
    for kind in kinds {
        let Some(first) = kind.versions.first() else {
            continue;
        };
        let name = format!("{}.{}", first.plural(), kind.group).to_ascii_lowercase();
        match seen.get(&name) {
            Some(earlier) => {
                let other = earlier.versions.first().map(place).unwrap_or_default();
                errors.push(
                    at(first)
                        .reworded(format!(
                            "kinds {} and {} would both be the CRD {name} (the other is at {other})",
                            earlier.kind, kind.kind
                        ))
                        .help("give one of them another `plural` (and kind) in #[kube(...)]: a CRD name is `<plural>.<group>`"),
                );
            }
            None => {
                seen.insert(name, kind);
            }
        }
    }
    errors
}

fn at(cr: &CustomResource) -> SourceError {
    SourceError::at(&cr.file, cr.span, "")
}

fn place(cr: &CustomResource) -> String {
    let start = cr.span.start();
    format!("{}:{}:{}", cr.file.display(), start.line, start.column + 1)
}
