//! `kopgen init`: what a fresh project contains, and every way bad input is refused.

mod support;

use support::{Session, file_list, tree};

#[test]
fn a_fresh_project_has_every_file_of_the_layout() {
    let session = Session::new();
    let run = session.ok(&["init", "--domain", "example.com", "--path", "demo"]);
    let project = session.join("demo");
    insta::assert_snapshot!("init_file_list", file_list(&project));
    assert!(run.stdout.contains("Created PROJECT"), "{}", run.stdout);
    assert!(
        run.stdout.contains("kopgen create api"),
        "prints the next commands: {}",
        run.stdout
    );
}

#[test]
fn selected_files_match_their_snapshots() {
    let session = Session::new();
    let project = session.init_demo(&["--owner", "Example Corp"]);
    for file in [
        "PROJECT",
        "Cargo.toml",
        "Makefile",
        "src/main.rs",
        "src/controllers/mod.rs",
        "config/default/kustomization.yaml",
        "config/manager/manager.yaml",
        "config/rbac/role.yaml",
        "config/rbac/role_binding.yaml",
    ] {
        let name = format!("init_{}", file.replace(['/', '.'], "_"));
        insta::assert_snapshot!(
            name,
            std::fs::read_to_string(project.join(file)).expect(file)
        );
    }
}

#[test]
fn namespaced_projects_use_roles_and_watch_their_namespace() {
    let session = Session::new();
    let project = session.init_demo(&["--namespaced"]);
    let role = std::fs::read_to_string(project.join("config/rbac/role.yaml")).expect("role");
    assert!(
        role.contains("kind: Role\n") && !role.contains("ClusterRole"),
        "{role}"
    );
    let binding =
        std::fs::read_to_string(project.join("config/rbac/role_binding.yaml")).expect("binding");
    assert!(binding.contains("kind: RoleBinding\n"), "{binding}");
    let manager =
        std::fs::read_to_string(project.join("config/manager/manager.yaml")).expect("manager");
    assert!(manager.contains("name: WATCH_NAMESPACE"), "{manager}");
    assert!(
        std::fs::read_to_string(project.join("PROJECT"))
            .expect("PROJECT")
            .contains("namespaced: true")
    );
}

#[test]
fn license_none_and_owner_shape_the_header() {
    let session = Session::new();
    let project = session.init_demo(&["--license", "none"]);
    let main = std::fs::read_to_string(project.join("src/main.rs")).expect("main");
    assert!(main.starts_with("//! The manager binary"), "{main}");
    assert!(
        !std::fs::read_to_string(project.join("Cargo.toml"))
            .expect("toml")
            .contains("license")
    );

    let other = Session::new();
    let project = other.init_demo(&["--license", "none", "--owner", "Example Corp"]);
    let main = std::fs::read_to_string(project.join("src/main.rs")).expect("main");
    assert!(
        main.starts_with("// Copyright 2026 Example Corp.\n\n//! The manager binary"),
        "{main}"
    );
}

#[test]
fn the_project_name_defaults_to_the_directory_name() {
    let session = Session::new();
    session.ok(&["init", "--path", "blog-operator"]);
    let project = session.read("blog-operator/PROJECT");
    assert!(project.contains("projectName: blog-operator"), "{project}");
    assert!(project.contains("domain: my.domain"), "{project}");
}

#[test]
fn output_is_identical_run_after_run() {
    let first = Session::new();
    let second = Session::new();
    first.init_demo(&[]);
    second.init_demo(&[]);
    assert!(tree(first.path()) == tree(second.path()));
}

#[test]
fn dry_run_lists_the_files_and_writes_nothing() {
    let session = Session::new();
    let before = tree(session.path());
    let run = session.ok(&[
        "init",
        "--path",
        "demo",
        "--project-name",
        "demo",
        "--dry-run",
    ]);
    assert!(
        run.stdout.contains("would create src/main.rs"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("would create config/rbac/role.yaml"),
        "{}",
        run.stdout
    );
    assert!(tree(session.path()) == before);
}

#[test]
fn refuses_to_overwrite_an_existing_project() {
    for existing in ["PROJECT", "Cargo.toml", "src/main.rs"] {
        let session = Session::new();
        session.write(&format!("demo/{existing}"), "user content\n");
        let stderr = session.fails_cleanly(&["init", "--path", "demo", "--project-name", "demo"]);
        assert!(
            stderr.contains(&format!("already contains a project ({existing} exists)")),
            "{stderr}"
        );
        assert!(stderr.contains("--force"), "says what to do: {stderr}");
    }
}

#[test]
fn force_scaffolds_over_an_existing_project_and_keeps_other_files() {
    let session = Session::new();
    session.write("demo/Cargo.toml", "[package]\n");
    session.write("demo/notes.txt", "mine\n");
    session.ok(&[
        "init",
        "--path",
        "demo",
        "--project-name",
        "demo",
        "--force",
    ]);
    assert!(session.read("demo/Cargo.toml").contains("name = \"demo\""));
    assert_eq!(session.read("demo/notes.txt"), "mine\n");
}

#[test]
fn invalid_domains_are_refused_with_what_is_allowed() {
    for domain in [
        "Example.com",
        "example..com",
        "-example.com",
        "exa_mple.com",
        "",
    ] {
        let session = Session::new();
        let flag = format!("--domain={domain}");
        let stderr =
            session.fails_cleanly(&["init", "--path", "demo", "--project-name", "demo", &flag]);
        assert!(stderr.contains("invalid domain"), "{domain}: {stderr}");
        assert!(stderr.contains("DNS-1123 subdomain"), "{domain}: {stderr}");
    }
}

#[test]
fn invalid_project_names_are_refused_with_what_is_allowed() {
    for name in [
        "Demo",
        "1demo",
        "demo_operator",
        "demo-",
        "fn",
        "std",
        &"a".repeat(64),
    ] {
        let session = Session::new();
        let flag = format!("--project-name={name}");
        let stderr = session.fails_cleanly(&["init", "--path", "demo", &flag]);
        assert!(stderr.contains("invalid project name"), "{name}: {stderr}");
    }
    // A directory whose name is not a valid project name needs --project-name.
    let session = Session::new();
    std::fs::create_dir(session.join("My_Operator")).expect("mkdir");
    let stderr = session.fails_cleanly(&["init", "--path", "My_Operator"]);
    assert!(stderr.contains("--project-name"), "{stderr}");
}

#[test]
fn a_path_that_is_a_file_is_refused() {
    let session = Session::new();
    session.write("demo", "not a directory");
    let stderr = session.fails_cleanly(&["init", "--path", "demo", "--project-name", "demo"]);
    assert!(stderr.contains("is a file, not a directory"), "{stderr}");
}

#[test]
fn an_unwritable_path_is_refused_and_nothing_is_written() {
    let session = Session::new();
    session.write("blocker", "a file where a directory would be needed");
    let stderr =
        session.fails_cleanly(&["init", "--path", "blocker/demo", "--project-name", "demo"]);
    assert!(stderr.contains("cannot write"), "{stderr}");
    assert!(stderr.contains("nothing was changed"), "{stderr}");
}

#[test]
fn every_command_shows_an_example_in_its_help() {
    let session = Session::new();
    for args in [
        &["--help"][..],
        &["init", "--help"],
        &["create", "api", "--help"],
        &["completion", "--help"],
    ] {
        let run = session.ok(args);
        assert!(run.stdout.contains("Example"), "{args:?}: {}", run.stdout);
    }
}

#[test]
fn version_and_completions() {
    let session = Session::new();
    assert!(session.ok(&["version"]).stdout.starts_with("kopgen "));
    for shell in ["bash", "zsh", "fish", "powershell"] {
        assert!(
            session.ok(&["completion", shell]).stdout.contains("kopgen"),
            "{shell}"
        );
    }
}
