//! What an incremental `kopgen manifests` run keeps between runs: each source's content hash,
//! the index's names and structure (so unchanged files need not be parsed), and per CRD its
//! output, lint findings and the files its derivation read.
//!
//! A CRD is reused only when none of the files it read changed and every file's structure
//! (names, `use`s, modules) is unchanged, so that name resolution is the same. Anything else —
//! a different kopgen binary, options or file list, a file that no longer parses, a cache that
//! does not read back — falls back to deriving everything, which is always correct. The cache is
//! an optimisation only: losing it costs one full run.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{
    Located, Options, Output,
    discover::Source,
    index::{FileSet, Structure},
    lint,
};

const MAGIC: &[u8] = b"kopgen-manifests-cache 2\n";

/// The blob file may hold this much more than its live outputs before it is rewritten.
const SLACK: usize = 1 << 20;

/// The state of the last successful run.
#[derive(Serialize, Deserialize)]
pub struct State {
    /// The kopgen build and options that produced it: another build or option set starts over.
    pub key: String,
    /// Per source, in discovery order: path, module, content hash.
    pub sources: Vec<(PathBuf, String, u64)>,
    pub structure: Structure,
    pub kinds: Vec<Kind>,
    /// Length of the blob file this state was written with. The blob (a file beside the state,
    /// so that reading the state does not unescape every CRD) holds the outputs' contents; a
    /// run appends the outputs it derived and rewrites the file only when it has grown well
    /// past its live contents, so that a run after one edit writes one CRD, not all of them.
    pub blob_len: usize,
    /// The blob file's contents, as read.
    #[serde(skip)]
    pub blob: Vec<u8>,
}

/// One CRD of the last run.
#[derive(Clone, Serialize, Deserialize)]
pub struct Kind {
    pub group: String,
    pub kind: String,
    /// Its versions: the spec struct's item and the version, in the order they were merged.
    pub versions: Vec<(usize, String)>,
    /// The files its derivation read.
    pub deps: FileSet,
    pub path: PathBuf,
    /// Where its output is in the blob, and the output's hash: a blob that does not match
    /// (damaged, or written by a run whose state was then lost) is never used.
    pub start: usize,
    pub len: usize,
    pub hash: u64,
    pub crd_name: String,
    pub findings: Vec<Finding>,
}

/// A lint finding, with its rule by name (the rule table holds the static strings).
#[derive(Clone, Serialize, Deserialize)]
pub struct Finding {
    pub severity: lint::Severity,
    pub rule: String,
    pub version: String,
    pub path: Vec<String>,
    pub message: String,
    pub crd: String,
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl Finding {
    pub fn from_located(located: &Located) -> Self {
        Self {
            severity: located.finding.severity,
            rule: located.finding.rule.to_owned(),
            version: located.finding.version.clone(),
            path: located.finding.path.clone(),
            message: located.finding.message.clone(),
            crd: located.crd.clone(),
            file: located.file.clone(),
            line: located.line,
            column: located.column,
        }
    }

    /// The finding, or `None` if its rule is not one this build knows.
    pub fn to_located(&self) -> Option<Located> {
        let (rule, fix) = lint::rule_named(&self.rule)?;
        Some(Located {
            finding: lint::Finding {
                severity: self.severity,
                rule,
                version: self.version.clone(),
                path: self.path.clone(),
                message: self.message.clone(),
                fix,
            },
            crd: self.crd.clone(),
            file: self.file.clone(),
            line: self.line,
            column: self.column,
        })
    }
}

impl Kind {
    /// Its output, or `None` if the blob does not hold it.
    pub fn output(&self, blob: &[u8]) -> Option<Output> {
        let bytes = blob.get(self.start..self.start.checked_add(self.len)?)?;
        if content_hash_bytes(bytes) != self.hash {
            return None;
        }
        Some(Output {
            path: self.path.clone(),
            contents: std::str::from_utf8(bytes).ok()?.to_owned(),
        })
    }

    /// Its output and located findings, as the run that derived it returned them, or `None` if
    /// the blob does not hold the output or a finding's rule is unknown to this build.
    pub fn restore(&self, blob: &[u8]) -> Option<(Output, Vec<Located>)> {
        let findings = self
            .findings
            .iter()
            .map(Finding::to_located)
            .collect::<Option<Vec<_>>>()?;
        Some((self.output(blob)?, findings))
    }

    /// Whether its derivation read any file in `changed`.
    pub fn reads_any(&self, changed: &FileSet) -> bool {
        self.deps.intersects(changed)
    }
}

/// The content hash of a source file or an output.
pub fn content_hash(text: &str) -> u64 {
    content_hash_bytes(text.as_bytes())
}

fn content_hash_bytes(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

fn blob_path(path: &Path) -> PathBuf {
    path.with_extension("blob")
}

/// Identifies this kopgen build and the options: a cache written by another build (whose
/// derivation may differ) or with other options is not used.
pub fn key(options: &Options) -> String {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| {
            let modified = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{}:{modified}", m.len())
        })
        .unwrap_or_default();
    format!("{} {exe} {options:?}", env!("CARGO_PKG_VERSION"))
}

/// Per source: path, module and content hash, as [`State::sources`] holds them.
pub fn fingerprint(sources: &[Source]) -> Vec<(PathBuf, String, u64)> {
    sources
        .iter()
        .map(|s| (s.path.clone(), s.module.clone(), content_hash(&s.text)))
        .collect()
}

/// Reads the state at `path` and its blob; `None` if there is none or it does not read back.
pub fn load(path: &Path) -> Option<State> {
    let bytes = std::fs::read(path).ok()?;
    let json = bytes.strip_prefix(MAGIC)?;
    let mut state: State = serde_json::from_slice(json).ok()?;
    state.blob = std::fs::read(blob_path(path)).ok()?;
    Some(state)
}

/// Writes `state` to `path`, each file replaced in one rename so that a reader never sees half
/// of it. `appended` holds the outputs derived in this run, which the state's kinds place after
/// the blob's `blob_len` bytes; `outputs` are all of the run's outputs, for when the blob is
/// rewritten instead. Failing to write is not an error of the run: the next run is a full one.
pub fn store(path: &Path, mut state: State, appended: &str, outputs: &[Output]) {
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let blob = blob_path(path);
    let live: usize = state.kinds.iter().map(|k| k.len).sum();
    let on_disk = std::fs::metadata(&blob).ok().map(|m| m.len());
    let grown = state.blob_len + appended.len();
    let append = on_disk == Some(state.blob_len as u64) && grown <= live.saturating_mul(2) + SLACK;
    let written = if append {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&blob)
            .and_then(|mut file| file.write_all(appended.as_bytes()))
            .map(|()| grown)
    } else {
        // Rewrite the blob with only the live outputs, in kind order.
        let by_path: std::collections::HashMap<&Path, &str> = outputs
            .iter()
            .map(|o| (o.path.as_path(), o.contents.as_str()))
            .collect();
        let mut contents = String::with_capacity(live);
        for kind in &mut state.kinds {
            let Some(text) = by_path.get(kind.path.as_path()) else {
                return;
            };
            kind.start = contents.len();
            kind.len = text.len();
            contents.push_str(text);
        }
        replace(&blob, contents.as_bytes()).map(|()| contents.len())
    };
    let Ok(blob_len) = written else { return };
    state.blob_len = blob_len;
    let Ok(json) = serde_json::to_vec(&state) else {
        return;
    };
    let mut bytes = Vec::with_capacity(MAGIC.len() + json.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&json);
    let _ = replace(path, &bytes);
}

/// Writes `path` through a staged file and a rename.
fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let staged = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&staged, bytes)?;
    std::fs::rename(&staged, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&staged);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(kinds: Vec<Kind>, blob_len: usize) -> State {
        State {
            key: "k".into(),
            sources: Vec::new(),
            structure: Structure::default(),
            kinds,
            blob_len,
            blob: Vec::new(),
        }
    }

    fn kind(path: &str, start: usize, text: &str) -> Kind {
        Kind {
            group: "g".into(),
            kind: path.into(),
            versions: Vec::new(),
            deps: FileSet::default(),
            path: path.into(),
            start,
            len: text.len(),
            hash: content_hash(text),
            crd_name: path.into(),
            findings: Vec::new(),
        }
    }

    fn output(path: &str, text: &str) -> Output {
        Output {
            path: path.into(),
            contents: text.into(),
        }
    }

    #[test]
    fn the_blob_grows_by_appending_and_is_rewritten_once_mostly_dead() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("manifests.cache");
        let (a, b) = ("first\n", "second\n");
        store(
            &path,
            state(vec![kind("a", 0, a), kind("b", a.len(), b)], 0),
            &format!("{a}{b}"),
            &[output("a", a), output("b", b)],
        );
        let loaded = load(&path).expect("load");
        assert_eq!(loaded.blob, format!("{a}{b}").as_bytes());
        assert_eq!(loaded.kinds[1].output(&loaded.blob), Some(output("b", b)));

        // One output changed: appended, the other still read where it was.
        let b2 = "second, edited\n";
        let end = loaded.blob_len;
        store(
            &path,
            state(vec![kind("a", 0, a), kind("b", end, b2)], end),
            b2,
            &[output("a", a), output("b", b2)],
        );
        let loaded = load(&path).expect("load");
        assert_eq!(loaded.blob.len(), a.len() + b.len() + b2.len());
        assert_eq!(loaded.kinds[1].output(&loaded.blob), Some(output("b", b2)));

        // A large output, then replaced: once the dead bytes pass the slack, the blob holds
        // only what is live again.
        let big = "x".repeat(SLACK + 1);
        let end = loaded.blob_len;
        store(
            &path,
            state(vec![kind("a", 0, a), kind("b", end, &big)], end),
            &big,
            &[output("a", a), output("b", &big)],
        );
        let loaded = load(&path).expect("load");
        assert_eq!(loaded.blob.len(), end + big.len(), "appended");
        let end = loaded.blob_len;
        store(
            &path,
            state(vec![kind("a", 0, a), kind("b", end, b)], end),
            b,
            &[output("a", a), output("b", b)],
        );
        let loaded = load(&path).expect("load");
        assert_eq!(loaded.blob.len(), a.len() + b.len(), "rewritten");
        assert_eq!(loaded.kinds[0].output(&loaded.blob), Some(output("a", a)));
        assert_eq!(loaded.kinds[1].output(&loaded.blob), Some(output("b", b)));

        // A blob that does not match its state (another process appended) is rewritten.
        std::fs::write(path.with_extension("blob"), "junk").expect("write");
        store(&path, state(vec![kind("a", 9, a)], 9), a, &[output("a", a)]);
        let loaded = load(&path).expect("load");
        assert_eq!(loaded.blob, a.as_bytes());
        assert_eq!(loaded.kinds[0].output(&loaded.blob), Some(output("a", a)));
    }
}
