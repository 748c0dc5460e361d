//! Where a revision of the CRDs comes from: a file or directory of YAML, a git revision
//! (`REF` or git's own `REF:path`), or the cluster in the kubeconfig (`kube://`, which also
//! gives `status.storedVersions`).

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Command,
};

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
    let documents: Vec<Value> = crate::yaml::documents(text).map_err(|e| SourceError::Yaml {
        file: origin.to_owned(),
        line: e.line,
        message: e.message,
    })?;
    for value in documents {
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
    if name.is_empty() {
        return Err(SourceError::Read(format!(
            "a CustomResourceDefinition in {origin} has no metadata.name; give it its name (<plural>.<group>)"
        )));
    }
    if let Some((_, first)) = revision.get(&name) {
        let shown = shown(&name);
        return Err(SourceError::Read(match first == origin {
            true => format!("CRD {shown} is defined twice in {origin}"),
            false => format!("CRD {shown} is defined twice: in {first} and in {origin}"),
        }));
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
    let files: Vec<&str> = listing
        .split('\0')
        .filter(|f| f.ends_with(".yaml") || f.ends_with(".yml"))
        .collect();
    if let Some(odd) = files.iter().find(|f| f.contains('\n')) {
        return Err(SourceError::Read(format!(
            "{rev}:{} has a newline in its name; rename it",
            shown(odd)
        )));
    }
    // Two git processes in all, whatever the number of files: their sizes, then their bytes.
    let objects: String = files.iter().map(|f| format!("{commit}:{f}\n")).collect();
    let sizes = run_git_with_input(cwd, &["cat-file", "--batch-check=%(objectsize)"], &objects)
        .map_err(SourceError::Read)?;
    let sizes = String::from_utf8_lossy(&sizes);
    for (file, size) in files.iter().zip(sizes.lines()) {
        let size: u64 = size.trim().parse().unwrap_or(u64::MAX);
        if size > MAX_FILE {
            return Err(SourceError::Read(format!(
                "{rev}:{file} is {size} bytes, more than a CRD file can be"
            )));
        }
    }
    let blobs =
        run_git_with_input(cwd, &["cat-file", "--batch"], &objects).map_err(SourceError::Read)?;
    let mut rest = blobs.as_slice();
    let mut revision = Revision::new();
    for file in files {
        let name = format!("{rev}:{file}");
        let (text, after) = next_blob(rest).ok_or_else(|| {
            SourceError::Read(format!("git cat-file gave no contents for {name}"))
        })?;
        rest = after;
        let text = std::str::from_utf8(text)
            .map_err(|_| SourceError::Read(format!("{name} is not UTF-8")))?;
        add(&mut revision, &name, text)?;
    }
    Ok(revision)
}

/// The first object of `git cat-file --batch` output (`<oid> <type> <size>\n<bytes>\n`), and
/// what follows it.
fn next_blob(output: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = output.iter().position(|b| *b == b'\n')?;
    let header = std::str::from_utf8(&output[..end]).ok()?;
    let size: usize = header.rsplit(' ').next()?.parse().ok()?;
    let body = output.get(end + 1..end + 1 + size)?;
    let rest = output.get(end + 2 + size..).unwrap_or_default();
    Some((body, rest))
}

/// `git args` with `input` on its standard input (written on a thread, so that neither pipe
/// fills while the other waits), and what it printed.
fn run_git_with_input(cwd: &Path, args: &[&str], input: &str) -> Result<Vec<u8>, String> {
    use std::process::Stdio;
    let mut child = Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run git: {e}"))?;
    let writer = child.stdin.take().map(|mut stdin| {
        let input = input.to_owned();
        std::thread::spawn(move || {
            let _ = std::io::Write::write_all(&mut stdin, input.as_bytes());
        })
    });
    let out = child
        .wait_with_output()
        .map_err(|e| format!("git {}: {e}", args.join(" ")))?;
    if let Some(writer) = writer {
        let _ = writer.join();
    }
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!("git {} failed: {}", args.join(" "), stderr.trim()));
    }
    Ok(out.stdout)
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

/// The most of kubectl's answer `kube://` reads: every CRD of a cluster with thousands of
/// them, as JSON. A cluster with more is compared file by file instead.
const MAX_CLUSTER: u64 = 256 << 20;

/// How long `kube://` waits for the API server's answer.
const CLUSTER_TIMEOUT: &str = "60s";

/// Every CRD of the cluster in the kubeconfig, with its `status.storedVersions`.
fn cluster() -> Result<Revision, SourceError> {
    let mut child = Command::new("kubectl")
        .args(["get", "customresourcedefinitions", "-o", "json"])
        .arg(format!("--request-timeout={CLUSTER_TIMEOUT}"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| SourceError::Read(format!("cannot run kubectl (needed for kube://): {e}")))?;
    // Read on a thread, so that a kubectl that fills its error pipe never blocks.
    let stderr = child.stderr.take().map(|mut pipe| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = std::io::Read::read_to_end(
                &mut std::io::Read::take(&mut pipe, 64 << 10),
                &mut text,
            );
            String::from_utf8_lossy(&text).into_owned()
        })
    });
    let mut json = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        let read = std::io::Read::read_to_end(
            &mut std::io::Read::take(stdout, MAX_CLUSTER + 1),
            &mut json,
        );
        if read.is_err() || json.len() as u64 > MAX_CLUSTER {
            let _ = child.kill();
            let _ = child.wait();
            return Err(SourceError::Read(format!(
                "the cluster's CRDs are more than {} MiB as JSON: compare against files instead \
                 (kubectl get crd NAME -o yaml > old.yaml)",
                MAX_CLUSTER >> 20
            )));
        }
    }
    let status = child
        .wait()
        .map_err(|e| SourceError::Read(format!("kubectl: {e}")))?;
    let stderr = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    if !status.success() {
        return Err(SourceError::Read(format!(
            "kubectl get customresourcedefinitions failed: {}",
            stderr.trim()
        )));
    }
    let list: Value = serde_json::from_slice(&json)
        .map_err(|e| SourceError::Read(format!("kubectl printed no CRD list: {e}")))?;
    drop(json);
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

/// A name read from input, printed so that it cannot forge output: quoted and escaped when it
/// holds anything but visible characters (a newline, an ANSI escape, a bidi control).
pub fn shown(name: &str) -> std::borrow::Cow<'_, str> {
    let plain = name
        .chars()
        .all(|c| !c.is_control() && !c.is_whitespace() && !is_format(c));
    match plain && !name.is_empty() {
        true => name.into(),
        false => format!("{:?}", name).into(),
    }
}

/// Unicode's invisible format characters that reorder or hide text (bidi controls, zero
/// widths), which `{:?}` escapes.
fn is_format(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}
