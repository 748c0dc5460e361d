//! `kopgen manifests`: CRDs derived statically from the Rust types.
//!
//! One module per stage, data flowing one way: [`discover`] finds the sources, [`index`] parses
//! them into modules and items, [`kinds`] finds the custom resources and groups their versions,
//! [`schema`] derives each type's schema as schemars' derive would (with [`resolve`] answering
//! what a path names, [`known`] and `library` giving library types' schemas, [`defaults`]
//! folding values statically), [`crd`] assembles one version as `crd()` does, and [`render`]
//! runs kube-core's transforms, merges the versions with `merge_crds`, lints and writes YAML
//! with serde_yaml. `docs/ARCHITECTURE.md` walks through the pipeline.

pub mod attrs;
pub mod compile;
pub mod crd;
pub mod discover;
pub mod error;
pub mod fold;
pub mod generics;
pub mod impls;
pub mod index;
pub mod kinds;
pub mod library;
pub mod lint;
pub mod locate;
pub mod options;
pub mod paths;
pub mod render;
pub mod resolve;
pub mod schema;
pub mod settings;
pub mod transform;
pub mod versions;

use std::path::PathBuf;

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

/// A lint finding located in the Rust source.
#[derive(Debug, Clone)]
pub struct Located {
    pub finding: lint::Finding,
    pub crd: String,
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for Located {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let level = match self.finding.severity {
            lint::Severity::Error => "error",
            lint::Severity::Warning => "warning",
        };
        write!(
            f,
            "{level}[{}]: {}:{}:{}: {} (CRD {} {}, at {})\n  help: {}",
            self.finding.rule,
            self.file.display(),
            self.line,
            self.column,
            self.finding.message,
            self.crd,
            self.finding.version,
            if self.finding.path.is_empty() {
                ".".to_owned()
            } else {
                self.finding
                    .path
                    .join(".")
                    .replace(".[", "[")
                    .replace(".{", "{")
            },
            self.finding.fix
        )
    }
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
        errors.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
        return Err(ManifestError::Many(errors));
    }
    generated.outputs.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(generated)
}

/// One kind's result: its file and located findings, or the errors that kept it from a CRD.
#[derive(Debug)]
pub struct KindResult {
    pub group: String,
    pub kind: String,
    pub result: Result<(Output, Vec<Located>), Vec<error::SourceError>>,
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
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("kopgen-derive".into())
            .stack_size(stack_size(sources))
            .spawn_scoped(scope, || derive_each(sources, options))
            .map_err(|e| ManifestError::Other(format!("cannot start a thread: {e}")))?
            .join()
            .map_err(|_| ManifestError::Other("kopgen panicked while deriving the CRDs".into()))?
    })
}

fn derive_each(
    sources: &[discover::Source],
    options: &Options,
) -> Result<Vec<KindResult>, ManifestError> {
    let mut index = Index::build(sources).map_err(ManifestError::Many)?;
    impls::link(&mut index);
    let kinds = kinds::find(&index).map_err(ManifestError::Many)?;
    let mismatches = match &options.manifest {
        Some(manifest) if options.derive != Derive::Compile => versions::mismatches(manifest),
        _ => Vec::new(),
    };
    if options.derive == Derive::Static && !mismatches.is_empty() {
        return Err(ManifestError::Versions(mismatches));
    }
    let compile_all = match options.derive {
        Derive::Compile => Some("--derive=compile".to_owned()),
        _ => mismatches.first().map(ToString::to_string),
    };
    let mut builder = schema::Builder::new(&index);
    let mut transforms = transform::Transforms::default();
    let mut results = Vec::with_capacity(kinds.len());
    for kind in &kinds {
        let result = match &compile_all {
            Some(reason) => Err(vec![
                error::SourceError::at(
                    &kind.versions[0].file,
                    kind.versions[0].span,
                    reason.clone(),
                )
                .unsupported(),
            ]),
            None => derive_static(&index, kind, &mut builder, &mut transforms, options),
        };
        results.push(KindResult {
            group: kind.group.clone(),
            kind: kind.kind.clone(),
            result,
            compiled: None,
        });
    }
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
    let krate = compile::Crate::open(manifest)?;
    let mut requests = Vec::with_capacity(wanted.len());
    for &i in &wanted {
        requests.push(compile_request(&index, &kinds[i], &krate)?);
    }
    let compiled = compile::crds(&krate, &requests)?;
    for (&i, yaml) in wanted.iter().zip(compiled) {
        let kind = &kinds[i];
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
        results[i].result = match yaml {
            Ok(yaml) => finish_compiled(&index, kind, &yaml, options),
            Err(panic) => Err(vec![
                error::SourceError::at(&kind.versions[0].file, kind.versions[0].span, format!(
                    "kube-derive's crd() panics for {}: {panic}",
                    kind.kind
                ))
                .help("kopgen compiled the crate and ran crd(); fix the type it names (kube-core cannot make a structural schema of it)"),
            ]),
        };
        results[i].compiled = Some(reason);
    }
    Ok(results)
}

/// A kind derived from the source alone.
fn derive_static(
    index: &Index,
    kind: &kinds::Kind,
    builder: &mut schema::Builder,
    transforms: &mut transform::Transforms,
    options: &Options,
) -> Result<(Output, Vec<Located>), Vec<error::SourceError>> {
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
    };
    Ok((output, findings))
}

/// What the crdgen program prints for `kind`: its versions' generated types, as paths from the
/// crate root, and the storage version they are merged under.
fn compile_request(
    index: &Index,
    kind: &kinds::Kind,
    krate: &compile::Crate,
) -> Result<compile::Request, ManifestError> {
    let mut types = Vec::with_capacity(kind.versions.len());
    for cr in &kind.versions {
        let item = &index.items[cr.item];
        let file_module = &index.file_modules[item.file];
        let inline = item.module.strip_prefix(file_module.as_str()).unwrap_or("");
        let (Ok(src), Ok(file)) = (
            std::fs::canonicalize(&krate.src),
            std::fs::canonicalize(&cr.file),
        ) else {
            return Err(compile::CompileError::OutsideCrate {
                file: cr.file.clone(),
            }
            .into());
        };
        if !file.starts_with(&src) {
            return Err(compile::CompileError::OutsideCrate {
                file: cr.file.clone(),
            }
            .into());
        }
        let module = discover::module_of(compile::USER_CRATE, &src, &file);
        let root = cr
            .attrs
            .root
            .clone()
            .unwrap_or_else(|| cr.kind().to_owned());
        types.push(format!("{module}{inline}::{root}"));
    }
    let storage = kind.storage.clone().unwrap_or_else(|| {
        kind.versions
            .iter()
            .find(|cr| cr.attrs.storage.unwrap_or(true))
            .map(|cr| cr.version().to_owned())
            .unwrap_or_default()
    });
    Ok(compile::Request { types, storage })
}

/// A compiled kind's CRD as kopgen writes it: the program's YAML, linted, and with
/// `--max-desc-len` applied.
fn finish_compiled(
    index: &Index,
    kind: &kinds::Kind,
    yaml: &str,
    options: &Options,
) -> Result<(Output, Vec<Located>), Vec<error::SourceError>> {
    let at = || error::SourceError::at(&kind.versions[0].file, kind.versions[0].span, "");
    let mut crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
        serde_yaml::from_str(yaml).map_err(|e| vec![at().reworded(format!("the compiled crd() is not a CRD: {e}"))])?;
    let contents = match options.max_desc_len {
        Some(max) => {
            lint::truncate_descriptions(&mut crd, max);
            let yaml =
                serde_yaml::to_string(&crd).map_err(|e| vec![at().reworded(e.to_string())])?;
            format!("{HEADER}{yaml}")
        }
        None => format!("{HEADER}{yaml}"),
    };
    let rendered = render::Rendered {
        contents,
        crd_name: crd.metadata.name.clone().unwrap_or_default(),
        findings: if options.lint {
            lint::check(&crd)
        } else {
            Vec::new()
        },
    };
    let findings = locate_findings(index, kind, &rendered);
    Ok((
        Output {
            path: PathBuf::from(kind.file_name()),
            contents: rendered.contents,
        },
        findings,
    ))
}

/// A rendered kind's lint findings, each at the Rust field that produced it.
fn locate_findings(index: &Index, kind: &kinds::Kind, rendered: &render::Rendered) -> Vec<Located> {
    let mut located = Vec::with_capacity(rendered.findings.len());
    for finding in &rendered.findings {
        let Some(cr) = kind
            .versions
            .iter()
            .find(|cr| cr.version() == finding.version)
            .or_else(|| kind.versions.first())
        else {
            continue;
        };
        let (file, span) = locate::locate(index, cr, &finding.path);
        let start = span.start();
        located.push(Located {
            crd: rendered.crd_name.clone(),
            file,
            line: start.line,
            column: start.column + 1,
            finding: finding.clone(),
        });
    }
    located
}
