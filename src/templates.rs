//! The embedded templates: real files under `templates/`, compiled into the binary so that
//! `kopgen` works from any directory after `cargo install`.
//!
//! A template's path below its set (`init/`, `api/`) minus the `.tera` suffix is where it is
//! rendered to, unless the scaffold maps it elsewhere (paths that depend on names).

use std::sync::OnceLock;

use include_dir::{Dir, include_dir};
use thiserror::Error;

static TEMPLATES: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/templates");

#[derive(Debug, Error)]
pub enum TemplateError {
    #[error("template {name}: {message}")]
    Render { name: String, message: String },
    #[error("embedded templates failed to load: {0}")]
    Load(String),
}

/// The parsed template set, built once per process.
fn engine() -> Result<&'static tera::Tera, TemplateError> {
    static ENGINE: OnceLock<Result<tera::Tera, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let mut tera = tera::Tera::default();
            tera.autoescape_on(vec![]);
            let mut sources = Vec::new();
            collect(&TEMPLATES, &mut sources);
            tera.add_raw_templates(sources)
                .map_err(|e| error_chain(&e))?;
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

/// Names of the templates under `set/` (e.g. `init`), sorted, with the set prefix.
pub fn list(set: &str) -> Vec<String> {
    let mut names = Vec::new();
    if let Some(dir) = TEMPLATES.get_dir(set) {
        let mut sources = Vec::new();
        collect(dir, &mut sources);
        names.extend(sources.into_iter().map(|(name, _)| name.to_owned()));
    }
    names.sort();
    names
}

/// The type, trait and derive names the `api/` templates bring into the modules where a
/// kind's types and controller live (their `use` declarations and `#[derive(..)]` lists): a
/// kind of such a name would clash with them, so it is refused. Derived from the templates
/// themselves, so the list cannot drift from what the generated code imports.
pub fn names_in_scope_of_kinds() -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut sources = Vec::new();
    if let Some(dir) = TEMPLATES.get_dir("api") {
        collect(dir, &mut sources);
    }
    for (_, text) in sources {
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
    engine()?
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
