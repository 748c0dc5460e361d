//! The runtime crate (`runtime/` in kopgen's workspace), embedded in the binary and written
//! whole into every project as `vendor/kopgen-runtime/`: nothing is published from here, and a
//! project must build with nothing but kopgen. The project depends on it with both `version` and
//! `path`, so dropping `path` switches to the published crate of the same version.

use include_dir::{Dir, DirEntry, include_dir};

use crate::changeset::ChangeSet;

static RUNTIME: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/runtime");

/// Where a project keeps its copy of the runtime.
pub const VENDOR_DIR: &str = "vendor/kopgen-runtime";

/// The runtime's version: kopgen's own, as the two are released together.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Puts every file of the runtime crate under [`VENDOR_DIR`], replacing what is there.
pub fn vendor(changes: &mut ChangeSet) {
    for (path, contents) in files() {
        changes.put(format!("{VENDOR_DIR}/{path}"), contents.to_owned());
    }
}

/// The runtime's files (sources, manifest, README, CHANGELOG) by path inside the crate, sorted.
pub fn files() -> Vec<(String, &'static str)> {
    let mut files = Vec::new();
    collect(&RUNTIME, &mut files);
    files.sort();
    files
}

fn collect(dir: &'static Dir<'static>, out: &mut Vec<(String, &'static str)>) {
    for entry in dir.entries() {
        match entry {
            DirEntry::Dir(sub) if sub.path().starts_with("target") => {}
            DirEntry::Dir(sub) => collect(sub, out),
            DirEntry::File(file) => {
                if let (Some(path), Some(text)) = (file.path().to_str(), file.contents_utf8()) {
                    out.push((path.replace('\\', "/"), text));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_runtime_is_a_whole_crate_of_kopgens_version() {
        let files = files();
        let manifest = files
            .iter()
            .find(|(path, _)| path == "Cargo.toml")
            .map(|(_, text)| *text)
            .expect("the runtime's Cargo.toml");
        let manifest: toml::Table = toml::from_str(manifest).expect("a manifest");
        assert_eq!(manifest["package"]["name"].as_str(), Some("kopgen-runtime"));
        assert_eq!(manifest["package"]["version"].as_str(), Some(VERSION));
        assert!(files.iter().any(|(path, _)| path == "src/lib.rs"));
        assert!(files.iter().any(|(path, _)| path == "CHANGELOG.md"));
    }
}
