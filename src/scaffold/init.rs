//! `kopgen init`: renders a complete operator repository from `templates/init/`.

use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::{
    changeset::{ChangeError, ChangeSet},
    names::{self, NameError},
    project::{self, Project},
    templates::{self, Release, TemplateError},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum License {
    /// Apache License 2.0 header on every Rust file.
    Apache2,
    /// No license header.
    None,
}

/// What `kopgen init` was asked to do.
#[derive(Debug, Clone)]
pub struct InitOptions {
    pub path: PathBuf,
    pub domain: String,
    pub project_name: Option<String>,
    pub owner: Option<String>,
    pub license: License,
    pub namespaced: bool,
    pub force: bool,
}

#[derive(Debug, Error)]
pub enum InitError {
    #[error(
        "{path}: already contains a project ({file} exists). Pass --force to scaffold over it (kopgen's files are overwritten), or choose another --path"
    )]
    ExistingProject { path: String, file: &'static str },
    #[error(
        "{0}: is a file, not a directory. Pass --path with a directory (it is created if missing)"
    )]
    PathIsFile(String),
    #[error("cannot tell the project name from {0}; pass --project-name")]
    NoDirectoryName(String),
    #[error(
        "{path}: the project has kinds ({kinds}); `init --force` would orphan them. Scaffold into another \
         directory, or remove the kinds from PROJECT first"
    )]
    HasKinds { path: String, kinds: String },
    #[error(
        "{0}; `init --force` would replace it and orphan the kinds it lists. Fix PROJECT or remove it first"
    )]
    Project(crate::project::ProjectError),
    #[error(transparent)]
    Name(#[from] NameError),
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error(transparent)]
    Change(#[from] ChangeError),
}

/// The license header of every generated Rust file, which the user may edit.
pub(crate) const BOILERPLATE: &str = "hack/boilerplate.rs.txt";

/// Files whose presence means the directory already holds a project.
const PROJECT_MARKERS: &[&str] = &[project::PROJECT_FILE, "Cargo.toml", "src/main.rs"];

/// Validates `options` and renders the whole repository in memory.
pub fn plan(options: &InitOptions) -> Result<ChangeSet, InitError> {
    plan_as(options, Release::Current, None)
}

/// [`plan`] as kopgen `release` did it, with `boilerplate` as the license header if given:
/// `kopgen upgrade` replays a project's history with it.
pub(crate) fn plan_as(
    options: &InitOptions,
    release: Release,
    boilerplate: Option<&str>,
) -> Result<ChangeSet, InitError> {
    let root = &options.path;
    if root.is_file() {
        return Err(InitError::PathIsFile(root.display().to_string()));
    }
    names::validate_domain(&options.domain)?;
    if let Some(owner) = &options.owner {
        names::validate_owner(owner)?;
    }
    let project_name = match &options.project_name {
        Some(name) => name.clone(),
        None => directory_name(root)?,
    };
    names::validate_project_name(&project_name)?;
    if !options.force
        && let Some(file) = PROJECT_MARKERS.iter().find(|f| root.join(f).exists())
    {
        return Err(InitError::ExistingProject {
            path: root.display().to_string(),
            file,
        });
    }

    let mut context = tera::Context::new();
    context.insert("project_name", &project_name);
    context.insert("crate_name", &project_name.replace('-', "_"));
    context.insert("domain", &options.domain);
    // Apache-2.0 needs a copyright holder; without a license, a header appears only if asked for.
    let owner = match (&options.owner, options.license) {
        (Some(owner), _) => owner.clone(),
        (None, License::Apache2) => format!("The {project_name} Authors"),
        (None, License::None) => String::new(),
    };
    context.insert("owner", &owner);
    context.insert(
        "license",
        match options.license {
            License::Apache2 => "apache2",
            License::None => "none",
        },
    );
    context.insert("namespaced", &options.namespaced);
    context.insert("year", &super::current_year());
    context.insert("kopgen_version", release.version());
    context.insert("runtime_version", crate::runtime_crate::VERSION);
    let boilerplate = match boilerplate {
        Some(text) => text.to_owned(),
        None => templates::render_of(release, "init/hack/boilerplate.rs.txt.tera", &context)?,
    };
    context.insert("header", &header_from_boilerplate(&boilerplate));

    let mut changes = ChangeSet::new(root.clone());
    for name in templates::list_of(release, "init") {
        let output = name
            .strip_prefix("init/")
            .and_then(|n| n.strip_suffix(".tera"))
            .unwrap_or(&name)
            .to_owned();
        let text = match output.as_str() {
            BOILERPLATE => boilerplate.clone(),
            _ => templates::render_of(release, &name, &context)?,
        };
        changes.put(output, text);
    }
    // `--force` over a kopgen project keeps what PROJECT holds that init does not write, and
    // refuses while kinds exist: a new PROJECT and registries would orphan them.
    // A PROJECT that does not parse may list kinds all the same: refused rather than orphaned.
    let previous = match Project::load(root) {
        Ok(previous) => Some(previous),
        Err(error) if root.join(project::PROJECT_FILE).is_file() => {
            return Err(InitError::Project(error));
        }
        Err(_) => None,
    };
    if let Some(previous) = &previous
        && !previous.resources.is_empty()
    {
        return Err(InitError::HasKinds {
            path: root.display().to_string(),
            kinds: previous
                .resources
                .iter()
                .map(|r| format!("{}/{}", r.group, r.kind))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let project = Project {
        adopted: false,
        cli_version: release.version().to_owned(),
        domain: options.domain.clone(),
        helm: false,
        kubernetes_types: previous
            .as_ref()
            .map_or(Some(project::KubernetesTypes::Openapi), |p| {
                p.kubernetes_types
            }),
        layout: vec![project::LAYOUT.to_owned()],
        max_desc_len: previous.as_ref().and_then(|p| p.max_desc_len),
        namespaced: options.namespaced,
        project_name,
        resources: vec![],
        version: project::FORMAT_VERSION.to_owned(),
        webhook_certificates: None,
        extra: previous.map(|p| p.extra).unwrap_or_default(),
    };
    // The empty manager role, exactly as `kopgen manifests` renders it without markers.
    changes.put(
        "config/rbac/role.yaml",
        crate::rbac::render(&[], options.namespaced),
    );
    changes.put(project::PROJECT_FILE, project.render());
    crate::rustfmt::format_long_lines(&mut changes);
    if release == Release::Current {
        crate::runtime_crate::vendor(&mut changes);
    }
    Ok(changes)
}

/// The header that starts every generated Rust file: the boilerplate followed by a blank line.
pub fn header_from_boilerplate(boilerplate: &str) -> String {
    let trimmed = boilerplate.trim_end();
    if trimmed.is_empty() {
        String::new()
    } else {
        format!("{trimmed}\n\n")
    }
}

fn directory_name(root: &Path) -> Result<String, InitError> {
    let absolute = if root.is_absolute() {
        root.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(root))
            .unwrap_or_else(|_| root.to_path_buf())
    };
    let normalized = absolute.canonicalize().unwrap_or(absolute);
    normalized
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .ok_or_else(|| InitError::NoDirectoryName(root.display().to_string()))
}
