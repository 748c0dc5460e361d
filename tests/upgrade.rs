//! `kopgen upgrade`: a project scaffolded by an older kopgen (checked in under
//! `tests/fixtures/upgrade/`, made by that kopgen) with a user's edits moves to this version;
//! the edits stay, conflicts are marked and fail the run, and a second run changes nothing.

#[path = "upgrade/interrupted.rs"]
mod interrupted;
mod support;

use std::path::{Path, PathBuf};

use support::Session;

/// kopgen 0.1.0's project (machinery in `src/`): `init --project-name legacy-shop`, Blog
/// v1alpha1 with `--finalizer` and v1, a cluster-scoped Tenant, a Deployment controller,
/// defaulting, validating and conversion webhooks (see tests/fixtures/upgrade/README.md).
const KOPGEN_0_1_0: &str = "tests/fixtures/upgrade/kopgen-0.1.0";

/// Copies the fixture into the session as `name`, a project of its own.
fn legacy_project(session: &Session, name: &str) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join(KOPGEN_0_1_0);
    let to = session.join(name);
    for entry in walkdir::WalkDir::new(&from) {
        let entry = entry.expect("fixture");
        let target = to.join(entry.path().strip_prefix(&from).expect("below"));
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
    to
}

/// Replaces `old` by `new` in the project's `file`, as a user would edit it.
fn edit(project: &Path, file: &str, old: &str, new: &str) {
    let path = project.join(file);
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains(old), "{file} has no {old:?}");
    std::fs::write(&path, text.replacen(old, new, 1)).expect("write");
}

fn read(project: &Path, file: &str) -> String {
    std::fs::read_to_string(project.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

const LINT_TARGET: &str = "\t$(CARGO) clippy --all-targets -- -D warnings -D clippy::dbg_macro\n";
const DOCKER_LABEL: &str = "LABEL org.opencontainers.image.source=\"https://example.com/shop\"\n";
const RBAC_MARKER: &str = "// +kopgen:rbac:groups=core,resources=secrets,verbs=get\n";
const USER_FLAG: &str = "    /// Where blogs are published.\n    #[arg(long, default_value = \"https://example.com\")]\n    pub publish_url: String,\n";

/// The edits a user of kopgen 0.1.0 made that this version's files leave room for.
fn edit_as_a_user(project: &Path) {
    edit(
        project,
        "Makefile",
        "\t$(CARGO) clippy --all-targets -- -D warnings\n",
        LINT_TARGET,
    );
    edit(
        project,
        "Dockerfile",
        "USER 65532:65532\n",
        &format!("USER 65532:65532\n{DOCKER_LABEL}"),
    );
    edit(
        project,
        "src/controllers/apps/blog_controller.rs",
        "// +kopgen:rbac:groups=events.k8s.io,resources=events,verbs=create;patch\n",
        &format!(
            "// +kopgen:rbac:groups=events.k8s.io,resources=events,verbs=create;patch\n{RBAC_MARKER}"
        ),
    );
    // A flag in the machinery's `Config`, the only place 0.1.0 had for one.
    edit(
        project,
        "src/config.rs",
        "pub struct Config {\n",
        &format!("pub struct Config {{\n{USER_FLAG}"),
    );
    edit(
        project,
        "config/manager/manager.yaml",
        "memory: 256Mi",
        "memory: 512Mi",
    );
}

#[test]
fn a_project_of_kopgen_0_1_0_moves_onto_the_runtime_keeping_the_users_changes() {
    let session = Session::new();
    let project = legacy_project(&session, "legacy-shop");
    edit_as_a_user(&project);
    let run = support::run_kopgen(&project, &["upgrade"]);
    assert_eq!(run.status, 0, "{}\n{}", run.stdout, run.stderr);

    // Every edit is still there, merged into this version's files.
    assert!(read(&project, "Makefile").contains(LINT_TARGET));
    assert!(read(&project, "Dockerfile").contains(DOCKER_LABEL));
    let controller = read(&project, "src/controllers/apps/blog_controller.rs");
    assert!(controller.contains(RBAC_MARKER), "{controller}");
    assert!(
        controller.contains("impl Reconcile for BlogReconciler"),
        "{controller}"
    );
    assert!(controller.contains("const FINALIZER: Option<&'static str> = Some("));
    let manager = read(&project, "config/manager/manager.yaml");
    assert!(manager.contains("memory: 512Mi") && manager.contains("--leader-elect"));
    // The manager's role has the permission the user's marker asks for.
    assert!(read(&project, "config/rbac/role.yaml").contains("- secrets"));

    // The machinery left `src/`; the file the user changed stayed, with what they changed.
    for gone in [
        "src/reconciler.rs",
        "src/webhook.rs",
        "src/watch.rs",
        "tests/support/control_plane.rs",
    ] {
        assert!(!project.join(gone).exists(), "{gone} is still there");
    }
    assert!(read(&project, "src/config.rs").contains(USER_FLAG));
    assert!(run.stdout.contains("keep src/config.rs"), "{}", run.stdout);
    assert!(
        run.stdout.contains("+    pub publish_url: String,"),
        "{}",
        run.stdout
    );
    assert!(
        read(&project, "PROJECT")
            .contains(&format!("cliVersion: \"{}\"", env!("CARGO_PKG_VERSION")))
    );
    assert!(project.join("vendor/kopgen-runtime/src/lib.rs").is_file());
    assert!(read(&project, "Cargo.toml").contains("\"webhooks\","));

    // A second run changes nothing.
    let before = support::tree(&project);
    let again = support::run_kopgen(&project, &["upgrade"]);
    assert_eq!(again.status, 0, "{}\n{}", again.stdout, again.stderr);
    assert!(again.stdout.contains("0 files written"), "{}", again.stdout);
    assert!(
        support::tree(&project) == before,
        "the second upgrade changed files"
    );

    // The project is a working one, with no further edit.
    let check = support::run_kopgen(&project, &["manifests", "--check"]);
    assert_eq!(check.status, 0, "{}{}", check.stdout, check.stderr);
    support::cargo_ok(&project, &["fmt", "--all", "--", "--check"]);
    support::cargo_ok(
        &project,
        &["clippy", "--all-targets", "--", "-D", "warnings"],
    );
    support::cargo_ok(&project, &["test"]);
}

/// Edits of lines this version rewrites conflict: both sides are written with markers, the
/// rest of the upgrade is written, and the run fails naming the files.
#[test]
fn a_conflicting_edit_is_marked_and_fails_the_run() {
    let session = Session::new();
    let project = legacy_project(&session, "conflicted");
    edit(
        &project,
        "src/main.rs",
        "    manager::run(Config::parse()).await\n",
        "    let config = Config::parse();\n    tracing::info!(\"starting\");\n    manager::run(config).await\n",
    );
    edit(
        &project,
        "Cargo.toml",
        "tracing-subscriber = { version = \"0.3\", features = [\"env-filter\", \"json\"] }\n",
        "tracing-subscriber = { version = \"0.3\", features = [\"env-filter\", \"json\"] }\nurl = \"2\"\n",
    );
    let run = support::run_kopgen(&project, &["upgrade"]);
    assert_ne!(run.status, 0, "{}", run.stdout);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(
        run.stderr.contains("src/main.rs") && run.stderr.contains("Cargo.toml"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("grep -n '^<<<<<<<'"), "{}", run.stderr);
    for file in ["src/main.rs", "Cargo.toml"] {
        let text = read(&project, file);
        assert!(
            text.contains("<<<<<<< ours") && text.contains(">>>>>>> theirs"),
            "{text}"
        );
    }
    assert!(read(&project, "src/main.rs").contains("tracing::info!(\"starting\");"));
    assert!(read(&project, "src/main.rs").contains("kopgen_runtime::Config"));
    assert!(read(&project, "Cargo.toml").contains("url = \"2\""));
    // Everything else moved on.
    assert!(!project.join("src/reconciler.rs").exists());
    assert!(read(&project, "src/lib.rs").contains("kopgen_runtime"));
}

/// What the old kopgen's templates replay is exactly what it wrote: on the untouched fixture
/// every file is replaced or removed, none is taken for a file the user changed.
#[test]
fn the_replayed_merge_base_is_what_kopgen_0_1_0_wrote() {
    use kopgen::upgrade::{self, UpgradeOptions, merge::Outcome};
    let session = Session::new();
    let project = legacy_project(&session, "pristine");
    let upgrade = upgrade::plan(&UpgradeOptions {
        path: project.clone(),
        allow_dirty: true,
    })
    .expect("plan");
    assert_eq!(upgrade.from, "0.1.0");
    let changed: Vec<_> = upgrade
        .steps
        .iter()
        .filter(|s| {
            !matches!(
                s.outcome,
                Outcome::Replace(_) | Outcome::Delete | Outcome::Create(_)
            )
        })
        .collect();
    assert!(changed.is_empty(), "taken for user changes: {changed:#?}");
    assert!(
        upgrade
            .steps
            .iter()
            .filter(|s| s.outcome == Outcome::Delete)
            .count()
            >= 20,
        "{:#?}",
        upgrade.steps
    );
}

/// A project of this version upgrades to nothing, edited or not.
#[test]
fn a_project_of_this_version_upgrades_to_nothing() {
    let session = Session::new();
    let project = session.init_project("current", &[]);
    support::create_api_ok(
        &project,
        &[
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Blog",
            "--finalizer",
        ],
    );
    support::create_api_ok(
        &project,
        &["--group", "apps", "--version", "v1alpha1", "--kind", "Blog"],
    );
    support::create_api_ok(
        &project,
        &[
            "--group",
            "infra",
            "--version",
            "v1",
            "--kind",
            "Tenant",
            "--namespaced=false",
        ],
    );
    support::create_api_ok(
        &project,
        &[
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Deployment",
            "--resource=false",
        ],
    );
    let webhook = |args: &[&str]| {
        let mut all = vec![
            "create",
            "webhook",
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Blog",
        ];
        all.extend_from_slice(args);
        let run = support::run_kopgen(&project, &all);
        assert_eq!(run.status, 0, "{}", run.stderr);
    };
    webhook(&[
        "--defaulting",
        "--programmatic-validation",
        "--certificates",
        "self-managed",
    ]);
    webhook(&["--conversion", "--spoke", "v1alpha1"]);
    edit(
        &project,
        "Makefile",
        "\t$(CARGO) clippy --all-targets -- -D warnings\n",
        LINT_TARGET,
    );
    let before = support::tree(&project);
    let run = support::run_kopgen(&project, &["upgrade"]);
    assert_eq!(run.status, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("0 files written"), "{}", run.stdout);
    assert!(support::tree(&project) == before);
}

#[test]
fn dry_run_shows_the_diff_and_writes_nothing() {
    let session = Session::new();
    let project = legacy_project(&session, "dry");
    edit_as_a_user(&project);
    let before = support::tree(&project);
    let run = support::run_kopgen(&project, &["upgrade", "--dry-run"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(support::tree(&project) == before, "--dry-run wrote");
    assert!(
        run.stdout.contains("would merge Makefile"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("would delete src/reconciler.rs"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("--- a/src/main.rs"), "{}", run.stdout);
    assert!(
        run.stdout.contains("+use clap::Parser;") || run.stdout.contains("+struct Flags"),
        "{}",
        run.stdout
    );
}

#[test]
fn what_cannot_be_upgraded_is_refused_and_nothing_changes() {
    let session = Session::new();
    let project = legacy_project(&session, "refused");
    let set_version = |version: &str| {
        let text = read(&project, "PROJECT");
        let line = text
            .lines()
            .find(|l| l.starts_with("cliVersion:"))
            .expect("cliVersion");
        std::fs::write(
            project.join("PROJECT"),
            text.replacen(line, &format!("cliVersion: {version}"), 1),
        )
        .expect("write");
    };
    set_version("9.0.0");
    let error = support::fails_cleanly_in(&project, &["upgrade"]);
    assert!(
        error.contains("kopgen 9.0.0, newer than this kopgen"),
        "{error}"
    );
    set_version("0.0.7");
    let error = support::fails_cleanly_in(&project, &["upgrade"]);
    assert!(error.contains("older than any kopgen"), "{error}");
    set_version("0.1.5");
    let error = support::fails_cleanly_in(&project, &["upgrade"]);
    assert!(error.contains("the kopgen release after it"), "{error}");
    set_version("0.2.0-alpha");
    let error = support::fails_cleanly_in(&project, &["upgrade"]);
    assert!(error.contains("a pre-release"), "{error}");
    for garbage in ["99999999999999999999.0.0", "-1.0.0", "'1.0'"] {
        set_version(garbage);
        let error = support::fails_cleanly_in(&project, &["upgrade"]);
        assert!(
            error.contains("is not a kopgen version"),
            "{garbage}: {error}"
        );
    }
    set_version("0.1.0");
    let error = support::fails_cleanly_in(&session.join("refused/src"), &["upgrade"]);
    assert!(error.contains("no PROJECT file"), "{error}");

    if !support::need(
        "git",
        "what_cannot_be_upgraded_is_refused",
        "apt-get install git",
    ) {
        return;
    }
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&project)
            .output()
            .expect("git runs");
        assert!(
            status.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&status.stderr)
        );
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "scaffold"]);
    // A program the repository's config names (a cloned repository can carry it) is not run.
    let marker = session.join("fsmonitor-ran");
    let monitor = session.join("fsmonitor.sh");
    std::fs::write(&monitor, format!("#!/bin/sh\ntouch {}\n", marker.display())).expect("write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&monitor, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    git(&["config", "core.fsmonitor", &monitor.display().to_string()]);
    edit(
        &project,
        "Makefile",
        "IMG ?= controller:latest",
        "IMG ?= shop:latest",
    );
    let error = support::fails_cleanly_in(&project, &["upgrade"]);
    assert!(
        error.contains("uncommitted changes (Makefile)") && error.contains("--allow-dirty"),
        "{error}"
    );
    assert!(
        !marker.exists(),
        "git status ran the repository's core.fsmonitor"
    );
    let run = support::run_kopgen(&project, &["upgrade", "--allow-dirty"]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(read(&project, "Makefile").contains("IMG ?= shop:latest"));
}
