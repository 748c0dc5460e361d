//! One kind derived from the source alone: each version's schema built as schemars' derive
//! builds it, then rendered (transforms, merge, lint, YAML) and its findings located.

use std::path::PathBuf;

use super::{
    crd,
    error::SourceError,
    index::Index,
    kinds::Kind,
    locate::{Located, locate_findings},
    options::Options,
    render::{self, Output},
    schema::Builder,
    transform::Transforms,
};

/// A kind's CRD file and its located findings, or the errors that kept it from one.
pub type KindOutput = Result<(Output, Vec<Located>), Vec<SourceError>>;

/// A kind derived from the source alone.
pub fn derive_kind(
    index: &Index,
    kind: &Kind,
    builder: &mut Builder,
    transforms: &mut Transforms,
    options: &Options,
) -> KindOutput {
    let mut derived = Vec::with_capacity(kind.versions.len());
    let mut errors = Vec::new();
    for cr in &kind.versions {
        match crd::single_version_crd(builder, index, cr) {
            Ok(d) => derived.push(d),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let rendered = render::render(derived, kind.storage.as_deref(), transforms, options)?;
    let findings = locate_findings(index, kind, &rendered);
    let output = Output {
        path: PathBuf::from(kind.file_name()),
        contents: rendered.contents,
        crd_name: rendered.crd_name,
        json_bytes: rendered.json_bytes,
    };
    Ok((output, findings))
}
