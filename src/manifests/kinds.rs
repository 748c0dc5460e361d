//! Finds every `#[derive(CustomResource)]` in the index and groups the versions of each kind,
//! so that each becomes one CRD or an error at its source, never nothing.

use std::{collections::BTreeMap, path::PathBuf};

use proc_macro2::Span;

use super::{
    attrs,
    attrs::KubeAttrs,
    error::{self, SourceError, syn_error},
    index::{Index, ItemKind},
    merge_calls::MergeCall,
    resolve::Resolved,
    rules,
};

/// A struct or enum with `#[derive(CustomResource)]`, found in the sources.
#[derive(Debug, Clone)]
pub struct CustomResource {
    pub item: usize,
    pub attrs: KubeAttrs,
    pub file: PathBuf,
    pub span: Span,
    /// The path of the root type an attribute macro generates for this version
    /// (stackable-versioned's `crate::crd::v1alpha1::Foo`): such a kind is only compiled.
    pub generated: Option<String>,
}

impl CustomResource {
    pub fn group(&self) -> &str {
        self.attrs.group.as_deref().unwrap_or_default()
    }

    pub fn kind(&self) -> &str {
        self.attrs.kind.as_deref().unwrap_or_default()
    }

    pub fn version(&self) -> &str {
        self.attrs.version.as_deref().unwrap_or_default()
    }

    pub fn singular(&self) -> String {
        self.attrs
            .singular
            .clone()
            .unwrap_or_else(|| self.kind().to_ascii_lowercase())
    }

    /// kube-derive's plural: explicit, or its rule applied to the singular name.
    pub fn plural(&self) -> String {
        self.attrs
            .plural
            .clone()
            .unwrap_or_else(|| crate::names::plural_of(&self.singular()))
    }
}

/// The versions of one kind (one CRD), in the order they are merged: Kubernetes version
/// priority, or the order of the crate's `merge_crds` call for the kind.
pub struct Kind {
    pub group: String,
    pub kind: String,
    pub versions: Vec<CustomResource>,
    /// The storage version a `merge_crds` call in the crate names (else `#[kube(storage)]`
    /// decides).
    pub storage: Option<String>,
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
        if !index.is_compiled(&item.module) {
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
        let module_versions = (index.modules.get(&item.module))
            .map(|m| m.versions.clone())
            .unwrap_or_default();
        let versioned = attrs::versioned(attrs);
        if versioned.is_some() || !module_versions.is_empty() {
            let at = SourceError::at(&file, span, "");
            match versioned_versions(i, item, versioned, module_versions, &file, span) {
                Ok(crs) => {
                    for cr in crs {
                        (by_kind.entry((cr.group().to_owned(), cr.kind().to_owned())))
                            .or_default()
                            .push(cr);
                    }
                }
                Err(message) => errors.push(at.reworded(message).help(
                    "stackable-versioned needs `version(name = \"..\")` and `crd(group = \"..\")` (`k8s(..)` in older releases)",
                )),
            }
            continue;
        }
        let cr = match attrs::kube_attrs(attrs) {
            Ok(attrs) => CustomResource {
                item: i,
                attrs,
                file,
                span,
                generated: None,
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
        let broken = rules::check(&cr.attrs, &cr.plural(), &cr.singular());
        if !broken.is_empty() {
            let at = attrs::attr_span(attrs, "kube").unwrap_or(cr.span);
            errors.extend(broken.into_iter().map(|b| {
                SourceError::at(
                    &cr.file,
                    at,
                    format!(
                        "#[kube(...)]: {}; the API server would refuse the CRD",
                        b.message
                    ),
                )
                .help(b.help)
            }));
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
            storage: None,
        });
    }
    errors.extend(apply_merge_calls(index, &mut kinds));
    errors.extend(collisions(&kinds));
    if errors.is_empty() {
        Ok(kinds)
    } else {
        error::sort_by_place(&mut errors);
        Err(errors)
    }
}

/// The versions of a kind whose `#[kube(...)]` stackable-versioned's `#[versioned]` writes:
/// one per declared version, each the root type the macro generates in that version's module
/// (beside the struct, or in place of the module the versions are declared on).
fn versioned_versions(
    i: usize,
    item: &crate::manifests::index::IndexedItem,
    versioned: Option<attrs::Versioned>,
    module_versions: Vec<String>,
    file: &std::path::Path,
    span: Span,
) -> Result<Vec<CustomResource>, String> {
    let name = match &item.kind {
        ItemKind::Struct(s) => s.ident.to_string(),
        ItemKind::Enum(e) => e.ident.to_string(),
        _ => String::new(),
    };
    let versioned = versioned.unwrap_or_default();
    let (versions, generated_in) = match versioned.versions.is_empty() {
        false => (versioned.versions, item.module.clone()),
        true => {
            let parent =
                (item.module.rsplit_once("::")).map_or(item.module.as_str(), |(parent, _)| parent);
            (module_versions, parent.to_owned())
        }
    };
    let crd = versioned.crd.unwrap_or_default();
    let Some(group) = crd.group else {
        return Err(format!(
            "{name} derives CustomResource under stackable-versioned's #[versioned], which names no group"
        ));
    };
    if versions.is_empty() {
        return Err(format!(
            "{name} is under stackable-versioned's #[versioned] without a version"
        ));
    }
    let kind = crd
        .kind
        .unwrap_or_else(|| name.strip_suffix("Spec").unwrap_or(&name).to_owned());
    Ok(versions
        .into_iter()
        .map(|version| CustomResource {
            item: i,
            generated: Some(format!("{generated_in}::{version}::{kind}")),
            attrs: KubeAttrs {
                group: Some(group.clone()),
                version: Some(version),
                kind: Some(kind.clone()),
                plural: crd.plural.clone(),
                namespaced: crd.namespaced,
                ..Default::default()
            },
            file: file.to_path_buf(),
            span,
        })
        .collect())
}

/// Orders and stores each kind as the crate's `merge_crds(vec![..], "v")` call for it does:
/// kube-rs users merge versions whose `crd()` all say `storage: true` that way.
fn apply_merge_calls(index: &Index, kinds: &mut [Kind]) -> Vec<SourceError> {
    let mut errors = Vec::new();
    let mut applied: BTreeMap<usize, &MergeCall> = BTreeMap::new();
    for call in &index.merge_calls {
        let file = &index.files[call.file];
        let at = || SourceError::at(file, call.span, "");
        let found: Vec<Option<(usize, usize)>> = call
            .types
            .iter()
            .map(|path| generated_type(index, kinds, &call.module, path))
            .collect();
        let Some(Some((kind_index, _))) = found.first() else {
            continue;
        };
        let kind = &mut kinds[*kind_index];
        let positions: Option<Vec<usize>> = found
            .iter()
            .map(|f| f.filter(|(k, _)| k == kind_index).map(|(_, v)| v))
            .collect();
        let complete = positions.as_ref().is_some_and(|p| {
            let mut sorted = p.clone();
            sorted.sort_unstable();
            sorted.dedup();
            sorted.len() == kind.versions.len() && p.len() == sorted.len()
        });
        let (Some(positions), true, Some(storage)) = (positions, complete, &call.storage) else {
            // A call kopgen cannot read whole (another kind's versions, a version left out, a
            // storage version that is not a literal) decides nothing.
            continue;
        };
        if !kind.versions.iter().any(|v| v.version() == storage) {
            errors.push(
                at().reworded(format!(
                    "merge_crds names {storage} as the storage version of {}, which has no such version",
                    kind.kind
                ))
                .help("name one of the versions merged (merge_crds returns an error here)"),
            );
            continue;
        }
        if let Some(earlier) = applied.get(kind_index) {
            let same = earlier.types == call.types && earlier.storage == call.storage;
            if !same {
                let first = &index.files[earlier.file];
                errors.push(
                    at().reworded(format!(
                        "a second merge_crds call for {} merges its versions differently (the first is at {}:{})",
                        kind.kind,
                        first.display(),
                        earlier.span.start().line
                    ))
                    .help("merge the versions of a kind in one place"),
                );
            }
            continue;
        }
        let versions = std::mem::take(&mut kind.versions);
        kind.versions = positions.iter().map(|&p| versions[p].clone()).collect();
        kind.storage = Some(storage.clone());
        applied.insert(*kind_index, call);
    }
    errors
}

/// The kind and version whose generated type `path` (written in `module`) names: kube-derive
/// generates the type beside the spec, so the path names it when, with the type's name
/// replaced by the spec's, it names the spec.
fn generated_type(
    index: &Index,
    kinds: &[Kind],
    module: &str,
    path: &[String],
) -> Option<(usize, usize)> {
    let (name, head) = path.split_last()?;
    // `Foo` brought in by `use v1::Foo;` (or `as FooV1`): follow the import to its module.
    let written: Vec<String> = match head {
        [] => index
            .modules
            .get(module)
            .and_then(|m| m.uses.get(name))
            .cloned()
            .unwrap_or_else(|| vec![name.clone()]),
        _ => path.to_vec(),
    };
    let (name, head) = written.split_last()?;
    for (k, kind) in kinds.iter().enumerate() {
        for (v, cr) in kind.versions.iter().enumerate() {
            let root = cr.attrs.root.as_deref().unwrap_or(&kind.kind);
            if root != name {
                continue;
            }
            let mut spec_path = head.to_vec();
            spec_path.push(index.items[cr.item].name.clone());
            if index.resolve(module, &spec_path) == Some(Resolved::Local(cr.item)) {
                return Some((k, v));
            }
        }
    }
    None
}

/// CRD names (`<plural>.<group>`) that are not one per kind: versions of one kind that disagree
/// on the plural (`merge_crds` keeps the storage version's, so the other version's client would
/// call a URL that does not exist), and two kinds whose versions would share a CRD name or file
/// (the API server would keep one, and kopgen would write one over the other).
fn collisions(kinds: &[Kind]) -> Vec<SourceError> {
    let mut seen: BTreeMap<String, (&Kind, &CustomResource)> = BTreeMap::new();
    let mut errors = Vec::new();
    for kind in kinds {
        let Some(first) = kind.versions.first() else {
            continue;
        };
        for cr in &kind.versions[1..] {
            if cr.plural() != first.plural() {
                errors.push(
                    at(cr)
                        .reworded(format!(
                            "version {} of {} has the plural `{}` and version {} (at {}) has `{}`: one CRD has one name",
                            cr.version(),
                            kind.kind,
                            cr.plural(),
                            first.version(),
                            place(first),
                            first.plural()
                        ))
                        .help("give every version of a kind the same `plural` in #[kube(...)]; a new plural is a new kind"),
                );
            }
        }
        let mut names: Vec<(String, &CustomResource)> = kind
            .versions
            .iter()
            .map(|cr| {
                (
                    format!("{}.{}", cr.plural(), kind.group).to_ascii_lowercase(),
                    cr,
                )
            })
            .collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        names.dedup_by(|a, b| a.0 == b.0);
        for (name, cr) in names {
            match seen.get(&name) {
                Some((earlier, other)) => {
                    errors.push(
                        at(cr)
                            .reworded(format!(
                                "kinds {} and {} would both be the CRD {name} (the other is at {})",
                                earlier.kind,
                                kind.kind,
                                place(other)
                            ))
                            .help("give one of them another `plural` (and kind) in #[kube(...)]: a CRD name is `<plural>.<group>`"),
                    );
                }
                None => {
                    seen.insert(name, (kind, cr));
                }
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

/// Kubernetes' version priority: GA before beta before alpha, higher numbers first
/// (`v2`, `v1`, `v1beta2`, `v1beta1`, `v1alpha1`); other names last, alphabetically.
pub fn version_priority(name: &str) -> (u8, i64, i64, String) {
    let parse = |rest: &str| -> Option<(u8, i64, i64)> {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: i64 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((0, -major, 0));
        }
        let (level, minor) = if let Some(m) = tail.strip_prefix("beta") {
            (1, m)
        } else if let Some(m) = tail.strip_prefix("alpha") {
            (2, m)
        } else {
            return None;
        };
        Some((level, -major, -minor.parse::<i64>().ok()?))
    };
    match name.strip_prefix('v').and_then(parse) {
        Some((level, major, minor)) => (level, major, minor, String::new()),
        None => (3, 0, 0, name.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_by_kubernetes_priority() {
        let mut versions = vec![
            "v1alpha1", "v1", "v2beta1", "v1beta1", "v2", "foo", "v1beta2",
        ];
        versions.sort_by_key(|v| version_priority(v));
        assert_eq!(
            versions,
            [
                "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "foo"
            ]
        );
    }
}
