//! Keeps generated Rust rustfmt-clean when names are unusually long.
//!
//! Templates are laid out the way rustfmt formats them for names of ordinary length, so
//! scaffolding needs no formatter and stays fast. A very long kind or group name pushes some
//! lines past rustfmt's 100 columns; only then, and only for those files, kopgen runs the
//! toolchain's `rustfmt` once over all of them. Without rustfmt on PATH the code is left as
//! rendered: it still compiles, and `make fmt` fixes the layout.

use std::{
    io::Write,
    path::PathBuf,
    process::{Command, Stdio},
};

use crate::changeset::ChangeSet;

/// rustfmt's default `max_width`.
const MAX_WIDTH: usize = 100;

/// Formats, in place in the change set, every pending `.rs` file with a line over 100 columns.
pub fn format_long_lines(changes: &mut ChangeSet) {
    let long: Vec<(PathBuf, String)> = changes
        .changes()
        .into_iter()
        .filter(|c| c.path.extension().is_some_and(|e| e == "rs"))
        .filter(|c| c.contents.lines().any(needs_wrapping))
        .map(|c| (c.path.clone(), c.contents.clone()))
        .collect();
    if long.is_empty() {
        return;
    }
    if let Some(formatted) = run_rustfmt(&long) {
        for (path, text) in formatted {
            changes.put(path, text);
        }
    }
}

/// `text` (Rust) as scaffolding writes it: formatted if a line is over 100 columns, and
/// rustfmt is there.
pub fn as_written(text: String) -> String {
    if !text.lines().any(needs_wrapping) {
        return text;
    }
    format_one(&text).unwrap_or(text)
}

/// A code line over rustfmt's width; comments are exempt, since rustfmt leaves them alone.
fn needs_wrapping(line: &str) -> bool {
    line.chars().count() > MAX_WIDTH && !line.trim_start().starts_with("//")
}

/// Formats each file through rustfmt's standard input (so `mod foo;` declarations are not
/// followed); `None` if rustfmt is missing or rejects any file.
fn run_rustfmt(files: &[(PathBuf, String)]) -> Option<Vec<(PathBuf, String)>> {
    files
        .iter()
        .map(|(path, text)| format_one(text).map(|formatted| (path.clone(), formatted)))
        .collect()
}

fn format_one(text: &str) -> Option<String> {
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2024", "--emit", "stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let input = text.to_owned();
    // Write from another thread so a large output cannot deadlock against our write.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().ok()?;
    writer.join().ok()?.ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8(output.stdout).ok()
}
