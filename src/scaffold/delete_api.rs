//! `kopgen delete api`: removes exactly what `create api` added for one version of a kind (or
//! for a controller of a built-in kind), so that the tree is as it was before the create.

use std::path::PathBuf;

use heck::ToKebabCase;
use thiserror::Error;

use super::{
    api::{self, ApiError},
    edit::{EditError, comment, unedit},
    kind::{Kind, sample_file},
};
use crate::{
    changeset::{ChangeError, ChangeSet},
    names,
    project::{self, Project, ProjectError, Resource},
    templates,
};

/// What `kopgen delete api` was asked to do.
#[derive(Debug, Clone)]
pub struct DeleteApiOptions {
    pub path: PathBuf,
    pub group: String,
    pub version: String,
    pub kind: String,
    /// Delete although other code still uses the types, the types' file holds other kinds,
    /// or files to delete have uncommitted changes.
    pub force: bool,
}

#[derive(Debug, Error)]
pub enum DeleteApiError {
    #[error(transparent)]
    Project(#[from] ProjectError),
    #[error(
        "{group}/{version}, Kind={kind} is not in PROJECT (it has: {known}). Check the group, version and kind"
    )]
    NotFound {
        group: String,
        version: String,
        kind: String,
        known: String,
    },
    #[error(
        "Kind={kind} {version} has webhooks ({what}). Delete them first: kopgen delete webhook --group {group} \
         --version {webhook_version} --kind {kind}"
    )]
    HasWebhooks {
        group: String,
        version: String,
        webhook_version: String,
        kind: String,
        what: String,
    },
    #[error(
        "{version} is the storage version of Kind={kind} ({file} has no `storage = false`) and {others} remain. \
         Move the storage version first: add `storage = false` to the #[kube(...)] of {version} and remove it \
         from the version that should store objects, then delete {version}"
    )]
    StorageVersion {
        version: String,
        kind: String,
        file: String,
        others: String,
    },
    #[error(
        "{file}:{line}: still uses {what}, which this deletes. Change that code first, or pass --force to \
         delete anyway (the project will not build until you do)"
    )]
    InUse {
        file: String,
        line: usize,
        what: String,
    },
    #[error(
        "{file}:{line}: also defines the kind {other}, which `create api` did not write for \
         {kind}; deleting the file would delete it too. Move {other} to a file of its own (or \
         `kopgen create api` it), or pass --force"
    )]
    OtherKind {
        file: String,
        line: usize,
        kind: String,
        other: String,
    },
    #[error(
        "git shows uncommitted changes in files `delete` would remove ({files}): your work \
         there would be lost. Commit or stash it first (git keeps what was deleted), or pass \
         --force"
    )]
    Uncommitted { files: String },
    #[error(transparent)]
    Scaffold(#[from] ApiError),
    #[error(transparent)]
    Edit(#[from] EditError),
    #[error(transparent)]
    Change(#[from] ChangeError),
}

/// Validates `options` against the project and plans every deletion and edit in memory.
pub fn plan(options: &DeleteApiOptions) -> Result<ChangeSet, DeleteApiError> {
    let mut project = Project::load(&options.path)?;
    let position = (project.resources.iter())
        .position(|r| {
            r.group == options.group && r.version == options.version && r.kind == options.kind
        })
        .ok_or_else(|| DeleteApiError::NotFound {
            group: options.group.clone(),
            version: options.version.clone(),
            kind: options.kind.clone(),
            known: known(&project),
        })?;
    let resource = project.resources.remove(position);
    refuse_webhooks(&project, &resource)?;
    let mut changes = ChangeSet::new(options.path.clone());
    let header = super::init::header_from_boilerplate(
        &changes.read("hack/boilerplate.rs.txt")?.unwrap_or_default(),
    );
    let mut deleted_paths = Vec::new();
    let mut context = tera::Context::new();
    if resource.api.is_some() {
        let kind = Kind::of(&resource);
        context = kind.context(&project, &header);
        delete_types(
            &mut changes,
            &project,
            &resource,
            &kind,
            &context,
            options.force,
        )?;
        deleted_paths.push(format!("{}::{}", kind.group_mod, kind.version_mod));
    }
    if resource.controller {
        let kind = controller_kind(&resource);
        if resource.api.is_none() {
            context = kind.context(&project, &header);
        }
        delete_controller(&mut changes, &kind, &context, resource.api.is_some())?;
    }
    if !options.force && resource.api.is_some() {
        refuse_uses(&changes, &resource)?;
    }
    changes.put(project::PROJECT_FILE, project.render());
    super::derived::put_manifests(&mut changes, &project);
    if !options.force
        && let Some(files) = deleted_uncommitted(&changes)
    {
        return Err(DeleteApiError::Uncommitted { files });
    }
    Ok(changes)
}

/// The files `changes` deletes that git shows uncommitted changes in, if any.
pub(super) fn deleted_uncommitted(changes: &ChangeSet) -> Option<String> {
    let deleted: Vec<&std::path::Path> = (changes.changes().into_iter())
        .filter(|change| change.kind == crate::changeset::ChangeKind::Delete)
        .map(|change| change.path.as_path())
        .collect();
    crate::upgrade::git::uncommitted_among(changes.root(), &deleted)
}

/// The kinds other than `kind` that `text` (a types file) derives `CustomResource` for, with
/// their lines: they would go with the file.
fn other_kinds(text: &str, kind: &str) -> Option<(usize, String)> {
    let file = syn::parse_file(text).ok()?;
    file.items.iter().find_map(|item| {
        let syn::Item::Struct(item) = item else {
            return None;
        };
        let name = item.ident.to_string();
        let spec = format!("{kind}Spec");
        (name != spec && crate::manifests::attrs::derives(&item.attrs, "CustomResource"))
            .then(|| (item.ident.span().start().line, name))
    })
}

/// Every `group/version Kind` PROJECT lists, for an error message.
fn known(project: &Project) -> String {
    let all: Vec<String> = (project.resources.iter())
        .map(|r| format!("{}/{} {}", r.group, r.version, r.kind))
        .collect();
    if all.is_empty() {
        "no kinds".into()
    } else {
        all.join(", ")
    }
}

/// Webhooks of this version, or a conversion of another version that converts to it, must go
/// first: their code names this version's types.
fn refuse_webhooks(project: &Project, resource: &Resource) -> Result<(), DeleteApiError> {
    let refusal = |webhook_version: &str, what: String| DeleteApiError::HasWebhooks {
        group: resource.group.clone(),
        version: resource.version.clone(),
        webhook_version: webhook_version.to_owned(),
        kind: resource.kind.clone(),
        what,
    };
    if let Some(webhooks) = &resource.webhooks {
        let mut what = Vec::new();
        if webhooks.defaulting {
            what.push("defaulting".to_owned());
        }
        if webhooks.validation {
            what.push("validation".to_owned());
        }
        if webhooks.conversion {
            what.push(format!("conversion with {}", webhooks.spoke.join(", ")));
        }
        return Err(refusal(&resource.version, what.join(", ")));
    }
    let hub = (project.resources.iter()).find(|r| {
        r.group == resource.group
            && r.kind == resource.kind
            && (r.webhooks.as_ref()).is_some_and(|w| w.spoke.contains(&resource.version))
    });
    match hub {
        Some(hub) => Err(refusal(
            &hub.version,
            format!("a conversion from {} converts to it", hub.version),
        )),
        None => Ok(()),
    }
}

/// The types of one version, their registrations, sample and test entry; with the last version
/// of the kind also its CRD, helper roles and kustomization entry.
fn delete_types(
    changes: &mut ChangeSet,
    project: &Project,
    resource: &Resource,
    kind: &Kind,
    context: &tera::Context,
    force: bool,
) -> Result<(), DeleteApiError> {
    let others: Vec<&Resource> = (project.resources.iter())
        .filter(|r| {
            r.api.is_some()
                && r.group == resource.group
                && r.kind == resource.kind
                && r.domain == resource.domain
        })
        .collect();
    let types = format!(
        "src/api/{}/{}/{}.rs",
        kind.group_mod, kind.version_mod, kind.kind_snake
    );
    if !others.is_empty()
        && (changes.read(&types)?).is_some_and(|text| !text.contains("storage = false"))
    {
        return Err(DeleteApiError::StorageVersion {
            version: resource.version.clone(),
            kind: resource.kind.clone(),
            file: types,
            others: others
                .iter()
                .map(|r| r.version.clone())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    if !force
        && let Some(text) = changes.read(&types)?
        && let Some((line, other)) = other_kinds(&text, &resource.kind)
    {
        return Err(DeleteApiError::OtherKind {
            file: types,
            line,
            kind: resource.kind.clone(),
            other: other.strip_suffix("Spec").unwrap_or(&other).to_owned(),
        });
    }
    changes.remove(&types);
    let version_file = format!("src/api/{}/{}/mod.rs", kind.group_mod, kind.version_mod);
    let group_file = format!("src/api/{}/mod.rs", kind.group_mod);
    unedit(
        changes,
        &version_file,
        "+kopgen:scaffold:kind-modules",
        &[format!("mod {};", kind.kind_snake)],
    )?;
    unedit(
        changes,
        &version_file,
        "+kopgen:scaffold:kind-exports",
        &[format!("pub use {}::*;", kind.kind_snake)],
    )?;
    unregister_module(
        changes,
        &version_file,
        "api/version_mod.rs.tera",
        context,
        (&group_file, "+kopgen:scaffold:versions", &kind.version_mod),
    )?;
    unregister_module(
        changes,
        &group_file,
        "api/group_mod.rs.tera",
        context,
        (
            "src/api/mod.rs",
            "+kopgen:scaffold:api-modules",
            &kind.group_mod,
        ),
    )?;
    let sample = sample_file(&resource.group, &resource.version, &resource.kind);
    changes.remove(format!("config/samples/{sample}"));
    unedit(
        changes,
        "config/samples/kustomization.yaml",
        "+kopgen:scaffold:manifestskustomizesamples",
        &[format!("- {sample}")],
    )?;
    let crd_entry = kind.crd_entry(project);
    unedit(
        changes,
        "tests/crds.rs",
        "+kopgen:scaffold:crd-versions",
        &[crd_entry],
    )?;
    if others.is_empty() {
        let crd_file = format!("{}_{}.yaml", kind.full_group, kind.plural);
        changes.remove(format!("config/crd/bases/{crd_file}"));
        unedit(
            changes,
            "config/crd/kustomization.yaml",
            "+kopgen:scaffold:crdkustomizeresource",
            &[format!("- bases/{crd_file}")],
        )?;
        let kebab = resource.kind.to_kebab_case().replace('-', "_");
        let mut roles = Vec::new();
        for role in ["admin", "editor", "viewer"] {
            let file = format!("{}_{kebab}_{role}_role.yaml", resource.group);
            changes.remove(format!("config/rbac/{file}"));
            roles.push(format!("- {file}"));
        }
        unedit(
            changes,
            "config/rbac/kustomization.yaml",
            "+kopgen:scaffold:rbac-helper-roles",
            &roles,
        )?;
    }
    if !project.resources.iter().any(|r| r.api.is_some()) {
        // The last kind: `- ../crd` goes back to a comment, as `init` wrote it.
        comment(
            changes,
            "config/default/kustomization.yaml",
            &[&["- ../crd"]],
        )?;
    }
    Ok(())
}

/// A controller's names: a built-in kind's group is the API group itself.
fn controller_kind(resource: &Resource) -> Kind {
    match &resource.api {
        Some(_) => Kind::of(resource),
        None => {
            let short = resource.group.split('.').next().unwrap_or(&resource.group);
            Kind::new(
                short,
                &resource.group,
                &resource.version,
                &resource.kind,
                resource.plural(),
                true,
            )
        }
    }
}

/// The controller, its registrations and (for a kind of the project's own) its integration test.
fn delete_controller(
    changes: &mut ChangeSet,
    kind: &Kind,
    context: &tera::Context,
    own: bool,
) -> Result<(), DeleteApiError> {
    let group_file = format!("src/controllers/{}/mod.rs", kind.group_mod);
    let module = format!("{}_controller", kind.kind_snake);
    changes.remove(format!("src/controllers/{}/{module}.rs", kind.group_mod));
    unedit(
        changes,
        &group_file,
        "+kopgen:scaffold:controllers",
        &[format!("pub mod {module};")],
    )?;
    unregister_module(
        changes,
        &group_file,
        "api/controllers_group_mod.rs.tera",
        context,
        (
            "src/controllers/mod.rs",
            "+kopgen:scaffold:controller-modules",
            &kind.group_mod,
        ),
    )?;
    unedit(
        changes,
        "src/controllers/mod.rs",
        "+kopgen:scaffold:controller-start",
        &[format!("{}::{module}::START,", kind.group_mod)],
    )?;
    if own && changes.exists(api::INTEGRATION_TESTS) {
        let name = format!(
            "{}_{}_{}",
            kind.group_mod, kind.version_mod, kind.kind_snake
        );
        let sample = sample_file(&kind.group, &kind.version, &kind.kind);
        unedit(
            changes,
            api::INTEGRATION_TESTS,
            "+kopgen:scaffold:integration-tests",
            &[api::integration_test(&name, &sample)],
        )?;
    }
    Ok(())
}

/// Deletes `file` (a module file `create api` wrote from `template`) when nothing but the
/// template's text is left in it, and its `pub mod` line in the parent; a module the user added
/// to stays.
fn unregister_module(
    changes: &mut ChangeSet,
    file: &str,
    template: &str,
    context: &tera::Context,
    (parent, marker, module): (&str, &str, &str),
) -> Result<(), DeleteApiError> {
    let Some(text) = changes.read(file)? else {
        return Ok(());
    };
    let pristine = templates::render(template, context).map_err(ApiError::from)?;
    if text != crate::rustfmt::as_written(pristine) {
        return Ok(());
    }
    changes.remove(file);
    unedit(changes, parent, marker, &[format!("pub mod {module};")])?;
    Ok(())
}

/// Other code that still names the deleted types: any `.rs` file of `src/` or `tests/` as it will
/// be, naming the version's module path with the kind (or with nothing else left in it).
fn refuse_uses(changes: &ChangeSet, resource: &Resource) -> Result<(), DeleteApiError> {
    let root = changes.root().to_path_buf();
    let group_mod = names::module_name(&resource.group);
    let version_mod = names::module_name(&resource.version);
    let module = format!("{group_mod}::{version_mod}");
    let kind = &resource.kind;
    let words = [kind.clone(), format!("{kind}Spec"), format!("{kind}Status")];
    let version_gone = !changes.exists(format!("src/api/{group_mod}/{version_mod}/mod.rs"));
    for dir in ["src", "tests"] {
        for path in rust_files(&root.join(dir)) {
            let relative = path.strip_prefix(&root).unwrap_or(&path).to_path_buf();
            let Ok(Some(text)) = changes.read(&relative) else {
                continue;
            };
            let target = super::uses::Target {
                group: &group_mod,
                version: &version_mod,
                items: &words,
                module_gone: version_gone,
            };
            let inside = relative.starts_with(format!("src/api/{group_mod}/{version_mod}"));
            match super::uses::first_use(&text, &target, inside) {
                Ok(None) => continue,
                Ok(Some(line)) => {
                    return Err(DeleteApiError::InUse {
                        file: relative.display().to_string(),
                        line,
                        what: format!("{}/{} {kind}", resource.group, resource.version),
                    });
                }
                // Not Rust that parses: read as words, below.
                Err(()) => {}
            }
            let qualified = |word: &String| has_word(&text, &format!("{version_mod}::{word}"));
            if !has_word(&text, &module) && !words.iter().any(qualified) {
                continue;
            }
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                let names_kind = words.iter().any(|word| has_word(code, word));
                if names_kind || version_gone && has_word(code, &module) {
                    return Err(DeleteApiError::InUse {
                        file: relative.display().to_string(),
                        line: number + 1,
                        what: format!("{}/{} {kind}", resource.group, resource.version),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Whether `word` (an identifier or a path) stands in `text` whole: no identifier character
/// right before or after it.
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !part(before) && !part(after)
    })
}

/// The `.rs` files below `dir`, sorted, without following links.
fn rust_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() && path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}
