//! The real-world CRD corpus beside the repository, and its CRDs turned into Rust by kopium.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{control_plane, need};

/// The real-world corpus beside the repository (`../shared/corpus/crds/`), if present.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/crds");
    dir.is_dir().then_some(dir)
}

/// A real-world CRD turned into kube-derive Rust by kopium.
pub struct KopiumSource {
    /// The corpus file's stem, `-` replaced by `_` (a Rust module name).
    pub name: String,
    pub original: PathBuf,
    /// The Rust file kopium wrote, in the caller's scratch directory.
    pub path: PathBuf,
    pub source: String,
}

/// Every corpus CRD through `kopium -A`, written to `scratch`; `None` (after the skip notice)
/// where the corpus or kopium is missing.
pub fn kopium_sources(scratch: &Path, test: &str) -> Option<Vec<KopiumSource>> {
    let Some(corpus) = corpus_dir() else {
        // Data beside the repository, not a tool: its absence is never a CI failure.
        control_plane::skip_notice(test, "../shared/corpus/crds not found");
        return None;
    };
    if !need("kopium", test, "cargo install kopium") {
        return None;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .expect("corpus")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for original in files {
        let name = original
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .replace('-', "_");
        let output = Command::new("kopium")
            .args(["-A", "-f"])
            .arg(&original)
            .output()
            .expect("kopium runs");
        assert!(
            output.status.success(),
            "kopium failed on {}: {}",
            original.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        let source = String::from_utf8_lossy(&output.stdout).into_owned();
        let path = scratch.join(format!("{name}.rs"));
        std::fs::write(&path, &source).expect("write");
        out.push(KopiumSource {
            name,
            original,
            path,
            source,
        });
    }
    Some(out)
}
