//! The command line: clap definitions and the thin layer that runs a command, prints what it
//! did and turns errors into messages. Everything below it returns typed errors.

use std::{
    ffi::OsStr,
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::Context as _;
use clap::{ArgAction, CommandFactory, Parser, Subcommand};
use clap_complete::Shell;

mod crd;
mod manifests;
mod upgrade;

pub use manifests::{CheckFailed, DeriveMode, LintMode, ManifestsArgs, SIZE_ERROR, SIZE_WARNING};

use crate::{
    changeset::ChangeSet,
    project::Certificates,
    scaffold::{
        api::{self, ApiOptions},
        delete_api::{self, DeleteApiOptions},
        delete_webhook::{self, DeleteWebhookOptions},
        init::{self, InitOptions, License},
        webhook::{self, WebhookOptions},
    },
};

#[derive(Debug, Parser)]
#[command(
    name = "kopgen",
    version,
    about = "Kubebuilder for Rust: scaffold Kubernetes operators on kube-rs",
    after_help = "Example:\n  kopgen init --domain example.com\n  kopgen create api --group apps --version v1alpha1 --kind Blog"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Scaffold a new operator repository.
    #[command(
        after_help = "Example:\n  mkdir blog-operator && cd blog-operator\n  kopgen init --domain example.com --owner \"Example Corp\""
    )]
    Init(InitArgs),
    /// Add to the project.
    #[command(subcommand)]
    Create(CreateCommand),
    /// Remove from the project what `create` added.
    #[command(subcommand)]
    Delete(DeleteCommand),
    /// Change how the project is set up.
    #[command(
        after_help = "Example:\n  kopgen edit --webhook-certificates self-managed   # no cert-manager in the cluster"
    )]
    Edit(EditArgs),
    /// Generate CRDs from the Rust types (static: reads the source, never compiles it).
    #[command(
        after_help = "Examples:\n  kopgen manifests                 # in a kopgen project: writes config/crd/bases/\n  \
                            kopgen manifests --check         # in CI: fail if the committed CRDs are stale\n  \
                            kopgen manifests --paths src/api --output-dir deploy/crds"
    )]
    Manifests(ManifestsArgs),
    /// Work with CRD files: compare two revisions for breaking changes.
    #[command(subcommand)]
    Crd(crd::CrdCommand),
    /// Bring the project to this kopgen's version: the runtime, and every file kopgen
    /// scaffolded, merged with your changes.
    #[command(
        after_help = "Examples:\n  kopgen upgrade --dry-run   # what would change, with diffs\n  kopgen upgrade"
    )]
    Upgrade(upgrade::UpgradeArgs),
    /// Print kopgen's version.
    Version,
    /// Print a shell completion script.
    #[command(
        after_help = "Example:\n  kopgen completion bash > ~/.local/share/bash-completion/completions/kopgen"
    )]
    Completion {
        /// The shell to complete for.
        shell: Shell,
    },
}

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Domain of the project's API groups: kinds live in `<group>.<domain>` (default: my.domain;
    /// with --adopt, the domain the crate's kinds share).
    #[arg(long)]
    pub domain: Option<String>,
    /// Name of the project and its crate (default: the directory's name).
    #[arg(long)]
    pub project_name: Option<String>,
    /// Owner named in the copyright header.
    #[arg(long)]
    pub owner: Option<String>,
    /// License header of generated Rust files.
    #[arg(long, value_enum, default_value_t = License::Apache2)]
    pub license: License,
    /// The manager watches only its own namespace: Roles instead of ClusterRoles, WATCH_NAMESPACE set.
    #[arg(long)]
    pub namespaced: bool,
    /// Directory to scaffold into (created if missing).
    #[arg(long, default_value = ".")]
    pub path: PathBuf,
    /// Scaffold even if the directory already holds a project; kopgen's files are overwritten.
    #[arg(long)]
    pub force: bool,
    /// Print the files that would be written, and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Make the existing kube-rs crate in --path a kopgen project: PROJECT, config/, Makefile
    /// targets, a CI workflow and a drift test; its sources are left as they are.
    #[arg(long, conflicts_with_all = ["force", "project_name", "owner", "namespaced"])]
    pub adopt: bool,
}

#[derive(Debug, Subcommand)]
pub enum CreateCommand {
    /// Add a kind: its types, a controller, samples and RBAC helper roles.
    #[command(
        after_help = "Examples:\n  kopgen create api --group apps --version v1alpha1 --kind Blog\n  \
                            kopgen create api --group apps --version v1 --kind Blog --controller=false\n  \
                            kopgen create api --group apps --version v1 --kind Deployment --resource=false"
    )]
    Api(ApiArgs),
    /// Add defaulting and validating admission webhooks for a kind of the project.
    #[command(
        after_help = "Examples:\n  kopgen create webhook --group apps --version v1 --kind Blog --defaulting --programmatic-validation\n  \
                            kopgen create webhook --group apps --version v1 --kind Blog --conversion --spoke v1alpha1"
    )]
    Webhook(WebhookArgs),
}

#[derive(Debug, Subcommand)]
pub enum DeleteCommand {
    /// Remove a version of a kind (its types, controller, sample, roles, CRD or CRD version and
    /// registrations), or a controller of a built-in kind: what `create api` added.
    #[command(
        after_help = "Examples:\n  kopgen delete api --group apps --version v1alpha1 --kind Blog\n  \
                            kopgen delete api --group apps --version v1 --kind Deployment"
    )]
    Api(DeleteApiArgs),
    /// Remove a kind's defaulting, validating or conversion webhook (all of them without a
    /// flag): what `create webhook` added; with the last one, the webhook server's setup.
    #[command(
        after_help = "Examples:\n  kopgen delete webhook --group apps --version v1 --kind Blog --defaulting\n  \
                            kopgen delete webhook --group apps --version v1 --kind Blog"
    )]
    Webhook(DeleteWebhookArgs),
}

#[derive(Debug, clap::Args)]
pub struct DeleteWebhookArgs {
    /// API group of the kind (as given to `create api`).
    #[arg(long)]
    pub group: String,
    /// API version of the kind the webhooks receive (the hub for a conversion).
    #[arg(long)]
    pub version: String,
    /// Kind, in PascalCase.
    #[arg(long)]
    pub kind: String,
    /// The defaulting webhook.
    #[arg(long)]
    pub defaulting: bool,
    /// The validating webhook.
    #[arg(long)]
    pub programmatic_validation: bool,
    /// The conversion webhook.
    #[arg(long)]
    pub conversion: bool,
    /// Project directory.
    #[arg(long, default_value = ".")]
    pub path: PathBuf,
    /// Delete although git shows uncommitted changes in the files to delete.
    #[arg(long)]
    pub force: bool,
    /// Print the files that would be deleted or edited, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, clap::Args)]
pub struct DeleteApiArgs {
    /// API group of the kind (as given to `create api`).
    #[arg(long)]
    pub group: String,
    /// API version of the kind.
    #[arg(long)]
    pub version: String,
    /// Kind, in PascalCase.
    #[arg(long)]
    pub kind: String,
    /// Project directory.
    #[arg(long, default_value = ".")]
    pub path: PathBuf,
    /// Delete although other code still uses the types (the project then needs fixing), the
    /// types' file holds other kinds, or git shows uncommitted changes in files to delete.
    #[arg(long)]
    pub force: bool,
    /// Print the files that would be deleted or edited, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("change").required(true).multiple(true)))]
pub struct EditArgs {
    /// Where the webhook server's certificate comes from: cert-manager, or the manager itself
    /// (a CA and certificate it keeps in a Secret, renews, and sets as caBundle).
    #[arg(long, value_enum, group = "change")]
    pub webhook_certificates: Option<Certificates>,
    /// Render a Helm chart into dist/chart/ with every `kopgen manifests` (recorded in PROJECT);
    /// `--helm=false` stops rendering it (the chart's files stay).
    #[arg(long, group = "change", num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub helm: Option<bool>,
    /// Cut every CRD's descriptions to N characters (0 drops them; controller-gen's
    /// maxDescLen), or keep them whole (`none`, the default): recorded in PROJECT, which
    /// `manifests`, the project's drift test and `kopgen_runtime::crds::Settings` read.
    #[arg(long, group = "change", value_name = "N|none", value_parser = parse_max_desc_len)]
    pub max_desc_len: Option<MaxDescLen>,
    /// What Kubernetes types inside the CRDs carry: Kubernetes' own annotations (`openapi`,
    /// the default for new projects: list and map semantics, defaults, validations, as
    /// controller-gen writes them), or kube-derive's `crd()` as it is (`kube-derive`).
    /// Recorded in PROJECT; the CRDs are written again.
    #[arg(long, value_enum, group = "change")]
    pub kubernetes_types: Option<crate::project::KubernetesTypes>,
    /// Project directory.
    #[arg(long, default_value = ".")]
    pub path: PathBuf,
    /// Print the files that would be written or edited, and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `--max-desc-len`'s value: a length, or none.
#[derive(Debug, Clone, Copy)]
pub struct MaxDescLen(Option<usize>);

fn parse_max_desc_len(value: &str) -> Result<MaxDescLen, String> {
    if value == "none" {
        return Ok(MaxDescLen(None));
    }
    value
        .parse()
        .map(|n| MaxDescLen(Some(n)))
        .map_err(|_| format!("`{value}` is neither a number of characters nor `none`"))
}

#[derive(Debug, clap::Args)]
pub struct WebhookArgs {
    /// API group of the kind (as given to `create api`).
    #[arg(long)]
    pub group: String,
    /// API version of the kind the webhooks receive.
    #[arg(long)]
    pub version: String,
    /// Kind, in PascalCase.
    #[arg(long)]
    pub kind: String,
    /// A mutating webhook with a `default` function to fill in.
    #[arg(long)]
    pub defaulting: bool,
    /// A validating webhook with `validate_create`, `validate_update` and `validate_delete`.
    #[arg(long)]
    pub programmatic_validation: bool,
    /// A conversion webhook: --version is the hub (the storage version), converted to and from
    /// each --spoke version with `From`.
    #[arg(long, requires = "spoke")]
    pub conversion: bool,
    /// The versions converted to and from the hub, comma-separated (with --conversion).
    #[arg(long, value_delimiter = ',', requires = "conversion")]
    pub spoke: Vec<String>,
    /// Where the webhook server's certificate comes from (default: as the project has it,
    /// cert-manager at first); `kopgen edit --webhook-certificates` switches later.
    #[arg(long, value_enum)]
    pub certificates: Option<Certificates>,
    /// Project directory.
    #[arg(long, default_value = ".")]
    pub path: PathBuf,
    /// Scaffold the kind's webhook file again (its code is replaced).
    #[arg(long)]
    pub force: bool,
    /// Print the files that would be written or edited, and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, clap::Args)]
pub struct ApiArgs {
    /// API group, a DNS-1123 label; the full group is `<group>.<domain>`.
    #[arg(long)]
    pub group: String,
    /// API version, e.g. v1, v1beta1, v1alpha1.
    #[arg(long)]
    pub version: String,
    /// Kind, in PascalCase.
    #[arg(long)]
    pub kind: String,
    /// Plural resource name (default: kube-derive's rule, e.g. Policy → policies).
    #[arg(long)]
    pub plural: Option<String>,
    /// Whether the kind is namespaced; --namespaced=false makes it cluster-scoped.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub namespaced: bool,
    /// Scaffold the kind's types. --resource=false scaffolds only a controller (e.g. for a built-in kind).
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub resource: bool,
    /// Scaffold a controller for the kind.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub controller: bool,
    /// Give the controller a finalizer and a `cleanup` to fill in, for kinds that hold
    /// something outside the cluster. Without it, deletion never waits for the operator.
    #[arg(long)]
    pub finalizer: bool,
    /// Project directory.
    #[arg(long, default_value = ".")]
    pub path: PathBuf,
    /// Scaffold again over existing files of this kind.
    #[arg(long)]
    pub force: bool,
    /// Print the files that would be written or edited, and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli, &mut std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

pub fn run(cli: Cli, out: &mut dyn Write) -> anyhow::Result<()> {
    // Every command that scaffolds holds its project from before its first read to after its
    // last write: concurrent commands take turns instead of one planning from stale files.
    let project = match &cli.command {
        Command::Init(args) => Some(&args.path),
        Command::Create(CreateCommand::Api(args)) => Some(&args.path),
        Command::Create(CreateCommand::Webhook(args)) => Some(&args.path),
        Command::Delete(DeleteCommand::Api(args)) => Some(&args.path),
        Command::Delete(DeleteCommand::Webhook(args)) => Some(&args.path),
        Command::Edit(args) => Some(&args.path),
        Command::Upgrade(args) => Some(&args.path),
        Command::Manifests(args) => Some(&args.path),
        Command::Crd(_) | Command::Version | Command::Completion { .. } => None,
    };
    let _held = project.map(|path| {
        crate::changeset::hold(path, || {
            eprintln!(
                "    Blocking waiting for another kopgen command in {} to finish",
                path.display()
            );
        })
    });
    // A command killed while writing left a journal: finished (or undone) before anything is
    // read, so that nothing plans from a half-written tree.
    if let Some(path) = project
        && crate::changeset::journal::recover(path)?
    {
        eprintln!(
            "    Finished the write an interrupted kopgen command left in {}",
            path.display()
        );
    }
    match cli.command {
        Command::Init(args) if args.adopt => {
            let options = crate::scaffold::adopt::AdoptOptions {
                path: args.path.clone(),
                domain: args.domain,
            };
            let (changes, adopted) =
                crate::scaffold::adopt::plan(&options).context("kopgen init --adopt")?;
            finish(&changes, args.dry_run, out)?;
            for target in &adopted.kept_targets {
                writeln!(
                    out,
                    "note: the Makefile's own `{target}` target is kept as it is"
                )?;
            }
            if !adopted.not_written.is_empty() {
                writeln!(
                    out,
                    "note: {} need compiling the crate: `kopgen manifests` writes them",
                    adopted.not_written.join(", ")
                )?;
            }
            if let Some(why) = &adopted.no_drift_test {
                writeln!(out, "note: no drift test: {why}")?;
            }
            if !args.dry_run {
                writeln!(
                    out,
                    "\nNext:\n  kopgen manifests          # config/crd/bases/ from the types (compare with the CRDs you ship)\n  \
                     kopgen manifests --check  # what CI runs\n  \
                     kopgen create api --group <group> --version <version> --kind <Kind> --controller=false\n\
                     docs/ADOPTING.md in kopgen's repository walks through the rest."
                )?;
            }
        }
        Command::Init(args) => {
            let options = InitOptions {
                path: args.path.clone(),
                domain: args.domain.unwrap_or_else(|| "my.domain".to_owned()),
                project_name: args.project_name,
                owner: args.owner,
                license: args.license,
                namespaced: args.namespaced,
                force: args.force,
            };
            let changes = init::plan(&options).context("kopgen init")?;
            finish(&changes, args.dry_run, out)?;
            if !args.dry_run {
                let cd = if args.path == Path::new(".") {
                    String::new()
                } else {
                    format!("  cd {}\n", args.path.display())
                };
                writeln!(
                    out,
                    "\nNext:\n{cd}  kopgen create api --group <group> --version v1alpha1 --kind <Kind>\n  make test"
                )?;
            }
        }
        Command::Create(CreateCommand::Api(args)) => {
            let options = ApiOptions {
                path: args.path,
                group: args.group,
                version: args.version,
                kind: args.kind,
                plural: args.plural,
                namespaced: args.namespaced,
                resource: args.resource,
                controller: args.controller,
                finalizer: args.finalizer,
                force: args.force,
            };
            let changes = api::plan(&options).context("kopgen create api")?;
            finish(&changes, args.dry_run, out)?;
            if !args.dry_run {
                writeln!(
                    out,
                    "\nNext: edit the types and the reconcile loop, then\n  make manifests\n  make test"
                )?;
            }
        }
        Command::Create(CreateCommand::Webhook(args)) => {
            let options = WebhookOptions {
                path: args.path,
                group: args.group,
                version: args.version,
                kind: args.kind,
                defaulting: args.defaulting,
                validation: args.programmatic_validation,
                spokes: args.spoke,
                certificates: args.certificates,
                force: args.force,
            };
            let changes = webhook::plan(&options).context("kopgen create webhook")?;
            finish(&changes, args.dry_run, out)?;
            if !args.dry_run {
                writeln!(
                    out,
                    "\nNext: fill in the functions marked TODO(user) in src/webhooks/, then\n  make manifests\n  make test"
                )?;
            }
        }
        Command::Delete(DeleteCommand::Api(args)) => {
            let options = DeleteApiOptions {
                path: args.path,
                group: args.group,
                version: args.version,
                kind: args.kind,
                force: args.force,
            };
            let changes = delete_api::plan(&options).context("kopgen delete api")?;
            finish(&changes, args.dry_run, out)?;
        }
        Command::Delete(DeleteCommand::Webhook(args)) => {
            let options = DeleteWebhookOptions {
                path: args.path,
                group: args.group,
                version: args.version,
                kind: args.kind,
                defaulting: args.defaulting,
                validation: args.programmatic_validation,
                conversion: args.conversion,
                force: args.force,
            };
            let changes = delete_webhook::plan(&options).context("kopgen delete webhook")?;
            finish(&changes, args.dry_run, out)?;
        }
        Command::Edit(args) => {
            if let Some(mode) = args.webhook_certificates {
                let changes =
                    webhook::plan_certificates(&args.path, mode).context("kopgen edit")?;
                finish(&changes, args.dry_run, out)?;
            }
            if let Some(helm) = args.helm {
                edit_helm(&args.path, helm, args.dry_run, out)?;
            }
            if let Some(MaxDescLen(max)) = args.max_desc_len {
                edit_crds(&args.path, args.dry_run, out, |p| {
                    std::mem::replace(&mut p.max_desc_len, max) != max
                })?;
            }
            if let Some(types) = args.kubernetes_types {
                edit_crds(&args.path, args.dry_run, out, |p| {
                    p.kubernetes_types.replace(types) != Some(types)
                })?;
            }
        }
        Command::Manifests(args) => return manifests::run(args, out),
        Command::Crd(command) => return crd::run(command, out),
        Command::Upgrade(args) => return upgrade::run(args, out),
        Command::Version => writeln!(out, "kopgen {}", crate::VERSION)?,
        Command::Completion { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "kopgen", &mut buf);
            out.write_all(&buf)?;
        }
    }
    Ok(())
}

/// `kopgen edit --helm`: records the switch in PROJECT and, when it is on, renders the chart
/// at once with `kopgen manifests` (which renders it from then on).
fn edit_helm(path: &Path, helm: bool, dry_run: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut project = crate::project::Project::load(path).context("kopgen edit --helm")?;
    let changed = project.helm != helm;
    project.helm = helm;
    if dry_run {
        if changed {
            writeln!(out, "would update {}", crate::project::PROJECT_FILE)?;
        }
        if helm {
            writeln!(out, "would render {} (kopgen manifests)", crate::chart::DIR)?;
        }
        return Ok(());
    }
    if !helm {
        if changed {
            let mut changes = ChangeSet::new(path.to_path_buf());
            changes.put(crate::project::PROJECT_FILE, project.render());
            finish(&changes, false, out)?;
        }
        writeln!(
            out,
            "note: `kopgen manifests` no longer renders {}; its files are left as they are",
            crate::chart::DIR
        )?;
        return Ok(());
    }
    if changed {
        record_and_render(path, &project, out)
    } else {
        run_manifests(path, out)
    }
}

/// A CRD setting of `kopgen edit`: `change` records it in PROJECT (true if that changed
/// anything), and the CRDs are written again with it, so that the committed files, `--check`
/// and the drift test agree at once.
fn edit_crds(
    path: &Path,
    dry_run: bool,
    out: &mut dyn Write,
    change: impl FnOnce(&mut crate::project::Project) -> bool,
) -> anyhow::Result<()> {
    let mut project = crate::project::Project::load(path).context("kopgen edit")?;
    if !change(&mut project) {
        return Ok(());
    }
    if dry_run {
        writeln!(out, "would update {}", crate::project::PROJECT_FILE)?;
        writeln!(out, "would write the CRDs again (kopgen manifests)")?;
        return Ok(());
    }
    record_and_render(path, &project, out)
}

/// Records `project` in PROJECT, then runs `manifests`, which reads it. If that fails (a lint
/// error, a CRD over the size limit), PROJECT is put back as it was: the edit changes all or
/// nothing, as `manifests` itself does.
fn record_and_render(
    path: &Path,
    project: &crate::project::Project,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let file = path.join(crate::project::PROJECT_FILE);
    let before = crate::regular_file::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let mut changes = ChangeSet::new(path.to_path_buf());
    changes.put(crate::project::PROJECT_FILE, project.render());
    finish(&changes, false, out)?;
    // Both writes happen while this command holds the project, and the restore is a write
    // like any other (all or nothing, journaled).
    run_manifests(path, out).map_err(|e| {
        let mut restore = ChangeSet::new(path.to_path_buf());
        restore.put(crate::project::PROJECT_FILE, before);
        match restore.write() {
            Ok(_) => e.context("kopgen edit: PROJECT is restored as it was; nothing changed"),
            Err(restore) => e.context(format!(
                "kopgen edit: PROJECT could not be restored ({restore}); put it back from version control"
            )),
        }
    })
}

/// `kopgen manifests --path <path>`, as an edit's last step.
fn run_manifests(path: &Path, out: &mut dyn Write) -> anyhow::Result<()> {
    let cli = Cli::try_parse_from([
        OsStr::new("kopgen"),
        OsStr::new("manifests"),
        OsStr::new("--path"),
        path.as_os_str(),
    ])?;
    match cli.command {
        Command::Manifests(args) => manifests::run(args, out),
        _ => Ok(()),
    }
}

/// Writes `changes` (or only lists them with `dry_run`) and prints one line per file, like `cargo new`.
fn finish(changes: &ChangeSet, dry_run: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    if dry_run {
        for change in changes.changes() {
            writeln!(
                out,
                "would {} {}",
                change.kind.verb(),
                change.path.display()
            )?;
        }
        return Ok(());
    }
    let written = changes.write()?;
    for change in written {
        let verb = change.kind.done();
        writeln!(out, "{verb:>12} {}", change.path.display())?;
    }
    Ok(())
}
