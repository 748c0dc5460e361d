//! An in-memory set of file changes, written all at once or not at all.
//!
//! Every command renders its whole change here first. Only when every file rendered and every
//! check passed does [`ChangeSet::write`] touch the disk, so bad input never leaves a
//! half-scaffolded repository behind.

use std::{
    collections::BTreeMap,
    fs, io,
    path::{Path, PathBuf},
};

use thiserror::Error;

mod hold;
pub mod journal;

use hold::lock;
pub use hold::{Held, hold};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Create,
    Update,
    Delete,
}

impl ChangeKind {
    pub fn verb(self) -> &'static str {
        match self {
            ChangeKind::Create => "create",
            ChangeKind::Update => "update",
            ChangeKind::Delete => "delete",
        }
    }

    /// The past tense, for what was written: `Created`.
    pub fn done(self) -> &'static str {
        match self {
            ChangeKind::Create => "Created",
            ChangeKind::Update => "Updated",
            ChangeKind::Delete => "Deleted",
        }
    }
}

#[derive(Debug, Error)]
pub enum ChangeError {
    #[error(
        "refusing to write {path}: it resolves to {resolved}, outside {root} (a symlinked directory?); nothing was changed"
    )]
    Outside {
        path: PathBuf,
        resolved: PathBuf,
        root: PathBuf,
    },
    #[error(
        "refusing to write {path}: its file name is {length} bytes, over the {MAX_FILE_NAME} kopgen writes (a file system \
         takes 255, and kopgen stages each file under a longer name first); choose shorter names; nothing was changed"
    )]
    NameTooLong { path: PathBuf, length: usize },
    #[error("cannot read {path}: {error}")]
    Read { path: PathBuf, error: io::Error },
    #[error("cannot write {path}: {error}; nothing was changed")]
    Write { path: PathBuf, error: io::Error },
    #[error(
        "cannot replace {path}: {error}; these files were already replaced: {replaced} (run the command again once the cause is fixed)"
    )]
    Replace {
        path: PathBuf,
        error: io::Error,
        replaced: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: PathBuf,
    pub kind: ChangeKind,
    pub contents: String,
}

/// Pending changes below `root`, keyed by path relative to it.
#[derive(Debug)]
pub struct ChangeSet {
    root: PathBuf,
    files: BTreeMap<PathBuf, Change>,
    /// Directories outside `root` that the user named for output (`--output-dir`).
    allowed: Vec<PathBuf>,
}

impl ChangeSet {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            files: BTreeMap::new(),
            allowed: Vec::new(),
        }
    }

    /// Lets this change set write below `dir`, which the user named, even where it resolves
    /// outside the root; every other path must resolve (symlinks followed) inside the root.
    pub fn allow(&mut self, dir: impl Into<PathBuf>) {
        self.allowed.push(dir.into());
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Sets the contents of `path`; whether it is a creation or an update is decided by the disk.
    pub fn put(&mut self, path: impl Into<PathBuf>, contents: String) {
        let path = path.into();
        let kind = if self.root.join(&path).exists() {
            ChangeKind::Update
        } else {
            ChangeKind::Create
        };
        self.files.insert(
            path.clone(),
            Change {
                path,
                kind,
                contents,
            },
        );
    }

    /// Deletes `path` (a file kopgen wrote). A file that does not exist is left as it is; one
    /// this change set would create is simply not created.
    pub fn remove(&mut self, path: impl Into<PathBuf>) {
        let path = path.into();
        if self.root.join(&path).is_file() {
            let change = Change {
                path: path.clone(),
                kind: ChangeKind::Delete,
                contents: String::new(),
            };
            self.files.insert(path, change);
        } else {
            self.files.remove(&path);
        }
    }

    /// The contents `path` will have: the pending change if there is one, else what is on disk.
    pub fn read(&self, path: impl AsRef<Path>) -> Result<Option<String>, ChangeError> {
        let path = path.as_ref();
        if let Some(change) = self.files.get(path) {
            return Ok((change.kind != ChangeKind::Delete).then(|| change.contents.clone()));
        }
        let full = self.root.join(path);
        match crate::regular_file::read_to_string(&full) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(ChangeError::Read { path: full, error }),
        }
    }

    pub fn exists(&self, path: impl AsRef<Path>) -> bool {
        match self.files.get(path.as_ref()) {
            Some(change) => change.kind != ChangeKind::Delete,
            None => self.root.join(path).exists(),
        }
    }

    /// The changes, sorted by path, skipping updates that would not change the file.
    pub fn changes(&self) -> Vec<&Change> {
        self.changes_with_old()
            .into_iter()
            .map(|(change, _)| change)
            .collect()
    }

    /// [`ChangeSet::changes`], each with what the file holds now (`None` if it does not exist or
    /// cannot be read), so that a diff needs no second read.
    pub fn changes_with_old(&self) -> Vec<(&Change, Option<String>)> {
        self.files
            .values()
            .filter_map(|change| {
                if change.kind == ChangeKind::Create {
                    return Some((change, None));
                }
                let old = crate::regular_file::read_to_string(&self.root.join(&change.path));
                if change.kind == ChangeKind::Delete {
                    return Some((change, old.ok()));
                }
                match old {
                    Ok(old) if old == change.contents => None,
                    Ok(old) => Some((change, Some(old))),
                    Err(_) => Some((change, None)),
                }
            })
            .collect()
    }

    /// Writes every change. Each file is staged next to its destination under a name of its
    /// own and renamed into place only after all of them were staged, so an I/O error part-way
    /// (a full disk, a directory where a file goes) leaves the tree as it was. The project
    /// directory is locked meanwhile, so concurrent runs take turns, and staged files that a
    /// killed run left behind are removed.
    pub fn write(&self) -> Result<Vec<&Change>, ChangeError> {
        let changes = self.changes();
        if changes.is_empty() {
            return Ok(changes);
        }
        let _lock = lock(&self.root);
        journal::recover(&self.root).map_err(|error| ChangeError::Write {
            path: self.root.join(journal::NAME),
            error: io::Error::other(error.to_string()),
        })?;
        let inside: Vec<PathBuf> = std::iter::once(&self.root)
            .chain(&self.allowed)
            .map(|dir| resolve(dir))
            .collect();
        for change in &changes {
            let dest = self.root.join(&change.path);
            // Where the file really goes: a symlinked directory on the way is followed.
            let resolved = resolve(dest.parent().unwrap_or(&self.root));
            if !inside.iter().any(|dir| resolved.starts_with(dir)) {
                return Err(ChangeError::Outside {
                    path: dest,
                    resolved,
                    root: self.root.clone(),
                });
            }
            let length = dest.file_name().map_or(0, |n| n.len());
            if length > MAX_FILE_NAME {
                return Err(ChangeError::NameTooLong { path: dest, length });
            }
            if dest.is_dir() {
                return Err(ChangeError::Write {
                    path: dest,
                    error: io::Error::other("a directory is where this file goes; move it away"),
                });
            }
            // A FIFO, socket or device there is not the user's file to replace.
            if fs::metadata(&dest).is_ok_and(|m| !m.is_file()) {
                return Err(ChangeError::Write {
                    path: dest,
                    error: io::Error::other(
                        "a special file (a FIFO, socket or device) is where this file goes; move it away",
                    ),
                });
            }
        }
        // What a killed run of an older kopgen staged (it kept no journal) is removed too.
        let parents: std::collections::BTreeSet<PathBuf> = changes
            .iter()
            .filter_map(|c| self.root.join(&c.path).parent().map(Path::to_path_buf))
            .collect();
        parents.iter().for_each(|dir| remove_stale_stages(dir));
        let journal = self.plan(&changes).map_err(|error| ChangeError::Write {
            path: self.root.clone(),
            error,
        })?;
        let mut created_dirs: Vec<PathBuf> = Vec::new();
        create_dirs(&self.root, &mut created_dirs).map_err(|error| ChangeError::Write {
            path: self.root.clone(),
            error,
        })?;
        let undo_staging = |created_dirs: &[PathBuf]| {
            for place in &journal.places {
                let _ = fs::remove_file(&place.stage);
            }
            for delete in &journal.deletes {
                let _ = fs::rename(&delete.aside, &delete.dest);
            }
            for dir in created_dirs.iter().rev() {
                let _ = fs::remove_dir(dir);
            }
        };
        // Recorded before the tree is touched: a kill from here on is undone by the next run.
        if let Err(error) = journal.record(&self.root) {
            undo_staging(&created_dirs);
            return Err(ChangeError::Write {
                path: self.root.join(journal::NAME),
                error,
            });
        }
        let staged = (|| {
            // Files to delete are moved aside first, so that a failure puts them back.
            for delete in &journal.deletes {
                fs::rename(&delete.dest, &delete.aside).map_err(|error| ChangeError::Write {
                    path: delete.dest.clone(),
                    error,
                })?;
            }
            for (place, change) in journal
                .places
                .iter()
                .zip(self.contents_of(&journal, &changes))
            {
                let parent = place.dest.parent().unwrap_or(&self.root).to_path_buf();
                create_dirs(&parent, &mut created_dirs).map_err(|error| ChangeError::Write {
                    path: parent.clone(),
                    error,
                })?;
                fs::write(&place.stage, change).map_err(|error| ChangeError::Write {
                    path: place.dest.clone(),
                    error,
                })?;
                test_hook::staged(&place.dest);
            }
            // Committed: from here on a kill is rolled forward by the next run.
            let committed = journal::Journal {
                state: journal::State::Committed,
                ..journal.clone()
            };
            committed
                .record(&self.root)
                .map_err(|error| ChangeError::Write {
                    path: self.root.join(journal::NAME),
                    error,
                })
        })();
        if let Err(error) = staged {
            journal::Journal::end(&self.root);
            undo_staging(&created_dirs);
            return Err(error);
        }
        // Each file replaced is moved aside first, so that a rename failing part-way takes
        // back every one made before it: the tree is the old one or the new one.
        let mut placed: Vec<&journal::Placement> = Vec::new();
        for (done, place) in journal.places.iter().enumerate() {
            let replaced = fs::symlink_metadata(&place.dest).is_ok();
            let result = match replaced {
                true => fs::rename(&place.dest, &place.old).and_then(|()| {
                    self::place(&place.stage, &place.dest).inspect_err(|_| {
                        let _ = fs::rename(&place.old, &place.dest);
                    })
                }),
                false => self::place(&place.stage, &place.dest),
            };
            if let Err(error) = result {
                // Given up: the journal goes first, so that a kill while taking back leaves
                // what is taken back, not a roll forward of what was removed.
                journal::Journal::end(&self.root);
                for place in &journal.places[done..] {
                    let _ = fs::remove_file(&place.stage);
                }
                let mut kept = Vec::new();
                for place in placed.iter().rev() {
                    let undone = match fs::symlink_metadata(&place.old).is_ok() {
                        true => fs::rename(&place.old, &place.dest),
                        false => fs::remove_file(&place.dest),
                    };
                    if undone.is_err() {
                        kept.push(place.dest.display().to_string());
                    }
                }
                for delete in &journal.deletes {
                    let _ = fs::rename(&delete.aside, &delete.dest);
                }
                for dir in created_dirs.iter().rev() {
                    let _ = fs::remove_dir(dir);
                }
                if kept.is_empty() {
                    return Err(ChangeError::Write {
                        path: place.dest.clone(),
                        error,
                    });
                }
                // Only where taking a rename back failed too: say which, rather than "nothing".
                return Err(ChangeError::Replace {
                    path: place.dest.clone(),
                    error,
                    replaced: kept.join(", "),
                });
            }
            placed.push(place);
            test_hook::placed(&place.dest);
        }
        journal.clean_up();
        let root = std::path::absolute(&self.root).unwrap_or_else(|_| self.root.clone());
        for delete in &journal.deletes {
            remove_empty_dirs(delete.dest.parent(), &root);
        }
        journal::Journal::end(&self.root);
        Ok(changes)
    }

    /// The journal of writing `changes`: where each is staged and set aside, PROJECT placed
    /// last (it names the version the tree has), paths absolute.
    fn plan(&self, changes: &[&Change]) -> io::Result<journal::Journal> {
        let root = std::path::absolute(&self.root)?;
        let mut places = Vec::new();
        let mut deletes = Vec::new();
        for change in changes {
            let dest = root.join(&change.path);
            match change.kind {
                ChangeKind::Delete => deletes.push(journal::Deletion {
                    aside: staging_path(&dest, ASIDE_SUFFIX),
                    dest,
                }),
                _ => places.push(journal::Placement {
                    stage: staging_path(&dest, STAGE_SUFFIX),
                    old: staging_path(&dest, ASIDE_SUFFIX),
                    dest,
                }),
            }
        }
        let last = root.join("PROJECT");
        places.sort_by_key(|place| place.dest == last);
        Ok(journal::Journal {
            state: journal::State::Staging,
            places,
            deletes,
        })
    }

    /// The contents of each of `journal`'s placements, in its order.
    fn contents_of<'a>(&self, journal: &journal::Journal, changes: &[&'a Change]) -> Vec<&'a str> {
        let by_dest: BTreeMap<PathBuf, &'a str> = changes
            .iter()
            .filter(|c| c.kind != ChangeKind::Delete)
            .filter_map(|c| {
                let dest = std::path::absolute(self.root.join(&c.path)).ok()?;
                Some((dest, c.contents.as_str()))
            })
            .collect();
        journal
            .places
            .iter()
            .map(|place| by_dest.get(&place.dest).copied().unwrap_or_default())
            .collect()
    }
}

/// Stops the process where a test of kill recovery says (debug builds only): once the file
/// `KOPGEN_TEST_ABORT_AFTER_STAGING` (an absolute path) is staged, or once
/// `KOPGEN_TEST_ABORT_AFTER_PLACING` is placed, as `kill -9` would (no destructor, no clean-up).
mod test_hook {
    use std::path::Path;

    #[cfg(debug_assertions)]
    fn abort_at(variable: &str, dest: &Path) {
        if std::env::var_os(variable).is_some_and(|at| Path::new(&at) == dest) {
            std::process::abort();
        }
    }

    pub(super) fn staged(dest: &Path) {
        #[cfg(test)]
        super::tests::die_here(&super::tests::DIE_AFTER_STAGED);
        #[cfg(debug_assertions)]
        abort_at("KOPGEN_TEST_ABORT_AFTER_STAGING", dest);
        let _ = dest;
    }

    pub(super) fn placed(dest: &Path) {
        #[cfg(test)]
        super::tests::die_here(&super::tests::DIE_AFTER_PLACED);
        #[cfg(debug_assertions)]
        abort_at("KOPGEN_TEST_ABORT_AFTER_PLACING", dest);
        let _ = dest;
    }
}

/// Renames a staged file into place (in unit tests, failing where a test says so).
fn place(stage: &Path, dest: &Path) -> io::Result<()> {
    #[cfg(test)]
    if tests::FAIL_PLACING.with(|n| {
        let left = n.get();
        n.set(left.saturating_sub(1));
        left == 1
    }) {
        return Err(io::Error::other("injected failure"));
    }
    fs::rename(stage, dest)
}

/// The longest file name kopgen writes: staged as `.<name>.<pid>.<n>.kopgen-tmp`, it still
/// fits the 255 bytes of a file name (pid and counter take at most 10 and 20 digits).
pub const MAX_FILE_NAME: usize = 200;

/// The suffix of files staged by [`ChangeSet::write`].
const STAGE_SUFFIX: &str = ".kopgen-tmp";
/// The suffix of files [`ChangeSet::write`] moved aside to delete or replace them.
const ASIDE_SUFFIX: &str = ".kopgen-del";

/// Removes `dir` and its parents while they are empty, up to `root` (kept).
fn remove_empty_dirs(mut dir: Option<&Path>, root: &Path) {
    while let Some(current) = dir {
        if current == root || !current.starts_with(root) || fs::remove_dir(current).is_err() {
            return;
        }
        dir = current.parent();
    }
}

/// A name next to `dest` that no other run uses: the process id and a counter.
fn staging_path(dest: &Path, suffix: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dest.with_file_name(format!(".{name}.{}.{n}{suffix}", std::process::id()))
}

/// Removes what a killed run staged in `dir`, and puts back what it had moved aside to delete:
/// under the project lock no other run is writing.
fn remove_stale_stages(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name.ends_with(STAGE_SUFFIX) {
            let _ = fs::remove_file(entry.path());
        } else if let Some(original) = set_aside_from(&name) {
            // A killed run's: put back where its file is missing, else left over.
            let original = dir.join(original);
            if original.exists() {
                let _ = fs::remove_file(entry.path());
            } else {
                let _ = fs::rename(entry.path(), original);
            }
        }
    }
}

/// The name a file had before [`ChangeSet::write`] moved it aside as `name`.
fn set_aside_from(name: &str) -> Option<&str> {
    let stem = name.strip_prefix('.')?.strip_suffix(ASIDE_SUFFIX)?;
    let mut parts = stem.rsplitn(3, '.');
    let (_, _, original) = (parts.next()?, parts.next()?, parts.next()?);
    Some(original)
}

/// `path` with symlinks resolved as far as it exists, and the rest appended: where a file
/// written below it lands. A link to nothing resolves to itself, never inside anything.
fn resolve(path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut absolute = PathBuf::new();
    for component in joined.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                absolute.pop();
            }
            other => absolute.push(other),
        }
    }
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        if fs::symlink_metadata(existing).is_ok() {
            let Ok(mut resolved) = fs::canonicalize(existing) else {
                return PathBuf::from("/dev/null/unresolvable").join(existing);
            };
            resolved.extend(rest.iter().rev());
            return resolved;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// Creates `dir` and its missing ancestors, remembering each one created so it can be removed again.
fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        create_dirs(parent, created)?;
    }
    if fs::symlink_metadata(dir).is_ok() {
        return Err(io::Error::other(format!(
            "{} is a file (or a link to nothing) where a directory is needed; move it away",
            dir.display()
        )));
    }
    fs::create_dir(dir)?;
    created.push(dir.to_path_buf());
    Ok(())
}

#[cfg(test)]
mod tests;
