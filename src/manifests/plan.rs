//! Which CRDs a run derives and which it reuses from the cache: the plan that
//! `derive_planned` carries out, and the state a cached run leaves behind.

use std::{collections::BTreeMap, path::PathBuf};

use super::{
    Generated, cache,
    crd::{self, CustomResource},
    custom_resources, discover,
    index::{self, FileSet, Index},
};

/// What a cached run records about its inputs.
pub(super) struct Record {
    pub(super) key: String,
    pub(super) fingerprint: Vec<(PathBuf, String, u64)>,
}

/// The last run's result, when no source changed.
pub(super) fn unchanged(state: &cache::State) -> Option<Generated> {
    let mut outputs = Vec::with_capacity(state.kinds.len());
    let mut findings = Vec::new();
    for kind in &state.kinds {
        let (output, located) = kind.restore(&state.blob)?;
        outputs.push(output);
        findings.extend(located);
    }
    outputs.sort_by(|a, b| a.path.cmp(&b.path));
    Some(Generated { outputs, findings })
}

/// One CRD of a run: derived now, or reused from the cache.
pub(super) enum Planned<'s> {
    Derive(Vec<CustomResource>),
    Reuse(&'s cache::Kind),
}

/// The files whose contents changed since the last run, or `None` when the file list itself
/// (paths or modules) changed.
pub(super) fn changed_files(previous: &cache::State, record: &Record) -> Option<FileSet> {
    if previous.sources.len() != record.fingerprint.len() {
        return None;
    }
    let mut changed = FileSet::default();
    for (file, (old, new)) in previous.sources.iter().zip(&record.fingerprint).enumerate() {
        if old.0 != new.0 || old.1 != new.1 {
            return None;
        }
        if old.2 != new.2 {
            changed.insert(file);
        }
    }
    Some(changed)
}

/// The index of the last run with the `changed` files parsed again, or `None` when any of them
/// changed structure (or does not parse: the full run reports it).
pub(super) fn incremental_index(
    sources: &[discover::Source],
    structure: index::Structure,
    changed: &FileSet,
) -> Option<Index> {
    let texts = sources
        .iter()
        .map(|s| (s.module.clone(), s.text.clone()))
        .collect();
    let index = Index::from_structure(structure, texts)?;
    for (file, source) in sources.iter().enumerate() {
        if changed.contains(file) {
            let parsed = syn::parse_file(&source.text).ok()?;
            if !index.load_parsed(file, &source.module, parsed) {
                return None;
            }
        }
    }
    Some(index)
}

/// The CRDs of this run: reused where the last run derived them from unchanged files with the
/// same versions, derived otherwise.
pub(super) fn plan_incremental<'s>(
    index: &Index,
    previous: &'s cache::State,
    changed: &FileSet,
) -> Option<Vec<Planned<'s>>> {
    let is_changed = |file: usize| changed.contains(file);
    // Every custom resource: known from the last run in unchanged files, read again in changed ones.
    let mut found: Vec<(usize, String, String, String)> = Vec::new();
    for kind in &previous.kinds {
        for (item, version) in &kind.versions {
            if !is_changed(index.items.get(*item)?.file) {
                found.push((
                    *item,
                    kind.group.clone(),
                    kind.kind.clone(),
                    version.clone(),
                ));
            }
        }
    }
    let changed_items = (0..index.items.len()).filter(|&i| is_changed(index.items[i].file));
    let mut fresh: std::collections::HashMap<usize, CustomResource> =
        std::collections::HashMap::new();
    for cr in custom_resources(index, changed_items).ok()? {
        found.push((
            cr.item,
            cr.group().to_owned(),
            cr.kind().to_owned(),
            cr.version().to_owned(),
        ));
        fresh.insert(cr.item, cr);
    }
    // The order a full run merges in: by item, then (stably) by version priority.
    found.sort_by_key(|f| f.0);
    let mut kinds: BTreeMap<(String, String), Vec<(usize, String)>> = BTreeMap::new();
    for (item, group, kind, version) in found {
        kinds
            .entry((group, kind))
            .or_default()
            .push((item, version));
    }
    let by_key: std::collections::HashMap<(&str, &str), &cache::Kind> = previous
        .kinds
        .iter()
        .map(|k| ((k.group.as_str(), k.kind.as_str()), k))
        .collect();
    let mut planned = Vec::with_capacity(kinds.len());
    for ((group, kind), mut versions) in kinds {
        versions.sort_by_key(|(_, version)| crd::version_priority(version));
        if let Some(last) = by_key.get(&(group.as_str(), kind.as_str()))
            && last.versions == versions
            && !last.reads_any(changed)
        {
            planned.push(Planned::Reuse(last));
            continue;
        }
        let mut crs = Vec::with_capacity(versions.len());
        for (item, _) in versions {
            match fresh.remove(&item) {
                Some(cr) => crs.push(cr),
                None => crs.extend(custom_resources(index, item..item + 1).ok()?),
            }
        }
        planned.push(Planned::Derive(crs));
    }
    Some(planned)
}

/// Each kind of a run as the cache keeps it, and the outputs derived in the run, concatenated
/// (the kinds place them after the previous blob).
pub(super) struct Recorded {
    pub(super) kinds: Vec<cache::Kind>,
    pub(super) appended: String,
}

/// The state to store after a run, and the outputs to add to the blob of `blob_len` bytes.
pub(super) fn new_state(
    structure: index::Structure,
    record: Record,
    recorded: Recorded,
    blob_len: usize,
) -> (cache::State, String) {
    let state = cache::State {
        key: record.key,
        sources: record.fingerprint,
        structure,
        kinds: recorded.kinds,
        blob_len,
        blob: Vec::new(),
    };
    (state, recorded.appended)
}
