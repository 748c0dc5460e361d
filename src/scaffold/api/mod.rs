//! `kopgen create api`: adds a kind (types, controller, samples, RBAC helper roles) and
//! registers it at the insertion points `init` laid.

use std::path::PathBuf;

use heck::ToKebabCase;
use thiserror::Error;

mod controller;

use super::edit::{EditError, register_module};
pub(super) use super::edit::{comment, edit, edit_sorted, put_new, uncomment};
pub(super) use super::kind::{Kind, sample_file};
use crate::{
    changeset::{ChangeError, ChangeSet},
    insertion::InsertionError,
    names::{self, NameError},
    project::{self, Project, ProjectError, Resource, ResourceApi},
    templates::{self, Release, TemplateError},
};
pub(super) use controller::{INTEGRATION_TESTS, integration_test};
use controller::{add_controller, own_kind, plan_external_controller, plan_own_controller};

/// What `kopgen create api` was asked to do.
#[derive(Debug, Clone)]
pub struct ApiOptions {
    pub path: PathBuf,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: Option<String>,
    pub namespaced: bool,
    pub resource: bool,
    pub controller: bool,
    /// The controller gets a finalizer and a `cleanup` to fill in.
    pub finalizer: bool,
    pub force: bool,
}

#[derive(Debug, Error)]
pub enum ApiError {
    #[error(transparent)]
    Project(#[from] ProjectError),
    #[error(transparent)]
    Name(#[from] NameError),
    #[error(
        "{group}/{version}, Kind={kind} already exists in PROJECT. Pass --force to scaffold it again (its generated files are overwritten)"
    )]
    Exists {
        group: String,
        version: String,
        kind: String,
    },
    #[error("nothing to scaffold: --resource=false and --controller=false")]
    NothingToDo,
    #[error(
        "this crate was adopted (`kopgen init --adopt`): its manager is its own, so kopgen scaffolds no controller into it. \
         Pass --controller=false (the kind's types, samples and CRD are added) and reconcile the kind in your manager"
    )]
    AdoptedController,
    #[error(
        "{0}: the crate has a module `api` that kopgen did not write; add the line `// +kopgen:scaffold:api-modules` to it \
         (kopgen puts `pub mod <group>;` above it), then run this again"
    )]
    ForeignApiModule(String),
    #[error(
        "{group}/{version}, Kind={kind} is neither a built-in Kubernetes kind known to k8s-openapi nor a kind of this project. \
         Drop --resource=false to scaffold its types, or check the group, version and kind (e.g. --group apps --version v1 --kind Deployment)"
    )]
    UnknownExternal {
        group: String,
        version: String,
        kind: String,
    },
    #[error(
        "Kind={kind} in group {group} is {existing} in version {existing_version}; all versions of a kind share one CRD scope. \
         Pass --namespaced={existing_flag}"
    )]
    ScopeMismatch {
        group: String,
        kind: String,
        existing: &'static str,
        existing_version: String,
        existing_flag: bool,
    },
    #[error(
        "Kind={kind} in group {group} has plural {existing:?} in version {existing_version}; all versions share one CRD name. \
         Pass --plural {existing}"
    )]
    PluralMismatch {
        group: String,
        kind: String,
        existing: String,
        existing_version: String,
    },
    #[error(
        "Kind={kind} differs only in case from Kind={existing} of group {group}; Rust file and module names would collide \
         (and --force would overwrite {existing}'s files). Choose another kind"
    )]
    CaseCollision {
        group: String,
        kind: String,
        existing: String,
    },
    #[error(
        "--group {group} and the project's group {existing} both become the Rust module `{module}` \
         (and --force would overwrite {existing}'s files). Choose another group"
    )]
    GroupModuleCollision {
        group: String,
        existing: String,
        module: String,
    },
    #[error(
        "Kind={kind} and Kind={existing} would generate the same Rust type (a kind's spec is <Kind>Spec and its status \
         <Kind>Status, in the module of its version). Choose another kind"
    )]
    TypeCollision { kind: String, existing: String },
    #[error(
        "Kind={kind} would be the CRD {crd}, which Kind={existing} already is; Kubernetes keeps one CRD per name. \
         Pass another --plural (a CRD is named <plural>.<group>)"
    )]
    CrdCollision {
        crd: String,
        kind: String,
        existing: String,
    },
    #[error(transparent)]
    Insertion(#[from] InsertionError),
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error(transparent)]
    Change(#[from] ChangeError),
    #[error(transparent)]
    Edit(#[from] EditError),
}

/// Validates `options` against the project and renders every created and edited file in memory.
pub fn plan(options: &ApiOptions) -> Result<ChangeSet, ApiError> {
    plan_as(options, Release::Current)
}

/// [`plan`] as kopgen `release` did it: `kopgen upgrade` replays a project's history with it.
pub(crate) fn plan_as(options: &ApiOptions, release: Release) -> Result<ChangeSet, ApiError> {
    if !options.resource && !options.controller {
        return Err(ApiError::NothingToDo);
    }
    let mut project = Project::load(&options.path)?;
    if project.adopted && options.controller {
        return Err(ApiError::AdoptedController);
    }
    names::validate_version(&options.version)?;
    // Types are scaffolded for a resource, and for a kind whose types come later
    // (`--controller=false` first): their names must be free. A built-in kind's are k8s-openapi's.
    if options.resource {
        names::validate_new_kind(&options.kind)?;
    } else {
        names::validate_kind(&options.kind)?;
    }
    if let Some(plural) = &options.plural {
        names::validate_plural(plural)?;
    }
    let mut changes = ChangeSet::new(options.path.clone());
    let boilerplate = changes.read("hack/boilerplate.rs.txt")?.unwrap_or_default();
    let header = super::init::header_from_boilerplate(&boilerplate);

    if options.resource {
        names::validate_group(&options.group)?;
        plan_resource(options, release, &mut project, &header, &mut changes)?;
    } else if let Some(own) = own_kind(&project, options) {
        plan_own_controller(options, release, own, &mut project, &header, &mut changes)?;
    } else {
        plan_external_controller(options, release, &mut project, &header, &mut changes)?;
    }
    changes.put(project::PROJECT_FILE, project.render());
    crate::rustfmt::format_long_lines(&mut changes);
    super::derived::put_manifests(&mut changes, &project);
    Ok(changes)
}

fn plan_resource(
    options: &ApiOptions,
    release: Release,
    project: &mut Project,
    header: &str,
    changes: &mut ChangeSet,
) -> Result<(), ApiError> {
    let full_group = format!("{}.{}", options.group, project.domain);
    let module = names::module_name(&options.group);
    if let Some(other) = project
        .resources
        .iter()
        .find(|r| r.group != options.group && names::module_name(&r.group) == module)
    {
        return Err(ApiError::GroupModuleCollision {
            group: options.group.clone(),
            existing: other.group.clone(),
            module,
        });
    }
    let same_kind: Vec<&Resource> = project
        .resources
        .iter()
        .filter(|r| r.is_own(&project.domain, &options.group, &options.kind))
        .collect();
    let existing_version = same_kind.iter().find(|r| r.version == options.version);
    if existing_version.is_some() && !options.force {
        return Err(ApiError::Exists {
            group: full_group,
            version: options.version.clone(),
            kind: options.kind.clone(),
        });
    }
    let other_versions: Vec<&&Resource> = same_kind
        .iter()
        .filter(|r| r.version != options.version)
        .collect();
    let plural = options
        .plural
        .clone()
        .unwrap_or_else(|| names::kube_plural(&options.kind));
    names::validate_plural(&plural)?;
    names::validate_crd_name(&plural, &full_group)?;
    for other in project.resources.iter().filter(|r| {
        r.api.is_some() && r.group == options.group && r.domain.as_deref() == Some(&project.domain)
    }) {
        // kube-derive's root type beside another kind's spec or status type, in the module of
        // one version, where `pub use kind::*` brings both.
        let adjacent = |a: &str, b: &str| a == format!("{b}Spec") || a == format!("{b}Status");
        if other.version == options.version
            && (adjacent(&options.kind, &other.kind) || adjacent(&other.kind, &options.kind))
        {
            return Err(ApiError::TypeCollision {
                kind: options.kind.clone(),
                existing: other.kind.clone(),
            });
        }
        if other.kind != options.kind && other.kind.eq_ignore_ascii_case(&options.kind) {
            return Err(ApiError::CaseCollision {
                group: full_group,
                kind: options.kind.clone(),
                existing: other.kind.clone(),
            });
        }
        let other_plural = other.plural();
        if other.kind != options.kind && other_plural == plural {
            return Err(ApiError::CrdCollision {
                crd: format!("{plural}.{full_group}"),
                kind: options.kind.clone(),
                existing: other.kind.clone(),
            });
        }
    }
    if let Some(first) = other_versions.first() {
        let existing_namespaced = first.api.as_ref().is_some_and(|a| a.namespaced);
        if existing_namespaced != options.namespaced {
            return Err(ApiError::ScopeMismatch {
                group: full_group,
                kind: options.kind.clone(),
                existing: if existing_namespaced {
                    "namespaced"
                } else {
                    "cluster-scoped"
                },
                existing_version: first.version.clone(),
                existing_flag: existing_namespaced,
            });
        }
        let existing_plural = first.plural();
        if existing_plural != plural {
            return Err(ApiError::PluralMismatch {
                group: full_group,
                kind: options.kind.clone(),
                existing: existing_plural,
                existing_version: first.version.clone(),
            });
        }
    }
    // The first version scaffolded stays the storage version until the user moves it.
    let storage = other_versions.is_empty();
    // One controller per kind, on the storage version: a second version adds only types.
    let has_controller = same_kind
        .iter()
        .any(|r| r.controller && r.version != options.version);
    let kind = Kind::new(
        &options.group,
        &full_group,
        &options.version,
        &options.kind,
        plural.clone(),
        options.namespaced,
    );
    let mut context = kind.context(project, header);
    context.insert("storage", &storage);

    let types_path = format!(
        "src/api/{}/{}/{}.rs",
        kind.group_mod, kind.version_mod, kind.kind_snake
    );
    put_new(
        changes,
        &types_path,
        templates::render_of(release, "api/types.rs.tera", &context)?,
        options.force,
    )?;
    if project.adopted {
        adopted_api_module(changes, release, &context)?;
    }
    register_module(
        changes,
        "src/api/mod.rs",
        "+kopgen:scaffold:api-modules",
        &kind.group_mod,
        || templates::render_of(release, "api/group_mod.rs.tera", &context),
        &format!("src/api/{}/mod.rs", kind.group_mod),
    )?;
    register_module(
        changes,
        &format!("src/api/{}/mod.rs", kind.group_mod),
        "+kopgen:scaffold:versions",
        &kind.version_mod,
        || templates::render_of(release, "api/version_mod.rs.tera", &context),
        &format!("src/api/{}/{}/mod.rs", kind.group_mod, kind.version_mod),
    )?;
    let version_file = format!("src/api/{}/{}/mod.rs", kind.group_mod, kind.version_mod);
    let kind_module = [format!("mod {};", kind.kind_snake)];
    edit_sorted(
        changes,
        &version_file,
        "+kopgen:scaffold:kind-modules",
        &kind_module,
    )?;
    let kind_export = [format!("pub use {}::*;", kind.kind_snake)];
    edit_sorted(
        changes,
        &version_file,
        "+kopgen:scaffold:kind-exports",
        &kind_export,
    )?;

    let kebab = options.kind.to_kebab_case();
    let sample = sample_file(&options.group, &options.version, &options.kind);
    put_new(
        changes,
        &format!("config/samples/{sample}"),
        templates::render_of(release, "api/sample.yaml.tera", &context)?,
        options.force,
    )?;
    edit(
        changes,
        "config/samples/kustomization.yaml",
        "+kopgen:scaffold:manifestskustomizesamples",
        &[format!("- {sample}")],
    )?;
    enable_crds_in_default(changes)?;
    edit(
        changes,
        "config/crd/kustomization.yaml",
        "+kopgen:scaffold:crdkustomizeresource",
        &[format!("- bases/{full_group}_{plural}.yaml")],
    )?;
    let crd_entry = kind.crd_entry(project);
    // An adopted crate without a library has no drift test (`init --adopt` says why).
    if !project.adopted || changes.exists("tests/crds.rs") {
        edit(
            changes,
            "tests/crds.rs",
            "+kopgen:scaffold:crd-versions",
            &[crd_entry],
        )?;
    }
    if storage {
        let mut roles = Vec::new();
        for role in ["admin", "editor", "viewer"] {
            let file = format!(
                "{}_{}_{role}_role.yaml",
                options.group,
                kebab.replace('-', "_")
            );
            let text =
                templates::render_of(release, &format!("api/{role}_role.yaml.tera"), &context)?;
            put_new(changes, &format!("config/rbac/{file}"), text, options.force)?;
            roles.push(format!("- {file}"));
        }
        edit(
            changes,
            "config/rbac/kustomization.yaml",
            "+kopgen:scaffold:rbac-helper-roles",
            &roles,
        )?;
    }

    let controller = options.controller && !has_controller;
    if controller {
        add_controller(changes, release, &kind, &mut context, options)?;
    }

    let resource = Resource {
        api: Some(ResourceApi {
            crd_version: "v1".into(),
            namespaced: options.namespaced,
        }),
        controller,
        domain: Some(project.domain.clone()),
        group: options.group.clone(),
        kind: options.kind.clone(),
        path: format!(
            "crate::api::{}::{}::{}",
            kind.group_mod, kind.version_mod, options.kind
        ),
        plural: options.plural.clone(),
        version: options.version.clone(),
        webhooks: None,
        extra: Default::default(),
    };
    upsert(project, resource);
    Ok(())
}

/// Uncomments `#- ../crd` in config/default, as Kubebuilder does with the first kind: a crd
/// kustomization without resources does not build. A line the user removed stays removed.
fn enable_crds_in_default(changes: &mut ChangeSet) -> Result<(), ApiError> {
    Ok(uncomment(
        changes,
        "config/default/kustomization.yaml",
        &[&["- ../crd"]],
    )?)
}

/// In an adopted crate, the `api` module kopgen adds kinds to: written with the first kind
/// kopgen adds, and declared in the crate root (the one line of the user's source a command
/// edits, when asked to add a kind). A module `api` of the user's own is refused with what to do.
fn adopted_api_module(
    changes: &mut ChangeSet,
    release: Release,
    context: &tera::Context,
) -> Result<(), ApiError> {
    let module = "src/api/mod.rs";
    if let Some(text) = changes.read(module)? {
        if text.contains("+kopgen:scaffold:api-modules") {
            return Ok(());
        }
        return Err(ApiError::ForeignApiModule(module.to_owned()));
    }
    if changes.exists("src/api.rs") {
        return Err(ApiError::ForeignApiModule("src/api.rs".to_owned()));
    }
    let root = match changes.exists("src/lib.rs") {
        true => "src/lib.rs",
        false => "src/main.rs",
    };
    let text = changes.read(root)?.unwrap_or_default();
    let declared = syn::parse_file(&text).is_ok_and(|file| {
        file.items
            .iter()
            .any(|item| matches!(item, syn::Item::Mod(m) if m.ident == "api"))
    });
    if declared {
        return Err(ApiError::ForeignApiModule(root.to_owned()));
    }
    changes.put(
        module,
        templates::render_of(release, "init/src/api/mod.rs.tera", context)?,
    );
    let separator = if text.is_empty() || text.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    changes.put(
        root,
        format!("{text}{separator}\n/// The kinds `kopgen create api` adds.\npub mod api;\n"),
    );
    Ok(())
}

/// Replaces the PROJECT entry of the same group, version and kind, or appends one.
fn upsert(project: &mut Project, resource: Resource) {
    let same = |r: &Resource| {
        r.group == resource.group
            && r.version == resource.version
            && r.kind == resource.kind
            && r.domain == resource.domain
    };
    match project.resources.iter_mut().find(|r| same(r)) {
        // Keys kopgen does not know stay with the entry.
        Some(existing) => {
            let extra = std::mem::take(&mut existing.extra);
            let webhooks = resource.webhooks.clone().or(existing.webhooks.take());
            *existing = Resource {
                extra,
                webhooks,
                ..resource
            };
        }
        None => project.resources.push(resource),
    }
}
