//! `kopgen create api`: the files each invocation writes and edits, safe re-runs, and every way
//! bad input is refused without touching the tree.

mod support;

use std::path::Path;

use support::{BLOG, Session, create_api_ok as ok, tree};

/// Asserts that `create api args` fails, leaves the tree byte-identical, and returns stderr.
fn fails_cleanly(project: &Path, args: &[&str]) -> String {
    let mut all = vec!["create", "api"];
    all.extend_from_slice(args);
    support::fails_cleanly_in(project, &all)
}

#[test]
fn the_first_kind_writes_types_controller_samples_and_roles() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    let run = ok(&project, BLOG);
    insta::assert_snapshot!("create_api_blog_output", run.stdout);
    for file in [
        "PROJECT",
        "src/api/mod.rs",
        "src/api/apps/mod.rs",
        "src/api/apps/v1alpha1/mod.rs",
        "src/api/apps/v1alpha1/blog.rs",
        "src/controllers/mod.rs",
        "src/controllers/apps/mod.rs",
        "src/controllers/apps/blog_controller.rs",
        "config/crd/kustomization.yaml",
        "config/samples/kustomization.yaml",
        "config/samples/apps_v1alpha1_blog.yaml",
        "config/rbac/kustomization.yaml",
        "config/rbac/apps_blog_editor_role.yaml",
    ] {
        let name = format!("blog_{}", file.replace(['/', '.'], "_"));
        insta::assert_snapshot!(
            name,
            std::fs::read_to_string(project.join(file)).expect(file)
        );
    }
}

#[test]
fn a_second_version_adds_types_only_and_is_not_the_storage_version() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    ok(&project, BLOG);
    let controllers_before =
        std::fs::read_to_string(project.join("src/controllers/mod.rs")).expect("mod");
    let run = ok(
        &project,
        &["--group", "apps", "--version", "v1", "--kind", "Blog"],
    );
    assert!(
        !run.stdout.contains("controller"),
        "no second controller: {}",
        run.stdout
    );
    let v1 = std::fs::read_to_string(project.join("src/api/apps/v1/blog.rs")).expect("v1");
    assert!(v1.contains("storage = false,"), "{v1}");
    let v1alpha1 =
        std::fs::read_to_string(project.join("src/api/apps/v1alpha1/blog.rs")).expect("v1alpha1");
    assert!(
        !v1alpha1.contains("storage = false"),
        "the first version stays the storage version"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("src/controllers/mod.rs")).expect("mod"),
        controllers_before
    );
    let api_group =
        std::fs::read_to_string(project.join("src/api/apps/mod.rs")).expect("group mod");
    insta::assert_snapshot!("two_versions_group_mod", api_group);
    let crd_kustomization =
        std::fs::read_to_string(project.join("config/crd/kustomization.yaml")).expect("crd");
    assert_eq!(
        crd_kustomization
            .matches("bases/apps.example.com_blogs.yaml")
            .count(),
        1
    );
    let project_file = std::fs::read_to_string(project.join("PROJECT")).expect("PROJECT");
    insta::assert_snapshot!("two_versions_project", project_file);
}

#[test]
fn the_same_kind_in_two_groups_does_not_clash() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    ok(&project, BLOG);
    ok(
        &project,
        &[
            "--group",
            "media",
            "--version",
            "v1alpha1",
            "--kind",
            "Blog",
        ],
    );
    assert!(project.join("src/api/media/v1alpha1/blog.rs").exists());
    assert!(
        project
            .join("src/controllers/media/blog_controller.rs")
            .exists()
    );
    let controllers = std::fs::read_to_string(project.join("src/controllers/mod.rs")).expect("mod");
    assert!(
        controllers.contains("pub mod apps;\npub mod media;\n"),
        "{controllers}"
    );
    assert!(
        controllers.contains("    media::blog_controller::START,\n"),
        "{controllers}"
    );
}

#[test]
fn controllers_for_built_in_kinds() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    ok(
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
    ok(
        &project,
        &[
            "--group",
            "core",
            "--version",
            "v1",
            "--kind",
            "ConfigMap",
            "--resource=false",
        ],
    );
    let deployment =
        std::fs::read_to_string(project.join("src/controllers/apps/deployment_controller.rs"))
            .expect("ctrl");
    assert!(
        deployment.contains("use k8s_openapi::api::apps::v1::Deployment;"),
        "{deployment}"
    );
    assert!(
        deployment.contains("// +kopgen:rbac:groups=apps,resources=deployments,verbs=list;watch")
    );
    assert!(
        !project.join("src/api/apps").exists(),
        "no types for a built-in kind"
    );
    let project_file = std::fs::read_to_string(project.join("PROJECT")).expect("PROJECT");
    insta::assert_snapshot!("builtin_project", project_file);
    let stderr = fails_cleanly(
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
    assert!(stderr.contains("already exists"), "{stderr}");
}

#[test]
fn types_first_controller_later() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    ok(&project, &[BLOG, &["--controller=false"]].concat());
    assert!(!project.join("src/controllers/apps").exists());
    ok(&project, &[BLOG, &["--resource=false"]].concat());
    assert!(
        project
            .join("src/controllers/apps/blog_controller.rs")
            .exists()
    );
    let project_file = std::fs::read_to_string(project.join("PROJECT")).expect("PROJECT");
    assert_eq!(
        project_file.matches("kind: Blog").count(),
        1,
        "{project_file}"
    );
    assert!(project_file.contains("controller: true"), "{project_file}");
}

#[test]
fn plural_and_scope_follow_the_flags() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    ok(
        &project,
        &[
            "--group",
            "policy",
            "--version",
            "v1",
            "--kind",
            "NetworkPolicy",
            "--namespaced=false",
        ],
    );
    let types = std::fs::read_to_string(project.join("src/api/policy/v1/network_policy.rs"))
        .expect("types");
    assert!(
        types.contains("plural = \"networkpolicies\","),
        "kube-derive's plural rule: {types}"
    );
    assert!(!types.contains("namespaced,"), "{types}");
    assert!(types.contains("shortname = \"np\","), "{types}");
    ok(
        &project,
        &[
            "--group",
            "policy",
            "--version",
            "v1",
            "--kind",
            "Quota",
            "--plural",
            "quotae",
        ],
    );
    let types = std::fs::read_to_string(project.join("src/api/policy/v1/quota.rs")).expect("types");
    assert!(types.contains("plural = \"quotae\","), "{types}");
    let stderr = fails_cleanly(
        &project,
        &[
            "--group",
            "policy",
            "--version",
            "v2",
            "--kind",
            "NetworkPolicy",
        ],
    );
    assert!(
        stderr.contains("share one CRD scope") && stderr.contains("--namespaced=false"),
        "{stderr}"
    );
    let stderr = fails_cleanly(
        &project,
        &["--group", "policy", "--version", "v2", "--kind", "Quota"],
    );
    assert!(stderr.contains("--plural quotae"), "{stderr}");
}

#[test]
fn running_the_same_command_twice_needs_force_and_never_duplicates() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    ok(&project, BLOG);
    let stderr = fails_cleanly(&project, BLOG);
    assert!(
        stderr.contains("already exists in PROJECT") && stderr.contains("--force"),
        "{stderr}"
    );

    // User code next to the markers survives a forced re-run, and nothing is registered twice.
    let api_mod = project.join("src/api/mod.rs");
    let with_user_code = std::fs::read_to_string(&api_mod).expect("mod").replace(
        "// +kopgen:scaffold:api-modules",
        "// +kopgen:scaffold:api-modules\n\n/// Mine.\npub const USER: u8 = 1;",
    );
    std::fs::write(&api_mod, &with_user_code).expect("write");
    let before = tree(&project);
    let mut forced = BLOG.to_vec();
    forced.push("--force");
    ok(&project, &forced);
    assert_eq!(
        std::fs::read_to_string(&api_mod).expect("mod"),
        with_user_code
    );
    assert!(
        tree(&project) == before,
        "a forced re-run of the same command changes nothing"
    );
}

#[test]
fn a_missing_insertion_point_is_an_error_naming_the_file_and_marker() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    let path = project.join("src/controllers/mod.rs");
    let text = std::fs::read_to_string(&path)
        .expect("mod")
        .replace("    // +kopgen:scaffold:controller-start\n", "");
    std::fs::write(&path, text).expect("write");
    let stderr = fails_cleanly(&project, BLOG);
    assert!(stderr.contains("src/controllers/mod.rs"), "{stderr}");
    assert!(
        stderr.contains("+kopgen:scaffold:controller-start"),
        "{stderr}"
    );
}

#[test]
fn outside_a_project_is_an_error() {
    let session = Session::new();
    let stderr = fails_cleanly(session.path(), BLOG);
    assert!(
        stderr.contains("no PROJECT file here") && stderr.contains("kopgen init"),
        "{stderr}"
    );
}

#[test]
fn invalid_names_are_refused_with_what_is_allowed() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    let cases: &[(&[&str], &str)] = &[
        (
            &["--group", "apps", "--version", "v1", "--kind", "blog"],
            "a kind is PascalCase",
        ),
        (
            &["--group", "apps", "--version", "v1", "--kind", "Self"],
            "Rust keyword",
        ),
        (
            &["--group", "apps", "--version", "v1", "--kind", "BlogList"],
            "clash with the list type",
        ),
        (
            &["--group", "apps", "--version", "v1", "--kind", "Blog-Post"],
            "a kind is PascalCase",
        ),
        (
            &["--group", "apps", "--version", "1", "--kind", "Blog"],
            "invalid version",
        ),
        (
            &["--group", "apps", "--version", "v1gamma1", "--kind", "Blog"],
            "invalid version",
        ),
        (
            &["--group", "apps", "--version", "v01", "--kind", "Blog"],
            "no leading zeros",
        ),
        (
            &["--group", "Apps", "--version", "v1", "--kind", "Blog"],
            "invalid group",
        ),
        (
            &["--group", "apps.io", "--version", "v1", "--kind", "Blog"],
            "invalid group",
        ),
        (
            &[
                "--group",
                "apps",
                "--version",
                "v1",
                "--kind",
                "Blog",
                "--plural",
                "Blogs",
            ],
            "invalid plural",
        ),
        (
            &[
                "--group",
                "apps",
                "--version",
                "v1",
                "--kind",
                "Widget",
                "--resource=false",
            ],
            "neither a built-in",
        ),
        (
            &[
                "--group",
                "apps",
                "--version",
                "v1",
                "--kind",
                "Blog",
                "--resource=false",
                "--controller=false",
            ],
            "nothing to scaffold",
        ),
    ];
    for (args, expected) in cases {
        let stderr = fails_cleanly(&project, args);
        assert!(
            stderr.contains(expected),
            "{args:?}: expected {expected:?} in {stderr}"
        );
    }
}

#[test]
fn dry_run_lists_created_and_updated_files_and_writes_nothing() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    let before = tree(&project);
    let mut args = BLOG.to_vec();
    args.push("--dry-run");
    let run = ok(&project, &args);
    assert!(
        run.stdout
            .contains("would create src/controllers/apps/blog_controller.rs"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("would update src/api/mod.rs"),
        "{}",
        run.stdout
    );
    assert!(tree(&project) == before);
}

#[test]
fn generated_code_fits_rustfmt_width_for_ordinary_names() {
    // Templates are laid out as rustfmt would format them, so scaffolding never needs to run
    // rustfmt (which is what keeps it fast) unless names are unusually long.
    let session = Session::new();
    let project = session.init_demo(&[]);
    ok(&project, BLOG);
    ok(
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
    for (path, contents) in tree(&project) {
        let Some(bytes) = contents.filter(|_| path.ends_with(".rs")) else {
            continue;
        };
        for (number, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
            assert!(line.chars().count() <= 100, "{path}:{}: {line}", number + 1);
        }
    }
}

/// Beyond the line width, rustfmt's other limits (array, call and chain widths) depend on the
/// names too: every generated Rust file, for the names of the Kubebuilder book's tutorials and
/// others, is exactly what rustfmt writes (without compiling anything).
#[test]
fn generated_rust_is_rustfmt_clean_for_tutorial_and_other_names() {
    let test = "generated_rust_is_rustfmt_clean_for_tutorial_and_other_names";
    if !support::need("rustfmt", test, "rustup component add rustfmt") {
        return;
    }
    let session = Session::new();
    let projects: [(&str, &[&[&str]]); 3] = [
        (
            "memcached-operator",
            &[&[
                "--group",
                "cache",
                "--version",
                "v1alpha1",
                "--kind",
                "Memcached",
            ]],
        ),
        (
            "project",
            &[
                &["--group", "batch", "--version", "v1", "--kind", "CronJob"],
                &["--group", "batch", "--version", "v2", "--kind", "CronJob"],
            ],
        ),
        (
            "platform-engineering-tenancy-operator",
            &[&[
                "--group",
                "infrastructure",
                "--version",
                "v1beta1",
                "--kind",
                "TenantNetworkPolicy",
                "--namespaced=false",
            ]],
        ),
    ];
    for (name, kinds) in projects {
        let project = session.init_project(name, &[]);
        for kind in kinds {
            ok(&project, kind);
        }
        let (group, version, kind) = (kinds[0][1], kinds[0][3], kinds[0][5]);
        let webhook = [
            "create",
            "webhook",
            "--group",
            group,
            "--version",
            version,
            "--kind",
            kind,
            "--defaulting",
            "--programmatic-validation",
        ];
        let run = support::run_kopgen(&project, &webhook);
        assert_eq!(run.status, 0, "{name}: {}", run.stderr);
        let files: Vec<String> = tree(&project)
            .into_keys()
            .filter(|path| path.ends_with(".rs") && !path.starts_with("vendor/"))
            .collect();
        let output = std::process::Command::new("rustfmt")
            .args(["--edition", "2024", "--check"])
            .args(&files)
            .current_dir(&project)
            .output()
            .expect("rustfmt runs");
        assert!(
            output.status.success(),
            "{name}: not as rustfmt writes it:\n{}",
            String::from_utf8_lossy(&output.stdout)
        );
    }
}

/// Insertion points are edited as Rust: a module declared only inside a comment is declared,
/// and an attribute stays on the module it was written for.
#[test]
fn insertion_keeps_attributes_and_ignores_commented_code() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    ok(&project, BLOG);
    let path = project.join("src/api/mod.rs");
    let text = std::fs::read_to_string(&path).expect("api/mod.rs");
    let edited = text.replacen(
        "pub mod apps;\n",
        "/*\npub mod web;\n*/\n#[cfg(not(feature = \"nothing\"))]\npub mod apps;\n",
        1,
    );
    assert_ne!(edited, text);
    std::fs::write(&path, &edited).expect("write");
    ok(
        &project,
        &["--group", "web", "--version", "v1", "--kind", "Page"],
    );
    let after = std::fs::read_to_string(&path).expect("api/mod.rs");
    assert!(
        after.contains(
            "/*\npub mod web;\n*/\n#[cfg(not(feature = \"nothing\"))]\npub mod apps;\npub mod web;\n// +kopgen:scaffold:api-modules"
        ),
        "{after}"
    );
}
