//! The CRD post-processing a project keeps in `config/crd/bases-patches/`: one JSON Patch (RFC 6902,
//! written in YAML as kustomize's `patchesJson6902` are) per CRD file, named as the file in
//! `config/crd/bases/` it patches. Operators that grew their own crdgen do small edits after
//! `crd()` (an annotation, a `required` entry removed, a conversion stanza); here they are data
//! that `manifests` applies to the CRD it derives before it lints, compares and writes it, so
//! `--check`, `--against`, the chart and the drift test all see the same CRD.
//!
//! A patch is JSON Patch rather than a merge patch because a merge patch cannot remove one entry
//! of a list (`required`), and `op: test` lets a patch say what it expects to find.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use json_patch::{Patch, PatchOperation};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use super::error::ManifestError;

/// Where a project keeps its patches, relative to its root.
pub const DIR: &str = "config/crd/bases-patches";

/// The largest patch file read: far beyond a hand-written patch.
const MAX_PATCH_BYTES: u64 = 1 << 20;

/// The largest CRD a patch may make, as JSON: twice the API server's limit. `copy` can double
/// the document at each operation; past this the CRD could never be applied anyway.
const MAX_PATCHED_BYTES: usize = 3 << 20;

/// The patches of one project, by the CRD file they patch (`<group>_<plural>.yaml`).
#[derive(Debug, Clone, Default)]
pub struct Patches {
    by_file: BTreeMap<String, (PathBuf, Patch)>,
}

impl Patches {
    /// The patches in `root`'s [`DIR`]; none when the directory is not there. Each file must be
    /// a list of operations; a file of another kind in the directory is an error, never skipped.
    pub fn load(root: &Path) -> Result<Patches, ManifestError> {
        let dir = root.join(DIR);
        let io = |path: &Path, message: String| ManifestError::Io {
            path: path.display().to_string(),
            message,
        };
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Patches::default()),
            Err(e) => return Err(io(&dir, e.to_string())),
        };
        let mut by_file = BTreeMap::new();
        let mut paths: Vec<PathBuf> = entries
            .map(|entry| entry.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(|e| io(&dir, e.to_string()))?;
        paths.sort();
        for path in paths {
            let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
                return Err(io(&path, "a file name that is not UTF-8; patches are named as the CRD file they patch (`<group>_<plural>.yaml`)".into()));
            };
            if !name.ends_with(".yaml") {
                return Err(io(
                    &path,
                    "not a patch: config/crd/bases-patches/ holds one `<group>_<plural>.yaml` per CRD it patches; move this file elsewhere".into(),
                ));
            }
            let bytes = crate::regular_file::read_at_most(&path, MAX_PATCH_BYTES)
                .map_err(|e| io(&path, std::io::Error::from(e).to_string()))?;
            let text = String::from_utf8(bytes).map_err(|_| io(&path, "not UTF-8 text".into()))?;
            let patch: Patch = crate::yaml::from_str(&text).map_err(|e| {
                io(
                    &path,
                    format!(
                        "{e}: not a JSON patch; write a list of RFC 6902 operations, e.g. `- op: remove` / `  path: /spec/versions/0/schema/openAPIV3Schema/required/1`"
                    ),
                )
            })?;
            by_file.insert(name, (path, patch));
        }
        Ok(Patches { by_file })
    }

    /// Whether there are no patches.
    pub fn is_empty(&self) -> bool {
        self.by_file.is_empty()
    }

    /// The patch files whose CRD is not among `files` (a kind renamed or removed): an error,
    /// as the patch would silently stop applying.
    pub fn unused<'a>(&'a self, files: &[String]) -> Vec<&'a Path> {
        (self.by_file.iter())
            .filter(|(name, _)| !files.contains(name))
            .map(|(_, (path, _))| path.as_path())
            .collect()
    }

    /// Applies the patch of `crd`'s file to it, if there is one; the error says which operation
    /// failed and why, naming the patch file.
    pub fn apply(&self, crd: &mut CustomResourceDefinition) -> Result<(), String> {
        let file = format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural);
        let Some((path, patch)) = self.by_file.get(&file) else {
            return Ok(());
        };
        let shown = format!("{DIR}/{file}");
        let mut doc = serde_json::to_value(&*crd).map_err(|e| format!("{shown}: {e}"))?;
        for (i, operation) in patch.0.iter().enumerate() {
            json_patch::patch_unsafe(&mut doc, std::slice::from_ref(operation)).map_err(|e| {
                format!(
                    "{shown}: operation {} (`{} {}`) does not apply to the CRD the types give: {}; \
                     fix or remove it (`kopgen manifests --stdout` after removing it shows the CRD it applies to)",
                    i + 1,
                    op_name(operation),
                    e.path,
                    e.kind
                )
            })?;
            if matches!(operation, PatchOperation::Copy(_))
                && serde_json::to_vec(&doc).map_or(0, |v| v.len()) > MAX_PATCHED_BYTES
            {
                return Err(format!(
                    "{shown}: operation {} makes the CRD larger than {} MiB; the API server refuses CRDs over 1.5 MiB",
                    i + 1,
                    MAX_PATCHED_BYTES >> 20
                ));
            }
        }
        *crd = serde_json::from_value(doc).map_err(|e| {
            format!(
                "{}: the patched CRD is no longer a CustomResourceDefinition: {e}",
                path.display()
            )
        })?;
        Ok(())
    }
}

fn op_name(operation: &PatchOperation) -> &'static str {
    match operation {
        PatchOperation::Add(_) => "add",
        PatchOperation::Remove(_) => "remove",
        PatchOperation::Replace(_) => "replace",
        PatchOperation::Move(_) => "move",
        PatchOperation::Copy(_) => "copy",
        PatchOperation::Test(_) => "test",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> CustomResourceDefinition {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "blogs.apps.example.com"},
            "spec": {
                "group": "apps.example.com",
                "names": {"kind": "Blog", "plural": "blogs"},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "required": ["spec", "status"],
                        "properties": {"spec": {"type": "object"}, "status": {"type": "object"}}}}}]
            }
        }))
        .expect("a CRD")
    }

    fn patches(files: &[(&str, &str)]) -> Result<Patches, ManifestError> {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join(DIR)).expect("mkdir");
        for (name, text) in files {
            std::fs::write(dir.path().join(DIR).join(name), text).expect("write");
        }
        Patches::load(dir.path())
    }

    #[test]
    fn a_patch_removes_a_required_entry_and_adds_an_annotation() {
        let patches = patches(&[(
            "apps.example.com_blogs.yaml",
            "- op: test\n  path: /spec/versions/0/schema/openAPIV3Schema/required/1\n  value: status\n\
             - op: remove\n  path: /spec/versions/0/schema/openAPIV3Schema/required/1\n\
             - op: add\n  path: /metadata/annotations\n  value: {helm.sh/resource-policy: keep}\n",
        )])
        .expect("loads");
        let mut crd = crd();
        patches.apply(&mut crd).expect("applies");
        let schema = crd.spec.versions[0].schema.as_ref().expect("schema");
        let root = schema.open_api_v3_schema.as_ref().expect("root");
        assert_eq!(root.required, Some(vec!["spec".to_owned()]));
        assert_eq!(
            crd.metadata.annotations.expect("annotations")["helm.sh/resource-policy"],
            "keep"
        );
    }

    #[test]
    fn a_failing_operation_is_named_and_changes_nothing() {
        let patches = patches(&[(
            "apps.example.com_blogs.yaml",
            "- op: add\n  path: /metadata/labels\n  value: {a: b}\n- op: test\n  path: /spec/scope\n  value: Cluster\n",
        )])
        .expect("loads");
        let mut crd = crd();
        let before = crd.clone();
        let e = patches.apply(&mut crd).expect_err("the test fails");
        assert!(e.contains("operation 2 (`test /spec/scope`)"), "{e}");
        assert!(
            e.contains("config/crd/bases-patches/apps.example.com_blogs.yaml"),
            "{e}"
        );
        assert_eq!(crd, before);
    }

    #[test]
    fn bad_patch_files_are_errors_with_the_line() {
        let e = patches(&[(
            "apps.example.com_blogs.yaml",
            "- op: remove\n- op: frob\n  path: /a\n",
        )])
        .expect_err("not a patch")
        .to_string();
        assert!(e.contains("apps.example.com_blogs.yaml"), "{e}");
        assert!(e.contains("line "), "{e}");
        let e = patches(&[("notes.txt", "hello")])
            .expect_err("not yaml")
            .to_string();
        assert!(e.contains("notes.txt") && e.contains("not a patch"), "{e}");
    }

    #[test]
    fn copies_that_double_the_crd_stop_at_the_limit() {
        let mut text = String::from("- op: add\n  path: /spec/l\n  value: [1]\n");
        // Each operation doubles the CRD: 2^64 times its size, unless the limit stops it.
        for _ in 0..64 {
            text.push_str("- op: copy\n  from: /spec/l\n  path: /spec/l/-\n");
        }
        let patches = patches(&[("apps.example.com_blogs.yaml", &text)]).expect("loads");
        let e = patches.apply(&mut crd()).expect_err("bounded");
        assert!(e.contains("larger than"), "{e}");
    }

    #[test]
    fn a_patch_for_no_crd_is_unused() {
        let patches = patches(&[("apps.example.com_pages.yaml", "- op: remove\n  path: /a\n")])
            .expect("loads");
        let unused = patches.unused(&["apps.example.com_blogs.yaml".into()]);
        assert_eq!(unused.len(), 1);
    }
}
