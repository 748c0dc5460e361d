//! `kopgen upgrade`: brings a project to the running kopgen's version.
//!
//! The merge base is not stored in the project: it is re-rendered. PROJECT records the kopgen
//! version that last scaffolded the project (`cliVersion`) and everything that was scaffolded;
//! that version's templates (kept in `src/upgrade/releases/<version>/` once a release changes them)
//! replay the project's history into a scratch directory ([`replay`]), and this version's
//! templates replay it again. Each scaffolded file then gets a three-way merge ([`merge`]), so
//! upgrades work the same in a git repository and out of one, and nothing extra is committed.

pub(crate) mod git;
pub mod merge;
pub mod replay;

use std::{
    fs,
    path::{Path, PathBuf},
};

use thiserror::Error;

use crate::{
    changeset::{ChangeError, ChangeSet},
    names,
    project::{self, Project, ProjectError, Resource},
    runtime_crate,
    scaffold::{derived, init::BOILERPLATE},
    templates::Release,
};
use merge::Outcome;
use replay::ReplayError;

use crate::regular_file::ReadError;

/// What `kopgen upgrade` was asked to do.
#[derive(Debug, Clone)]
pub struct UpgradeOptions {
    pub path: PathBuf,
    /// Upgrade although git shows uncommitted changes in the project.
    pub allow_dirty: bool,
}

#[derive(Debug, Error)]
pub enum UpgradeError {
    #[error(transparent)]
    Project(#[from] ProjectError),
    #[error(
        "{0}: an adopted crate (`kopgen init --adopt`) has no scaffold history to replay: run `kopgen manifests` \
         with the new kopgen, which derives config/crd and config/rbac again"
    )]
    Adopted(String),
    #[error(
        "{path}: PROJECT was written by kopgen {found}, newer than this kopgen ({running}). Install kopgen {found} or later, or restore PROJECT"
    )]
    Newer {
        path: String,
        found: String,
        running: &'static str,
    },
    #[error(
        "{path}: PROJECT names kopgen {found}, which this kopgen cannot upgrade from (it knows {known}): {why}"
    )]
    Unknown {
        path: String,
        found: String,
        known: String,
        why: &'static str,
    },
    #[error(
        "{path}: PROJECT's cliVersion \"{found}\" is not a kopgen version (major.minor.patch, as `kopgen version` prints it); restore PROJECT from git"
    )]
    NotAVersion { path: String, found: String },
    #[error(
        "{path}: git shows uncommitted changes ({files}). Commit or stash them first, so the upgrade is one change you can review and undo, or pass --allow-dirty"
    )]
    Dirty { path: String, files: String },
    #[error(transparent)]
    Replay(#[from] Box<ReplayError>),
    #[error(transparent)]
    Change(#[from] ChangeError),
}

/// One file's part in the upgrade, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub path: String,
    pub outcome: Outcome,
}

/// The upgrade, planned: its changes, and what happens to each scaffolded file.
#[derive(Debug)]
pub struct Upgrade {
    pub from: String,
    pub to: &'static str,
    pub changes: ChangeSet,
    /// Every scaffolded file whose fate is not `Unchanged`, by path.
    pub steps: Vec<Step>,
}

impl Upgrade {
    /// Files written with conflict markers.
    pub fn conflicts(&self) -> Vec<&str> {
        self.steps
            .iter()
            .filter(|s| matches!(s.outcome, Outcome::Conflict(_)))
            .map(|s| s.path.as_str())
            .collect()
    }
}

/// The largest file merged; no scaffolded file comes near it.
const MERGE_LIMIT: usize = 4 << 20;

/// Files kopgen writes once and the user owns from then on: never merged, never replaced.
fn user_owned(path: &str) -> bool {
    path == BOILERPLATE
        || (path.starts_with("src/api/") && path.ends_with(".rs") && !path.ends_with("/mod.rs"))
        || (path.starts_with("config/samples/") && !path.ends_with("kustomization.yaml"))
}

/// Files that are outputs, not scaffolding: `kopgen manifests` derives them (the upgrade
/// renders them again from the sources), or the upgrade writes them whole (PROJECT, the
/// runtime's copy).
fn derived(path: &str) -> bool {
    path == project::PROJECT_FILE
        || path.starts_with("config/crd/bases/")
        || path == "config/rbac/role.yaml"
        || path == crate::webhooks::PATH
        || path.starts_with(&format!("{}/", runtime_crate::VENDOR_DIR))
}

/// Plans the upgrade of the project at `options.path`; writes nothing.
pub fn plan(options: &UpgradeOptions) -> Result<Upgrade, UpgradeError> {
    let root = &options.path;
    let mut project = Project::load(root)?;
    if project.adopted {
        return Err(UpgradeError::Adopted(root.display().to_string()));
    }
    let from = project.cli_version.clone();
    let Some(release) = Release::of(&from) else {
        return Err(version_error(root, &from));
    };
    if !options.allow_dirty
        && let Some(files) = git::uncommitted(root)
    {
        return Err(UpgradeError::Dirty {
            path: root.display().to_string(),
            files,
        });
    }
    let mut changes = ChangeSet::new(root.clone());
    let boilerplate = changes.read(BOILERPLATE)?.unwrap_or_default();
    let finalizer = |resource: &Resource| has_finalizer(root, resource);
    let base = replay::replay(&project, &boilerplate, release, &finalizer).map_err(Box::new)?;
    let theirs =
        replay::replay(&project, &boilerplate, Release::Current, &finalizer).map_err(Box::new)?;

    let mut paths: Vec<&String> = base.keys().chain(theirs.keys()).collect();
    paths.sort();
    paths.dedup();
    let mut steps = Vec::new();
    for path in paths {
        if derived(path) || user_owned(path) {
            continue;
        }
        let outcome = match read_ours(&root.join(path)) {
            Ours::Text(ours) => merge::decide(
                base.get(path).map(String::as_str),
                ours.as_deref(),
                theirs.get(path).map(String::as_str),
            ),
            // Not text: the user's, whatever kopgen wrote there.
            Ours::Binary => continue,
            Ours::Kept(why) => Outcome::Kept(why),
        };
        match &outcome {
            Outcome::Unchanged
            | Outcome::KeptChanged { .. }
            | Outcome::KeptDeleted
            | Outcome::Kept(_) => {}
            Outcome::Replace(text)
            | Outcome::Merged(text)
            | Outcome::Conflict(text)
            | Outcome::Create(text) => changes.put(path, text.clone()),
            Outcome::Delete => changes.remove(path),
        }
        if outcome != Outcome::Unchanged {
            steps.push(Step {
                path: path.clone(),
                outcome,
            });
        }
    }
    replace_runtime(&mut changes, root);
    project.cli_version = crate::VERSION.to_owned();
    let rendered = project.render();
    if changes.read(project::PROJECT_FILE)?.as_deref() != Some(rendered.as_str()) {
        changes.put(project::PROJECT_FILE, rendered);
    }
    derived::put_manifests(&mut changes, &project);
    Ok(Upgrade {
        from,
        to: crate::VERSION,
        changes,
        steps,
    })
}

fn version_error(root: &Path, found: &str) -> UpgradeError {
    let path = root.display().to_string();
    let known = [Release::V0_1_0, Release::Current].map(Release::version);
    let Ok(version) = semver::Version::parse(found) else {
        return UpgradeError::NotAVersion {
            path,
            found: found.escape_debug().to_string(),
        };
    };
    let running = semver::Version::parse(crate::VERSION).ok();
    if running.is_some_and(|running| version > running) {
        return UpgradeError::Newer {
            path,
            found: found.to_owned(),
            running: crate::VERSION,
        };
    }
    let why = if !version.pre.is_empty() || !version.build.is_empty() {
        "a pre-release or build of kopgen; upgrade from a release: set it to the release the project was made with"
    } else if semver::Version::parse(known[0]).is_ok_and(|oldest| version < oldest) {
        "older than any kopgen this one upgrades from; scaffold a new project and move your code into it"
    } else {
        "a release this kopgen does not know; upgrade with the kopgen release after it first"
    };
    UpgradeError::Unknown {
        path,
        found: found.to_owned(),
        known: known.join(", "),
        why,
    }
}

/// What the project has where kopgen scaffolded a file.
enum Ours {
    /// Its text, or `None`: there is no file (the user deleted it).
    Text(Option<String>),
    /// Bytes that are not UTF-8.
    Binary,
    /// Something the upgrade leaves as it is, and why.
    Kept(&'static str),
}

fn read_ours(path: &Path) -> Ours {
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        // Writing would replace the link with a file.
        return Ours::Kept("a symbolic link: yours, left as it is");
    }
    match crate::regular_file::read_at_most(path, MERGE_LIMIT as u64) {
        Ok(bytes) => String::from_utf8(bytes).map_or(Ours::Binary, |text| Ours::Text(Some(text))),
        Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ours::Text(None),
        // A diff is quadratic at worst: a file this large is the user's, whatever it was.
        Err(ReadError::TooLarge { .. }) => {
            Ours::Kept("too large to merge: compare it with a new project's by hand")
        }
        Err(ReadError::NotRegular) => Ours::Kept(
            "not a file (a directory, FIFO or device is there): move it away and upgrade again to get kopgen's",
        ),
        Err(ReadError::Io(_)) => {
            Ours::Kept("cannot be read: make it readable and upgrade again to merge it")
        }
    }
}

/// Whether the kind's controller was made with `--finalizer` (PROJECT does not say): its
/// controller sets `FINALIZER` on a line that is not a comment.
fn has_finalizer(root: &Path, resource: &Resource) -> bool {
    let group = resource.group.split('.').next().unwrap_or(&resource.group);
    let file = root.join(format!(
        "src/controllers/{}/{}_controller.rs",
        names::module_name(group),
        names::module_name(&resource.kind)
    ));
    crate::regular_file::read_to_string(&file).is_ok_and(|text| {
        text.lines().any(|line| {
            line.trim_start()
                .starts_with("const FINALIZER: Option<&'static str> = Some(")
        })
    })
}

/// The project's copy of the runtime becomes this kopgen's, whole: files the new one lacks go.
fn replace_runtime(changes: &mut ChangeSet, root: &Path) {
    let vendor = root.join(runtime_crate::VENDOR_DIR);
    let ours: Vec<String> = runtime_crate::files().into_iter().map(|(p, _)| p).collect();
    for entry in walkdir::WalkDir::new(&vendor)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
    {
        if let Ok(relative) = entry.path().strip_prefix(&vendor) {
            let relative = relative.to_string_lossy().replace('\\', "/");
            if !ours.contains(&relative) {
                changes.remove(format!("{}/{relative}", runtime_crate::VENDOR_DIR));
            }
        }
    }
    runtime_crate::vendor(changes);
}
