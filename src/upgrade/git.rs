//! The one thing an upgrade asks of git: whether the project has uncommitted changes. A
//! project outside a git repository, or a machine without git, has none to lose track of.

use std::{path::Path, process::Command};

/// The uncommitted files below `root` (at most a few, for the message), if git tracks it.
pub fn uncommitted(root: &Path) -> Option<String> {
    uncommitted_among(root, &[Path::new(".")])
}

/// Which of `paths` (relative to `root`) have uncommitted changes, or are not committed at all
/// (at most a few, for the message), if git tracks `root`.
pub fn uncommitted_among(root: &Path, paths: &[&Path]) -> Option<String> {
    if paths.is_empty() {
        return None;
    }
    // `core.fsmonitor` names a program the repository's config chooses: git status would run
    // it, so it is turned off (kopgen runs no code a cloned repository picks).
    let output = Command::new("git")
        .args(["-c", "core.fsmonitor=false"])
        .args(["status", "--porcelain", "--untracked-files=normal", "--"])
        .args(paths)
        .current_dir(root)
        .output()
        .ok()?;
    if !output.status.success() {
        // Not a repository (or git cannot read it): nothing to protect.
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let files: Vec<&str> = text.lines().map(|l| l.get(3..).unwrap_or(l)).collect();
    if files.is_empty() {
        return None;
    }
    let shown = files.iter().take(5).copied().collect::<Vec<_>>().join(", ");
    Some(if files.len() > 5 {
        format!("{shown} and {} more", files.len() - 5)
    } else {
        shown
    })
}
