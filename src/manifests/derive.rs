//! One kind derived from the source alone, in three steps: each version's schema built as
//! schemars' derive builds it (from the parsed source, on the thread that parsed it: syn's
//! spans can only be read there), the versions rendered into one CRD (transforms, merge, lint,
//! YAML; no source needed, so every kind renders on its own core), and the lint's findings
//! located in the source (back on the parsing thread).

use std::path::PathBuf;

use rayon::prelude::*;

use super::{
    crd::{self, Derived},
    error::SourceError,
    index::Index,
    kinds::Kind,
    locate::{Located, locate_findings},
    options::Options,
    render::{self, Output, Rendered},
    schema::Builder,
    transform::Transforms,
};

/// A kind's CRD file and its located findings, or the errors that kept it from one.
pub type KindOutput = Result<(Output, Vec<Located>), Vec<SourceError>>;

/// A kind's versions with their schemas, ready to render (or the errors that stopped them),
/// and the version the crate's own `merge_crds` call stores, if it names one.
#[derive(Clone)]
pub struct Schemas {
    pub versions: Result<Vec<Derived>, Vec<SourceError>>,
    pub storage: Option<String>,
}

/// Each version's schema of `kind`.
pub fn schemas(index: &Index, kind: &Kind, builder: &mut Builder) -> Schemas {
    let mut derived = Vec::with_capacity(kind.versions.len());
    let mut errors = Vec::new();
    for cr in &kind.versions {
        let result = crd::single_version_crd(builder, index, cr);
        // The refusals of other fields, found on the way: all of them in one run.
        let more = builder.take_more();
        match result {
            Ok(d) => derived.push(d),
            Err(e) => {
                for error in std::iter::once(e).chain(more) {
                    let seen = errors.iter().any(|known: &SourceError| {
                        (&known.file, known.line, known.column, &known.message)
                            == (&error.file, error.line, error.column, &error.message)
                    });
                    if !seen {
                        errors.push(error);
                    }
                }
            }
        }
    }
    Schemas {
        versions: if errors.is_empty() {
            Ok(derived)
        } else {
            Err(errors)
        },
        storage: kind.storage.clone(),
    }
}

/// Renders every kind, in order, on as many threads as there are cores, each with the stack
/// `stack` (the transforms and the YAML writer recurse once per level of a schema).
pub fn render_all(
    kinds: Vec<Schemas>,
    options: &Options,
    stack: usize,
) -> Vec<Result<Rendered, Vec<SourceError>>> {
    let render = |transforms: &mut Transforms, kind: Schemas| {
        render::render(kind.versions?, kind.storage.as_deref(), transforms, options)
    };
    // A pool that cannot start (no threads to be had) leaves the work to this thread.
    match rayon::ThreadPoolBuilder::new().stack_size(stack).build() {
        Ok(pool) => pool.install(|| {
            kinds
                .into_par_iter()
                .map_init(Transforms::default, render)
                .collect()
        }),
        Err(_) => {
            let mut transforms = Transforms::default();
            kinds
                .into_iter()
                .map(|kind| render(&mut transforms, kind))
                .collect()
        }
    }
}

/// A rendered kind's file, and its lint findings located in the source.
pub fn located(index: &Index, kind: &Kind, rendered: Rendered) -> (Output, Vec<Located>) {
    let findings = locate_findings(index, kind, &rendered);
    let output = Output {
        path: PathBuf::from(kind.file_name()),
        contents: rendered.contents,
        crd_name: rendered.crd_name,
        json_bytes: rendered.json_bytes,
    };
    (output, findings)
}
