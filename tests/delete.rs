//! `kopgen delete api`: `create api` followed by `delete api` leaves the tree byte for byte as it
//! was before the create, for each shape a create takes; what cannot be deleted safely is
//! refused, naming why, and changes nothing; a project builds and passes its tests after.

mod support;

use std::path::Path;

use support::{Session, create_api_ok, tree};

fn delete_ok(project: &Path, args: &str) -> support::Run {
    let mut all = vec!["delete", "api"];
    all.extend(args.split_whitespace());
    let run = support::run_kopgen(project, &all);
    assert_eq!(
        run.status, 0,
        "kopgen {all:?}:\n{}\n{}",
        run.stdout, run.stderr
    );
    run
}

fn create(project: &Path, args: &str) {
    let args: Vec<&str> = args.split_whitespace().collect();
    create_api_ok(project, &args);
}

/// Asserts that the tree is what `before` recorded, naming the paths that differ.
fn assert_same_tree(project: &Path, before: &support::Tree, what: &str) {
    let after = tree(project);
    let differ: Vec<&String> = (before.keys().chain(after.keys()))
        .filter(|path| before.get(*path) != after.get(*path))
        .collect();
    assert!(differ.is_empty(), "{what}: these differ: {differ:?}");
}

#[test]
fn create_then_delete_leaves_the_tree_as_it_was() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    let shapes = [
        // The first kind of a project.
        "--group apps --version v1alpha1 --kind Blog",
        // A controller for a built-in kind.
        "--group apps --version v1 --kind Deployment --resource=false",
        // A cluster-scoped kind with a finalizer.
        "--group platform --version v1 --kind Tenant --namespaced=false",
    ];
    for shape in shapes {
        let before = tree(&project);
        create(&project, shape);
        assert_ne!(tree(&project), before, "{shape} created nothing");
        let kind = shape
            .replace(" --resource=false", "")
            .replace(" --namespaced=false", "");
        delete_ok(&project, &kind);
        assert_same_tree(&project, &before, shape);
    }
    // With a kind in place: a second version of it, a kind in a second group, a second kind in
    // the same group and version.
    create(&project, "--group apps --version v1alpha1 --kind Blog");
    for shape in [
        "--group apps --version v1 --kind Blog",
        "--group web --version v1 --kind Page",
        "--group apps --version v1alpha1 --kind Post",
        "--group apps --version v1 --kind Deployment --resource=false",
    ] {
        let before = tree(&project);
        create(&project, shape);
        let kind = shape.replace(" --resource=false", "");
        delete_ok(&project, &kind);
        assert_same_tree(&project, &before, shape);
    }
}

#[test]
fn what_cannot_be_deleted_safely_is_refused_and_nothing_changes() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    create(&project, "--group apps --version v1 --kind Blog");
    create(&project, "--group apps --version v1alpha1 --kind Blog");
    let refused = |args: &str| {
        let mut all = vec!["delete", "api"];
        all.extend(args.split_whitespace());
        support::fails_cleanly_in(&project, &all)
    };
    let unknown = refused("--group apps --version v2 --kind Blog");
    assert!(
        unknown.contains("not in PROJECT") && unknown.contains("apps/v1 Blog"),
        "{unknown}"
    );
    let storage = refused("--group apps --version v1 --kind Blog");
    assert!(
        storage.contains("storage version") && storage.contains("src/api/apps/v1/blog.rs"),
        "{storage}"
    );
    // Code of the user's that names the types.
    let user = project.join("src/controllers/apps/uses.rs");
    std::fs::write(
        &user,
        "use crate::api::apps::v1alpha1::Blog;\n\npub fn name(blog: &Blog) -> String {\n    blog.spec.foo.clone().unwrap_or_default()\n}\n",
    )
    .expect("write");
    let used = refused("--group apps --version v1alpha1 --kind Blog");
    assert!(
        used.contains("src/controllers/apps/uses.rs:1") && used.contains("--force"),
        "{used}"
    );
    // An alias is a use too.
    std::fs::write(
        &user,
        "use crate::api::apps::{v1alpha1 as va};\n\npub fn name(blog: &va::Blog) -> String {\n    blog.spec.foo.clone().unwrap_or_default()\n}\n",
    )
    .expect("write");
    let used = refused("--group apps --version v1alpha1 --kind Blog");
    assert!(used.contains("src/controllers/apps/uses.rs:1"), "{used}");
    // A type of the same name that is not the kind's is not (the module named in a comment).
    std::fs::write(
        &user,
        "// Unlike crate::api::apps::v1alpha1, a Blog of our own.\npub struct Blog;\n\npub fn named(_: &Blog) {}\n",
    )
    .expect("write");
    let run = support::run_kopgen(
        &project,
        &[
            "delete",
            "api",
            "--group",
            "apps",
            "--version",
            "v1alpha1",
            "--kind",
            "Blog",
            "--dry-run",
        ],
    );
    assert!(
        !run.stderr.contains("still uses"),
        "{}{}",
        run.stdout,
        run.stderr
    );
    std::fs::remove_file(&user).expect("remove");
    // Webhooks first.
    let run = support::run_kopgen(
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
            "v1alpha1",
        ],
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    let converted = refused("--group apps --version v1alpha1 --kind Blog");
    assert!(converted.contains("kopgen delete webhook"), "{converted}");
    // Nothing to delete: a dry run lists, and writes nothing.
    let before = tree(&project);
    create(&project, "--group web --version v1 --kind Page");
    let listed = tree(&project);
    let run = support::run_kopgen(
        &project,
        &[
            "delete",
            "api",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "Page",
            "--dry-run",
        ],
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("would delete src/api/web/v1/page.rs"),
        "{}",
        run.stdout
    );
    assert_eq!(tree(&project), listed, "a dry run changed the tree");
    delete_ok(&project, "--group web --version v1 --kind Page");
    assert_same_tree(&project, &before, "web/v1 Page");
}

/// A project whose kind was deleted still builds, passes its tests and lints clean.
#[test]
fn a_project_after_a_delete_builds_tests_and_lints() {
    let session = Session::new();
    let project = session.init_project("deleted", &[]);
    create(&project, "--group apps --version v1 --kind Blog");
    create(&project, "--group apps --version v1alpha1 --kind Blog");
    create(&project, "--group web --version v1 --kind Page");
    create(
        &project,
        "--group apps --version v1 --kind Deployment --resource=false",
    );
    delete_ok(&project, "--group web --version v1 --kind Page");
    delete_ok(&project, "--group apps --version v1alpha1 --kind Blog");
    delete_ok(&project, "--group apps --version v1 --kind Deployment");
    let run = support::run_kopgen(&project, &["manifests", "--check"]);
    assert_eq!(run.status, 0, "{}{}", run.stdout, run.stderr);
    support::cargo_ok(&project, &["fmt", "--all", "--", "--check"]);
    support::cargo_ok(
        &project,
        &["clippy", "--all-targets", "--", "-D", "warnings"],
    );
    support::cargo_ok(&project, &["test"]);
}

fn webhook(project: &Path, args: &str) {
    let mut all = vec!["create", "webhook"];
    all.extend(args.split_whitespace());
    let run = support::run_kopgen(project, &all);
    assert_eq!(run.status, 0, "kopgen {all:?}:\n{}", run.stderr);
}

fn delete_webhook_ok(project: &Path, args: &str) {
    let mut all = vec!["delete", "webhook"];
    all.extend(args.split_whitespace());
    let run = support::run_kopgen(project, &all);
    assert_eq!(
        run.status, 0,
        "kopgen {all:?}:\n{}\n{}",
        run.stdout, run.stderr
    );
}

#[test]
fn create_webhook_then_delete_webhook_leaves_the_tree_as_it_was() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    create(&project, "--group apps --version v1 --kind Blog");
    create(&project, "--group apps --version v1alpha1 --kind Blog");
    let kind = "--group apps --version v1 --kind Blog";
    for shape in [
        "--defaulting --programmatic-validation",
        "--conversion --spoke v1alpha1",
        "--defaulting --certificates self-managed",
        "--programmatic-validation --conversion --spoke v1alpha1",
    ] {
        let before = tree(&project);
        webhook(&project, &format!("{kind} {shape}"));
        delete_webhook_ok(&project, kind);
        assert_same_tree(&project, &before, shape);
    }
    // One of two: the other stays as `create webhook` writes it alone; then the last goes too.
    let before = tree(&project);
    webhook(&project, &format!("{kind} --programmatic-validation"));
    let validating_only = tree(&project);
    webhook(&project, &format!("{kind} --defaulting --force"));
    delete_webhook_ok(&project, &format!("{kind} --defaulting"));
    assert_same_tree(&project, &validating_only, "the defaulting webhook deleted");
    delete_webhook_ok(&project, &format!("{kind} --programmatic-validation"));
    assert_same_tree(&project, &before, "the validating webhook deleted");
    // A file with the user's code loses neither of two webhooks silently.
    webhook(
        &project,
        &format!("{kind} --defaulting --programmatic-validation"),
    );
    let file = project.join("src/webhooks/apps_v1_blog.rs");
    let text = std::fs::read_to_string(&file).expect("webhook file");
    std::fs::write(&file, format!("{text}\n// The user's note.\n")).expect("write");
    let mut all = vec!["delete", "webhook"];
    all.extend(kind.split_whitespace());
    all.push("--defaulting");
    let refused = support::fails_cleanly_in(&project, &all);
    assert!(
        refused.contains("src/webhooks/apps_v1_blog.rs") && refused.contains("by hand"),
        "{refused}"
    );
    let none = support::fails_cleanly_in(
        &project,
        &[
            "delete",
            "webhook",
            "--group",
            "apps",
            "--version",
            "v1alpha1",
            "--kind",
            "Blog",
        ],
    );
    assert!(none.contains("has no webhooks"), "{none}");
}

/// Lines the user added between scaffolded ones, and a marker the user moved, survive a delete;
/// only the deleted kind's lines go.
#[test]
fn hand_edits_near_insertion_points_survive_a_delete() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    create(&project, "--group apps --version v1 --kind Blog");
    create(&project, "--group web --version v1 --kind Page");
    let edit = |file: &str, old: &str, new: &str| {
        let path = project.join(file);
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.contains(old), "{file}: no {old:?}");
        std::fs::write(&path, text.replacen(old, new, 1)).expect("write");
    };
    edit(
        "src/controllers/mod.rs",
        "    apps::blog_controller::START,\n",
        "    apps::blog_controller::START,\n    // The audit controller lives in its own crate.\n",
    );
    edit(
        "src/api/mod.rs",
        "pub mod apps;\npub mod web;\n// +kopgen:scaffold:api-modules\n",
        "// +kopgen:scaffold:api-modules\npub mod apps;\n/// Shared types of our own.\npub mod shared_types;\npub mod web;\n",
    );
    std::fs::write(project.join("src/api/shared_types.rs"), "//! Ours.\n").expect("write");
    delete_ok(&project, "--group web --version v1 --kind Page");
    let controllers =
        std::fs::read_to_string(project.join("src/controllers/mod.rs")).expect("read");
    assert!(controllers.contains("    apps::blog_controller::START,\n    // The audit controller lives in its own crate.\n"), "{controllers}");
    assert!(!controllers.contains("page_controller"), "{controllers}");
    let api = std::fs::read_to_string(project.join("src/api/mod.rs")).expect("read");
    assert!(
        api.contains("// +kopgen:scaffold:api-modules\npub mod apps;\n/// Shared types of our own.\npub mod shared_types;\n"),
        "{api}"
    );
    assert!(!api.contains("pub mod web;"), "{api}");
    assert!(project.join("src/api/shared_types.rs").is_file());

    // A marker the user deleted is an error naming the file and the marker; nothing changes.
    create(&project, "--group web --version v1 --kind Page");
    let path = project.join("src/controllers/mod.rs");
    let text = std::fs::read_to_string(&path).expect("read");
    let without = text.replace("    // +kopgen:scaffold:controller-start\n", "");
    std::fs::write(&path, without).expect("write");
    let error = support::fails_cleanly_in(
        &project,
        &[
            "delete",
            "api",
            "--group",
            "web",
            "--version",
            "v1",
            "--kind",
            "Page",
        ],
    );
    assert!(
        error.contains("src/controllers/mod.rs")
            && error.contains("+kopgen:scaffold:controller-start"),
        "{error}"
    );
}

/// `delete api` removes what `create api` wrote, never a kind the user wrote beside it nor
/// work git does not have: each refused, naming the file, and nothing changes; `--force`
/// deletes anyway.
#[test]
fn user_work_in_files_to_delete_is_refused() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    create(&project, "--group apps --version v1alpha1 --kind Blog");
    let types = project.join("src/api/apps/v1alpha1/blog.rs");
    let text = std::fs::read_to_string(&types).expect("types");
    let comment = "\n#[derive(kube::CustomResource, serde::Deserialize, serde::Serialize, Clone, \
         Debug, schemars::JsonSchema)]\n#[kube(group = \"apps.example.com\", version = \"v1alpha1\", \
         kind = \"Comment\", namespaced)]\npub struct CommentSpec {\n    pub text: String,\n}\n";
    std::fs::write(&types, format!("{text}{comment}")).expect("write");
    let before = tree(&project);
    let kind = [
        "delete",
        "api",
        "--group",
        "apps",
        "--version",
        "v1alpha1",
        "--kind",
        "Blog",
    ];
    let run = support::run_kopgen(&project, &kind);
    assert_ne!(run.status, 0);
    assert!(
        run.stderr.contains("src/api/apps/v1alpha1/blog.rs:")
            && run.stderr.contains("also defines the kind Comment"),
        "{}",
        run.stderr
    );
    assert_same_tree(&project, &before, "refused: the other kind");
    std::fs::write(&types, &text).expect("restore");

    // Uncommitted work in a file to delete (git knows the project).
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&project)
            .output()
            .expect("git runs");
        assert!(status.status.success(), "git {args:?}: {:?}", status);
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "scaffold"]);
    let controller = project.join("src/controllers/apps/blog_controller.rs");
    let written = std::fs::read_to_string(&controller).expect("controller");
    std::fs::write(
        &controller,
        format!("{written}\n// my reconcile, not committed\n"),
    )
    .expect("write");
    let before = tree(&project);
    let run = support::run_kopgen(&project, &kind);
    assert_ne!(run.status, 0);
    assert!(
        run.stderr.contains("uncommitted changes")
            && run
                .stderr
                .contains("src/controllers/apps/blog_controller.rs"),
        "{}",
        run.stderr
    );
    assert_same_tree(&project, &before, "refused: uncommitted work");
    let run = support::run_kopgen(&project, &[&kind[..], &["--force"]].concat());
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(!controller.exists(), "--force deletes anyway");
}
