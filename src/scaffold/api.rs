//! `kopgen create api`: adds a kind (types, controller, samples, RBAC helper roles) and
//! registers it at the insertion points `init` laid.

use std::path::PathBuf;

use heck::ToKebabCase;
use thiserror::Error;

use super::edit::{EditError, register_module};
pub(super) use super::edit::{comment, edit, edit_sorted, put_new, uncomment};
pub(super) use super::kind::{Kind, sample_file};
use crate::{
    changeset::{ChangeError, ChangeSet},
    insertion::InsertionError,
    k8s_kinds::{self, BuiltinKind},
    names::{self, NameError},
    project::{self, Project, ProjectError, Resource, ResourceApi},
    templates::{self, Release, TemplateError},
};

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
    let crd_entry = format!(
        "{}::api::{}::{}::{}::crd(),",
        project.project_name.replace('-', "_"),
        kind.group_mod,
        kind.version_mod,
        options.kind
    );
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

/// The controller of one of the project's kinds, registered with the manager and with the
/// integration tests (which create the kind's sample of this version).
fn add_controller(
    changes: &mut ChangeSet,
    release: Release,
    kind: &Kind,
    context: &mut tera::Context,
    options: &ApiOptions,
) -> Result<(), ApiError> {
    let sample = sample_file(&kind.group, &kind.version, &kind.kind);
    context.insert("finalizer", &options.finalizer);
    context.insert("sample", &sample);
    let text = templates::render_of(release, "api/controller.rs.tera", context)?;
    register_controller(changes, release, kind, context, text, options.force)?;
    // Projects scaffolded before kopgen wrote integration tests have no such file.
    if let Some(tests) = changes.read(INTEGRATION_TESTS)? {
        let name = format!(
            "{}_{}_{}",
            kind.group_mod, kind.version_mod, kind.kind_snake
        );
        let declared = |line: &str| {
            let line = line.trim();
            line.strip_prefix("converges_and_cleans_up!(")
                .unwrap_or(line)
                .strip_prefix(name.as_str())
                .is_some_and(|rest| rest.starts_with(','))
        };
        if !tests.lines().any(declared) {
            edit(
                changes,
                INTEGRATION_TESTS,
                "+kopgen:scaffold:integration-tests",
                &[match release {
                    Release::Current => integration_test(&name, &sample),
                    Release::V0_1_0 => {
                        format!("converges_and_cleans_up!({name}, \"config/samples/{sample}\");")
                    }
                }],
            )?;
        }
    }
    Ok(())
}

/// One kind's line of `tests/integration.rs`, laid out as rustfmt lays out a macro call: on one
/// line while its arguments fit rustfmt's `fn_call_width` (60), one argument a line past it.
pub(super) fn integration_test(name: &str, sample: &str) -> String {
    let path = format!("\"config/samples/{sample}\"");
    if name.len() + 2 + path.len() <= 60 {
        format!("converges_and_cleans_up!({name}, {path});")
    } else {
        format!("converges_and_cleans_up!(\n    {name},\n    {path}\n);")
    }
}

/// The generated project's integration tests, one line per kind with a controller.
pub(super) const INTEGRATION_TESTS: &str = "tests/integration.rs";

/// The project's own kind of this group, version and kind, if it has one.
fn own_kind(project: &Project, options: &ApiOptions) -> Option<Resource> {
    project
        .resources
        .iter()
        .find(|r| {
            r.api.is_some()
                && r.group == options.group
                && r.version == options.version
                && r.kind == options.kind
        })
        .cloned()
}

/// A controller for a kind whose types were scaffolded earlier with `--controller=false`.
fn plan_own_controller(
    options: &ApiOptions,
    release: Release,
    mut own: Resource,
    project: &mut Project,
    header: &str,
    changes: &mut ChangeSet,
) -> Result<(), ApiError> {
    let any_controller = project
        .resources
        .iter()
        .any(|r| r.api.is_some() && r.group == own.group && r.kind == own.kind && r.controller);
    if any_controller && !options.force {
        return Err(ApiError::Exists {
            group: own.full_group(),
            version: options.version.clone(),
            kind: options.kind.clone(),
        });
    }
    let kind = Kind::of(&own);
    let mut context = kind.context(project, header);
    add_controller(changes, release, &kind, &mut context, options)?;
    own.controller = true;
    upsert(project, own);
    Ok(())
}

fn plan_external_controller(
    options: &ApiOptions,
    release: Release,
    project: &mut Project,
    header: &str,
    changes: &mut ChangeSet,
) -> Result<(), ApiError> {
    let builtin: BuiltinKind = k8s_kinds::find(&options.group, &options.version, &options.kind)
        .ok_or_else(|| ApiError::UnknownExternal {
            group: options.group.clone(),
            version: options.version.clone(),
            kind: options.kind.clone(),
        })?;
    let exists = project
        .resources
        .iter()
        .any(|r| r.api.is_none() && r.path == builtin.rust_path && r.controller);
    if exists && !options.force {
        return Err(ApiError::Exists {
            group: builtin.group.to_owned(),
            version: options.version.clone(),
            kind: options.kind.clone(),
        });
    }
    let short_group = builtin
        .group
        .split('.')
        .next()
        .unwrap_or(builtin.group)
        .to_owned();
    let kind = Kind::new(
        &short_group,
        builtin.group,
        builtin.version,
        builtin.kind,
        builtin.plural.to_owned(),
        builtin.namespaced,
    );
    let mut context = kind.context(project, header);
    context.insert("rust_path", builtin.rust_path);
    context.insert("rbac_group", builtin.group);
    let api_version = if builtin.group == "core" {
        builtin.version.to_owned()
    } else {
        format!("{}/{}", builtin.group, builtin.version)
    };
    context.insert("api_version", &api_version);
    let text = templates::render_of(release, "api/builtin_controller.rs.tera", &context)?;
    register_controller(changes, release, &kind, &context, text, options.force)?;
    upsert(
        project,
        Resource {
            api: None,
            controller: true,
            domain: None,
            group: builtin.group.to_owned(),
            kind: builtin.kind.to_owned(),
            path: builtin.rust_path.to_owned(),
            plural: None,
            version: builtin.version.to_owned(),
            webhooks: None,
            extra: Default::default(),
        },
    );
    Ok(())
}

fn register_controller(
    changes: &mut ChangeSet,
    release: Release,
    kind: &Kind,
    context: &tera::Context,
    text: String,
    force: bool,
) -> Result<(), ApiError> {
    let group_dir = format!("src/controllers/{}", kind.group_mod);
    // Kubebuilder's `<kind>_controller` naming; it also keeps a kind named like its group
    // (`db::Db`) from declaring a module inside a module of the same name.
    let module = format!("{}_controller", kind.kind_snake);
    put_new(changes, &format!("{group_dir}/{module}.rs"), text, force)?;
    register_module(
        changes,
        "src/controllers/mod.rs",
        "+kopgen:scaffold:controller-modules",
        &kind.group_mod,
        || templates::render_of(release, "api/controllers_group_mod.rs.tera", context),
        &format!("{group_dir}/mod.rs"),
    )?;
    let declaration = [format!("pub mod {module};")];
    edit_sorted(
        changes,
        &format!("{group_dir}/mod.rs"),
        "+kopgen:scaffold:controllers",
        &declaration,
    )?;
    edit(
        changes,
        "src/controllers/mod.rs",
        "+kopgen:scaffold:controller-start",
        &[match release {
            Release::Current => format!("{}::{module}::START,", kind.group_mod),
            Release::V0_1_0 => format!("{}::{module}::start,", kind.group_mod),
        }],
    )?;
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
