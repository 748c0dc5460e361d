//! `kopgen manifests`: the CRDs kube-derive's `crd()` gives, derived from the Rust types.
//!
//! One module per stage, data flowing one way: [`discover`] finds the sources, [`index`] parses
//! them into modules and items ([`impls`] ties `impl` blocks to their types), [`kinds`] finds
//! the custom resources and groups their versions, [`derive`] builds each kind from the source
//! ([`schema`] as schemars' derive would, with [`resolve`] answering what a path names,
//! [`library`] giving library types' schemas and [`fold`] folding values; [`crd`] assembles a
//! version as `crd()` does; [`render`] runs kube-core's transforms, merges the versions with
//! `merge_crds`, and writes YAML with `crate::yaml`), and [`compile`] derives by compiling the
//! crate what the source alone cannot give. `docs/ARCHITECTURE.md` walks through the pipeline.

pub mod attrs;
pub mod cel_cost;
pub mod cfg;
pub mod compile;
pub mod crate_k8s_version;
pub mod crd;
pub mod derive;
/// controller-gen's `maxDescLen`: one file with the runtime, so that `kopgen manifests` and
/// the project's drift test cut descriptions alike.
#[path = "../../runtime/src/crds/descriptions.rs"]
pub mod descriptions;
pub mod discover;
pub mod error;
pub mod fold;
pub mod generics;
pub mod impls;
pub mod index;
pub mod inventory;
pub mod kinds;
/// Kubernetes' annotations of its own types in a CRD: one file with the runtime, so that
/// `kopgen manifests` and `kopgen_runtime::crds::Settings` enrich CRDs alike.
#[path = "../../runtime/src/crds/kubernetes.rs"]
pub mod kubernetes;
pub mod library;
pub mod lint;
pub mod locate;
pub mod marker_scope;
pub mod merge_calls;
pub mod modtree;
pub mod options;
pub mod patches;
pub mod paths;
pub mod render;
pub mod resolve;
pub mod rule_check;
pub mod rules;
pub mod schema;
pub mod selectable;
pub mod settings;
pub mod transform;
pub mod validation_rules;
pub mod value_check;
pub mod versions;

use std::path::PathBuf;

pub use locate::Located;
pub use options::{Derive, Options};
pub use render::{HEADER, Output};

use crate::manifests::{error::ManifestError, index::Index};

/// Reads every source file under `paths` and derives one CRD file per (group, kind).
pub fn generate(paths: &[PathBuf]) -> Result<Vec<Output>, ManifestError> {
    generate_from_sources(&discover::sources(paths)?)
}

/// Derives the CRDs of sources already in memory (what `generate` does after reading files).
/// Any input gives CRDs or errors, never a panic: the fuzz target feeds it arbitrary bytes.
pub fn generate_from_sources(sources: &[discover::Source]) -> Result<Vec<Output>, ManifestError> {
    generate_with(sources, &Options::default()).map(|g| g.outputs)
}

/// Everything one run produces.
#[derive(Debug, Default)]
pub struct Generated {
    pub outputs: Vec<Output>,
    pub findings: Vec<Located>,
    /// The kinds derived by compiling the crate, each with the reason (`Kind.group: reason`).
    pub compiled: Vec<String>,
}

/// The least stack of the thread that derives. syn's parser, kopgen's folding and the schema
/// transforms recurse once per nesting level of their input; on the default stacks a few
/// thousand nested closures (which the fuzzer found) overflow. A stack is reserved address
/// space, touched only as deep as the input goes.
const STACK_SIZE: u64 = 256 << 20;

/// Stack per byte of the largest source: syn needs up to about 3 KiB per nesting level (debug
/// builds' frames are several times larger), and a level takes at least one byte.
const STACK_PER_SOURCE_BYTE: u64 = if cfg!(debug_assertions) {
    32 << 10
} else {
    4 << 10
};

/// A stack deep enough for the most deeply nested source `sources` can hold.
fn stack_size(sources: &[discover::Source]) -> usize {
    let largest = sources
        .iter()
        .map(|s| s.text.len() as u64)
        .max()
        .unwrap_or(0);
    let size = largest
        .saturating_mul(STACK_PER_SOURCE_BYTE)
        .clamp(STACK_SIZE, 16 << 30);
    usize::try_from(size).unwrap_or(usize::MAX)
}

/// Derives every CRD of `sources`: one output per kind, or every error found (in source order).
pub fn generate_with(
    sources: &[discover::Source],
    options: &Options,
) -> Result<Generated, ManifestError> {
    let mut generated = Generated::default();
    let mut errors = Vec::new();
    for kind in derive_kinds(sources, options)? {
        if let Some(reason) = &kind.compiled {
            generated
                .compiled
                .push(format!("{}.{} ({reason})", kind.kind, kind.group));
        }
        match kind.result {
            Ok((output, findings)) => {
                generated.outputs.push(output);
                generated.findings.extend(findings);
            }
            Err(e) => errors.extend(e),
        }
    }
    if !errors.is_empty() {
        error::sort_by_place(&mut errors);
        return Err(ManifestError::Many(errors));
    }
    generated.outputs.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(generated)
}

/// Why a kind whose `#[kube(...)]` an attribute macro writes can only be compiled, if it is
/// one: the macro changes fields per version, and kopgen expands no macros.
fn generated_by_a_macro(kind: &kinds::Kind) -> Option<error::SourceError> {
    let first = kind.versions.iter().find(|cr| cr.generated.is_some())?;
    let versions: Vec<&str> = kind.versions.iter().map(|cr| cr.version()).collect();
    Some(
        error::SourceError::at(
            &first.file,
            first.span,
            format!(
                "stackable-versioned's #[versioned] writes the #[kube(...)] of {} ({}) when the crate compiles",
                kind.kind,
                versions.join(", ")
            ),
        )
        .help("kopgen expands no macros: --derive=auto (the default) compiles the crate for this kind")
        .unsupported(),
    )
}

/// One kind's result: its file and located findings, or the errors that kept it from a CRD.
#[derive(Debug)]
pub struct KindResult {
    pub group: String,
    pub kind: String,
    pub result: derive::KindOutput,
    /// Why the kind was derived by compiling the crate, if it was.
    pub compiled: Option<String>,
}

/// Every kind of `sources`, each derived on its own: an error in one kind leaves the others'
/// CRDs. Errors that concern the sources as a whole (syntax, duplicate kinds) are returned as
/// the error of the run.
pub fn derive_kinds(
    sources: &[discover::Source],
    options: &Options,
) -> Result<Vec<KindResult>, ManifestError> {
    on_deep_stack(sources, || derive_each(sources, options))
}

/// The sources whose comment markers count (RBAC, webhooks): see [`marker_scope`].
pub fn marker_sources(
    crates: &[Vec<discover::Source>],
    options: &Options,
) -> Result<Vec<discover::Source>, ManifestError> {
    let deepest = crates
        .iter()
        .max_by_key(|c| c.iter().map(|s| s.text.len()).max())
        .map_or(&[][..], Vec::as_slice);
    on_deep_stack(deepest, || marker_scope::compiled(crates, options))
}

/// Runs `work`, which reads `sources`, on a thread with a stack as deep as they can nest.
fn on_deep_stack<T: Send>(
    sources: &[discover::Source],
    work: impl FnOnce() -> Result<T, ManifestError> + Send,
) -> Result<T, ManifestError> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("kopgen-derive".into())
            .stack_size(stack_size(sources))
            .spawn_scoped(scope, work)
            .map_err(|e| ManifestError::Other(format!("cannot start a thread: {e}")))?
            .join()
            .map_err(|_| ManifestError::Other("kopgen panicked while reading the sources".into()))?
    })
}

fn derive_each(
    sources: &[discover::Source],
    options: &Options,
) -> Result<Vec<KindResult>, ManifestError> {
    let cfg = cfg::Cfg::new(options.manifest.as_deref(), &options.features);
    // What the static derivation compares types with, and what a compiled crdgen builds with.
    let k8s_version =
        (options.manifest.as_deref()).map(|m| crate_k8s_version::k8s_version(m, &cfg));
    let mut index = Index::build(sources, cfg).map_err(ManifestError::Many)?;
    impls::link(&mut index);
    let mut kinds = kinds::find(&index).map_err(ManifestError::Many)?;
    kinds.retain(|kind| kind.versions.iter().any(|v| options.only.keeps(&v.file)));
    let mismatches = match &options.manifest {
        Some(manifest) if options.derive != Derive::Compile => versions::mismatches(manifest),
        _ => Vec::new(),
    };
    // Another kube than the one kopgen reproduces is said at once, in `auto` too, rather than
    // found out by a silent build of the whole operator; `--derive=compile` builds it.
    if !mismatches.is_empty() {
        return Err(ManifestError::Versions(mismatches));
    }
    let compile_all = match options.derive {
        Derive::Compile => Some("--derive=compile".to_owned()),
        _ => None,
    };
    let outputs: Vec<derive::KindOutput> = match &compile_all {
        Some(reason) => kinds
            .iter()
            .map(|kind| {
                let at = &kind.versions[0];
                Err(vec![
                    error::SourceError::at(&at.file, at.span, reason.clone()).unsupported(),
                ])
            })
            .collect(),
        None => {
            let mut builder = schema::Builder::new(&index);
            builder.k8s_version = (k8s_version.as_ref())
                .map(|version| version.feature.clone())
                .filter(|feature| feature != library::k8s_versions::LATEST);
            let schemas = kinds
                .iter()
                .map(|kind| match generated_by_a_macro(kind) {
                    Some(error) => derive::Schemas {
                        versions: Err(vec![error]),
                        storage: None,
                    },
                    None => derive::schemas(&index, kind, &mut builder),
                })
                .collect();
            let rendered = derive::render_all(schemas, options, stack_size(sources));
            kinds
                .iter()
                .zip(rendered)
                .map(|(kind, rendered)| rendered.map(|r| derive::located(&index, kind, r)))
                .collect()
        }
    };
    let mut results: Vec<KindResult> = kinds
        .iter()
        .zip(outputs)
        .map(|(kind, result)| KindResult {
            group: kind.group.clone(),
            kind: kind.kind.clone(),
            result,
            compiled: None,
        })
        .collect();
    // What only compiling can derive, compiled, when a crate is there to compile.
    let wanted: Vec<usize> = results
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            options.derive != Derive::Static
                && r.result
                    .as_ref()
                    .is_err_and(|errors| errors.iter().all(|e| e.unsupported))
        })
        .map(|(i, _)| i)
        .collect();
    if wanted.is_empty() {
        return Ok(results);
    }
    let Some(manifest) = &options.manifest else {
        // Loose files can only be derived statically: their errors say what to write instead.
        return Ok(results);
    };
    let krate = compile::Crate::open(manifest, &options.features, k8s_version.as_ref())?;
    eprintln!(
        "note: compiling {} for {} kind(s) kopgen cannot derive from the source ({}); cargo's progress follows",
        manifest.display(),
        wanted.len(),
        match &compile_all {
            Some(reason) => reason.clone(),
            None => (results[wanted[0]].result.as_ref().err())
                .and_then(|errors| errors.first())
                .map(|e| format!("{}:{}: {}", e.file.display(), e.line, e.message))
                .unwrap_or_default(),
        }
    );
    let compiled = compile::derive_kinds(&index, &kinds, &wanted, &krate, options)?;
    for (&i, result) in wanted.iter().zip(compiled) {
        let reason = match (&compile_all, &results[i].result) {
            (Some(reason), _) => reason.clone(),
            (None, Err(errors)) => errors
                .first()
                .map(|e| {
                    format!(
                        "{}:{}:{}: {}",
                        e.file.display(),
                        e.line,
                        e.column,
                        e.message
                    )
                })
                .unwrap_or_default(),
            (None, Ok(_)) => String::new(),
        };
        results[i].result = result;
        results[i].compiled = Some(reason);
    }
    Ok(results)
}
