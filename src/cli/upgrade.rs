//! `kopgen upgrade`: runs the plan, prints what happens to each file, and updates the lockfile.

use std::{io::Write, path::PathBuf, process::Command};

use anyhow::Context as _;

use crate::{
    runtime_crate::VENDOR_DIR,
    upgrade::{self, Upgrade, UpgradeOptions, merge::Outcome},
};

#[derive(Debug, clap::Args)]
pub struct UpgradeArgs {
    /// Project directory.
    #[arg(long, default_value = ".")]
    pub path: PathBuf,
    /// Print what would change, with the diff of every file, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Upgrade although git shows uncommitted changes in the project.
    #[arg(long)]
    pub allow_dirty: bool,
}

pub fn run(args: UpgradeArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let options = UpgradeOptions {
        path: args.path.clone(),
        allow_dirty: args.allow_dirty || args.dry_run,
    };
    let upgrade = upgrade::plan(&options).context("kopgen upgrade")?;
    report(&upgrade, args.dry_run, out)?;
    if args.dry_run {
        for (change, old) in upgrade.changes.changes_with_old() {
            let path = change.path.to_string_lossy();
            if path.starts_with(VENDOR_DIR) {
                continue;
            }
            let new = match change.kind {
                crate::changeset::ChangeKind::Delete => "",
                _ => change.contents.as_str(),
            };
            let patch = diffy::create_patch(old.as_deref().unwrap_or(""), new);
            writeln!(out, "--- a/{path}\n+++ b/{path}")?;
            // The patch's own header names no file.
            let body = patch.to_string();
            let body = body.splitn(3, '\n').nth(2).unwrap_or("");
            write!(out, "{body}")?;
        }
        return Ok(());
    }
    let written = upgrade.changes.write()?;
    writeln!(out, "{} files written.", written.len())?;
    if !written.is_empty() {
        update_lockfile(&args.path, out)?;
    }
    let conflicts = upgrade.conflicts();
    if !conflicts.is_empty() {
        anyhow::bail!(
            "{} file(s) have conflicts between your changes and kopgen {}'s: {}. Resolve the \
             <<<<<<< markers (`grep -n '^<<<<<<<' {}`), then `cargo build`",
            conflicts.len(),
            upgrade.to,
            conflicts.join(", "),
            conflicts.join(" ")
        );
    }
    Ok(())
}

fn report(upgrade: &Upgrade, dry_run: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    writeln!(
        out,
        "kopgen upgrade: {} → {}{}",
        upgrade.from,
        upgrade.to,
        if upgrade.from == upgrade.to {
            " (refreshes what kopgen writes)"
        } else {
            ""
        }
    )?;
    for step in &upgrade.steps {
        let (verb, why) = match &step.outcome {
            Outcome::Unchanged => continue,
            Outcome::Replace(_) => ("replace", "you never changed it"),
            Outcome::Merged(_) => ("merge", "your changes kept"),
            Outcome::Conflict(_) => ("CONFLICT", "your changes and kopgen's touch the same lines"),
            Outcome::Create(_) => ("create", "new in this version"),
            Outcome::Delete => ("delete", "no longer scaffolded; you never changed it"),
            Outcome::KeptChanged { .. } => (
                "keep",
                "no longer scaffolded, but you changed it: nothing uses it now; your changes below",
            ),
            Outcome::KeptDeleted => (
                "skip",
                "you deleted it; kopgen's new version is not brought back",
            ),
            Outcome::Kept(why) => ("keep", *why),
        };
        if dry_run {
            writeln!(out, "would {verb} {}  ({why})", step.path)?;
        } else {
            writeln!(out, "{verb:>9} {}  ({why})", step.path)?;
        }
        if let Outcome::KeptChanged { diff } = &step.outcome {
            for line in diff.lines() {
                writeln!(out, "            {line}")?;
            }
        }
    }
    Ok(())
}

/// Brings `Cargo.lock` in line with the new `Cargo.toml` (the runtime's version and features),
/// keeping every other pin: cargo resolves only what changed. A project without a lockfile
/// gets one at its first build.
fn update_lockfile(root: &std::path::Path, out: &mut dyn Write) -> anyhow::Result<()> {
    if !root.join("Cargo.lock").is_file() {
        return Ok(());
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let resolve = |offline: bool| {
        let mut command = Command::new(&cargo);
        command
            .args(["metadata", "--format-version", "1"])
            .current_dir(root);
        if offline {
            command.arg("--offline");
        }
        command.output().is_ok_and(|o| o.status.success())
    };
    if resolve(true) || resolve(false) {
        writeln!(out, "     Updated Cargo.lock")?;
    } else {
        writeln!(
            out,
            "warning: could not update Cargo.lock; run `cargo update -p kopgen-runtime` in {}",
            root.display()
        )?;
    }
    Ok(())
}
