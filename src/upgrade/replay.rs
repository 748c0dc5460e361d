//! What a kopgen release scaffolds for a PROJECT: its history (`init`, then `create api` for
//! each kind and `create webhook` for each kind with webhooks) run again, with that release's
//! templates, into a scratch directory. For the release that made the project this is the
//! merge base of an upgrade; for the running kopgen, what the project would get today.

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
};

use thiserror::Error;
use walkdir::WalkDir;

use crate::{
    changeset::{ChangeError, ChangeSet},
    project::{Certificates, Project, Resource},
    scaffold::{
        api::{self, ApiError, ApiOptions},
        init::{self, InitError, InitOptions, License},
        webhook::{self, WebhookError, WebhookOptions},
    },
    templates::Release,
};

/// Files of the scaffold by path relative to the project, with `/` separators.
pub type Files = BTreeMap<String, String>;

#[derive(Debug, Error)]
pub enum ReplayError {
    #[error("cannot make a scratch directory under {dir}: {error}")]
    Scratch { dir: String, error: std::io::Error },
    #[error("replaying `kopgen init` as kopgen {version}: {error}")]
    Init {
        version: &'static str,
        error: Box<InitError>,
    },
    #[error("replaying `kopgen create api` for {what} as kopgen {version}: {error}")]
    Api {
        what: String,
        version: &'static str,
        error: Box<ApiError>,
    },
    #[error("replaying `kopgen create webhook` for {what} as kopgen {version}: {error}")]
    Webhook {
        what: String,
        version: &'static str,
        error: Box<WebhookError>,
    },
    #[error("replaying as kopgen {version}: {error}")]
    Write {
        version: &'static str,
        error: Box<ChangeError>,
    },
}

/// Renders what `release` scaffolds for `project`. `boilerplate` is the project's license
/// header (it fixes the header of every Rust file); `finalizer` tells, for a kind with a
/// controller, whether it was created with `--finalizer` (PROJECT does not record it).
pub fn replay(
    project: &Project,
    boilerplate: &str,
    release: Release,
    finalizer: &dyn Fn(&Resource) -> bool,
) -> Result<Files, ReplayError> {
    let scratch = Scratch::new()?;
    let version = release.version();
    let path = scratch.0.clone();
    let write = |changes: ChangeSet| {
        changes
            .write()
            .map(|_| ())
            .map_err(|error| ReplayError::Write {
                version,
                error: Box::new(error),
            })
    };
    let init = InitOptions {
        path: path.clone(),
        domain: project.domain.clone(),
        project_name: Some(project.project_name.clone()),
        owner: None,
        license: if boilerplate.contains("Apache License") {
            License::Apache2
        } else {
            License::None
        },
        namespaced: project.namespaced,
        force: false,
    };
    write(
        init::plan_as(&init, release, Some(boilerplate)).map_err(|error| ReplayError::Init {
            version,
            error: Box::new(error),
        })?,
    )?;
    for resource in &project.resources {
        let what = format!("{}/{} {}", resource.group, resource.version, resource.kind);
        let options = ApiOptions {
            path: path.clone(),
            group: resource.group.clone(),
            version: resource.version.clone(),
            kind: resource.kind.clone(),
            plural: resource.plural.clone(),
            namespaced: resource.api.as_ref().is_none_or(|a| a.namespaced),
            resource: resource.api.is_some(),
            controller: resource.controller,
            finalizer: resource.controller && finalizer(resource),
            force: false,
        };
        let changes = api::plan_as(&options, release).map_err(|error| ReplayError::Api {
            what: what.clone(),
            version,
            error: Box::new(error),
        })?;
        write(changes)?;
    }
    let certificates = project
        .webhook_certificates
        .unwrap_or(Certificates::CertManager);
    for resource in &project.resources {
        let Some(webhooks) = &resource.webhooks else {
            continue;
        };
        let what = format!("{}/{} {}", resource.group, resource.version, resource.kind);
        let options = |defaulting, validation, spokes: &[String]| WebhookOptions {
            path: path.clone(),
            group: resource.group.clone(),
            version: resource.version.clone(),
            kind: resource.kind.clone(),
            defaulting,
            validation,
            spokes: spokes.to_vec(),
            certificates: Some(certificates),
            force: false,
        };
        let mut runs = Vec::new();
        if webhooks.defaulting || webhooks.validation {
            runs.push(options(webhooks.defaulting, webhooks.validation, &[]));
        }
        if webhooks.conversion && !webhooks.spoke.is_empty() {
            runs.push(options(false, false, &webhooks.spoke));
        }
        for run in runs {
            let changes =
                webhook::plan_as(&run, release).map_err(|error| ReplayError::Webhook {
                    what: what.clone(),
                    version,
                    error: Box::new(error),
                })?;
            write(changes)?;
        }
    }
    Ok(files_below(&path))
}

/// Every file below `root`, by relative path.
fn files_below(root: &Path) -> Files {
    WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file())
        .filter_map(|entry| {
            let relative = entry.path().strip_prefix(root).ok()?;
            let key = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            Some((key, fs::read_to_string(entry.path()).ok()?))
        })
        .collect()
}

/// A directory of its own under the system's temporary directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Self, ReplayError> {
        let base = std::env::temp_dir();
        remove_dead_scratches(&base);
        let mut attempt = 0u32;
        loop {
            let dir = base.join(format!("kopgen-replay-{}-{attempt}", std::process::id()));
            match fs::create_dir(&dir) {
                Ok(()) => return Ok(Self(dir)),
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists && attempt < 64 => {
                    attempt += 1;
                }
                Err(error) => {
                    return Err(ReplayError::Scratch {
                        dir: base.display().to_string(),
                        error,
                    });
                }
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Removes the scratch directories of upgrades that were killed (their process is gone), which
/// no `Drop` removed. Where processes cannot be looked up (no `/proc`), they stay.
fn remove_dead_scratches(base: &Path) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = (name.to_str())
            .and_then(|n| n.strip_prefix("kopgen-replay-"))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, attempt)| {
                attempt.parse::<u32>().ok()?;
                pid.parse::<u32>().ok()
            })
        else {
            continue;
        };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && pid != std::process::id() && !proc.join(pid.to_string()).exists() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}
