//! The project lock: one kopgen command at a time in a project, from its first read to its last
//! write.

use std::{
    fs,
    path::{Path, PathBuf},
};

/// An exclusive lock on `root` (the directory itself, so nothing is added to the tree), held
/// until dropped; where directories cannot be opened or locked, writes go unlocked.
pub(super) fn lock(root: &Path) -> Option<fs::File> {
    if held()
        .iter()
        .any(|path| Some(path) == fs::canonicalize(root).ok().as_ref())
    {
        // This process holds the project for the whole command (see [`hold`]).
        return None;
    }
    let dir = fs::File::open(root).ok()?;
    dir.lock().ok()?;
    Some(dir)
}

/// The project directories this process holds with [`hold`].
fn held() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    static HELD: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    HELD.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A project directory held by one command from its first read to its last write, so that two
/// commands in one project take turns as transactions (read, plan, write) and neither plans from
/// what the other is about to replace. Released when dropped.
#[derive(Debug)]
pub struct Held {
    dir: Option<(fs::File, PathBuf)>,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some((_, path)) = &self.dir {
            held().retain(|p| p != path);
        }
    }
}

/// Holds `root` (an advisory lock on the directory, which every kopgen command takes) until the
/// returned value is dropped; `waiting` runs first if another command holds it. A directory
/// that does not exist yet holds nothing: no other command can be planning in it.
pub fn hold(root: &Path, waiting: impl FnOnce()) -> Held {
    let Ok(path) = fs::canonicalize(root) else {
        return Held { dir: None };
    };
    if held().contains(&path) {
        // Already held by this process (a command run from within another): the lock is
        // per open file, so taking it again would wait for ourselves.
        return Held { dir: None };
    }
    let Ok(dir) = fs::File::open(&path) else {
        return Held { dir: None };
    };
    match dir.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            waiting();
            if dir.lock().is_err() {
                return Held { dir: None };
            }
        }
        Err(fs::TryLockError::Error(_)) => return Held { dir: None },
    }
    held().push(path.clone());
    Held {
        dir: Some((dir, path)),
    }
}
