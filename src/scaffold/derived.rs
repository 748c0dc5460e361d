//! The files `kopgen manifests` derives, rendered by the scaffolding commands too, so that a
//! project is consistent (and its tests pass) right after a command.

use crate::{changeset::ChangeSet, project::Project};

/// What `kopgen manifests` would write for the project as it will be (the CRDs and
/// `config/rbac/role.yaml`), so that `cargo test` passes right after `create api`, with no
/// `make manifests` in between. Derived statically from the sources on disk with the pending
/// changes laid over them; where that fails (the user's own code does not derive), the files
/// are left for `kopgen manifests` to write and report on.
pub(crate) fn put_manifests(changes: &mut ChangeSet, project: &Project) {
    use crate::manifests::{self, discover};
    let root = changes.root().to_path_buf();
    let src = root.join("src");
    let Ok(mut sources) = discover::sources(std::slice::from_ref(&src)) else {
        return;
    };
    for change in changes.changes() {
        let path = root.join(&change.path);
        if !change.path.starts_with("src") || path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let source = discover::Source {
            module: discover::module_of("crate", &src, &path),
            path: path.clone(),
            text: change.contents.clone(),
        };
        match sources.iter_mut().find(|s| s.path == path) {
            Some(existing) => *existing = source,
            None => sources.push(source),
        }
    }
    sources.sort_by(|a, b| a.path.cmp(&b.path));
    let options = manifests::Options {
        derive: manifests::Derive::Static,
        manifest: Some(root.join("Cargo.toml")),
        ..Default::default()
    }
    .for_project(project)
    .with_patches(&root);
    let Ok(options) = options else {
        return;
    };
    // Each kind that derives is written; one that needs compiling (or does not derive) is
    // left for `kopgen manifests`, and so is the chart, which holds every CRD.
    let Ok(kinds) = manifests::derive_kinds(&sources, &options) else {
        return;
    };
    let every_kind = kinds.iter().all(|k| k.result.is_ok());
    let mut outputs: Vec<manifests::Output> = (kinds.into_iter())
        .filter_map(|k| k.result.ok().map(|(output, _)| output))
        .collect();
    outputs.sort_by(|a, b| a.path.cmp(&b.path));
    let mut crates = vec![sources];
    crates.extend(discover::binary_crates(&src).unwrap_or_default());
    let Ok(sources) = manifests::marker_sources(&crates, &options) else {
        return;
    };
    let Ok(rules) = crate::rbac::collect(&sources) else {
        return;
    };
    let role = crate::rbac::render(&rules, project.namespaced);
    let webhooks = crate::webhooks::collect(&sources)
        .ok()
        .and_then(|found| crate::webhooks::render(&found));
    // The chart, from the same files, as `kopgen manifests` renders it: a command never leaves
    // it behind the CRDs and roles it wrote (the project's CI checks that it is current).
    if project.helm && every_kind {
        let derived = crate::chart::Derived {
            crds: &outputs,
            role: &role,
            webhooks: webhooks.as_deref(),
        };
        // Where it cannot be rendered, `kopgen manifests` says why.
        let _ = crate::chart::render(project, &derived, changes);
    }
    for output in outputs {
        changes.put(
            std::path::Path::new("config/crd/bases").join(output.path),
            output.contents,
        );
    }
    changes.put("config/rbac/role.yaml", role);
    if let Some(webhooks) = webhooks {
        changes.put(crate::webhooks::PATH, webhooks);
    }
}
