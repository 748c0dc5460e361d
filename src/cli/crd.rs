//! `kopgen crd diff OLD NEW`: the breaking-change gate between two revisions of CRDs, wherever
//! they come from (files, git, the cluster), without deriving anything.

use std::{io::Write, path::PathBuf};

use anyhow::Context as _;

use crate::compat::{self, Config, Enforcement, Scope, source};

#[derive(Debug, clap::Subcommand)]
pub enum CrdCommand {
    /// Report the changes from OLD to NEW that break existing objects or clients (crdify's
    /// checks), and fail on those the configuration makes errors.
    #[command(
        after_help = "Each side is a CRD file or directory, a git revision with its path \
(`origin/main:config/crd/bases`), or `kube://` (the cluster in the kubeconfig).\n\nExamples:\n  \
kopgen crd diff origin/main:config/crd/bases config/crd/bases\n  \
kopgen crd diff kube:// config/crd/bases   # also catches removed stored versions"
    )]
    Diff(DiffArgs),
}

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The previous revision.
    pub old: String,
    /// The new revision.
    pub new: String,
    /// The checks' configuration (crdify's format; default: `config/crd/compat.yaml` if
    /// present, else kopgen's defaults).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

pub(super) fn run(command: CrdCommand, out: &mut dyn Write) -> anyhow::Result<()> {
    let CrdCommand::Diff(args) = command;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let config = match &args.config {
        Some(file) => Config::load(&cwd.join(file)).context("kopgen crd diff")?,
        None if cwd.join(compat::config::PATH).exists() => {
            Config::load(&cwd.join(compat::config::PATH)).context("kopgen crd diff")?
        }
        None => Config::kopgen(),
    };
    let old = source::load(&args.old, None, &cwd)
        .with_context(|| format!("kopgen crd diff: {}", args.old))?;
    let new = source::load(&args.new, None, &cwd)
        .with_context(|| format!("kopgen crd diff: {}", args.new))?;
    if old.is_empty() {
        anyhow::bail!(
            "kopgen crd diff: no CustomResourceDefinition in {}",
            args.old
        );
    }
    let (mut errors, mut warnings) = (0, 0);
    for (name, (old_crd, origin)) in &old {
        let shown = source::shown(name);
        let Some((new_crd, _)) = new.get(name) else {
            writeln!(
                out,
                "error[breaking/crdRemoval]: CRD {shown} ({origin}) is missing from {}\n  help: keep the kind (serve no version of it, if it must go) until no object of it is left",
                args.new
            )?;
            errors += 1;
            continue;
        };
        if compat::served_compared_in_sequence(new_crd) {
            writeln!(
                out,
                "note: CRD {shown} serves more than {} versions: each served version is compared with the next, not with every other",
                compat::MAX_PAIRWISE
            )?;
        }
        for change in compat::compare(old_crd, new_crd, &config) {
            let level = match change.enforcement {
                Enforcement::Error => {
                    errors += 1;
                    "error"
                }
                _ => {
                    warnings += 1;
                    "warning"
                }
            };
            let place = match &change.scope {
                Scope::Crd => String::new(),
                Scope::Version(v) => format!(" {v}"),
                Scope::Served(pair) => format!(" served versions {pair}"),
            };
            let at = if change.path.0.is_empty() {
                String::new()
            } else {
                format!(", at {}", change.path)
            };
            writeln!(
                out,
                "{level}[{}]: CRD {shown}{place}{at}: {}\n  help: {}",
                compat::rule(change.check, change.ratcheted),
                change.message,
                change.help()
            )?;
        }
    }
    writeln!(
        out,
        "{} CRD(s) compared: {errors} error(s), {warnings} warning(s)",
        old.keys().filter(|name| new.contains_key(*name)).count()
    )?;
    if errors > 0 {
        anyhow::bail!(
            "kopgen crd diff: {errors} breaking change(s) from {} to {}",
            args.old,
            args.new
        );
    }
    Ok(())
}
