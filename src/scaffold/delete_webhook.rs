//! `kopgen delete webhook`: removes a kind's defaulting, validating or conversion webhook as
//! `create webhook` added it; with the project's last webhook, also the webhook server's
//! registration, the runtime feature and the deployment layout.

use std::path::PathBuf;

use thiserror::Error;

use super::{
    api::ApiError,
    cluster_role::{CLUSTER_ROLE, CLUSTER_ROLE_TEMPLATE},
    edit::{EditError, comment, unedit},
    kind::Kind,
    webhook::{self, DEFAULT_KUSTOMIZATION, SHARED_FILES, WEBHOOK_BLOCKS, WEBHOOKS_MOD},
};
use crate::{
    changeset::{ChangeError, ChangeSet},
    project::{self, Project, ProjectError, ResourceWebhooks},
    templates,
};

/// What `kopgen delete webhook` was asked to do. With none of the three, every webhook of the
/// kind's version goes.
#[derive(Debug, Clone)]
pub struct DeleteWebhookOptions {
    pub path: PathBuf,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub defaulting: bool,
    pub validation: bool,
    pub conversion: bool,
    /// Delete although files to delete have uncommitted changes.
    pub force: bool,
}

#[derive(Debug, Error)]
pub enum DeleteWebhookError {
    #[error(
        "git shows uncommitted changes in files `delete` would remove ({files}): your work \
         there would be lost. Commit or stash it first (git keeps what was deleted), or pass \
         --force"
    )]
    Uncommitted { files: String },
    #[error(transparent)]
    Project(#[from] ProjectError),
    #[error(
        "{group}/{version}, Kind={kind} has no webhooks{which} in PROJECT. Check the group, version and kind"
    )]
    NoWebhooks {
        group: String,
        version: String,
        kind: String,
        which: String,
    },
    #[error(
        "{file} holds your code for both webhooks; kopgen removes one only from the file as it \
         scaffolded it. Remove the {which} part (its `impl` and `+kopgen:webhook` marker) by hand, \
         or delete both: kopgen delete webhook --group {group} --version {version} --kind {kind}"
    )]
    Edited {
        file: String,
        which: &'static str,
        group: String,
        version: String,
        kind: String,
    },
    #[error(transparent)]
    Scaffold(#[from] ApiError),
    #[error(transparent)]
    Edit(#[from] EditError),
    #[error(transparent)]
    Change(#[from] ChangeError),
}

/// Validates `options` against the project and plans every deletion and edit in memory.
pub fn plan(options: &DeleteWebhookOptions) -> Result<ChangeSet, DeleteWebhookError> {
    let mut project = Project::load(&options.path)?;
    let project_snapshot = project.clone();
    let all = !options.defaulting && !options.validation && !options.conversion;
    let domain = project.domain.clone();
    let resource = (project.resources.iter_mut())
        .find(|r| r.is_own(&domain, &options.group, &options.kind) && r.version == options.version);
    let recorded = resource.as_ref().and_then(|r| r.webhooks.clone());
    let asked = |wanted: bool, has: bool| has && (all || wanted);
    let Some((resource, recorded)) = resource.zip(recorded).filter(|(_, w)| {
        asked(options.defaulting, w.defaulting)
            || asked(options.validation, w.validation)
            || asked(options.conversion, w.conversion)
    }) else {
        let which = match (
            all,
            options.defaulting,
            options.validation,
            options.conversion,
        ) {
            (true, ..) => String::new(),
            (_, d, v, c) => {
                let names = [(d, "defaulting"), (v, "validating"), (c, "conversion")];
                let picked: Vec<&str> = names
                    .iter()
                    .filter(|(on, _)| *on)
                    .map(|(_, n)| *n)
                    .collect();
                format!(" ({})", picked.join(", "))
            }
        };
        return Err(DeleteWebhookError::NoWebhooks {
            group: options.group.clone(),
            version: options.version.clone(),
            kind: options.kind.clone(),
            which,
        });
    };
    let kind = Kind::of(resource);
    let converted_before = project_snapshot.converted_crds();
    let left = ResourceWebhooks {
        defaulting: recorded.defaulting && !asked(options.defaulting, true),
        validation: recorded.validation && !asked(options.validation, true),
        conversion: recorded.conversion && !asked(options.conversion, true),
        spoke: if recorded.conversion && !asked(options.conversion, true) {
            recorded.spoke.clone()
        } else {
            Vec::new()
        },
        webhook_version: recorded.webhook_version.clone(),
    };
    let any_left = left.defaulting || left.validation || left.conversion;
    resource.webhooks = any_left.then(|| left.clone());

    let mut changes = ChangeSet::new(options.path.clone());
    let header = super::init::header_from_boilerplate(
        &changes.read("hack/boilerplate.rs.txt")?.unwrap_or_default(),
    );
    let module = format!(
        "{}_{}_{}",
        kind.group_mod, kind.version_mod, kind.kind_snake
    );
    if (recorded.defaulting || recorded.validation) && !(left.defaulting || left.validation) {
        changes.remove(format!("src/webhooks/{module}.rs"));
        unedit(
            &mut changes,
            WEBHOOKS_MOD,
            "+kopgen:scaffold:webhook-modules",
            &[format!("pub mod {module};")],
        )?;
        unedit(
            &mut changes,
            WEBHOOKS_MOD,
            "+kopgen:scaffold:webhook-routes",
            &[format!("{module}::routes,")],
        )?;
    } else if (left.defaulting, left.validation) != (recorded.defaulting, recorded.validation) {
        // One of the two goes: only from the file as kopgen wrote it.
        let file = format!("src/webhooks/{module}.rs");
        let was = webhook::context_of(
            &kind,
            &project,
            &header,
            recorded.defaulting,
            recorded.validation,
        );
        let pristine =
            templates::render("webhook/webhook.rs.tera", &was).map_err(ApiError::from)?;
        let pristine = crate::rustfmt::as_written(pristine);
        if changes.read(&file)?.is_some_and(|text| text != pristine) {
            return Err(DeleteWebhookError::Edited {
                file,
                which: if left.defaulting {
                    "validating"
                } else {
                    "defaulting"
                },
                group: options.group.clone(),
                version: options.version.clone(),
                kind: options.kind.clone(),
            });
        }
        let now = webhook::context_of(&kind, &project, &header, left.defaulting, left.validation);
        let text = templates::render("webhook/webhook.rs.tera", &now).map_err(ApiError::from)?;
        changes.put(file, crate::rustfmt::as_written(text));
    }
    if recorded.conversion && !left.conversion {
        delete_conversion(&mut changes, &project, &kind, &module)?;
    }
    if !project.has_webhooks() {
        delete_server(&mut changes, &mut project, &header, &converted_before)?;
    } else if changes.exists(CLUSTER_ROLE) {
        // The self-managed certificate's ClusterRole names the CRDs still converted.
        let context = webhook::shared_context(&project, &header);
        super::cluster_role::put(
            &mut changes,
            crate::templates::Release::Current,
            &context,
            &converted_before,
            &project.converted_crds(),
            false,
        )?;
    }
    changes.put(project::PROJECT_FILE, project.render());
    super::derived::put_manifests(&mut changes, &project);
    if no_webhook_markers(&changes) {
        changes.remove(crate::webhooks::PATH);
    }
    if !options.force
        && let Some(files) = super::delete_api::deleted_uncommitted(&changes)
    {
        return Err(DeleteWebhookError::Uncommitted { files });
    }
    Ok(changes)
}

/// Whether no source file marks a webhook any more (its manifests are then empty, and go).
fn no_webhook_markers(changes: &ChangeSet) -> bool {
    let Ok(sources) = crate::manifests::discover::sources(&[changes.root().join("src")]) else {
        return false;
    };
    let sources: Vec<_> = (sources.into_iter())
        .filter_map(|mut source| {
            let relative = source.path.strip_prefix(changes.root()).ok()?.to_path_buf();
            source.text = changes.read(&relative).ok()??;
            Some(source)
        })
        .collect();
    crate::webhooks::collect(&sources).is_ok_and(|found| crate::webhooks::render(&found).is_none())
}

/// The conversion module and registration, the CRD's conversion patch and CA injection; with
/// the last conversion, the CRD kustomization's patches and configuration.
fn delete_conversion(
    changes: &mut ChangeSet,
    project: &Project,
    kind: &Kind,
    module: &str,
) -> Result<(), DeleteWebhookError> {
    changes.remove(format!("src/webhooks/{module}_conversion.rs"));
    unedit(
        changes,
        WEBHOOKS_MOD,
        "+kopgen:scaffold:webhook-modules",
        &[format!("pub mod {module}_conversion;")],
    )?;
    unedit(
        changes,
        WEBHOOKS_MOD,
        "+kopgen:scaffold:conversions",
        &[format!("{module}_conversion::conversion,")],
    )?;
    let patch = format!("patches/webhook_in_{}.yaml", kind.plural);
    changes.remove(format!("config/crd/{patch}"));
    unedit(
        changes,
        "config/crd/kustomization.yaml",
        "+kopgen:scaffold:crdkustomizewebhookpatch",
        &[format!("- path: {patch}")],
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
        if changes.exists("config/default/webhook_ca_injection.yaml") {
            unedit(
                changes,
                "config/default/webhook_ca_injection.yaml",
                marker,
                &[target],
            )?;
        }
    }
    let conversions_left =
        (project.resources.iter()).any(|r| r.webhooks.as_ref().is_some_and(|w| w.conversion));
    if !conversions_left {
        comment(
            changes,
            "config/crd/kustomization.yaml",
            &[
                &["patches:"],
                &["configurations:", "- kustomizeconfig.yaml"],
            ],
        )?;
        let context = webhook::shared_context(project, "");
        remove_if_pristine(
            changes,
            "config/crd/kustomizeconfig.yaml",
            "webhook/config/crd/kustomizeconfig.yaml.tera",
            &context,
        )?;
    }
    Ok(())
}

/// The project's last webhook went: the registry and its registration, the runtime features,
/// the deployment layout as `create webhook` wrote it, and the certificate mode.
fn delete_server(
    changes: &mut ChangeSet,
    project: &mut Project,
    header: &str,
    converted_before: &[String],
) -> Result<(), DeleteWebhookError> {
    let context = webhook::shared_context(project, header);
    remove_if_pristine(changes, WEBHOOKS_MOD, "webhook/mod.rs.tera", &context)?;
    if !changes.exists(WEBHOOKS_MOD) {
        unedit(
            changes,
            "src/lib.rs",
            "+kopgen:scaffold:modules",
            &["pub mod webhooks;".to_owned()],
        )?;
        unedit(
            changes,
            "src/lib.rs",
            "+kopgen:scaffold:manager",
            &[
                "let manager = manager.webhooks(webhooks::WEBHOOKS, webhooks::CONVERSIONS);"
                    .to_owned(),
            ],
        )?;
        webhook::runtime_feature(changes, "webhooks", false)?;
    }
    webhook::runtime_feature(changes, "self-managed-certs", false)?;
    let mode = project.webhook_certificates.take();
    let mode = mode.unwrap_or(project::Certificates::CertManager);
    comment(
        changes,
        DEFAULT_KUSTOMIZATION,
        webhook::certificate_blocks(mode),
    )?;
    comment(changes, DEFAULT_KUSTOMIZATION, WEBHOOK_BLOCKS)?;
    for shared in SHARED_FILES {
        remove_if_pristine(changes, shared, &format!("webhook/{shared}.tera"), &context)?;
    }
    let mut roles = context.clone();
    roles.insert("conversion_crds", converted_before);
    remove_if_pristine(changes, CLUSTER_ROLE, CLUSTER_ROLE_TEMPLATE, &roles)?;
    const NETWORK: &str = "config/network-policy/kustomization.yaml";
    super::edit::drop_line(changes, NETWORK, "- allow-webhook-traffic.yaml")?;
    Ok(())
}

/// The self-managed certificate's ClusterRole, which names the CRDs it keeps `caBundle` on.
/// Deletes `file` if it still holds what `template` renders: a file the user changed stays.
fn remove_if_pristine(
    changes: &mut ChangeSet,
    file: &str,
    template: &str,
    context: &tera::Context,
) -> Result<(), DeleteWebhookError> {
    let Some(text) = changes.read(file)? else {
        return Ok(());
    };
    let rendered = templates::render(template, context).map_err(ApiError::from)?;
    let rendered = match file.ends_with(".rs") {
        true => crate::rustfmt::as_written(rendered),
        false => rendered,
    };
    if text == rendered {
        changes.remove(file);
    }
    Ok(())
}
