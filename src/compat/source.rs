//! Where a revision of the CRDs comes from: a file or directory of YAML, a git revision
//! (`REF` or git's own `REF:path`), or the cluster in the kubeconfig (`kube://`, which also
//! gives `status.storedVersions`).

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Command,
};

use serde::Deserialize as _;
use serde_json::Value;

/// The most a single CRD file may hold: etcd refuses a CRD well before this.
const MAX_FILE: u64 = crate::regular_file::MAX_BYTES;

/// A revision's CRDs by name, each with where it was read.
pub type Revision = BTreeMap<String, (Value, String)>;

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{0}")]
    Read(String),
    #[error("{file}:{line}: {message}")]
    Yaml {
        file: String,
        line: usize,
        message: String,
    },
}

/// Reads the revision `spec` names. `default_path`: the directory a bare git `REF` means, as
/// a path relative to `cwd` (a project's `config/crd/bases`).
pub fn load(spec: &str, default_path: Option<&Path>, cwd: &Path) -> Result<Revision, SourceError> {
    if spec == "kube://" || spec == "kube:" {
        return cluster();
    }
    if let Some(path) = spec.strip_prefix("file://") {
        return files(&cwd.join(path));
    }
    if !spec.starts_with("git://") && cwd.join(spec).exists() {
        return files(&cwd.join(spec));
    }
    let spec = spec.strip_prefix("git://").unwrap_or(spec);
    let (rev, path) = match spec.split_once(':') {
        Some((rev, path)) => (rev, PathBuf::from(path)),
        None => match default_path {
            Some(path) => (spec, path.to_path_buf()),
            None => {
                return Err(SourceError::Read(format!(
                    "{spec:?} is neither a file nor a directory; for a git revision name the path too, as `{spec}:config/crd/bases`"
                )));
            }
        },
    };
    git(rev, &path, cwd)
}

/// Every CRD in a YAML file, or in the `.yaml`/`.yml` files under a directory.
fn files(path: &Path) -> Result<Revision, SourceError> {
    let mut revision = Revision::new();
    let paths: Vec<PathBuf> = if path.is_dir() {
        let mut found: Vec<PathBuf> = walkdir::WalkDir::new(path)
            .follow_links(false)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(walkdir::DirEntry::into_path)
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
            .collect();
        found.sort();
        found
    } else {
        vec![path.to_path_buf()]
    };
    for file in paths {
        let name = file.display().to_string();
        let text = crate::regular_file::read_to_string(&file)
            .map_err(|e| SourceError::Read(format!("cannot read {name}: {e}")))?;
        add(&mut revision, &name, &text)?;
    }
    Ok(revision)
}

/// The CRD documents of one YAML text, added to `revision`.
fn add(revision: &mut Revision, origin: &str, text: &str) -> Result<(), SourceError> {
    if let Err((line, message)) = crate::yaml::check_depth(text) {
        let file = origin.to_owned();
        return Err(SourceError::Yaml {
            file,
            line,
            message,
        });
    }
    for document in serde_yaml::Deserializer::from_str(text) {
        let value = Value::deserialize(document).map_err(|e| SourceError::Yaml {
            file: origin.to_owned(),
            line: e.location().map_or(0, |l| l.line()),
            message: e.to_string(),
        })?;
        insert(revision, origin, value)?;
    }
    Ok(())
}

fn insert(revision: &mut Revision, origin: &str, value: Value) -> Result<(), SourceError> {
    if value["kind"] != "CustomResourceDefinition" {
        return Ok(());
    }
    let name = value["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if let Some((_, first)) = revision.get(&name) {
        return Err(SourceError::Read(format!(
            "CRD {name} is defined twice: in {first} and in {origin}"
        )));
    }
    revision.insert(name, (value, origin.to_owned()));
    Ok(())
}

/// The CRDs under `path` at git revision `rev` of the repository holding `cwd`.
fn git(rev: &str, path: &Path, cwd: &Path) -> Result<Revision, SourceError> {
    // A revision is never an option of git's.
    if rev.is_empty() || rev.starts_with('-') {
        return Err(SourceError::Read(format!("{rev:?} is not a git revision")));
    }
    let commit = run_git(
        cwd,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ],
    )
    .map_err(|_| {
        SourceError::Read(format!(
            "{rev:?} is neither a file or directory nor a git revision of the repository at {}",
            cwd.display()
        ))
    })?;
    let commit = commit.trim();
    let full = if path.is_absolute() {
        let top = run_git(cwd, &["rev-parse", "--show-toplevel"]).map_err(SourceError::Read)?;
        let top =
            std::fs::canonicalize(top.trim()).map_err(|e| SourceError::Read(e.to_string()))?;
        // The directory may not exist any more in the work tree: canonicalize what does.
        let (existing, rest) = existing_ancestor(path);
        let existing =
            std::fs::canonicalize(existing).map_err(|e| SourceError::Read(e.to_string()))?;
        existing
            .join(rest)
            .strip_prefix(&top)
            .map_err(|_| {
                SourceError::Read(format!(
                    "{} is outside the git repository at {}",
                    path.display(),
                    top.display()
                ))
            })?
            .display()
            .to_string()
    } else if path.starts_with(".") || path.starts_with("..") {
        // As in git's `REF:./path`: relative to the current directory.
        let prefix = run_git(cwd, &["rev-parse", "--show-prefix"]).map_err(SourceError::Read)?;
        normalize(&Path::new(prefix.trim()).join(path))?
    } else {
        // As in git's `REF:path`: relative to the repository's top.
        path.display().to_string()
    };
    let full = full.trim_end_matches('/').to_owned();
    let listing = run_git(
        cwd,
        &[
            "ls-tree",
            "-r",
            "-z",
            "--full-tree",
            "--name-only",
            commit,
            "--",
            &full,
        ],
    )
    .map_err(SourceError::Read)?;
    let mut revision = Revision::new();
    for file in listing
        .split('\0')
        .filter(|f| f.ends_with(".yaml") || f.ends_with(".yml"))
    {
        let object = format!("{commit}:{file}");
        let size: u64 = run_git(cwd, &["cat-file", "-s", &object])
            .map_err(SourceError::Read)?
            .trim()
            .parse()
            .unwrap_or(u64::MAX);
        if size > MAX_FILE {
            return Err(SourceError::Read(format!(
                "{rev}:{file} is {size} bytes, more than a CRD file can be"
            )));
        }
        let text = run_git(cwd, &["cat-file", "blob", &object]).map_err(SourceError::Read)?;
        add(&mut revision, &format!("{rev}:{file}"), &text)?;
    }
    Ok(revision)
}

fn run_git(cwd: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!("git {} failed: {}", args.join(" "), stderr.trim()));
    }
    String::from_utf8(out.stdout).map_err(|_| format!("git {} printed non-UTF-8", args.join(" ")))
}

/// Every CRD of the cluster in the kubeconfig, with its `status.storedVersions`.
fn cluster() -> Result<Revision, SourceError> {
    let out = Command::new("kubectl")
        .args(["get", "customresourcedefinitions", "-o", "json"])
        .output()
        .map_err(|e| SourceError::Read(format!("cannot run kubectl (needed for kube://): {e}")))?;
    if !out.status.success() {
        return Err(SourceError::Read(format!(
            "kubectl get customresourcedefinitions failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let list: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| SourceError::Read(format!("kubectl printed no CRD list: {e}")))?;
    let mut revision = Revision::new();
    for item in list["items"].as_array().into_iter().flatten() {
        let mut item = item.clone();
        item["kind"] = Value::from("CustomResourceDefinition");
        insert(&mut revision, "the cluster", item)?;
    }
    Ok(revision)
}

/// `a/b/../c/./d` as `a/c/d`; an error if it climbs out of the repository.
fn normalize(path: &Path) -> Result<String, SourceError> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in path.components() {
        match component {
            std::path::Component::Normal(part) => parts.push(part),
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir if parts.pop().is_some() => {}
            _ => {
                return Err(SourceError::Read(format!(
                    "{} is outside the git repository",
                    path.display()
                )));
            }
        }
    }
    Ok(parts
        .iter()
        .map(|p| p.to_string_lossy())
        .collect::<Vec<_>>()
        .join("/"))
}

/// The longest ancestor of `path` that exists, and the rest of `path` below it.
fn existing_ancestor(path: &Path) -> (&Path, PathBuf) {
    let mut existing = path;
    while !existing.exists() {
        match existing.parent() {
            Some(parent) => existing = parent,
            None => break,
        }
    }
    let rest = path
        .strip_prefix(existing)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    (existing, rest)
}
