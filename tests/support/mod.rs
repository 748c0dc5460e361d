//! A small harness that reads like a user's session: make a directory, run `kopgen` in it,
//! look at what it printed and what it wrote.
#![allow(dead_code)]

pub mod scan;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Command, Output},
};

/// A fixed clock for copyright years, so snapshots do not change on New Year's Day.
pub const SOURCE_DATE_EPOCH: &str = "1796083200"; // 2026-12-01

pub struct Session {
    dir: tempfile::TempDir,
}

pub struct Run {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Session {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn write(&self, rel: &str, contents: &str) {
        let path = self.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, contents).expect("write");
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    pub fn read_bytes(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// Runs `kopgen args...` with the session directory as working directory.
    pub fn kopgen(&self, args: &[&str]) -> Run {
        run_kopgen(self.path(), args)
    }

    /// Runs kopgen and asserts it succeeded.
    pub fn ok(&self, args: &[&str]) -> Run {
        let run = self.kopgen(args);
        assert_eq!(
            run.status, 0,
            "kopgen {args:?} failed:\n{}\n{}",
            run.stdout, run.stderr
        );
        run
    }

    /// Runs kopgen, asserts it failed without touching the tree, and returns its stderr.
    pub fn fails_cleanly(&self, args: &[&str]) -> String {
        fails_cleanly_in(self.path(), args)
    }

    /// Scaffolds a project named `demo` in directory `demo`, as a user would.
    pub fn init_demo(&self, extra: &[&str]) -> PathBuf {
        let mut args = vec![
            "init",
            "--path",
            "demo",
            "--project-name",
            "demo",
            "--domain",
            "example.com",
        ];
        args.extend_from_slice(extra);
        self.ok(&args);
        self.join("demo")
    }
}

/// The kind most tests scaffold.
pub const BLOG: &[&str] = &["--group", "apps", "--version", "v1alpha1", "--kind", "Blog"];

/// Runs `kopgen create api <args>` in `project` and asserts that it succeeded.
pub fn create_api_ok(project: &Path, args: &[&str]) -> Run {
    let mut all = vec!["create", "api"];
    all.extend_from_slice(args);
    let run = run_kopgen(project, &all);
    assert_eq!(
        run.status, 0,
        "create api {args:?} failed:\n{}\n{}",
        run.stdout, run.stderr
    );
    run
}

pub fn run_kopgen(cwd: &Path, args: &[&str]) -> Run {
    let output: Output = Command::new(env!("CARGO_BIN_EXE_kopgen"))
        .args(args)
        .current_dir(cwd)
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
        .output()
        .expect("kopgen runs");
    Run {
        status: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs `kopgen args...` in `dir`, asserts it failed, did not panic and left the tree below
/// `dir` byte-identical, and returns its stderr.
pub fn fails_cleanly_in(dir: &Path, args: &[&str]) -> String {
    let before = tree(dir);
    let run = run_kopgen(dir, args);
    assert_ne!(
        run.status, 0,
        "kopgen {args:?} should have failed:\n{}",
        run.stdout
    );
    assert!(
        !run.stderr.contains("panicked"),
        "kopgen panicked: {}",
        run.stderr
    );
    assert!(
        tree(dir) == before,
        "kopgen {args:?} changed the tree although it failed"
    );
    run.stderr
}

/// Every file below `root` with its bytes, and every directory (as `None`), by relative path.
pub fn tree(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        // Links are recorded as links (never followed: a link may loop), with their target.
        match entry.file_type() {
            Ok(t) if t.is_symlink() => {
                let target = std::fs::read_link(&path).unwrap_or_default();
                out.insert(format!("{rel} -> {}", target.display()), Some(Vec::new()));
            }
            Ok(t) if t.is_dir() => {
                out.insert(format!("{rel}/"), None);
                walk(root, &path, out);
            }
            _ => {
                out.insert(rel, std::fs::read(&path).ok());
            }
        }
    }
}

/// Relative paths of the files below `root`, one per line, sorted.
pub fn file_list(root: &Path) -> String {
    tree(root)
        .into_iter()
        .filter(|(path, contents)| contents.is_some() && !path.starts_with("target/"))
        .map(|(path, _)| path)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where generated projects build: one cargo target directory shared by every generated
/// project and every test run, so kube and k8s-openapi compile once per machine.
pub fn shared_target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("KOPGEN_TEST_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    home.join(".cache/kopgen/target")
}

/// Runs `cargo args...` inside a generated project with the shared target directory.
pub fn cargo(project: &Path, args: &[&str]) -> Output {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        .current_dir(project)
        .env("CARGO_TARGET_DIR", shared_target_dir())
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs")
}

/// Asserts `cargo args...` succeeds in `project`, printing its output otherwise.
pub fn cargo_ok(project: &Path, args: &[&str]) {
    let output = cargo(project, args);
    assert!(
        output.status.success(),
        "cargo {args:?} failed in {}:\n{}\n{}",
        project.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Whether an external tool is on PATH; tests that need it print a notice and skip otherwise.
pub fn have(tool: &str) -> bool {
    Command::new(tool).arg("--help").output().is_ok()
}
