//! `kopgen create webhook`, as a user runs it: what it writes, what a second run does, what
//! bad input says (and that it changes nothing), and `kopgen manifests` for webhook markers.

#[path = "create_webhook/certificates.rs"]
mod certificates;
mod support;

use std::path::Path;

use support::{Session, fails_cleanly_in, run_kopgen, tree};

fn webhook(project: &Path, args: &str) -> support::Run {
    let args: Vec<&str> = ["create", "webhook"]
        .into_iter()
        .chain(args.split_whitespace())
        .collect();
    run_kopgen(project, &args)
}

fn webhook_ok(project: &Path, args: &str) -> support::Run {
    let run = webhook(project, args);
    assert_eq!(run.status, 0, "create webhook {args}:\n{}", run.stderr);
    run
}

fn project_with_blog(session: &Session) -> std::path::PathBuf {
    let project = session.init_demo(&[]);
    for version in ["v1", "v1alpha1"] {
        support::create_api_ok(
            &project,
            &["--group", "apps", "--version", version, "--kind", "Blog"],
        );
    }
    project
}

fn read(project: &Path, file: &str) -> String {
    std::fs::read_to_string(project.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn a_webhook_is_scaffolded_registered_and_its_manifests_written() {
    let session = Session::new();
    let project = project_with_blog(&session);
    webhook_ok(
        &project,
        "--group apps --version v1 --kind Blog --defaulting",
    );
    let module = read(&project, "src/webhooks/apps_v1_blog.rs");
    assert!(module.contains("impl Defaulter for Blog {"), "{module}");
    assert!(!module.contains("impl Validator"), "{module}");
    let registry = read(&project, "src/webhooks/mod.rs");
    assert!(registry.contains("pub mod apps_v1_blog;"), "{registry}");
    assert!(
        registry.contains("    apps_v1_blog::routes,\n"),
        "{registry}"
    );
    let manifests = read(&project, "config/webhook/manifests.yaml");
    assert!(manifests.contains("kind: MutatingWebhookConfiguration"));
    assert!(!manifests.contains("kind: ValidatingWebhookConfiguration"));
    assert!(manifests.contains("path: /mutate-apps-example-com-v1-blog"));
    let default = read(&project, "config/default/kustomization.yaml");
    for line in [
        "\n- ../webhook\n",
        "\n- ../certmanager\n",
        "\npatches:\n",
        "\nreplacements:\n",
    ] {
        assert!(default.contains(line), "{line:?} in {default}");
    }
    let project_file = read(&project, "PROJECT");
    assert!(
        project_file.contains("  webhooks:\n    defaulting: true\n"),
        "{project_file}"
    );
    // What create webhook wrote is what kopgen manifests writes.
    let check = run_kopgen(&project, &["manifests", "--check"]);
    assert_eq!(check.status, 0, "{}", check.stdout);
}

#[test]
fn a_second_run_adds_validation_only_with_force_and_keeps_what_was_there() {
    let session = Session::new();
    let project = project_with_blog(&session);
    webhook_ok(
        &project,
        "--group apps --version v1 --kind Blog --defaulting",
    );
    let message = fails_cleanly_in(
        &project,
        &[
            "create",
            "webhook",
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Blog",
            "--programmatic-validation",
        ],
    );
    assert!(message.contains("already has webhooks"), "{message}");
    assert!(message.contains("--force"), "{message}");

    webhook_ok(
        &project,
        "--group apps --version v1 --kind Blog --programmatic-validation --force",
    );
    let module = read(&project, "src/webhooks/apps_v1_blog.rs");
    assert!(module.contains("impl Defaulter for Blog") && module.contains("fn validate_update("));
    let registry = read(&project, "src/webhooks/mod.rs");
    assert_eq!(
        registry.matches("apps_v1_blog::routes,").count(),
        1,
        "{registry}"
    );
    let default = read(&project, "config/default/kustomization.yaml");
    assert_eq!(default.matches("- ../webhook\n").count(), 1, "{default}");
    let manifests = read(&project, "config/webhook/manifests.yaml");
    assert!(
        manifests.contains("kind: ValidatingWebhookConfiguration"),
        "{manifests}"
    );
}

#[test]
fn conversion_needs_the_storage_version_as_hub_and_known_spokes() {
    let session = Session::new();
    let project = project_with_blog(&session);
    let message = fails_cleanly_in(
        &project,
        &[
            "create",
            "webhook",
            "--group",
            "apps",
            "--version",
            "v1alpha1",
            "--kind",
            "Blog",
            "--conversion",
            "--spoke",
            "v1",
        ],
    );
    assert!(message.contains("is not it"), "{message}");
    assert!(message.contains("Pass --version v1"), "{message}");
    let message = fails_cleanly_in(
        &project,
        &[
            "create",
            "webhook",
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Blog",
            "--conversion",
            "--spoke",
            "v2",
        ],
    );
    assert!(message.contains("no other version v2"), "{message}");
    assert!(message.contains("v1, v1alpha1"), "{message}");

    webhook_ok(
        &project,
        "--group apps --version v1 --kind Blog --conversion --spoke v1alpha1",
    );
    let conversion = read(&project, "src/webhooks/apps_v1_blog_conversion.rs");
    assert!(conversion.contains("impl TryFrom<v1alpha1::Blog> for v1::Blog"));
    assert!(conversion.contains("impl TryFrom<v1::Blog> for v1alpha1::Blog"));
    let crd = read(&project, "config/crd/kustomization.yaml");
    assert!(
        crd.contains("\npatches:\n- path: patches/webhook_in_blogs.yaml\n"),
        "{crd}"
    );
    assert!(
        crd.contains("\nconfigurations:\n- kustomizeconfig.yaml\n"),
        "{crd}"
    );
    let patch = read(&project, "config/crd/patches/webhook_in_blogs.yaml");
    assert!(patch.contains("name: blogs.apps.example.com") && patch.contains("path: /convert"));
    let injection = read(&project, "config/default/webhook_ca_injection.yaml");
    assert_eq!(
        injection
            .matches("kind: CustomResourceDefinition, name: blogs.apps.example.com")
            .count(),
        2
    );
    // Conversion only: no admission webhooks, so no webhook manifests.
    assert!(!project.join("config/webhook/manifests.yaml").exists());
    assert!(!project.join("src/webhooks/apps_v1_blog.rs").exists());
}

#[test]
fn bad_input_is_refused_with_what_to_do_and_changes_nothing() {
    let session = Session::new();
    let project = project_with_blog(&session);
    let cases: &[(&[&str], &str)] = &[
        (
            &["--group", "apps", "--version", "v1", "--kind", "Blog"],
            "nothing to scaffold",
        ),
        (
            &[
                "--group",
                "apps",
                "--version",
                "v1",
                "--kind",
                "Post",
                "--defaulting",
            ],
            "is not a kind of this project",
        ),
        (
            &[
                "--group",
                "web",
                "--version",
                "v1",
                "--kind",
                "Blog",
                "--defaulting",
            ],
            "kopgen create api --group web --version v1 --kind Blog",
        ),
        (
            &[
                "--group",
                "apps",
                "--version",
                "v1",
                "--kind",
                "blog",
                "--defaulting",
            ],
            "PascalCase",
        ),
        (
            &[
                "--group",
                "apps",
                "--version",
                "1",
                "--kind",
                "Blog",
                "--defaulting",
            ],
            "version",
        ),
        (
            &[
                "--group",
                "apps",
                "--version",
                "v1",
                "--kind",
                "Blog",
                "--conversion",
            ],
            "--spoke",
        ),
    ];
    for (args, expected) in cases {
        let args: Vec<&str> = ["create", "webhook"]
            .iter()
            .chain(args.iter())
            .copied()
            .collect();
        let message = fails_cleanly_in(&project, &args);
        assert!(message.contains(expected), "{args:?}: {message}");
    }
    // Outside a project.
    let message = fails_cleanly_in(
        session.path(),
        &[
            "create",
            "webhook",
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Blog",
            "--defaulting",
        ],
    );
    assert!(message.contains("no PROJECT file here"), "{message}");
}

#[test]
fn dry_run_lists_the_files_and_writes_nothing() {
    let session = Session::new();
    let project = project_with_blog(&session);
    let before = tree(&project);
    let run = webhook_ok(
        &project,
        "--group apps --version v1 --kind Blog --programmatic-validation --dry-run",
    );
    assert!(
        run.stdout
            .contains("would create src/webhooks/apps_v1_blog.rs"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("would update config/default/kustomization.yaml")
    );
    assert!(tree(&project) == before);
}

#[test]
fn manifests_check_fails_on_stale_webhook_manifests_and_bad_markers_point_at_their_line() {
    let session = Session::new();
    let project = project_with_blog(&session);
    webhook_ok(
        &project,
        "--group apps --version v1 --kind Blog --defaulting",
    );
    let module = project.join("src/webhooks/apps_v1_blog.rs");
    let code = std::fs::read_to_string(&module).expect("read");
    std::fs::write(
        &module,
        code.replace("failurePolicy=fail", "failurePolicy=ignore"),
    )
    .expect("write");
    let before = tree(&project);
    let run = run_kopgen(&project, &["manifests", "--check"]);
    assert_eq!(run.status, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("+  failurePolicy: Ignore"),
        "{}",
        run.stdout
    );
    assert!(tree(&project) == before, "--check writes nothing");

    let line = code
        .lines()
        .position(|l| l.contains("+kopgen:webhook:"))
        .expect("a marker")
        + 1;
    std::fs::write(
        &module,
        code.replace("sideEffects=None", "sideEffects=Some"),
    )
    .expect("write");
    let before = tree(&project);
    let run = run_kopgen(&project, &["manifests"]);
    assert_ne!(run.status, 0);
    assert!(
        run.stderr.contains(&format!(
            "src/webhooks/apps_v1_blog.rs:{line}:1: sideEffects=Some"
        )),
        "{}",
        run.stderr
    );
    assert!(tree(&project) == before, "a bad marker writes nothing");
}

/// A project whose files use CRLF line endings keeps them through every edit: only files kopgen
/// derives whole (PROJECT, the CRDs, roles and webhook manifests) are written fresh.
#[test]
fn crlf_files_stay_crlf_through_edits() {
    let session = Session::new();
    let project = project_with_blog(&session);
    let mut converted = Vec::new();
    for (path, bytes) in tree(&project) {
        let Some(bytes) = bytes else { continue };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        if text.contains('\n') && !text.contains("\r\n") {
            std::fs::write(project.join(&path), text.replace('\n', "\r\n")).expect("write");
            converted.push(path);
        }
    }
    support::create_api_ok(
        &project,
        &["--group", "web", "--version", "v1", "--kind", "Page"],
    );
    webhook_ok(
        &project,
        "--group apps --version v1 --kind Blog --defaulting --conversion --spoke v1alpha1 --certificates self-managed",
    );
    let deleted = run_kopgen(
        &project,
        &[
            "delete",
            "webhook",
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Blog",
            "--defaulting",
            "--conversion",
        ],
    );
    assert_eq!(deleted.status, 0, "{}", deleted.stderr);
    let derived = |path: &str| {
        path == "PROJECT"
            || path.starts_with("config/crd/bases/")
            || path == "config/rbac/role.yaml"
            || path == "config/webhook/manifests.yaml"
            || path == "Cargo.lock"
    };
    let after = tree(&project);
    let mut turned = Vec::new();
    for path in converted.iter().filter(|p| !derived(p)) {
        let Some(Some(bytes)) = after.get(path) else {
            continue;
        };
        let text = String::from_utf8_lossy(bytes);
        if text.replace("\r\n", "").contains('\n') {
            turned.push(path.clone());
        }
    }
    assert!(turned.is_empty(), "CRLF files turned LF: {turned:?}");
}

/// The self-managed certificate's ClusterRole is kopgen's whole file: a hand edit is refused
/// (the tree unchanged) where a command would rewrite it, and `--force` overwrites it.
#[test]
fn a_hand_edited_cluster_role_is_never_overwritten_without_force() {
    const ROLE: &str = "config/selfmanaged/cluster_role.yaml";
    let session = Session::new();
    let project = project_with_blog(&session);
    webhook_ok(
        &project,
        "--group apps --version v1 --kind Blog --conversion --spoke v1alpha1 --certificates self-managed",
    );
    let edited = format!(
        "{}- apiGroups: [\"\"]\n  resources: [secrets]\n  verbs: [get]\n",
        read(&project, ROLE)
    );
    std::fs::write(project.join(ROLE), &edited).expect("write");
    support::create_api_ok(
        &project,
        &["--group", "web", "--version", "v1", "--kind", "Page"],
    );
    support::create_api_ok(
        &project,
        &["--group", "web", "--version", "v2", "--kind", "Page"],
    );
    let args = [
        "create",
        "webhook",
        "--group",
        "web",
        "--version",
        "v1",
        "--kind",
        "Page",
        "--conversion",
        "--spoke",
        "v2",
    ];
    let stderr = fails_cleanly_in(&project, &args);
    assert!(
        stderr.contains(ROLE) && stderr.contains("changed by hand"),
        "{stderr}"
    );
    let stderr = fails_cleanly_in(
        &project,
        &["edit", "--webhook-certificates", "self-managed"],
    );
    assert!(stderr.contains("changed by hand"), "{stderr}");
    let mut forced: Vec<&str> = args.to_vec();
    forced.push("--force");
    let run = run_kopgen(&project, &forced);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(read(&project, ROLE).contains("pages.web.example.com"));
}
