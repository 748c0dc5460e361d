//! `kopgen init --adopt`: makes an existing kube-rs operator a kopgen project without touching
//! its sources. It records the kinds the crate defines in PROJECT, writes `config/` (the CRDs as
//! the crate's own `crd()` gives them, RBAC from markers, kustomize), the Makefile targets and
//! the CI workflow that are missing, and, where the kinds are reachable from the crate's
//! library, a drift test; the crate's sources, `main.rs` and manager stay the user's.

use std::path::{Path, PathBuf};

use thiserror::Error;

use super::edit::{EditError, edit, uncomment};
use crate::{
    changeset::{ChangeError, ChangeSet},
    manifests::{self, discover, error::ManifestError, inventory::KindVersion},
    names::{self, NameError},
    project::{self, KubernetesTypes, Project, Resource, ResourceApi},
    templates::{self, TemplateError},
};

/// What `kopgen init --adopt` was asked to do.
#[derive(Debug, Clone)]
pub struct AdoptOptions {
    pub path: PathBuf,
    /// The project's domain; by default the one the kinds' groups share.
    pub domain: Option<String>,
}

#[derive(Debug, Error)]
pub enum AdoptError {
    #[error(
        "{0}: already a kopgen project (PROJECT exists); `kopgen manifests` and `create api` work on it as it is"
    )]
    AlreadyAProject(String),
    #[error(
        "{0}: no Cargo.toml with a [package] here; pass --path to the operator's crate (the directory of its Cargo.toml)"
    )]
    NotACrate(String),
    #[error("{path}: {message}")]
    Manifest { path: String, message: String },
    #[error(
        "{0}: the crate has neither src/lib.rs nor src/main.rs; kopgen reads the kinds from the crate's module tree"
    )]
    NoRoot(String),
    #[error(
        "{}\n  help: kopgen reproduces kube 5, schemars 1.2 and k8s-openapi 0.29: upgrade the crate to them first \
         (kube 5 forces small ports anyway; docs/ADOPTING.md walks through it), then run `kopgen init --adopt` again",
        .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
    )]
    Versions(Vec<manifests::versions::Mismatch>),
    #[error(
        "the kinds' groups ({0}) share no domain; pass --domain with the one `kopgen create api` should use for new kinds"
    )]
    NoDomain(String),
    #[error(
        "{0}: the crate defines no #[derive(CustomResource)] kind; pass --domain to adopt it all the same, and `kopgen create api` adds the first"
    )]
    NoKinds(String),
    #[error("{0}")]
    Manifests(#[from] ManifestError),
    #[error(transparent)]
    Name(#[from] NameError),
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error(transparent)]
    Change(#[from] ChangeError),
    #[error(transparent)]
    Edit(#[from] EditError),
}

/// The drift test kopgen writes; a crate with a file of that name keeps its own.
const DRIFT_TEST: &str = "tests/crds.rs";
const WORKFLOW: &str = ".github/workflows/kopgen.yml";

/// What adopting wrote besides `config/`, for the CLI to say.
#[derive(Debug, Default)]
pub struct Adopted {
    /// Why no drift test was written, if none was.
    pub no_drift_test: Option<String>,
    /// Makefile targets that were already there and kept as they are.
    pub kept_targets: Vec<String>,
    /// CRDs the static reader could not write (kinds that need compiling): `kopgen manifests`
    /// writes them.
    pub not_written: Vec<String>,
    /// The git repository the crate sits below (a workspace's member, a monorepo's crate):
    /// GitHub reads workflows only from the repository's root, where the user must move it.
    pub below_repository: Option<BelowRepository>,
}

/// Where an adopted crate sits in the git repository around it.
#[derive(Debug)]
pub struct BelowRepository {
    /// The repository's root.
    pub repository: PathBuf,
    /// The crate's directory in it, with `/`.
    pub directory: String,
    /// Whether the workflow's steps run in `directory`: a name with characters other than
    /// `[A-Za-z0-9._/-]` is left to the user rather than quoted into YAML that GitHub also
    /// reads for `${{ }}` expressions.
    pub in_workflow: bool,
}

/// Reads the crate and renders what adopting writes, in memory.
pub fn plan(options: &AdoptOptions) -> Result<(ChangeSet, Adopted), AdoptError> {
    let root = &options.path;
    let shown = root.display().to_string();
    if root.join(project::PROJECT_FILE).exists() {
        return Err(AdoptError::AlreadyAProject(shown));
    }
    let manifest = root.join("Cargo.toml");
    let package = package_name(&manifest)?;
    let src = root.join("src");
    let has_lib = src.join("lib.rs").is_file();
    if !has_lib && !src.join("main.rs").is_file() {
        return Err(AdoptError::NoRoot(shown));
    }
    let mismatches = manifests::versions::mismatches(&manifest);
    if !mismatches.is_empty() {
        return Err(AdoptError::Versions(mismatches));
    }
    // The kinds the crate's module tree reaches, from its library (else its binary).
    let sources = match has_lib {
        true => discover::sources(std::slice::from_ref(&src))?,
        false => discover::sources(&[src.join("main.rs")])?,
    };
    let kinds = manifests::inventory::kinds(&sources)?;
    let domain = match &options.domain {
        Some(domain) => domain.clone(),
        None => shared_domain(&kinds).ok_or_else(|| match kinds.is_empty() {
            true => AdoptError::NoKinds(shown.clone()),
            false => AdoptError::NoDomain(groups(&kinds)),
        })?,
    };
    names::validate_domain(&domain)?;
    // The crate's name as a project name: cargo allows `_`, Kubernetes names do not.
    let project_name = package.replace('_', "-").to_ascii_lowercase();
    names::validate_project_name(&project_name)?;

    let mut changes = ChangeSet::new(root.clone());
    let mut context = tera::Context::new();
    context.insert("project_name", &project_name);
    context.insert("crate_name", &package.replace('-', "_"));
    context.insert("domain", &domain);
    context.insert("namespaced", &false);
    context.insert("header", "");
    context.insert("kopgen_version", templates::Release::Current.version());
    context.insert("runtime_version", crate::runtime_crate::VERSION);
    for name in templates::list_of(templates::Release::Current, "init") {
        let Some(output) = name
            .strip_prefix("init/")
            .and_then(|n| n.strip_suffix(".tera"))
        else {
            continue;
        };
        if output.starts_with("config/") {
            changes.put(output, templates::render(&name, &context)?);
        }
    }
    let mut adopted = Adopted {
        below_repository: below_repository(root),
        ..Adopted::default()
    };
    if let Some(below) = adopted.below_repository.as_ref().filter(|b| b.in_workflow) {
        context.insert("working_directory", &format!("\"{}\"", below.directory));
    }
    put_makefile(&mut changes, &context, &mut adopted)?;
    if !changes.exists(WORKFLOW) {
        changes.put(
            WORKFLOW,
            templates::render("adopt/kopgen.yml.tera", &context)?,
        );
    }
    adopted.no_drift_test = drift_test(&mut changes, &context, &package, &kinds, has_lib)?;

    let project = Project {
        cli_version: templates::Release::Current.version().to_owned(),
        domain: domain.clone(),
        helm: false,
        // The CRDs stay what the operator's own `crd()` gives: the YAML it already ships.
        kubernetes_types: Some(KubernetesTypes::KubeDerive),
        layout: vec![project::LAYOUT.to_owned()],
        max_desc_len: None,
        namespaced: false,
        adopted: true,
        project_name,
        resources: kinds.iter().map(resource).collect(),
        version: project::FORMAT_VERSION.to_owned(),
        webhook_certificates: None,
        extra: Default::default(),
    };
    list_kinds(&mut changes, &project)?;
    changes.put(project::PROJECT_FILE, project.render());
    super::derived::put_manifests(&mut changes, &project);
    adopted.not_written = (project.resources.iter())
        .map(|r| format!("config/crd/bases/{}_{}.yaml", r.full_group(), r.plural()))
        .filter(|file| !changes.exists(file))
        .collect();
    adopted.not_written.dedup();
    Ok((changes, adopted))
}

fn package_name(manifest: &Path) -> Result<String, AdoptError> {
    let dir = manifest
        .parent()
        .map_or_else(String::new, |d| d.display().to_string());
    let text = match crate::regular_file::read_to_string(manifest) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(AdoptError::NotACrate(dir));
        }
        Err(e) => {
            return Err(AdoptError::Manifest {
                path: manifest.display().to_string(),
                message: e.to_string(),
            });
        }
    };
    let table: toml::Table = toml::from_str(&text).map_err(|e| AdoptError::Manifest {
        path: manifest.display().to_string(),
        message: e.to_string(),
    })?;
    table
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .map(str::to_owned)
        .ok_or(AdoptError::NotACrate(dir))
}

/// The domain every kind's group ends in (the group minus its first label), if they share one.
fn shared_domain(kinds: &[KindVersion]) -> Option<String> {
    let mut domains = kinds.iter().map(|k| split_group(&k.group).1);
    let first = domains.next()?;
    (!first.is_empty() && domains.all(|d| d == first)).then(|| first.to_owned())
}

fn groups(kinds: &[KindVersion]) -> String {
    let mut groups: Vec<&str> = kinds.iter().map(|k| k.group.as_str()).collect();
    groups.dedup();
    groups.join(", ")
}

/// `apps.example.com` as Kubebuilder records it: group `apps`, domain `example.com`.
fn split_group(group: &str) -> (&str, &str) {
    group.split_once('.').unwrap_or((group, ""))
}

fn resource(kind: &KindVersion) -> Resource {
    let (group, domain) = split_group(&kind.group);
    Resource {
        api: Some(ResourceApi {
            crd_version: "v1".into(),
            namespaced: kind.namespaced,
        }),
        controller: false,
        domain: Some(domain.to_owned()),
        group: group.to_owned(),
        kind: kind.kind.clone(),
        path: kind.path.clone(),
        plural: (kind.plural != names::kube_plural(&kind.kind)).then(|| kind.plural.clone()),
        version: kind.version.clone(),
        webhooks: None,
        extra: Default::default(),
    }
}

/// The CRD files in config/crd's kustomization and the default kustomization's `../crd`.
fn list_kinds(changes: &mut ChangeSet, project: &Project) -> Result<(), AdoptError> {
    let mut files: Vec<String> = (project.resources.iter())
        .map(|r| format!("- bases/{}_{}.yaml", r.full_group(), r.plural()))
        .collect();
    files.sort();
    files.dedup();
    edit(
        changes,
        "config/crd/kustomization.yaml",
        "+kopgen:scaffold:crdkustomizeresource",
        &files,
    )?;
    if !files.is_empty() {
        uncomment(
            changes,
            "config/default/kustomization.yaml",
            &[&["- ../crd"]],
        )?;
    }
    Ok(())
}

/// The Makefile, or the targets an existing one lacks appended to it (each block of the
/// template that defines a target the Makefile already has is left out).
/// The git repository `root` is below, and `root`'s path in it; `None` at the repository's
/// root or outside any repository.
fn below_repository(root: &Path) -> Option<BelowRepository> {
    let root = std::fs::canonicalize(root).ok()?;
    let repository = root.ancestors().find(|dir| dir.join(".git").exists())?;
    let directory = root.strip_prefix(repository).ok()?.to_str()?;
    if directory.is_empty() {
        return None;
    }
    let directory = directory.replace('\\', "/");
    let plain = |c: char| c.is_ascii_alphanumeric() || "._-/".contains(c);
    Some(BelowRepository {
        repository: repository.to_path_buf(),
        in_workflow: directory.chars().all(plain),
        directory,
    })
}

fn put_makefile(
    changes: &mut ChangeSet,
    context: &tera::Context,
    adopted: &mut Adopted,
) -> Result<(), AdoptError> {
    let text = templates::render("adopt/Makefile.tera", context)?;
    let Some(existing) = changes.read("Makefile")? else {
        changes.put("Makefile", text);
        return Ok(());
    };
    let defined = |target: &str| {
        existing
            .lines()
            .any(|line| line.split(':').next() == Some(target) && line.contains(':'))
    };
    let mut blocks = Vec::new();
    for block in text.split("\n\n") {
        let target = block
            .lines()
            .find(|l| !l.starts_with(['#', '.', '\t', ' ']) && l.contains(':') && !l.contains('='))
            .and_then(|l| l.split(':').next());
        match target {
            Some(target) if defined(target) => adopted.kept_targets.push(target.to_owned()),
            _ => blocks.push(block),
        }
    }
    let separator = if existing.ends_with("\n\n") || existing.is_empty() {
        ""
    } else if existing.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    };
    changes.put(
        "Makefile",
        format!("{existing}{separator}{}", blocks.join("\n\n")),
    );
    Ok(())
}

/// The drift test and the dev-dependency it needs, where the kinds are reachable from the
/// crate's library; else why not.
fn drift_test(
    changes: &mut ChangeSet,
    context: &tera::Context,
    package: &str,
    kinds: &[KindVersion],
    has_lib: bool,
) -> Result<Option<String>, AdoptError> {
    if !has_lib {
        return Ok(Some(
            "the crate has no library, so no test can name its kinds; CI's `kopgen manifests --check` is the drift gate".into(),
        ));
    }
    if changes.exists(DRIFT_TEST) {
        return Ok(Some(format!(
            "{DRIFT_TEST} is the crate's own; CI's `kopgen manifests --check` is the drift gate"
        )));
    }
    if let Some(private) = kinds.iter().find(|k| k.public_path.is_none()) {
        return Ok(Some(format!(
            "{} ({}) is not public from the crate's library, so a test cannot name it; CI's `kopgen manifests --check` is the drift gate",
            private.kind, private.path
        )));
    }
    let crate_name = package.replace('-', "_");
    let test = templates::render("init/tests/crds.rs.tera", context)?;
    let entries: Vec<String> = (kinds.iter())
        .filter_map(|k| k.public_path.as_deref())
        .map(|path| {
            let path = path.strip_prefix("crate").unwrap_or(path);
            format!("{crate_name}{path}::crd(),")
        })
        .collect();
    changes.put(DRIFT_TEST, test);
    edit(
        changes,
        DRIFT_TEST,
        "+kopgen:scaffold:crd-versions",
        &entries,
    )?;
    let manifest = changes.read("Cargo.toml")?.unwrap_or_default();
    changes.put("Cargo.toml", with_dev_dependency(&manifest));
    crate::runtime_crate::vendor(changes);
    Ok(None)
}

/// `manifest` with kopgen-runtime (its `testing` feature: the drift test) as a dev-dependency,
/// the rest of the file as it is.
fn with_dev_dependency(manifest: &str) -> String {
    let version = crate::runtime_crate::VERSION;
    let lines = format!(
        "kopgen-runtime = {{ version = \"{version}\", path = \"{}\", features = [\"testing\"] }}\n",
        crate::runtime_crate::VENDOR_DIR
    );
    let mut out = String::with_capacity(manifest.len() + lines.len() + 20);
    let mut added = false;
    for line in manifest.split_inclusive('\n') {
        out.push_str(line);
        if !added && line.trim() == "[dev-dependencies]" {
            if !line.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&lines);
            added = true;
        }
    }
    if !added {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("\n[dev-dependencies]\n");
        out.push_str(&lines);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dev_dependency_goes_into_the_table_that_is_there() {
        let with =
            with_dev_dependency("[package]\nname = \"a\"\n\n[dev-dependencies]\nfoo = \"1\"\n");
        assert!(
            with.contains("[dev-dependencies]\nkopgen-runtime = {"),
            "{with}"
        );
        assert!(with.ends_with("foo = \"1\"\n"), "{with}");
        let without = with_dev_dependency("[package]\nname = \"a\"");
        assert!(
            without.contains("name = \"a\"\n\n[dev-dependencies]\nkopgen-runtime"),
            "{without}"
        );
        let parsed: toml::Table = toml::from_str(&without).expect("still TOML");
        assert!(parsed["dev-dependencies"].get("kopgen-runtime").is_some());
    }

    #[test]
    fn the_domain_is_what_the_groups_share() {
        let kind = |group: &str| KindVersion {
            group: group.into(),
            kind: "A".into(),
            version: "v1".into(),
            plural: "as".into(),
            namespaced: true,
            public_path: None,
            path: "crate::A".into(),
        };
        assert_eq!(
            shared_domain(&[kind("a.example.com"), kind("b.example.com")]).as_deref(),
            Some("example.com")
        );
        assert_eq!(
            shared_domain(&[kind("a.example.com"), kind("b.other.io")]),
            None
        );
        assert_eq!(shared_domain(&[kind("example")]), None);
    }
}
