//! Finds the Rust sources to read and the module each one defines.

use std::path::{Path, PathBuf};

use walkdir::WalkDir;

use crate::regular_file::ReadError;

use super::error::ManifestError;

#[derive(Debug, Clone)]
pub struct Source {
    pub path: PathBuf,
    pub module: String,
    pub text: String,
}

/// Every `.rs` file under `paths` (files or directories), sorted, so that output never
/// depends on the order the file system lists them in. A directory is read as a crate's
/// `src/`: `lib.rs` is the crate root; `main.rs` and `bin/` (separate crates) are read only
/// when there is no `lib.rs`. A file is the root of a crate of its own, with the files its
/// `mod` declarations can reach (`blog/mod.rs` with `blog/v1.rs`; `blog.rs` with `blog/*.rs`).
///
/// Each path is its own crate: with several, each root module is named after its path
/// (`crate@src/v1.rs`), so that two files that both define a `BackupStatus` keep their own, and
/// the result does not depend on the order of the paths. A path whose files another path
/// already reads (`--paths blog/mod.rs --paths blog/v1.rs`) adds nothing: the same files give
/// the same crate however they are named on the command line.
pub fn sources(paths: &[PathBuf]) -> Result<Vec<Source>, ManifestError> {
    let mut roots: Vec<Root> = Vec::with_capacity(paths.len());
    for path in paths {
        roots.push(Root::collect(path)?);
    }
    let sets: Vec<std::collections::BTreeSet<PathBuf>> = roots
        .iter()
        .map(|r| r.files.iter().map(|f| canonical(f)).collect())
        .collect();
    // A root is left out when another one reads all of its files (the first of equals stays).
    let kept: Vec<&Root> = roots
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            !sets.iter().enumerate().any(|(j, other)| {
                j != *i && sets[*i].is_subset(other) && (sets[*i] != *other || j < *i)
            })
        })
        .map(|(_, r)| r)
        .collect();
    let mut out: Vec<Source> = Vec::new();
    let mut total: u64 = 0;
    for root in &kept {
        let label = if kept.len() == 1 {
            "crate".to_owned()
        } else {
            format!("crate@{}", root.path.display()).replace(':', "_")
        };
        for file in &root.files {
            let module = if Some(file) == root.file.as_ref() {
                label.clone()
            } else {
                module_of(&label, &root.base, file)
            };
            let source = read(file, module)?;
            total += source.text.len() as u64;
            if total > MAX_TOTAL_SOURCE_BYTES {
                return Err(ManifestError::Io {
                    path: file.display().to_string(),
                    message: format!(
                        "the sources read reach {total} bytes here, over kopgen's limit of {MAX_TOTAL_SOURCE_BYTES} bytes for one run; pass only the API's files with --paths"
                    ),
                });
            }
            out.push(source);
        }
    }
    Ok(out)
}

/// `--paths` as crates: a path that is a crate's directory, or lies below its `src/`, is read
/// as that crate's `src/` (so that `use crate::labels;` in `src/api/` resolves, and a file no
/// `mod` declares is not read as a root), and of that crate only the kinds below the paths
/// given are derived (a crate's directory stands for its `src/`). Other paths (loose files, a
/// crate's `tests/`) are read as they are.
pub fn crate_roots(
    paths: &[PathBuf],
) -> Result<(Vec<PathBuf>, super::options::Only), ManifestError> {
    let mut roots: Vec<PathBuf> = Vec::new();
    let mut only = super::options::Only::default();
    for path in paths {
        given_path(path)?;
        let crate_src = super::versions::crate_manifest(path)
            .and_then(|manifest| manifest.parent().map(|dir| dir.join("src")))
            .filter(|src| src.join("lib.rs").is_file() || src.join("main.rs").is_file());
        let Some(src) = crate_src else {
            roots.push(path.clone());
            continue;
        };
        let (given, src_canonical) = (canonical(path), canonical(&src));
        let is_crate_dir = src.parent().is_some_and(|dir| given == canonical(dir));
        only.paths.push(if is_crate_dir {
            src_canonical.clone()
        } else {
            given
        });
        if !only.crates.contains(&src_canonical) {
            // Named as the user named the path: relative to the current directory if it was.
            let shown = std::env::current_dir()
                .ok()
                .map(|cwd| canonical(&cwd))
                .filter(|_| path.is_relative())
                .and_then(|cwd| src_canonical.strip_prefix(&cwd).ok().map(Path::to_path_buf))
                .map(|relative| match relative.as_os_str().is_empty() {
                    true => PathBuf::from("."),
                    false => relative,
                })
                .unwrap_or(src);
            only.crates.push(src_canonical);
            roots.push(shown);
        }
    }
    Ok((roots, only))
}

/// A path named with `--paths` is read, or is a directory of what is read: a FIFO or device
/// would block the read or never end, and a path that is not there is a typo, never "no kinds".
fn given_path(path: &Path) -> Result<(), ManifestError> {
    let io = |message: String| ManifestError::Io {
        path: path.display().to_string(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => io(
            "no such file or directory; --paths takes the Rust files or directories to read".into(),
        ),
        _ => io(e.to_string()),
    })?;
    if meta.is_file() || meta.is_dir() {
        return Ok(());
    }
    Err(io(
        "not a regular file (a FIFO, socket or device); kopgen reads Rust source files only".into(),
    ))
}

/// The crates of a `src/` directory besides its library, which [`sources`] leaves out when
/// `lib.rs` is there: `main.rs`, `bin/*.rs` and `bin/*/main.rs`, each read as its own crate.
pub fn binary_crates(src: &Path) -> Result<Vec<Vec<Source>>, ManifestError> {
    if !src.join("lib.rs").is_file() {
        return Ok(Vec::new());
    }
    let mut roots = vec![src.join("main.rs")];
    if let Ok(entries) = std::fs::read_dir(src.join("bin")) {
        let mut bins: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .map(|p| if p.is_dir() { p.join("main.rs") } else { p })
            .filter(|p| p.extension().is_some_and(|x| x == "rs"))
            .collect();
        bins.sort();
        roots.extend(bins);
    }
    roots
        .into_iter()
        .filter(|root| root.is_file())
        .map(|root| sources(&[root]))
        .collect()
}

/// One `--paths` entry and the files it reads.
struct Root {
    path: PathBuf,
    /// The root file, when the path is a file.
    file: Option<PathBuf>,
    /// The directory module paths are relative to.
    base: PathBuf,
    /// The files read, the root file first, the rest sorted.
    files: Vec<PathBuf>,
}

impl Root {
    fn collect(path: &Path) -> Result<Self, ManifestError> {
        if path.is_file() {
            // A `mod.rs`-like root's modules are its siblings; `blog.rs`'s are in `blog/`.
            let parent = path.parent().unwrap_or(Path::new("."));
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            let mod_rs = matches!(stem, "mod" | "lib" | "main");
            let base = if mod_rs {
                parent.to_path_buf()
            } else {
                parent.join(stem)
            };
            let mut files = vec![path.to_path_buf()];
            if base.is_dir() {
                let is_root_file = |f: &PathBuf| {
                    f.parent() == Some(base.as_path())
                        && f.file_stem()
                            .and_then(|s| s.to_str())
                            .is_some_and(|s| matches!(s, "mod" | "lib" | "main"))
                };
                let boundary = project_dir(&base);
                let root_file = canonical(path);
                files.extend(
                    walk(&base, &boundary, false)?
                        .into_iter()
                        .filter(|f| !is_root_file(f) && canonical(f) != root_file),
                );
            }
            return Ok(Self {
                path: path.to_path_buf(),
                file: Some(path.to_path_buf()),
                base,
                files,
            });
        }
        if !path.is_dir() {
            return Err(ManifestError::Io {
                path: path.display().to_string(),
                message: "no such file or directory; run kopgen manifests in a project (it reads src/) or pass --paths".into(),
            });
        }
        let has_lib = path.join("lib.rs").is_file();
        let files = walk(path, &project_dir(path), has_lib)?;
        Ok(Self {
            path: path.to_path_buf(),
            file: None,
            base: path.to_path_buf(),
            files,
        })
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The `.rs` files under `root`, sorted (without `main.rs` and `bin/` when `skip_bins`).
/// Symlinks are followed (walkdir stops at loops), as long as they stay in `boundary`.
fn walk(root: &Path, boundary: &Path, skip_bins: bool) -> Result<Vec<PathBuf>, ManifestError> {
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in WalkDir::new(root).follow_links(true).sort_by_file_name() {
        let entry = entry.map_err(|e| {
            let path = e
                .path()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let message = match (e.loop_ancestor(), e.io_error()) {
                (Some(ancestor), _) => format!(
                    "a symlink loop (back to {}); remove the link",
                    ancestor.display()
                ),
                (None, Some(io)) if io.kind() == std::io::ErrorKind::NotFound => {
                    "a symlink to nothing; remove the link or restore its target".into()
                }
                _ => e.to_string(),
            };
            ManifestError::Io { path, message }
        })?;
        let path = entry.path();
        if entry.path_is_symlink() {
            let target = std::fs::canonicalize(path).ok();
            if !target.is_some_and(|t| t.starts_with(boundary)) {
                return Err(ManifestError::Io {
                    path: path.display().to_string(),
                    message: format!(
                        "a symlink that leads outside the project ({}); kopgen reads only the project's files",
                        boundary.display()
                    ),
                });
            }
        }
        if entry.file_type().is_file()
            && path.extension().is_some_and(|x| x == "rs")
            && !(skip_bins && (is_under(root, path, "bin") || path == root.join("main.rs")))
        {
            files.push(entry.into_path());
        }
    }
    files.sort();
    Ok(files)
}

/// The directory a root's symlinks must stay in: its crate's (the nearest `Cargo.toml` above
/// it), else the root itself.
fn project_dir(root: &Path) -> PathBuf {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    root.ancestors()
        .find(|dir| dir.join("Cargo.toml").is_file())
        .unwrap_or(&root)
        .to_path_buf()
}

fn is_under(root: &Path, path: &Path, dir: &str) -> bool {
    path.strip_prefix(root)
        .is_ok_and(|rel| rel.starts_with(dir))
}

/// The largest source file kopgen reads: far beyond any hand-written module (the largest
/// files of k8s-openapi are under 200 KiB), and small enough that parsing it stays quick.
pub const MAX_SOURCE_BYTES: u64 = 8 << 20;

/// The most source one run reads: memory grows with the input (syn's tree is tens of times
/// the text), so the bound is per run, not only per file.
pub const MAX_TOTAL_SOURCE_BYTES: u64 = 24 << 20;

fn read(path: &Path, module: String) -> Result<Source, ManifestError> {
    let io = |message: String| ManifestError::Io {
        path: path.display().to_string(),
        message,
    };
    let bytes = crate::regular_file::read_at_most(path, MAX_SOURCE_BYTES).map_err(|e| match e {
        ReadError::NotRegular => io(
            "not a regular file (a FIFO, socket or device); kopgen reads Rust source files only"
                .into(),
        ),
        ReadError::TooLarge { size, .. } => io(format!(
            "{size} bytes, over kopgen's limit of {MAX_SOURCE_BYTES} bytes for a source file; split the module"
        )),
        ReadError::Io(e) => io(e.to_string()),
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        // Where the first invalid byte is, as rustc would report it.
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
        let column = valid.len() - valid.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1) + 1;
        ManifestError::Source(super::error::SourceError {
            file: path.to_path_buf(),
            line,
            column,
            message: "the file is not UTF-8, as Rust source must be".into(),
            help: Some("save the file as UTF-8".into()),
            unsupported: false,
        })
    })?;
    Ok(Source {
        path: path.to_path_buf(),
        module,
        text,
    })
}

/// The module path of a file inside a crate's `src/` directory, under the crate root `root`
/// (`crate`): `src/lib.rs` → `crate`, `src/api/mod.rs` → `crate::api`, `src/api/apps.rs` →
/// `crate::api::apps`.
pub fn module_of(root: &str, src_root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src_root).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.strip_suffix(".rs").unwrap_or(&last).to_owned();
        if !matches!(stem.as_str(), "mod" | "lib" | "main") {
            parts.push(stem);
        }
    }
    let mut module = String::from(root);
    for part in parts {
        module.push_str("::");
        // As the file is named: `x-y.rs` is no module `mod x_y;` can declare.
        module.push_str(&part);
    }
    module
}
