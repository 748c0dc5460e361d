//! `kopgen create webhook`: adds a kind's defaulting and validating webhooks (a module the
//! user fills in, registered with the manager's webhook server), the kustomize layout that
//! deploys them with cert-manager as Kubebuilder's does, and the webhook manifests.

use std::path::PathBuf;

use thiserror::Error;

use super::api::{self, ApiError, Kind};
use crate::{
    changeset::ChangeSet,
    names,
    project::{self, Project, ResourceWebhooks},
    templates,
};

/// What `kopgen create webhook` was asked to do.
#[derive(Debug, Clone)]
pub struct WebhookOptions {
    pub path: PathBuf,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub defaulting: bool,
    pub validation: bool,
    pub force: bool,
}

#[derive(Debug, Error)]
pub enum WebhookError {
    #[error("nothing to scaffold: pass --defaulting, --programmatic-validation or both")]
    NothingToDo,
    #[error(
        "{group}/{version}, Kind={kind} is not a kind of this project. Webhooks are scaffolded for kinds \
         `kopgen create api` added; run it first (e.g. kopgen create api --group {short_group} --version {version} --kind {kind})"
    )]
    UnknownKind {
        group: String,
        short_group: String,
        version: String,
        kind: String,
    },
    #[error(
        "{file}: Kind={kind} already has webhooks. Pass --force to scaffold the file again \
         (your code in it is replaced), or add the functions by hand"
    )]
    Exists { file: String, kind: String },
    #[error(transparent)]
    Scaffold(#[from] ApiError),
}

impl From<crate::changeset::ChangeError> for WebhookError {
    fn from(e: crate::changeset::ChangeError) -> Self {
        WebhookError::Scaffold(e.into())
    }
}

impl From<crate::templates::TemplateError> for WebhookError {
    fn from(e: crate::templates::TemplateError) -> Self {
        WebhookError::Scaffold(e.into())
    }
}

/// Files of the deployment layout that are the same for every kind: written with the first
/// webhook, left as the user keeps them afterwards.
const SHARED_FILES: &[&str] = &[
    "config/webhook/kustomization.yaml",
    "config/webhook/service.yaml",
    "config/certmanager/issuer.yaml",
    "config/certmanager/certificate-webhook.yaml",
    "config/certmanager/kustomization.yaml",
    "config/certmanager/kustomizeconfig.yaml",
    "config/default/manager_webhook_patch.yaml",
    "config/default/webhook_ca_injection.yaml",
    "config/network-policy/allow-webhook-traffic.yaml",
];

/// Lines of `config/default/kustomization.yaml` that `init` leaves commented out and the first
/// webhook enables, each block as consecutive lines.
const DEFAULT_BLOCKS: &[&[&str]] = &[
    &["- ../webhook"],
    &["- ../certmanager"],
    &[
        "patches:",
        "- path: manager_webhook_patch.yaml",
        "  target:",
        "    kind: Deployment",
    ],
    &["replacements:", "- path: webhook_ca_injection.yaml"],
];

/// Validates `options` against the project and renders every created and edited file in memory.
pub fn plan(options: &WebhookOptions) -> Result<ChangeSet, WebhookError> {
    if !options.defaulting && !options.validation {
        return Err(WebhookError::NothingToDo);
    }
    let mut project = Project::load(&options.path).map_err(ApiError::from)?;
    names::validate_version(&options.version).map_err(ApiError::from)?;
    names::validate_kind(&options.kind).map_err(ApiError::from)?;
    let full_group = format!("{}.{}", options.group, project.domain);
    let Some(resource) = project.resources.iter_mut().find(|r| {
        r.api.is_some()
            && r.group == options.group
            && r.version == options.version
            && r.kind == options.kind
            && r.domain.as_deref() == Some(&project.domain)
    }) else {
        return Err(WebhookError::UnknownKind {
            group: full_group,
            short_group: options.group.clone(),
            version: options.version.clone(),
            kind: options.kind.clone(),
        });
    };
    let plural = resource
        .plural
        .clone()
        .unwrap_or_else(|| names::kube_plural(&options.kind));
    let namespaced = resource.api.as_ref().is_some_and(|a| a.namespaced);
    let kind = Kind::new(
        &options.group,
        &full_group,
        &options.version,
        &options.kind,
        plural,
        namespaced,
    );
    let module = format!(
        "{}_{}_{}",
        kind.group_mod, kind.version_mod, kind.kind_snake
    );
    let file = format!("src/webhooks/{module}.rs");

    let mut changes = ChangeSet::new(options.path.clone());
    if changes.exists(&file) && !options.force {
        return Err(WebhookError::Exists {
            file,
            kind: options.kind.clone(),
        });
    }
    // Scaffolding again keeps the webhooks scaffolded before.
    let recorded = resource.webhooks.take().unwrap_or_default();
    let defaulting = options.defaulting || recorded.defaulting;
    let validation = options.validation || recorded.validation;
    resource.webhooks = Some(ResourceWebhooks {
        defaulting,
        validation,
        webhook_version: "v1".into(),
    });
    let boilerplate = changes.read("hack/boilerplate.rs.txt")?.unwrap_or_default();
    let header = super::init::header_from_boilerplate(&boilerplate);
    let mut context = kind.context(&project, &header);
    let lower = options.kind.to_lowercase();
    let endpoint = format!(
        "{}-{}-{lower}",
        full_group.replace('.', "-"),
        options.version
    );
    context.insert("defaulting", &defaulting);
    context.insert("validation", &validation);
    context.insert("mutate_path", &format!("/mutate-{endpoint}"));
    context.insert("validate_path", &format!("/validate-{endpoint}"));
    let webhook_name = |prefix: char| format!("{prefix}{lower}-{}.{full_group}", options.version);
    context.insert("mutate_name", &webhook_name('m'));
    context.insert("validate_name", &webhook_name('v'));
    context.insert(
        "sample",
        &api::sample_file(&options.group, &options.version, &options.kind),
    );

    changes.put(
        &file,
        templates::render("webhook/webhook.rs.tera", &context)?,
    );
    api::edit_sorted(
        &mut changes,
        "src/webhooks/mod.rs",
        "+kopgen:scaffold:webhook-modules",
        &[format!("pub mod {module};")],
    )?;
    api::edit(
        &mut changes,
        "src/webhooks/mod.rs",
        "+kopgen:scaffold:webhook-routes",
        &[format!("{module}::routes,")],
    )?;
    for shared in SHARED_FILES {
        if !changes.exists(shared) {
            let template = format!("webhook/{shared}.tera");
            changes.put(*shared, templates::render(&template, &context)?);
        }
    }
    register_network_policy(&mut changes)?;
    enable_in_default(&mut changes)?;

    changes.put(project::PROJECT_FILE, project.render());
    crate::rustfmt::format_long_lines(&mut changes);
    api::put_manifests(&mut changes, &project);
    Ok(changes)
}

/// Lists the webhook NetworkPolicy beside the metrics one (both stay off until the user
/// enables `../network-policy` in config/default).
fn register_network_policy(changes: &mut ChangeSet) -> Result<(), WebhookError> {
    const FILE: &str = "config/network-policy/kustomization.yaml";
    const ENTRY: &str = "- allow-webhook-traffic.yaml";
    let Some(text) = changes.read(FILE)? else {
        return Ok(());
    };
    if !text.lines().any(|line| line.trim() == ENTRY) {
        let mut edited = text.trim_end().to_owned();
        edited.push('\n');
        edited.push_str(ENTRY);
        edited.push('\n');
        changes.put(FILE, edited);
    }
    Ok(())
}

/// Uncomments the [WEBHOOK] and [CERTMANAGER] blocks of config/default, as Kubebuilder asks its
/// users to. A block the user removed or changed stays as it is.
fn enable_in_default(changes: &mut ChangeSet) -> Result<(), WebhookError> {
    const FILE: &str = "config/default/kustomization.yaml";
    let Some(text) = changes.read(FILE)? else {
        return Ok(());
    };
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for block in DEFAULT_BLOCKS {
        let commented: Vec<String> = block.iter().map(|line| format!("#{line}")).collect();
        if let Some(start) = lines.windows(block.len()).position(|window| {
            window
                .iter()
                .zip(&commented)
                .all(|(l, c)| l.trim_end() == c)
        }) {
            for (offset, line) in block.iter().enumerate() {
                lines[start + offset] = (*line).to_owned();
            }
        }
    }
    let mut edited = lines.join("\n");
    edited.push('\n');
    if edited != text {
        changes.put(FILE, edited);
    }
    Ok(())
}
