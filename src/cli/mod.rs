//! The command line: clap definitions and the thin layer that runs a command, prints what it
//! did and turns errors into messages. Everything below it returns typed errors.

use std::{ffi::OsStr, io::Write, path::Path, process::ExitCode};

use anyhow::Context as _;
use clap::{CommandFactory, Parser};

mod args;
mod crd;
mod manifests;
mod upgrade;

pub use args::*;

pub use manifests::{CheckFailed, DeriveMode, LintMode, ManifestsArgs, SIZE_ERROR, SIZE_WARNING};

use crate::{
    changeset::ChangeSet,
    scaffold::{
        api::{self, ApiOptions},
        delete_api::{self, DeleteApiOptions},
        delete_webhook::{self, DeleteWebhookOptions},
        init::{self, InitOptions},
        webhook::{self, WebhookOptions},
    },
};

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
            if let Some(below) = &adopted.below_repository {
                let directory = &below.directory;
                let steps = if below.in_workflow {
                    format!("its steps run in `{directory}`")
                } else {
                    format!("and set its job's `defaults.run.working-directory` to `{directory}`")
                };
                writeln!(
                    out,
                    "note: GitHub runs only the workflows at the repository's root: move \
                     .github/workflows/kopgen.yml to {}/.github/workflows/ ({steps})",
                    below.repository.display()
                )?;
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
