//! The conversion half of `kopgen create webhook --conversion`: which version is the hub, the
//! conversion module between it and its spokes, and the CRD patches that route conversions to it.

use super::api::{self, Kind};
use super::webhook::{WebhookError, WebhookOptions};
use crate::{
    changeset::ChangeSet,
    names,
    project::Project,
    templates::{self, Release},
};

/// The hub must be the storage version and each spoke another version of the kind.
pub(super) fn check(options: &WebhookOptions, project: &Project) -> Result<(), WebhookError> {
    let versions: Vec<&str> = project
        .resources
        .iter()
        .filter(|r| r.is_own(&project.domain, &options.group, &options.kind))
        .map(|r| r.version.as_str())
        .collect();
    for spoke in &options.spokes {
        if spoke == &options.version || !versions.contains(&spoke.as_str()) {
            return Err(WebhookError::UnknownSpoke {
                spoke: spoke.clone(),
                kind: options.kind.clone(),
                versions: versions.join(", "),
            });
        }
    }
    // `create api` marks every version but the first `storage = false`; the user may move it.
    let types = |version: &str| {
        format!(
            "src/api/{}/{}/{}.rs",
            names::module_name(&options.group),
            names::module_name(version),
            names::module_name(&options.kind)
        )
    };
    let is_storage = |version: &str| {
        crate::regular_file::read_to_string(&options.path.join(types(version)))
            .is_ok_and(|text| !text.contains("storage = false"))
    };
    if !is_storage(&options.version) {
        return Err(WebhookError::NotTheHub {
            version: options.version.clone(),
            kind: options.kind.clone(),
            file: types(&options.version),
            storage: versions
                .iter()
                .find(|v| is_storage(v))
                .map_or_else(|| "<the storage version>".to_owned(), |v| (*v).to_owned()),
        });
    }
    Ok(())
}

/// What the conversion templates need beside the kind's own context: the hub and its spokes.
fn context(kind: &Kind, context: &mut tera::Context, spokes: &[String]) {
    let spoke_context: Vec<serde_json::Value> = spokes
        .iter()
        .map(|version| {
            serde_json::json!({
                "version": version,
                "module": names::module_name(version),
                "api_version": format!("{}/{version}", kind.full_group),
            })
        })
        .collect();
    context.insert("spokes", &spoke_context);
    let mut modules: Vec<String> = spokes.iter().map(|v| names::module_name(v)).collect();
    modules.push(kind.version_mod.clone());
    // In rustfmt's order, so the generated `use` needs no formatting.
    modules.sort_by(|a, b| crate::insertion::version_cmp(a, b));
    context.insert("version_modules", &modules.join(", "));
    context.insert("hub", &kind.version);
    context.insert("hub_mod", &kind.version_mod);
    context.insert(
        "hub_api_version",
        &format!("{}/{}", kind.full_group, kind.version),
    );
}

/// The conversion module, the CRD's conversion patch and its CA injection.
pub(super) fn plan(
    changes: &mut ChangeSet,
    release: Release,
    kind: &Kind,
    context: &mut tera::Context,
    spokes: &[String],
) -> Result<(), WebhookError> {
    self::context(kind, context, spokes);
    let module = format!(
        "{}_{}_{}",
        kind.group_mod, kind.version_mod, kind.kind_snake
    );
    changes.put(
        format!("src/webhooks/{module}_conversion.rs"),
        templates::render_of(release, "webhook/conversion.rs.tera", context)?,
    );
    let patch = format!("patches/webhook_in_{}.yaml", kind.plural);
    changes.put(
        format!("config/crd/{patch}"),
        templates::render_of(
            release,
            "webhook/config/crd/patches/webhook_in.yaml.tera",
            context,
        )?,
    );
    if !changes.exists("config/crd/kustomizeconfig.yaml") {
        changes.put(
            "config/crd/kustomizeconfig.yaml",
            templates::render_of(
                release,
                "webhook/config/crd/kustomizeconfig.yaml.tera",
                context,
            )?,
        );
    }
    api::edit(
        changes,
        "config/crd/kustomization.yaml",
        "+kopgen:scaffold:crdkustomizewebhookpatch",
        &[format!("- path: {patch}")],
    )?;
    api::uncomment(
        changes,
        "config/crd/kustomization.yaml",
        &[
            &["patches:"],
            &["configurations:", "- kustomizeconfig.yaml"],
        ],
    )?;
    let crd = format!("{}.{}", kind.plural, kind.full_group);
    for (index, marker) in [
        (0, "+kopgen:scaffold:crd-ca-injection-namespace"),
        (1, "+kopgen:scaffold:crd-ca-injection-name"),
    ] {
        let target = format!(
            "- {{select: {{kind: CustomResourceDefinition, name: {crd}}}, fieldPaths: \
             [\".metadata.annotations.[cert-manager.io/inject-ca-from]\"], options: \
             {{delimiter: /, index: {index}, create: true}}}}"
        );
        api::edit(
            changes,
            "config/default/webhook_ca_injection.yaml",
            marker,
            &[target],
        )?;
    }
    Ok(())
}
