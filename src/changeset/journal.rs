//! The journal that makes a multi-file write survive `kill -9`: before it touches the tree, a
//! write records every file it will stage, set aside and place; once all are staged it marks the
//! journal committed; once all are placed it removes it. A command that finds a journal (under
//! the project lock, before it reads anything) finishes what it says: a committed write is
//! rolled forward, file by file, and anything less is undone. The tree is then the old one or
//! the new one, never a mix, and PROJECT, placed last, names the version the tree has.
//!
//! The journal is data from the disk, so it is trusted no further than the write that could
//! have made it: every entry must be a file below the project with a sibling that has a staged
//! or set-aside name (`.<name>.<pid>.<n>.kopgen-tmp`/`-del`); anything else is skipped.

use std::{
    fs, io,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

use super::{ASIDE_SUFFIX, STAGE_SUFFIX, remove_empty_dirs, resolve};

/// The journal's file name, in the project's root.
pub const NAME: &str = ".kopgen-journal";

/// How far a write got: staging (nothing placed yet: undo) or committed (roll forward).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Staging,
    Committed,
}

/// A file to place: written to `stage`, renamed to `dest` after the file there (if any) was
/// renamed to `old`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub stage: PathBuf,
    pub dest: PathBuf,
    pub old: PathBuf,
}

/// A file to delete: renamed from `dest` to `aside` while staging, removed once committed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deletion {
    pub aside: PathBuf,
    pub dest: PathBuf,
}

/// One write's plan, as recorded on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    pub state: State,
    pub places: Vec<Placement>,
    pub deletes: Vec<Deletion>,
}

impl Journal {
    /// Records this journal in `root`, replacing the one there at once (a rename), so that a
    /// kill leaves either the previous record or this one.
    pub fn record(&self, root: &Path) -> io::Result<()> {
        let text = serde_json::to_string(self).map_err(io::Error::other)?;
        let temporary = root.join(format!("{NAME}.{}{STAGE_SUFFIX}", std::process::id()));
        fs::write(&temporary, text)?;
        fs::rename(&temporary, root.join(NAME)).inspect_err(|_| {
            let _ = fs::remove_file(&temporary);
        })
    }

    /// Removes the record: the write is over (done or undone).
    pub fn end(root: &Path) {
        let _ = fs::remove_file(root.join(NAME));
    }

    /// Rolls a committed write forward: every staged file placed (what it replaces set aside
    /// first), then what was set aside removed.
    fn roll_forward(&self, root: &Path) {
        for place in &self.places {
            if fs::symlink_metadata(&place.stage).is_err() {
                continue; // placed before the kill
            }
            if fs::symlink_metadata(&place.dest).is_ok()
                && fs::symlink_metadata(&place.old).is_err()
            {
                let _ = fs::rename(&place.dest, &place.old);
            }
            let _ = fs::rename(&place.stage, &place.dest);
        }
        self.clean_up();
        for delete in &self.deletes {
            remove_empty_dirs(delete.dest.parent(), root);
        }
    }

    /// Removes what a finished write set aside, and the directories its deletions emptied.
    pub fn clean_up(&self) {
        for place in &self.places {
            let _ = fs::remove_file(&place.old);
        }
        for delete in &self.deletes {
            let _ = fs::remove_file(&delete.aside);
        }
    }

    /// Undoes a write that was staging: staged files removed, deleted ones put back.
    fn undo(&self, root: &Path) {
        for place in &self.places {
            let _ = fs::remove_file(&place.stage);
            remove_empty_dirs(place.stage.parent(), root);
        }
        for delete in &self.deletes {
            if fs::symlink_metadata(&delete.aside).is_err() {
                continue;
            }
            if fs::symlink_metadata(&delete.dest).is_err() {
                let _ = fs::rename(&delete.aside, &delete.dest);
            } else {
                let _ = fs::remove_file(&delete.aside);
            }
        }
    }

    /// The entries a write below `root` could have made; the others are dropped.
    fn below(mut self, root: &Path) -> Self {
        let root = resolve(root);
        let inside = |dest: &Path| {
            dest.parent()
                .is_some_and(|parent| parent.is_absolute() && resolve(parent).starts_with(&root))
        };
        self.places.retain(|p| {
            inside(&p.dest)
                && sibling(&p.stage, &p.dest, STAGE_SUFFIX)
                && sibling(&p.old, &p.dest, ASIDE_SUFFIX)
        });
        self.deletes
            .retain(|d| inside(&d.dest) && sibling(&d.aside, &d.dest, ASIDE_SUFFIX));
        self
    }
}

/// Whether `staged` is a name [`super::staging_path`] gives `dest` with `suffix`.
fn sibling(staged: &Path, dest: &Path, suffix: &str) -> bool {
    let (Some(name), Some(staged_name)) = (dest.file_name(), staged.file_name()) else {
        return false;
    };
    let (name, staged_name) = (name.to_string_lossy(), staged_name.to_string_lossy());
    staged.parent() == dest.parent()
        && staged_name
            .strip_prefix('.')
            .and_then(|rest| rest.strip_prefix(name.as_ref()))
            .and_then(|rest| rest.strip_suffix(suffix))
            .is_some_and(|numbers| {
                let parts: Vec<&str> = numbers.split('.').collect();
                matches!(parts.as_slice(), ["", pid, n] if [pid, n]
                    .iter()
                    .all(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())))
            })
}

/// An interrupted write that [`recover`] could not read.
#[derive(Debug, thiserror::Error)]
#[error(
    "a kopgen command in {root} was interrupted while writing, and its journal {journal} cannot be read ({reason}); \
     check `git status` for files left half-written, then remove {journal}"
)]
pub struct Unreadable {
    root: PathBuf,
    journal: PathBuf,
    reason: String,
}

/// Finishes the write a killed command left in `root`, if any: rolled forward if it had
/// committed, undone otherwise. Call with the project locked, before reading the tree.
pub fn recover(root: &Path) -> Result<bool, Unreadable> {
    let path = root.join(NAME);
    if !root.is_dir() || fs::symlink_metadata(&path).is_err() {
        return Ok(false); // no project yet, or nothing was interrupted
    }
    let text = match crate::regular_file::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(unreadable(root, &path, e.to_string())),
    };
    let journal: Journal =
        serde_json::from_str(&text).map_err(|e| unreadable(root, &path, e.to_string()))?;
    let journal = journal.below(root);
    let absolute = std::path::absolute(root).unwrap_or_else(|_| root.into());
    match journal.state {
        State::Committed => journal.roll_forward(&absolute),
        State::Staging => journal.undo(&absolute),
    }
    Journal::end(root);
    Ok(true)
}

fn unreadable(root: &Path, journal: &Path, reason: String) -> Unreadable {
    Unreadable {
        root: root.to_path_buf(),
        journal: journal.to_path_buf(),
        reason,
    }
}
