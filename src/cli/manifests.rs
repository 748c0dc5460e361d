//! `kopgen manifests`: its flags, and the run that derives the CRDs, the RBAC role and the
//! webhook configurations and writes them (or, with `--check`, compares them).

use std::{
    fmt::Write as _,
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::Context as _;

use crate::changeset::ChangeSet;

#[derive(Debug, clap::Args)]
pub struct ManifestsArgs {
    /// Project directory (its `src/` is read and `config/crd/bases/` written unless overridden).
    #[arg(long, default_value = ".")]
    pub path: PathBuf,
    /// Files or directories to read (a directory is read as a crate's `src/`). Repeatable.
    #[arg(long = "paths", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Where to write the CRD files.
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Compare with the files on disk, print a diff and exit 1 if anything would change; write nothing.
    #[arg(long)]
    pub check: bool,
    /// Print the CRDs to standard output instead of writing files.
    #[arg(long)]
    pub stdout: bool,
    /// Structural-schema lint: `error` (default: errors stop kopgen, warnings are printed),
    /// `warn` (report everything, still write), `deny` (warnings are errors too), `off`.
    #[arg(long, value_enum, default_value_t = LintMode::Error)]
    pub lint: LintMode,
    /// How CRDs are derived: `auto` reads the source and compiles the crate only for the kinds
    /// that need it; `static` never compiles (for CI jobs without a Rust toolchain: what needs
    /// compiling is an error); `compile` compiles the crate for every kind.
    #[arg(long, value_enum, default_value_t = DeriveMode::Auto)]
    pub derive: DeriveMode,
    /// Features to enable beside the crate's default ones, as for cargo (comma-separated or
    /// repeated): items under a `#[cfg(feature = ..)]` that is off are not API.
    #[arg(long, value_name = "FEATURES", value_delimiter = ',')]
    pub features: Vec<String>,
    /// Truncate descriptions to N characters (0 drops them), like controller-gen's maxDescLen.
    /// In a project, PROJECT's `maxDescLen` (`kopgen edit --max-desc-len`) sets it for
    /// every run and for the project's drift test; this flag overrides it for one run.
    #[arg(long, value_name = "N")]
    pub max_desc_len: Option<usize>,
    /// Print each CRD's size (compact JSON, as clients send it) and its share of the API
    /// server's limit, to standard error.
    #[arg(long)]
    pub sizes: bool,
    /// Fail on changes that break existing objects or clients since a previous revision of the
    /// CRDs: a git revision (`origin/main`: the output directory there; `REF:path`), a CRD
    /// file or directory, or `kube://` (the cluster in the kubeconfig, with its stored
    /// versions). Checks are set in `config/crd/compat.yaml` (crdify's format).
    #[arg(long, value_name = "REF")]
    pub against: Option<String>,
    /// Print every CEL rule's estimated cost, as the API server estimates it, as a share of
    /// its budget (10,000,000 per rule, 100,000,000 for a version's rules together).
    #[arg(long)]
    pub cel_cost: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeriveMode {
    Auto,
    Static,
    Compile,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LintMode {
    Error,
    Warn,
    Deny,
    Off,
}

/// A CRD this large (as JSON) is two thirds of the way to the limit: one more embedded
/// Kubernetes type, or a second version, can cross it.
pub const SIZE_WARNING: usize = 1_048_576;

/// etcd's default request limit (1.5 MiB), which every object the API server stores must fit.
pub const SIZE_ERROR: usize = 1_572_864;

/// Signals a `--check` that found differences: the CLI exits 1 without an error message.
#[derive(Debug)]
pub struct CheckFailed;

impl std::fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("generated files are out of date; run `kopgen manifests` (or `make manifests`) and commit the result")
    }
}

impl std::error::Error for CheckFailed {}

pub(super) fn run(args: ManifestsArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    // `--path .` names the current directory: no `/./` in paths kopgen prints.
    let root: PathBuf = cwd
        .join(&args.path)
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    let (paths, only) = if args.paths.is_empty() {
        (
            vec![root.join("src")],
            crate::manifests::options::Only::default(),
        )
    } else {
        crate::manifests::discover::crate_roots(&args.paths).context("kopgen manifests")?
    };
    let output_dir = args
        .output_dir
        .as_ref()
        .map_or_else(|| root.join("config/crd/bases"), |dir| cwd.join(dir));
    // A PROJECT that does not parse is an error, never "up to date" for a project whose
    // settings, roles and webhooks were silently left out.
    let project = match crate::project::Project::load(&root) {
        Ok(project) => Some(project),
        Err(crate::project::ProjectError::NotAProject(_)) => None,
        Err(e) => return Err(anyhow::Error::new(e).context("kopgen manifests")),
    };
    let sources = crate::manifests::discover::sources(&paths).context("kopgen manifests")?;
    // The crate whose library the sources are: its versions are checked, and it is what the
    // compiled path builds. Paths in several crates (or none) can only be read statically.
    let manifests_of: Vec<Option<PathBuf>> = paths
        .iter()
        .map(|p| crate::manifests::versions::crate_manifest(p))
        .collect();
    let manifest = match manifests_of.split_first() {
        Some((first, rest)) if rest.iter().all(|m| m == first) => first.clone(),
        _ => None,
    };
    let settings = match &project {
        Some(project) => crate::manifests::Options::default()
            .for_project(project)
            .with_patches(&root)
            .context("kopgen manifests")?,
        None => crate::manifests::Options::default(),
    };
    let options = crate::manifests::Options {
        lint: args.lint != LintMode::Off,
        max_desc_len: args.max_desc_len.or(settings.max_desc_len),
        kubernetes_annotations: settings.kubernetes_annotations,
        derive: match args.derive {
            DeriveMode::Auto => crate::manifests::Derive::Auto,
            DeriveMode::Static => crate::manifests::Derive::Static,
            DeriveMode::Compile => crate::manifests::Derive::Compile,
        },
        manifest,
        features: args.features.clone(),
        cel_cost: args.cel_cost,
        only,
        patches: settings.patches.clone(),
        against: match &args.against {
            Some(spec) => Some(std::sync::Arc::new(baseline(
                spec,
                &root,
                &output_dir,
                &cwd,
            )?)),
            None => None,
        },
    };
    let generated = crate::manifests::generate_with(&sources, &options).map_err(|e| {
        let needs_compiling = matches!(&e, crate::manifests::error::ManifestError::Many(errors)
            if errors.iter().any(|e| e.unsupported));
        match (needs_compiling, options.derive) {
            (true, crate::manifests::Derive::Static) => anyhow::anyhow!(
                "kopgen manifests: {e}\nnote: with --derive=auto (the default) kopgen compiles the crate for the kinds above that it cannot derive from the source"
            ),
            (true, _) if options.manifest.is_none() => anyhow::anyhow!(
                "kopgen manifests: {e}\nnote: these sources are not the library of a crate (a Cargo.toml with them under its src/), so kopgen cannot compile them; fix them as each help says"
            ),
            _ => anyhow::Error::new(e).context("kopgen manifests"),
        }
    })?;
    let outputs = generated.outputs;
    // A patch whose CRD is gone would stop applying without a word (a kind renamed, a plural
    // changed): the whole project's CRDs are derived here, so every patch must have found one.
    if args.paths.is_empty() {
        let files: Vec<String> = (outputs.iter())
            .map(|o| o.path.display().to_string())
            .collect();
        let unused = settings.patches.unused(&files);
        if !unused.is_empty() {
            let names: Vec<String> = unused.iter().map(|p| display_path(&cwd, p)).collect();
            anyhow::bail!(
                "kopgen manifests: {} {} no CRD of the project; each is named as the file in config/crd/bases/ it patches (`<group>_<plural>.yaml`): rename it to the CRD's new file, or delete it; nothing was written",
                names.join(", "),
                if names.len() == 1 { "patches" } else { "patch" }
            );
        }
    }
    if outputs.is_empty() {
        let read: Vec<String> = paths.iter().map(|p| display_path(&cwd, p)).collect();
        eprintln!(
            "note: no #[derive(CustomResource)] in {}; `kopgen create api` adds a kind",
            read.join(", ")
        );
    }
    let mut blocking = 0;
    let mut report = String::new();
    // A kind the previous revision had and this one lacks breaks every object of it.
    if let Some(baseline) = &options.against {
        for (name, (_, origin)) in &baseline.crds {
            if !outputs.iter().any(|o| &o.crd_name == name) {
                let _ = writeln!(
                    report,
                    "error[breaking/crdRemoval]: {origin}: CRD {name} is no longer generated; its objects would be deleted with it\n  help: keep the kind (serve no version of it, if it must go) until no object of it is left"
                );
                blocking += 1;
            }
        }
    }
    for source in &sources {
        for line in crate::kubebuilder_markers::report(
            Path::new(&display_path(&cwd, &source.path)),
            &source.text,
        ) {
            let _ = writeln!(report, "{line}");
            if args.lint == LintMode::Deny {
                blocking += 1;
            }
        }
    }
    for compiled in &generated.compiled {
        let _ = writeln!(report, "note: compiled the crate for {compiled}");
    }
    for located in &generated.findings {
        let mut located = located.clone();
        located.file = PathBuf::from(display_path(&cwd, &located.file));
        let _ = writeln!(report, "{located}");
        let severity = located.finding.severity;
        let is_error = severity == crate::manifests::lint::Severity::Error;
        let is_note = severity == crate::manifests::lint::Severity::Note;
        if is_error || (args.lint == LintMode::Deny && !is_note) {
            blocking += 1;
        }
    }
    if args.sizes {
        let _ = writeln!(
            report,
            "CRD sizes as JSON (warning from {} KiB, error over {} KiB, the API server's limit):",
            SIZE_WARNING / 1024,
            SIZE_ERROR / 1024
        );
        for output in &outputs {
            let _ = writeln!(
                report,
                "{:>10.1} KiB {:>4}%  {}",
                output.json_bytes as f64 / 1024.0,
                output.json_bytes * 100 / SIZE_ERROR,
                display_path(&cwd, &output_dir.join(&output.path))
            );
        }
    }
    let help = "help: drop or shorten descriptions for every run with `kopgen edit --max-desc-len N` (0 drops them; controller-gen's maxDescLen), or split the kind";
    for output in &outputs {
        let size = output.json_bytes;
        let name = display_path(&cwd, &output_dir.join(&output.path));
        if size > SIZE_ERROR {
            let _ = writeln!(
                report,
                "error[size]: {name}: the CRD is {} KiB as JSON, over the API server's limit of 1.5 MiB (etcd's request limit): it cannot be applied\n  {help}",
                size / 1024
            );
            blocking += 1;
        } else if size > SIZE_WARNING {
            let _ = writeln!(
                report,
                "warning[size]: {name}: the CRD is {} KiB as JSON, {}% of the API server's limit of 1.5 MiB\n  {help}",
                size / 1024,
                size * 100 / SIZE_ERROR
            );
            if args.lint == LintMode::Deny {
                blocking += 1;
            }
        }
    }
    // In a project, the samples are checked against the CRDs just derived: a warning while the
    // user reshapes the types (`make manifests`), an error for CI (`--check`, `--lint=deny`).
    if args.lint != LintMode::Off && args.paths.is_empty() {
        let crds: Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
            outputs
                .iter()
                .filter_map(|o| crate::yaml::from_str(&o.contents).ok())
                .collect();
        let level = if args.check { "error" } else { "warning" };
        for problem in crate::samples::problems(&root, &crds, &|p| display_path(&cwd, p)) {
            let _ = writeln!(report, "{level}{problem}");
            if args.check || args.lint == LintMode::Deny {
                blocking += 1;
            }
        }
    }
    if !report.is_empty() {
        let _ = std::io::stderr().lock().write_all(report.as_bytes());
    }
    if blocking > 0 && args.lint != LintMode::Warn {
        let breaking = generated
            .findings
            .iter()
            .filter(|l| {
                l.finding.severity == crate::manifests::lint::Severity::Error
                    && (l.finding.rule.starts_with("breaking/")
                        || l.finding.rule.starts_with("ratcheted/"))
            })
            .count()
            + report.matches("error[breaking/crdRemoval]").count();
        if breaking > 0 {
            anyhow::bail!(
                "kopgen manifests: {blocking} error(s), {breaking} of them changes since {} that break existing objects or clients; nothing was written",
                args.against.as_deref().unwrap_or_default()
            );
        }
        anyhow::bail!(
            "kopgen manifests: {blocking} lint error(s); nothing was written (use --lint=warn to write anyway)"
        );
    }
    // In a kopgen project, RBAC markers become config/rbac/role.yaml.
    // Markers count where rustc compiles them: the library's modules and the binaries, without
    // test code.
    let marker_sources = match &project {
        Some(_) => {
            let mut crates = vec![sources];
            if args.paths.is_empty() {
                crates.extend(
                    crate::manifests::discover::binary_crates(&root.join("src"))
                        .context("kopgen manifests")?,
                );
            }
            crate::manifests::marker_sources(&crates, &options).context("kopgen manifests")?
        }
        None => Vec::new(),
    };
    let role = match &project {
        Some(project) => {
            let rules = crate::rbac::collect(&marker_sources).context("kopgen manifests")?;
            if project.namespaced
                && let Some(rule) = rules.iter().find(|r| !r.urls.is_empty())
            {
                anyhow::bail!(
                    "kopgen manifests: an RBAC marker grants urls {:?}, which only a ClusterRole can hold, and this project is --namespaced (Roles only); drop the marker or scaffold a cluster-wide project",
                    rule.urls
                );
            }
            Some(crate::rbac::render(&rules, project.namespaced))
        }
        None => None,
    };
    // And webhook markers become config/webhook/manifests.yaml.
    let webhooks = match &project {
        Some(_) => {
            let found = crate::webhooks::collect(&marker_sources).context("kopgen manifests")?;
            crate::webhooks::render(&found)
        }
        None => None,
    };
    if args.stdout {
        for output in &outputs {
            write!(out, "---\n{}", output.contents)?;
        }
        if let Some(role) = &role {
            write!(out, "---\n{role}")?;
        }
        if let Some(webhooks) = &webhooks {
            write!(out, "{webhooks}")?;
        }
        return Ok(());
    }
    let crd_files = outputs.len();
    let mut changes = ChangeSet::new(root.clone());
    if args.output_dir.is_some() {
        changes.allow(&output_dir);
    }
    // File names are built from names checked against the API server's rules; a name that is
    // not one plain file name would be a bug, and must not write outside the output directory.
    if let Some(bad) = outputs.iter().find(|o| {
        o.path.components().count() != 1
            || !matches!(
                o.path.components().next(),
                Some(std::path::Component::Normal(_))
            )
    }) {
        anyhow::bail!(
            "kopgen manifests: refusing to write {}: not a file name inside {}",
            bad.path.display(),
            display_path(&cwd, &output_dir)
        );
    }
    // The Helm chart, from the same CRDs, role and webhooks, and the files of config/.
    if let (Some(project), Some(role)) = (&project, &role)
        && project.helm
    {
        let derived = crate::chart::Derived {
            crds: &outputs,
            role,
            webhooks: webhooks.as_deref(),
        };
        crate::chart::render(project, &derived, &mut changes).context("kopgen manifests")?;
    }
    for output in outputs {
        changes.put(output_dir.join(output.path), output.contents);
    }
    if let Some(role) = role {
        changes.put("config/rbac/role.yaml", role);
    }
    if let Some(webhooks) = webhooks {
        changes.put(crate::webhooks::PATH, webhooks);
    }
    if args.check {
        let stale = changes.changes_with_old();
        // Files whose manifests are unchanged but for how the YAML is written (an older
        // kopgen's writer): one note for all of them, not a diff of every line.
        let (restyled, changed): (Vec<_>, Vec<_>) = stale.iter().partition(|(change, old)| {
            old.as_deref()
                .is_some_and(|old| same_documents(old, &change.contents))
        });
        if !restyled.is_empty() {
            let names: Vec<String> = restyled
                .iter()
                .map(|(change, _)| display_path(&cwd, &root.join(&change.path)))
                .collect();
            writeln!(
                out,
                "note: {} file(s) hold the same manifests in an older kopgen's YAML style: {}\n  \
                 kopgen now writes YAML with serde-saphyr, as kube-rs documents for printing CRDs \
                 (long descriptions folded); run `kopgen manifests` once and commit the result",
                names.len(),
                names.join(", ")
            )?;
        }
        for (change, old) in &changed {
            let path = root.join(&change.path);
            let old = old.as_deref().unwrap_or_default();
            let diff = similar::TextDiff::from_lines(old, &change.contents);
            let name = display_path(&cwd, &path);
            write!(out, "{}", diff.unified_diff().header(&name, &name))?;
        }
        if stale.is_empty() {
            writeln!(
                out,
                "{} CRD file(s) up to date in {}",
                crd_files,
                display_path(&cwd, &output_dir)
            )?;
            return Ok(());
        }
        return Err(CheckFailed.into());
    }
    let written = changes.write()?;
    for change in written {
        let verb = change.kind.done();
        let size = change.contents.len() as f64 / 1024.0;
        let path = display_path(&cwd, &root.join(&change.path));
        writeln!(out, "{verb:>12} {path} ({size:.1} KiB)")?;
    }
    Ok(())
}

/// The revision `--against` names and the project's gate configuration.
fn baseline(
    spec: &str,
    root: &Path,
    output_dir: &Path,
    cwd: &Path,
) -> anyhow::Result<crate::compat::Baseline> {
    let config_file = root.join(crate::compat::config::PATH);
    let config = if config_file.exists() {
        crate::compat::Config::load(&config_file).context("kopgen manifests")?
    } else {
        crate::compat::Config::kopgen()
    };
    let crds = crate::compat::source::load(spec, Some(output_dir), cwd)
        .with_context(|| format!("kopgen manifests --against {spec}"))?;
    if crds.is_empty() {
        eprintln!("note: no CRDs in {spec}: nothing to compare with (a first release?)");
    }
    Ok(crate::compat::Baseline { crds, config })
}

/// `path` relative to the current directory when it is below it, for short messages.
fn display_path(cwd: &Path, path: &Path) -> String {
    path.strip_prefix(cwd).unwrap_or(path).display().to_string()
}

/// Whether two YAML texts hold the same documents (comments and style aside).
fn same_documents(a: &str, b: &str) -> bool {
    fn documents(text: &str) -> Option<Vec<serde_json::Value>> {
        crate::yaml::documents(text).ok()
    }
    match (documents(a), documents(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}
