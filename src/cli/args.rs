//! What each command accepts: clap's definitions, with the help text and examples users see.

use std::path::PathBuf;

use clap::{ArgAction, Parser, Subcommand};
use clap_complete::Shell;

use super::manifests::ManifestsArgs;
use super::{crd, upgrade};
use crate::{project::Certificates, scaffold::init::License};

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
pub struct MaxDescLen(pub(super) Option<usize>);

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
