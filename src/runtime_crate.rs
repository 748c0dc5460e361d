//! The runtime crate (`runtime/` in kopgen's workspace), embedded in the binary and written
//! into every project as `vendor/kopgen-runtime/`, its sources whole: nothing is published from
//! here, and a project must build with nothing but kopgen. The project depends on it with both
//! `version` and `path`, so dropping `path` switches to the published crate of the same version.

use std::borrow::Cow;

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
        changes.put(format!("{VENDOR_DIR}/{path}"), contents.into_owned());
    }
}

/// The runtime's files as a project keeps them (sources, manifest, README, CHANGELOG) by path
/// inside the crate, sorted: its manifest a dependency's.
pub fn files() -> Vec<(String, Cow<'static, str>)> {
    let mut files = Vec::new();
    collect(&RUNTIME, &mut files);
    for (path, text) in &mut files {
        if path == "Cargo.toml" {
            *text = Cow::Owned(as_dependency(text));
        }
    }
    files.sort();
    files
}

fn collect(dir: &'static Dir<'static>, out: &mut Vec<(String, Cow<'static, str>)>) {
    for entry in dir.entries() {
        match entry {
            DirEntry::Dir(sub) if sub.path().starts_with("target") => {}
            DirEntry::Dir(sub) => collect(sub, out),
            DirEntry::File(file) => {
                if let (Some(path), Some(text)) = (file.path().to_str(), file.contents_utf8()) {
                    out.push((path.replace('\\', "/"), Cow::Borrowed(text)));
                }
            }
        }
    }
}

/// The runtime's manifest with a library cargo does not test. Cargo makes a `path` dependency
/// inside a workspace's directory a member of that workspace (whatever its `exclude` says), so
/// a project that is a workspace's member brings the runtime in as one, and
/// `cargo test --workspace` would run the runtime's unit tests (and doctests) in the project's
/// CI, under whatever Kubernetes version the workspace picked: they run in kopgen's.
fn as_dependency(manifest: &str) -> String {
    format!(
        "{manifest}\n# A project's copy: the runtime's tests run in kopgen's repository.\n\
         [lib]\ntest = false\ndoctest = false\n"
    )
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
            .map(|(_, text)| text.clone())
            .expect("the runtime's Cargo.toml");
        let manifest: toml::Table = toml::from_str(&manifest).expect("a manifest");
        assert_eq!(manifest["package"]["name"].as_str(), Some("kopgen-runtime"));
        assert_eq!(manifest["package"]["version"].as_str(), Some(VERSION));
        assert!(files.iter().any(|(path, _)| path == "src/lib.rs"));
        assert!(files.iter().any(|(path, _)| path == "CHANGELOG.md"));
    }

    /// The project's copy is the runtime's manifest with an untested library, and nothing else
    /// changed.
    #[test]
    fn the_copy_is_the_runtimes_manifest_with_an_untested_library() {
        let original = RUNTIME
            .get_file("Cargo.toml")
            .and_then(|file| file.contents_utf8())
            .expect("the runtime's Cargo.toml");
        let original: toml::Table = toml::from_str(original).expect("a manifest");
        let files = files();
        let copy = files
            .iter()
            .find(|(path, _)| path == "Cargo.toml")
            .map(|(_, text)| text)
            .expect("the copy's Cargo.toml");
        let mut copy: toml::Table = toml::from_str(copy).expect("a manifest");
        let lib = copy.remove("lib").expect("[lib]");
        assert_eq!(lib.get("test").and_then(toml::Value::as_bool), Some(false));
        assert_eq!(
            lib.get("doctest").and_then(toml::Value::as_bool),
            Some(false)
        );
        assert_eq!(copy, original);
    }
}
