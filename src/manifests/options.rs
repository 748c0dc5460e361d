//! What a run of `kopgen manifests` is asked to do.

use std::path::PathBuf;

/// What `kopgen manifests` can do beyond `crd()` parity.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Run the structural-schema lint.
    pub lint: bool,
    /// controller-gen's `maxDescLen`: truncate descriptions (0 drops them). Departs from `crd()`.
    pub max_desc_len: Option<usize>,
    /// Kubernetes types carry Kubernetes' own annotations (PROJECT's `kubernetesTypes:
    /// openapi`; see [`super::kubernetes`]). Departs from `crd()`.
    pub kubernetes_annotations: bool,
    /// How CRDs are derived: from the source, by compiling, or each the first way that works.
    pub derive: Derive,
    /// The `Cargo.toml` of the crate the sources are the library of, if any: its versions are
    /// checked, its default features enabled, and it is what the compiled path builds.
    pub manifest: Option<PathBuf>,
    /// Features enabled beside the crate's default ones (`--features`), for `#[cfg(feature)]`.
    pub features: Vec<String>,
    /// The previous revision's CRDs (`--against`): each CRD derived is compared with the one
    /// of the same name, and its breaking changes are findings.
    pub against: Option<std::sync::Arc<crate::compat::Baseline>>,
    /// Report every CEL rule's estimated cost (`--cel-cost`), as notes.
    pub cel_cost: bool,
    /// Which kinds of the sources read are derived (`--paths` inside a crate: the crate is read,
    /// the kinds below the paths given are derived).
    pub only: Only,
    /// The project's CRD patches (`config/crd/bases-patches/`), applied after the settings.
    pub patches: std::sync::Arc<super::patches::Patches>,
}

/// The kinds of a crate read whole that were asked for: those defined below `paths`, in the
/// crates (their `src/`, canonical) of `crates`; kinds elsewhere are all asked for.
#[derive(Debug, Clone, Default)]
pub struct Only {
    pub crates: Vec<PathBuf>,
    pub paths: Vec<PathBuf>,
}

impl Only {
    /// Whether a kind defined in `file` is derived.
    pub fn keeps(&self, file: &std::path::Path) -> bool {
        let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
        !self.crates.iter().any(|src| file.starts_with(src))
            || self.paths.iter().any(|path| file.starts_with(path))
    }
}

impl Options {
    /// With the CRD settings `project` records, which its drift test applies to `crd()` too.
    pub fn for_project(mut self, project: &crate::project::Project) -> Self {
        self.max_desc_len = project.max_desc_len;
        self.kubernetes_annotations =
            project.kubernetes_types == Some(crate::project::KubernetesTypes::Openapi);
        self
    }

    /// With the CRD patches of the project in `root` (`config/crd/bases-patches/`).
    pub fn with_patches(
        mut self,
        root: &std::path::Path,
    ) -> Result<Self, super::error::ManifestError> {
        self.patches = std::sync::Arc::new(super::patches::Patches::load(root)?);
        Ok(self)
    }
}

/// How `kopgen manifests` derives a kind's CRD.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Derive {
    /// Statically where it can, by compiling the crate for the kinds it cannot.
    #[default]
    Auto,
    /// Only statically: what needs compiling is an error (CI jobs without a Rust toolchain).
    Static,
    /// Every kind by compiling the crate.
    Compile,
}
