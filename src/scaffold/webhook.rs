//! `kopgen create webhook`: adds a kind's defaulting and validating webhooks (a module the
//! user fills in, registered with the manager's webhook server), the kustomize layout that
//! deploys them with cert-manager as Kubebuilder's does, and the webhook manifests.

use std::path::{Path, PathBuf};

use thiserror::Error;

use super::api::{self, ApiError, Kind};
use crate::{
    changeset::ChangeSet,
    names,
    project::{self, Certificates, Project, ResourceWebhooks},
    templates::{self, Release},
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
    /// Versions converted to and from `version`, the hub (`--conversion --spoke`).
    pub spokes: Vec<String>,
    /// Where the certificate comes from; `None` keeps the project's (cert-manager at first).
    pub certificates: Option<Certificates>,
    pub force: bool,
}

#[derive(Debug, Error)]
pub enum WebhookError {
    #[error(
        "nothing to scaffold: pass --defaulting, --programmatic-validation and/or --conversion --spoke <version>"
    )]
    NothingToDo,
    #[error(
        "this crate was adopted (`kopgen init --adopt`): kopgen scaffolds webhooks into its own manager, which this crate does not have. \
         Serve them from your manager; `kopgen manifests` writes their configuration from `// +kubebuilder:webhook` markers (docs/MANIFESTS.md)"
    )]
    Adopted,
    #[error(
        "--conversion converts to and from the storage version (the hub), and {version} of Kind={kind} is not it \
         ({file} has `storage = false`). Pass --version {storage}"
    )]
    NotTheHub {
        version: String,
        kind: String,
        file: String,
        storage: String,
    },
    #[error(
        "--spoke {spoke}: Kind={kind} has no other version {spoke} in this project (it has {versions}). \
         Add it with `kopgen create api --version {spoke} ...` first"
    )]
    UnknownSpoke {
        spoke: String,
        kind: String,
        versions: String,
    },
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
    #[error(
        "this project has no webhooks yet, so no certificate to choose. Run `kopgen create webhook ... \
         --certificates <mode>` to add the first"
    )]
    NoWebhooks,
    #[error(
        "{file} lacks the lines to enable ({lines}); it predates this mode or was edited. Add them \
         (see a newly initialized project's {file}), then run this again"
    )]
    MissingLines { file: String, lines: String },
    #[error(transparent)]
    Scaffold(#[from] ApiError),
}

impl From<crate::changeset::ChangeError> for WebhookError {
    fn from(e: crate::changeset::ChangeError) -> Self {
        WebhookError::Scaffold(e.into())
    }
}

impl From<super::edit::EditError> for WebhookError {
    fn from(e: super::edit::EditError) -> Self {
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
pub(super) const SHARED_FILES: &[&str] = &[
    "config/webhook/kustomization.yaml",
    "config/webhook/service.yaml",
    "config/certmanager/issuer.yaml",
    "config/certmanager/certificate-webhook.yaml",
    "config/certmanager/kustomization.yaml",
    "config/certmanager/kustomizeconfig.yaml",
    "config/default/manager_webhook_patch.yaml",
    "config/default/manager_self_managed_patch.yaml",
    "config/default/webhook_ca_injection.yaml",
    "config/selfmanaged/kustomization.yaml",
    "config/selfmanaged/role.yaml",
    "config/selfmanaged/role_binding.yaml",
    "config/selfmanaged/cluster_role_binding.yaml",
    "config/network-policy/allow-webhook-traffic.yaml",
];

/// The kustomization that deploys the manager, where the webhook blocks are enabled.
pub(super) const DEFAULT_KUSTOMIZATION: &str = "config/default/kustomization.yaml";

/// Lines of [`DEFAULT_KUSTOMIZATION`] that `init` leaves commented out and the first webhook
/// enables, each block as consecutive lines.
pub(super) const WEBHOOK_BLOCKS: &[&[&str]] = &[&["- ../webhook"], &["patches:"]];

/// The lines of one way to get certificates; the other way's are commented out.
pub(super) fn certificate_blocks(mode: Certificates) -> &'static [&'static [&'static str]] {
    match mode {
        Certificates::CertManager => &[
            &["- ../certmanager"],
            &[
                "- path: manager_webhook_patch.yaml",
                "  target:",
                "    kind: Deployment",
            ],
            &["replacements:", "- path: webhook_ca_injection.yaml"],
        ],
        Certificates::SelfManaged => &[
            &["- ../selfmanaged"],
            &[
                "- path: manager_self_managed_patch.yaml",
                "  target:",
                "    kind: Deployment",
            ],
        ],
    }
}

/// Validates `options` against the project and renders every created and edited file in memory.
pub fn plan(options: &WebhookOptions) -> Result<ChangeSet, WebhookError> {
    plan_as(options, Release::Current)
}

/// [`plan`] as kopgen `release` did it: `kopgen upgrade` replays a project's history with it.
pub(crate) fn plan_as(
    options: &WebhookOptions,
    release: Release,
) -> Result<ChangeSet, WebhookError> {
    if !options.defaulting && !options.validation && options.spokes.is_empty() {
        return Err(WebhookError::NothingToDo);
    }
    let mut project = Project::load(&options.path).map_err(ApiError::from)?;
    if project.adopted {
        return Err(WebhookError::Adopted);
    }
    let converted_before = project.converted_crds();
    names::validate_version(&options.version).map_err(ApiError::from)?;
    names::validate_kind(&options.kind).map_err(ApiError::from)?;
    let full_group = format!("{}.{}", options.group, project.domain);
    if !options.spokes.is_empty() {
        super::conversion::check(options, &project)?;
    }
    let domain = project.domain.clone();
    let Some(resource) = project
        .resources
        .iter_mut()
        .find(|r| r.is_own(&domain, &options.group, &options.kind) && r.version == options.version)
    else {
        return Err(WebhookError::UnknownKind {
            group: full_group,
            short_group: options.group.clone(),
            version: options.version.clone(),
            kind: options.kind.clone(),
        });
    };
    let kind = Kind::of(resource);
    let module = format!(
        "{}_{}_{}",
        kind.group_mod, kind.version_mod, kind.kind_snake
    );
    let file = format!("src/webhooks/{module}.rs");

    let mut changes = ChangeSet::new(options.path.clone());
    let admission = options.defaulting || options.validation;
    if admission && changes.exists(&file) && !options.force {
        return Err(WebhookError::Exists {
            file,
            kind: options.kind.clone(),
        });
    }
    let conversion_file = format!("src/webhooks/{module}_conversion.rs");
    if !options.spokes.is_empty() && changes.exists(&conversion_file) && !options.force {
        return Err(WebhookError::Exists {
            file: conversion_file,
            kind: options.kind.clone(),
        });
    }
    // Scaffolding again keeps the webhooks scaffolded before.
    let recorded = resource.webhooks.take().unwrap_or_default();
    let defaulting = options.defaulting || recorded.defaulting;
    let validation = options.validation || recorded.validation;
    let mut spokes = recorded.spoke.clone();
    for spoke in &options.spokes {
        if !spokes.contains(spoke) {
            spokes.push(spoke.clone());
        }
    }
    resource.webhooks = Some(ResourceWebhooks {
        defaulting,
        validation,
        conversion: !spokes.is_empty(),
        spoke: spokes.clone(),
        webhook_version: "v1".into(),
    });
    let boilerplate = changes.read("hack/boilerplate.rs.txt")?.unwrap_or_default();
    let header = super::init::header_from_boilerplate(&boilerplate);
    let mut context = context_of(&kind, &project, &header, defaulting, validation);

    put_shared_files(&mut changes, release, &context)?;
    // kopgen 0.1.0 wrote the registry with `init` and had no runtime to turn features on.
    if release == Release::Current {
        register_webhooks(&mut changes, &context)?;
    }
    // Only the webhooks asked for now are written: a file scaffolded before is the user's.
    if admission {
        changes.put(
            &file,
            templates::render_of(release, "webhook/webhook.rs.tera", &context)?,
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
    }
    if !options.spokes.is_empty() {
        super::conversion::plan(&mut changes, release, &kind, &mut context, &spokes)?;
        api::edit_sorted(
            &mut changes,
            "src/webhooks/mod.rs",
            "+kopgen:scaffold:webhook-modules",
            &[format!("pub mod {module}_conversion;")],
        )?;
        api::edit(
            &mut changes,
            "src/webhooks/mod.rs",
            "+kopgen:scaffold:conversions",
            &[format!("{module}_conversion::conversion,")],
        )?;
    }
    register_network_policy(&mut changes)?;
    let mode = options
        .certificates
        .or(project.webhook_certificates)
        .unwrap_or(Certificates::CertManager);
    use_certificates(
        &mut changes,
        release,
        &mut project,
        mode,
        &context,
        (&converted_before, options.force),
    )?;

    changes.put(project::PROJECT_FILE, project.render());
    crate::rustfmt::format_long_lines(&mut changes);
    super::derived::put_manifests(&mut changes, &project);
    Ok(changes)
}

/// What the webhook templates of `kind` need: its names, the paths and names of its admission
/// webhooks, and which of them it has.
pub(super) fn context_of(
    kind: &Kind,
    project: &Project,
    header: &str,
    defaulting: bool,
    validation: bool,
) -> tera::Context {
    let mut context = kind.context(project, header);
    let lower = kind.kind.to_lowercase();
    let full_group = &kind.full_group;
    let endpoint = format!("{}-{}-{lower}", full_group.replace('.', "-"), kind.version);
    context.insert("defaulting", &defaulting);
    context.insert("validation", &validation);
    context.insert("mutate_path", &format!("/mutate-{endpoint}"));
    context.insert("validate_path", &format!("/validate-{endpoint}"));
    let webhook_name = |prefix: char| format!("{prefix}{lower}-{}.{full_group}", kind.version);
    context.insert("mutate_name", &webhook_name('m'));
    context.insert("validate_name", &webhook_name('v'));
    context.insert(
        "sample",
        &api::sample_file(&kind.group, &kind.version, &kind.kind),
    );
    context
}

/// Lists the webhook NetworkPolicy beside the metrics one (both stay off until the user
/// enables `../network-policy` in config/default).
fn register_network_policy(changes: &mut ChangeSet) -> Result<(), WebhookError> {
    const FILE: &str = "config/network-policy/kustomization.yaml";
    const ENTRY: &str = "- allow-webhook-traffic.yaml";
    Ok(super::edit::append_line(changes, FILE, ENTRY)?)
}

/// Writes each of [`SHARED_FILES`] the project does not have yet; those it has stay as kept.
fn put_shared_files(
    changes: &mut ChangeSet,
    release: Release,
    context: &tera::Context,
) -> Result<(), WebhookError> {
    for shared in SHARED_FILES {
        if !changes.exists(shared) {
            let template = format!("webhook/{shared}.tera");
            changes.put(*shared, templates::render_of(release, &template, context)?);
        }
    }
    Ok(())
}

/// `kopgen edit --webhook-certificates`: switches a project that has webhooks to `mode`.
pub fn plan_certificates(path: &Path, mode: Certificates) -> Result<ChangeSet, WebhookError> {
    let mut project = Project::load(path).map_err(ApiError::from)?;
    if !project.has_webhooks() {
        return Err(WebhookError::NoWebhooks);
    }
    let mut changes = ChangeSet::new(path.to_path_buf());
    let boilerplate = changes.read("hack/boilerplate.rs.txt")?.unwrap_or_default();
    let header = super::init::header_from_boilerplate(&boilerplate);
    let context = shared_context(&project, &header);
    put_shared_files(&mut changes, Release::Current, &context)?;
    let converted = project.converted_crds();
    use_certificates(
        &mut changes,
        Release::Current,
        &mut project,
        mode,
        &context,
        (&converted, false),
    )?;
    changes.put(project::PROJECT_FILE, project.render());
    let values = std::path::Path::new(crate::chart::DIR).join("values.yaml");
    if let Some(text) = changes.read(&values)? {
        changes.put(values, crate::chart::values::with_certificates(&text, mode));
    }
    Ok(changes)
}

/// What the shared deployment files' templates need.
pub(super) fn shared_context(project: &Project, header: &str) -> tera::Context {
    let mut context = tera::Context::new();
    context.insert("project_name", &project.project_name);
    context.insert("header", header);
    context
}

/// Enables the [WEBHOOK] blocks of config/default and those of `mode` ([CERTMANAGER] or
/// [SELF-MANAGED]), comments out the other mode's, writes the self-managed mode's ClusterRole
/// for the CRDs converted now, and records `mode` in PROJECT.
fn use_certificates(
    changes: &mut ChangeSet,
    release: Release,
    project: &mut Project,
    mode: Certificates,
    context: &tera::Context,
    (before, force): (&[String], bool),
) -> Result<(), WebhookError> {
    let other = match mode {
        Certificates::CertManager => Certificates::SelfManaged,
        Certificates::SelfManaged => Certificates::CertManager,
    };
    api::uncomment(changes, DEFAULT_KUSTOMIZATION, WEBHOOK_BLOCKS)?;
    api::comment(changes, DEFAULT_KUSTOMIZATION, certificate_blocks(other))?;
    api::uncomment(changes, DEFAULT_KUSTOMIZATION, certificate_blocks(mode))?;
    if let Some(text) = changes.read(DEFAULT_KUSTOMIZATION)? {
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        for block in WEBHOOK_BLOCKS.iter().chain(certificate_blocks(mode)) {
            if !super::edit::has_block(&lines, block) {
                return Err(WebhookError::MissingLines {
                    file: DEFAULT_KUSTOMIZATION.into(),
                    lines: block.join("\n"),
                });
            }
        }
    }
    super::cluster_role::put(
        changes,
        release,
        context,
        before,
        &project.converted_crds(),
        force,
    )?;
    if release == Release::Current {
        runtime_feature(
            changes,
            "self-managed-certs",
            mode == Certificates::SelfManaged,
        )?;
    }
    project.webhook_certificates = Some(mode);
    Ok(())
}

/// The project's webhook registry (`src/webhooks/mod.rs`, written at the first webhook), its
/// registration with the manager, and the runtime's `webhooks` feature.
fn register_webhooks(changes: &mut ChangeSet, context: &tera::Context) -> Result<(), WebhookError> {
    if !changes.exists(WEBHOOKS_MOD) {
        let registry = templates::render("webhook/mod.rs.tera", context)?;
        changes.put(WEBHOOKS_MOD, registry);
    }
    api::edit_sorted(
        changes,
        "src/lib.rs",
        "+kopgen:scaffold:modules",
        &["pub mod webhooks;".to_owned()],
    )?;
    api::edit(
        changes,
        "src/lib.rs",
        "+kopgen:scaffold:manager",
        &["let manager = manager.webhooks(webhooks::WEBHOOKS, webhooks::CONVERSIONS);".to_owned()],
    )?;
    Ok(runtime_feature(changes, "webhooks", true)?)
}

/// Turns a feature of the runtime dependency on or off in `Cargo.toml`.
pub(super) fn runtime_feature(
    changes: &mut ChangeSet,
    feature: &str,
    on: bool,
) -> Result<(), super::edit::EditError> {
    let line = format!("\"{feature}\",");
    if on {
        api::edit(changes, CARGO_TOML, RUNTIME_FEATURES, &[line])?;
    } else {
        super::edit::drop_line(changes, CARGO_TOML, &line)?;
    }
    Ok(())
}

pub(super) const WEBHOOKS_MOD: &str = "src/webhooks/mod.rs";
const CARGO_TOML: &str = "Cargo.toml";
/// Where the features of the runtime dependency are listed in `Cargo.toml`.
const RUNTIME_FEATURES: &str = "+kopgen:scaffold:runtime-features";
