//! The embedded templates: real files under `templates/`, compiled into the binary so that
//! `kopgen` works from any directory after `cargo install`.
//!
//! A template's path below its set (`init/`, `api/`) minus the `.tera` suffix is where it is
//! rendered to, unless the scaffold maps it elsewhere (paths that depend on names).
//!
//! `src/upgrade/releases/<version>/` holds, frozen as data, the templates of kopgen releases from
//! before projects recorded what kopgen wrote (`.kopgen/scaffold/`): `kopgen upgrade` renders
//! them to know what such a project got ([`Release`]). They are not templates of new projects
//! (kopgen 0.1.0 scaffolded its machinery; the runtime crate holds it now), so they live apart.

use std::sync::OnceLock;

use include_dir::{Dir, include_dir};
use thiserror::Error;

static TEMPLATES: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/templates");
static RELEASES: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/src/upgrade/releases");

#[derive(Debug, Error)]
pub enum TemplateError {
    #[error("template {name}: {message}")]
    Render { name: String, message: String },
    #[error("embedded templates failed to load: {0}")]
    Load(String),
}

/// A release whose templates are kept: this one, or an earlier one for `kopgen upgrade`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// The running kopgen's templates.
    Current,
    /// kopgen 0.1.0, before the runtime library: the machinery was templates.
    V0_1_0,
}

impl Release {
    /// The kopgen version that wrote with these templates (PROJECT's `cliVersion`).
    pub fn version(self) -> &'static str {
        match self {
            Release::Current => crate::VERSION,
            Release::V0_1_0 => "0.1.0",
        }
    }

    /// The release whose templates a project of `cli_version` was scaffolded with, if kept.
    pub fn of(cli_version: &str) -> Option<Self> {
        [Release::Current, Release::V0_1_0]
            .into_iter()
            .find(|release| release.version() == cli_version)
    }

    /// The directory of this release's templates below `src/upgrade/releases/`, and their
    /// name prefix; `None` for the current templates.
    fn root(self) -> Option<&'static str> {
        match self {
            Release::Current => None,
            Release::V0_1_0 => Some("0.1.0"),
        }
    }
}

/// The parsed template set of `release`, built once per process when first used.
fn engine_of(release: Release) -> Result<&'static tera::Tera, TemplateError> {
    static CURRENT: OnceLock<Result<tera::Tera, String>> = OnceLock::new();
    static V0_1_0: OnceLock<Result<tera::Tera, String>> = OnceLock::new();
    let cell = match release {
        Release::Current => &CURRENT,
        Release::V0_1_0 => &V0_1_0,
    };
    cell.get_or_init(|| {
        let mut tera = tera::Tera::default();
        tera.autoescape_on(vec![]);
        let mut sources = Vec::new();
        match release.root() {
            Some(root) => {
                if let Some(dir) = RELEASES.get_dir(root) {
                    collect(dir, &mut sources);
                }
            }
            // The chart's files are Helm templates, written as they are (see [`chart_file`]).
            None => {
                for dir in TEMPLATES
                    .dirs()
                    .filter(|d| d.path() != std::path::Path::new(CHART))
                {
                    collect(dir, &mut sources);
                }
            }
        }
        let prefix = release.root().map(|root| format!("{root}/"));
        let named = sources.into_iter().map(|(name, text)| {
            let name = prefix
                .as_deref()
                .and_then(|p| name.strip_prefix(p))
                .unwrap_or(name);
            (name, text)
        });
        tera.add_raw_templates(named).map_err(|e| error_chain(&e))?;
        Ok(tera)
    })
    .as_ref()
    .map_err(|e| TemplateError::Load(e.clone()))
}

fn collect<'a>(dir: &'a Dir<'a>, out: &mut Vec<(&'a str, &'a str)>) {
    for file in dir.files() {
        if let (Some(path), Some(text)) = (file.path().to_str(), file.contents_utf8()) {
            out.push((path, text));
        }
    }
    for sub in dir.dirs() {
        collect(sub, out);
    }
}

/// The directory of the Helm chart's own files: Helm templates, not Tera ones.
const CHART: &str = "chart";

/// A file of the Helm chart kopgen renders (`_helpers.tpl`, ...), as it is written.
pub fn chart_file(name: &str) -> Option<&'static str> {
    TEMPLATES
        .get_file(format!("{CHART}/{name}"))
        .and_then(|f| f.contents_utf8())
}

/// Names of the templates under `set/` (e.g. `init`), sorted, with the set prefix.
pub fn list(set: &str) -> Vec<String> {
    list_of(Release::Current, set)
}

/// [`list`] for the templates of `release`.
pub fn list_of(release: Release, set: &str) -> Vec<String> {
    let mut names = Vec::new();
    let dir = match release.root() {
        Some(root) => RELEASES.get_dir(format!("{root}/{set}")),
        None => TEMPLATES.get_dir(set),
    };
    if let Some(dir) = dir {
        let mut sources = Vec::new();
        collect(dir, &mut sources);
        let prefix = release.root().map(|root| format!("{root}/"));
        names.extend(sources.into_iter().map(|(name, _)| {
            let name = prefix
                .as_deref()
                .and_then(|p| name.strip_prefix(p))
                .unwrap_or(name);
            name.to_owned()
        }));
    }
    names.sort();
    names
}

/// The type, trait and derive names the `api/` and `webhook/` templates bring into the modules where a
/// kind's types and controller live (their `use` declarations and `#[derive(..)]` lists): a
/// kind of such a name would clash with them, so it is refused. Derived from the templates
/// themselves, so the list cannot drift from what the generated code imports.
pub fn names_in_scope_of_kinds() -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut sources = Vec::new();
    // The webhook modules import the kind by name beside the runtime's webhook types.
    for dir in ["api", "webhook"]
        .into_iter()
        .filter_map(|d| TEMPLATES.get_dir(d))
    {
        collect(dir, &mut sources);
    }
    for (_, text) in sources
        .into_iter()
        .filter(|(name, _)| name.ends_with(".rs.tera"))
    {
        let mut rest = text;
        while let Some(at) = rest
            .find("use ")
            .into_iter()
            .chain(rest.find("derive("))
            .min()
        {
            let tail = &rest[at..];
            let end = if tail.starts_with("use ") {
                tail.find(';')
            } else {
                tail.find(')')
            }
            .unwrap_or(tail.len());
            names.extend(
                tail[..end]
                    .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                    .filter(|word| word.starts_with(|c: char| c.is_ascii_uppercase()))
                    .map(str::to_owned),
            );
            rest = &tail[end..];
        }
    }
    names
}

/// Renders one template with `context`.
pub fn render(name: &str, context: &tera::Context) -> Result<String, TemplateError> {
    render_of(Release::Current, name, context)
}

/// [`render`] with the templates of `release`.
pub fn render_of(
    release: Release,
    name: &str,
    context: &tera::Context,
) -> Result<String, TemplateError> {
    engine_of(release)?
        .render(name, context)
        .map_err(|e| TemplateError::Render {
            name: name.to_owned(),
            message: error_chain(&e),
        })
}

/// Tera nests the useful message in `source()`; flatten the chain into one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        source = inner.source();
    }
    message
}
