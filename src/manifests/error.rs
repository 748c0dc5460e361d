//! Errors of `kopgen manifests`, each pointing into the Rust source.

use std::path::{Path, PathBuf};

use proc_macro2::Span;
use thiserror::Error;

/// A problem in the user's source that keeps kopgen from deriving a CRD.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{}:{line}:{column}: {message}{}", file.display(), help.as_ref().map(|h| format!("\n  help: {h}")).unwrap_or_default())]
pub struct SourceError {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
    pub help: Option<String>,
    /// Valid Rust that kopgen cannot derive without compiling (a function it cannot fold, a
    /// hand-written `JsonSchema`): `--derive=auto` compiles the crate for such a kind.
    pub unsupported: bool,
}

impl SourceError {
    pub fn at(file: &Path, span: Span, message: impl Into<String>) -> Self {
        Self {
            file: PathBuf::new(),
            line: 0,
            column: 0,
            message: message.into(),
            help: None,
            unsupported: false,
        }
        .with_location(file, span)
    }

    /// Another error at the same place.
    pub fn reworded(&self, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            help: None,
            unsupported: false,
            ..self.clone()
        }
    }

    /// Moves the error to another place (e.g. the function a field refers to).
    pub fn with_location(mut self, file: &Path, span: Span) -> Self {
        let start = span.start();
        self.file = file.to_path_buf();
        self.line = start.line;
        self.column = start.column + 1;
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Marks the error as one that compiling the crate would not have (see `unsupported`).
    pub fn unsupported(mut self) -> Self {
        self.unsupported = true;
        self
    }
}

/// A syn parse error, at its place in `file`.
pub fn syn_error(file: &Path, error: syn::Error) -> SourceError {
    SourceError::at(file, error.span(), error.to_string())
}

/// Puts `errors` in source order (file, line, column), so output never depends on the order
/// kinds were derived in, each once.
pub fn sort_by_place(errors: &mut Vec<SourceError>) {
    fn key(e: &SourceError) -> (&Path, usize, usize, &str) {
        (&e.file, e.line, e.column, &e.message)
    }
    errors.sort_by(|a, b| key(a).cmp(&key(b)));
    // A type that several kinds use is refused once for each; the user fixes it once.
    errors.dedup_by(|a, b| {
        (&a.file, a.line, a.column, &a.message, &a.help)
            == (&b.file, b.line, b.column, &b.message, &b.help)
    });
}

#[derive(Debug, Error)]
pub enum ManifestError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Many(Vec<SourceError>),
    #[error("{path}: cannot read: {message}")]
    Io { path: String, message: String },
    #[error("{0}")]
    Other(String),
    #[error(transparent)]
    Compile(#[from] CompileError),
    #[error(
        "{}\n  help: kopgen reproduces kube-derive/kube-core 5.0, schemars 1.2 and k8s-openapi 0.29; move the crate to those versions (kube 5 forces the small ports anyway), or pass --derive=compile to build the crate and print its own `crd()`s",
        .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
    )]
    Versions(Vec<super::versions::Mismatch>),
}

thread_local! {
    /// Whether this thread is inside [`catch_panic`].
    static CATCHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, turning a panic inside a dependency (kube-core's schema rewriting, the CEL parser)
/// into an error message, without printing the panic: kopgen never panics on any input.
///
/// The panic hook is process-wide (and other threads, a library caller's or a test's, may panic
/// for real meanwhile), so it is replaced once by one that stays quiet only on a thread inside
/// `catch_panic`.
pub fn catch_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static QUIET_HOOK: std::sync::Once = std::sync::Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !CATCHING.get() {
                previous(info);
            }
        }));
    });
    let outer = CATCHING.replace(true);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    CATCHING.set(outer);
    result.map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "unknown panic".into())
    })
}

/// Why the compiled path could not run at all (a kind's own panic is a per-kind result).
#[derive(Debug, Error)]
pub enum CompileError {
    #[error(
        "{0}: kopgen can only compile kinds of a crate; these sources are not under a Cargo.toml (derive them statically, or move them into a crate)"
    )]
    NoCrate(String),
    #[error("{manifest}: cannot read it: {message}")]
    Manifest { manifest: PathBuf, message: String },
    #[error(
        "{0}: the crate has no library target, so no other program can call its `crd()`; move the API types into `src/lib.rs` (a binary can use them from there)"
    )]
    BinaryOnly(PathBuf),
    #[error(
        "{file}: kopgen compiles kinds through the crate's library, and this file is not under its `src/`"
    )]
    OutsideCrate { file: PathBuf },
    #[error("cannot run cargo: {0}")]
    Cargo(String),
    #[error(
        "the crate does not compile with kopgen's crdgen program (in {harness}):\n{stderr}\n  help: fix the errors above (`cargo build` shows them too); types the program names must be public and reachable from the crate root"
    )]
    Build { harness: PathBuf, stderr: String },
    #[error(
        "the crate names no Kubernetes version, so kopgen built it for {version} (K8S_OPENAPI_ENABLED_VERSION), and a library it depends on enables {library}:\n{stderr}\n  help: run again with K8S_OPENAPI_ENABLED_VERSION={library}, or name that version in the crate's k8s-openapi dev-dependency (features = [\"v1_{minor}\"]), which kopgen builds a library with", minor = library.trim_start_matches("1.")
    )]
    TwoKubernetesVersions {
        version: String,
        library: String,
        stderr: String,
    },
    #[error("kopgen's crdgen program failed ({status}):\n{stderr}")]
    Run { status: String, stderr: String },
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::manifests::{Derive, Options, discover::Source, generate_with};

    /// Three kinds that share a field whose type kopgen cannot derive: the user fixes one
    /// field, and reads one error for it.
    #[test]
    fn an_error_in_a_type_several_kinds_use_is_reported_once() {
        let kind = |name: &str| {
            format!(
                "#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]\n\
                 #[kube(group = \"x.example.com\", version = \"v1\", kind = \"{name}\")]\n\
                 pub struct {name}Spec {{ pub network: Network, pub port: u16 }}\n"
            )
        };
        let text = format!(
            "use kube::CustomResource;\nuse schemars::JsonSchema;\nuse serde::{{Deserialize, Serialize}};\n\
             #[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]\n\
             pub struct Network {{ pub cidr: ipnet::IpNet, pub other: othercrate::Other }}\n{}{}{}",
            kind("A"),
            kind("B"),
            kind("C")
        );
        let sources = [Source {
            path: PathBuf::from("src/lib.rs"),
            module: "crate".into(),
            text,
        }];
        let options = Options {
            derive: Derive::Static,
            ..Options::default()
        };
        let errors = generate_with(&sources, &options)
            .expect_err("unknown types")
            .to_string();
        assert_eq!(errors.matches("`ipnet::IpNet`").count(), 1, "{errors}");
        assert_eq!(errors.matches("`othercrate::Other`").count(), 1, "{errors}");
        let first = errors.find("ipnet").expect("ipnet");
        assert!(
            first < errors.find("othercrate").expect("othercrate"),
            "{errors}"
        );
    }
}
