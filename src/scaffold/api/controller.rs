//! The controller `kopgen create api` scaffolds: for a kind of the project (with its types,
//! or later for types made with `--controller=false`) or for a kind the project does not own,
//! registered with the manager and with the integration tests.

use super::{ApiError, ApiOptions, Kind, edit, edit_sorted, put_new, sample_file, upsert};
use crate::{
    changeset::ChangeSet,
    k8s_kinds::{self, BuiltinKind},
    project::{Project, Resource},
    scaffold::edit::register_module,
    templates::{self, Release},
};

/// The controller of one of the project's kinds, registered with the manager and with the
/// integration tests (which create the kind's sample of this version).
pub(super) fn add_controller(
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
pub(in crate::scaffold) fn integration_test(name: &str, sample: &str) -> String {
    let path = format!("\"config/samples/{sample}\"");
    if name.len() + 2 + path.len() <= 60 {
        format!("converges_and_cleans_up!({name}, {path});")
    } else {
        format!("converges_and_cleans_up!(\n    {name},\n    {path}\n);")
    }
}

/// The generated project's integration tests, one line per kind with a controller.
pub(in crate::scaffold) const INTEGRATION_TESTS: &str = "tests/integration.rs";

/// The project's own kind of this group, version and kind, if it has one.
pub(super) fn own_kind(project: &Project, options: &ApiOptions) -> Option<Resource> {
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
pub(super) fn plan_own_controller(
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

pub(super) fn plan_external_controller(
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
