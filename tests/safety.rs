//! Bad input never harms: no write outside the project, no crash, no silent loss, no
//! half-written tree. Each row of the table is one bad input, run as a user would, and the
//! tree must be byte-identical afterwards.

#[path = "safety/concurrency.rs"]
mod concurrency;
#[path = "safety/flags.rs"]
mod flags;
#[path = "safety/sources.rs"]
mod sources;
mod support;

use std::path::Path;

use support::{Session, fails_cleanly_in, run_kopgen, tree};

const HEADER: &str =
    "use kube::CustomResource;\nuse schemars::JsonSchema;\nuse serde::{Deserialize, Serialize};\n";

/// A custom resource with `#[kube(...)]` keys `kube` and the spec's body `fields`.
fn kind(kube: &str, fields: &str) -> String {
    format!(
        "{HEADER}#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n#[kube({kube})]\npub struct FooSpec {{\n{fields}\n}}\n"
    )
}

const GOOD: &str = "group = \"a.example.com\", version = \"v1\", kind = \"Foo\"";

/// `create api` in `demo` with the group and version of [`support::BLOG`] unless `args` say.
fn create(args: &[&str]) -> Vec<String> {
    let mut all: Vec<String> = ["create", "api", "--path", "demo"]
        .map(String::from)
        .to_vec();
    if !args.contains(&"--group") {
        all.extend(["--group", "apps"].map(String::from));
    }
    if !args.contains(&"--version") {
        all.extend(["--version", "v1alpha1"].map(String::from));
    }
    all.extend(args.iter().map(|a| (*a).to_owned()));
    all
}

fn symlink(target: &str, link: &Path) {
    std::os::unix::fs::symlink(target, link).expect("symlink");
}

#[test]
fn symlinks_are_followed_inside_the_project_and_refused_outside() {
    let session = Session::new();
    session.write(
        "Cargo.toml",
        "[package]\nname = \"p\"\nversion = \"0.1.0\"\n",
    );
    session.write("src/lib.rs", "pub mod api;\npub mod more;\n");
    session.write("shared/api.rs", &kind(GOOD, "pub x: i32,"));
    session.write(
        "shared/more/mod.rs",
        &kind(GOOD, "pub x: i32,").replace("Foo", "Bar"),
    );
    symlink("../shared/api.rs", &session.join("src/api.rs"));
    symlink("../shared/more", &session.join("src/more"));
    let run = session.kopgen(&[
        "manifests",
        "--stdout",
        "--derive",
        "static",
        "--paths",
        "src",
    ]);
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("name: foos.a.example.com")
            && run.stdout.contains("name: bars.a.example.com")
    );

    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("x.rs"), "pub struct X;\n").expect("write");
    let cases = [
        (
            outside.path().join("x.rs").display().to_string(),
            "leads outside the project",
        ),
        (".".to_owned(), "a symlink loop"),
        ("nothing.rs".to_owned(), "a symlink to nothing"),
    ];
    for (target, needle) in cases {
        let link = session.join("src/link.rs");
        symlink(&target, &link);
        let stderr = fails_cleanly_in(
            session.path(),
            &["manifests", "--paths", "src", "--output-dir", "out"],
        );
        assert!(
            stderr.contains("src/link.rs") && stderr.contains(needle),
            "{target}: {stderr}"
        );
        std::fs::remove_file(&link).expect("remove link");
    }
}

#[test]
fn a_directory_where_a_crd_goes_is_an_error_and_leaves_no_trace() {
    let session = Session::new();
    session.write(
        "src/lib.rs",
        &format!(
            "{}{}",
            kind(GOOD, "pub x: i32,"),
            kind(GOOD, "pub x: i32,")
                .replace("Foo", "Bar")
                .replace(HEADER, "")
        ),
    );
    std::fs::create_dir_all(session.join("out/a.example.com_foos.yaml")).expect("mkdir");
    let stderr = fails_cleanly_in(
        session.path(),
        &["manifests", "--paths", "src", "--output-dir", "out"],
    );
    assert!(
        stderr.contains("a directory is where this file goes"),
        "{stderr}"
    );
    assert!(
        !tree(session.path())
            .keys()
            .any(|k| k.contains("kopgen-tmp"))
    );
}

/// RBAC markers the API server (or kubectl) would refuse are errors at their line.
#[test]
fn bad_rbac_markers_are_errors_at_their_line() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    let marker = |m: &str| format!("// Access.\n// +kopgen:rbac:{m}\npub fn f() {{}}\n");
    // Markers count in modules the crate compiles.
    let declare = |project: &Path| {
        let lib = project.join("src/lib.rs");
        let text = std::fs::read_to_string(&lib).expect("lib.rs");
        std::fs::write(&lib, format!("{text}pub mod access;\n")).expect("write");
    };
    declare(&project);
    let rows = [
        (
            "groups=core,resources=pods,verbs=get,namespace=Team_A",
            "namespace `Team_A` is not a DNS-1123 label",
        ),
        (
            "groups=core,resources=pods,verbs=get,roleName=Bad/Name",
            "roleName `Bad/Name` is not a DNS-1123 subdomain",
        ),
        (
            "groups=core,resources=pods,urls=/metrics,verbs=get",
            "either `urls` (non-resource URLs) or `resources`",
        ),
        (
            "urls=/metrics,verbs=get,namespace=team-a",
            "`urls` only go in a ClusterRole",
        ),
        ("urls=metrics,verbs=get", "must start with '/'"),
        ("groups=core,resources=pods,verbs=fly", "invalid verb `fly`"),
        ("groups=core,resources=pods", "without verbs"),
        (
            "groups=core,resources=pods,verbs=get,colour=red",
            "unknown key `colour`",
        ),
        ("groups=core,verbs=get", "without resources or urls"),
    ];
    for (body, needle) in rows {
        std::fs::write(project.join("src/access.rs"), marker(body)).expect("write");
        let before = tree(session.path());
        let run = run_kopgen(&project, &["manifests"]);
        assert_eq!(run.status, 1, "{body}: {}", run.stdout);
        assert!(
            run.stderr.contains("src/access.rs:2:1:") && run.stderr.contains(needle),
            "{body}: expected {needle:?} in:\n{}",
            run.stderr
        );
        assert!(tree(session.path()) == before, "{body}: the tree changed");
    }
    // Roles only, in a --namespaced project: urls have nowhere to go.
    let namespaced = Session::new();
    let project = namespaced.init_demo(&["--namespaced"]);
    declare(&project);
    std::fs::write(
        project.join("src/access.rs"),
        marker("urls=/metrics,verbs=get"),
    )
    .expect("write");
    let run = run_kopgen(&project, &["manifests"]);
    assert_eq!(run.status, 1);
    assert!(
        run.stderr.contains("only a ClusterRole can hold"),
        "{}",
        run.stderr
    );
}

/// What kopgen does not know in PROJECT stays there, and CRLF files keep their line endings.
#[test]
fn project_files_keep_what_kopgen_does_not_know() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    support::create_api_ok(&project, support::BLOG);
    let text = std::fs::read_to_string(project.join("PROJECT")).expect("PROJECT");
    let text = text
        .replace(
            "layout:",
            "plugins:\n  custom.example.com/v1:\n    enabled: true\nlayout:",
        )
        .replace(
            "  kind: Blog\n",
            "  kind: Blog\n  webhooks:\n    defaulting: true\n",
        );
    std::fs::write(project.join("PROJECT"), &text).expect("write");
    let main = std::fs::read_to_string(project.join("src/controllers/mod.rs")).expect("mod");
    std::fs::write(
        project.join("src/controllers/mod.rs"),
        main.replace('\n', "\r\n"),
    )
    .expect("write");
    support::create_api_ok(
        &project,
        &["--group", "apps", "--version", "v1alpha1", "--kind", "Post"],
    );
    let after = std::fs::read_to_string(project.join("PROJECT")).expect("PROJECT");
    assert!(
        after.contains("custom.example.com/v1") && after.contains("defaulting: true"),
        "{after}"
    );
    let controllers = std::fs::read_to_string(project.join("src/controllers/mod.rs")).expect("mod");
    assert!(
        controllers.contains("post") && !controllers.replace("\r\n", "").contains('\n'),
        "{controllers:?}"
    );
}

/// A domain Kubernetes accepts but so long that no kind's CRD name would fit: refused at
/// `create api`, before any file is written, naming the rule.
#[test]
fn a_crd_name_too_long_for_a_file_is_refused_at_create_api() {
    let session = Session::new();
    let domain = format!(
        "{}.{}.{}.{}.io",
        "a".repeat(60),
        "b".repeat(60),
        "c".repeat(60),
        "d".repeat(55)
    );
    assert!(domain.len() <= 253);
    session.ok(&[
        "init",
        "--path",
        "demo",
        "--project-name",
        "demo",
        "--domain",
        &domain,
    ]);
    let args = create(&["--kind", "Blog"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let stderr = fails_cleanly_in(session.path(), &args);
    assert!(
        stderr.contains("would be longer than 195 characters"),
        "{stderr}"
    );
}

/// Group names that differ only where the Rust module name cannot (`a-b`, `a--b`); PROJECT
/// values that reach generated Rust; `init --force` over a PROJECT that does not parse.
#[test]
fn names_and_project_values_that_would_collide_or_inject_are_refused() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    support::create_api_ok(
        &project,
        &["--group", "a-b", "--version", "v1", "--kind", "Blog"],
    );
    let error = fails_cleanly_in(
        &project,
        &[
            "create",
            "api",
            "--group",
            "a--b",
            "--version",
            "v1",
            "--kind",
            "Post",
        ],
    );
    assert!(
        error.contains("both become the Rust module `a_b`"),
        "{error}"
    );

    support::create_api_ok(
        &project,
        &["--group", "a-b", "--version", "v2", "--kind", "Blog"],
    );
    let project_file = std::fs::read_to_string(project.join("PROJECT")).expect("PROJECT");
    let injected = project_file.replacen(
        "  version: v1\n",
        "  version: v1\n  webhooks:\n    conversion: true\n    spoke:\n    - \"v2\\n}\\npub fn injected() {}\\n//\"\n",
        1,
    );
    assert_ne!(injected, project_file);
    std::fs::write(project.join("PROJECT"), &injected).expect("write");
    let error = fails_cleanly_in(
        &project,
        &[
            "create",
            "webhook",
            "--group",
            "a-b",
            "--version",
            "v1",
            "--kind",
            "Blog",
            "--defaulting",
        ],
    );
    assert!(
        error.contains("PROJECT") && error.contains("invalid version"),
        "{error}"
    );

    std::fs::write(project.join("PROJECT"), "cliVersion: [unclosed\n").expect("write");
    let error = fails_cleanly_in(
        session.path(),
        &[
            "init",
            "--path",
            "demo",
            "--force",
            "--domain",
            "example.com",
        ],
    );
    assert!(
        error.contains("PROJECT") && error.contains("orphan"),
        "{error}"
    );
}

/// `create webhook` writes only the webhooks asked for: the user's code of the others stays.
#[test]
fn create_webhook_never_rewrites_the_users_other_webhook_files() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    support::create_api_ok(
        &project,
        &["--group", "apps", "--version", "v1", "--kind", "Blog"],
    );
    support::create_api_ok(
        &project,
        &["--group", "apps", "--version", "v2", "--kind", "Blog"],
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
    webhook(&["--defaulting", "--programmatic-validation"]);
    let admission = project.join("src/webhooks/apps_v1_blog.rs");
    let mine = format!(
        "{}\n// Mine.\n",
        std::fs::read_to_string(&admission).expect("read")
    );
    std::fs::write(&admission, &mine).expect("write");
    webhook(&["--conversion", "--spoke", "v2"]);
    assert_eq!(std::fs::read_to_string(&admission).expect("read"), mine);

    let conversion = project.join("src/webhooks/apps_v1_blog_conversion.rs");
    let mine = format!(
        "{}\n// Mine too.\n",
        std::fs::read_to_string(&conversion).expect("read")
    );
    std::fs::write(&conversion, &mine).expect("write");
    let error = fails_cleanly_in(
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
            "--defaulting",
        ],
    );
    assert!(
        error.contains("apps_v1_blog.rs") && error.contains("--force"),
        "{error}"
    );
    assert_eq!(std::fs::read_to_string(&conversion).expect("read"), mine);
}

/// A directory of the project that is a symlink to elsewhere is never written through: the
/// command fails naming the path, and neither the project nor the other place changes.
#[test]
fn writes_never_leave_the_project_through_symlinked_directories() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    support::create_api_ok(
        &project,
        &["--group", "apps", "--version", "v1", "--kind", "Blog"],
    );
    let outside = tempfile::tempdir().expect("tempdir");
    for dir in ["config/rbac", "config/crd/bases", "src/api"] {
        let real = project.join(dir);
        let moved = outside.path().join(dir.replace('/', "_"));
        std::fs::rename(&real, &moved).expect("move");
        symlink(&moved.display().to_string(), &real);
        let before = tree(outside.path());
        // Something to write in each: a marker that changes the role, a field, a new kind.
        let args: &[&str] = match dir {
            "src/api" => &[
                "create",
                "api",
                "--group",
                "apps",
                "--version",
                "v1",
                "--kind",
                "Post",
            ],
            _ => &["manifests"],
        };
        if dir != "src/api" {
            let controller = project.join("src/controllers/apps/blog_controller.rs");
            let text = std::fs::read_to_string(&controller).expect("read");
            std::fs::write(
                &controller,
                format!("{text}// +kopgen:rbac:groups=\"\",resources=secrets,verbs=get\n"),
            )
            .expect("write");
            let types = project.join("src/api/apps/v1/blog.rs");
            let text = std::fs::read_to_string(&types).expect("read");
            std::fs::write(
                &types,
                text.replacen(
                    "pub foo: Option<String>,",
                    "pub foo: Option<String>,\n    pub bar: Option<i32>,",
                    1,
                ),
            )
            .expect("write");
        }
        let error = fails_cleanly_in(&project, args);
        assert!(
            error.contains("outside") && error.contains(dir),
            "{dir}: {error}"
        );
        assert!(
            tree(outside.path()) == before,
            "{dir}: written through the link"
        );
        std::fs::remove_file(&real).expect("unlink");
        std::fs::rename(&moved, &real).expect("move back");
    }
}

/// Webhook marker values the API server would refuse, `patch=` included, are errors at the
/// marker's line, and nothing is written.
#[test]
fn bad_webhook_marker_values_are_errors_at_their_line() {
    const MARKER: &str = "// +kopgen:webhook:path=/mutate-apps-example-com-v1-blog,mutating=true,\
failurePolicy=fail,sideEffects=None,groups=apps.example.com,resources=blogs,verbs=create;update,\
versions=v1,name=mblog-v1.apps.example.com,admissionReviewVersions=v1";
    let session = Session::new();
    let project = session.init_demo(&[]);
    let lib = project.join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).expect("lib.rs");
    std::fs::write(&lib, format!("{text}pub mod hooks;\n")).expect("write");
    let rows = [
        (
            format!("{MARKER},patch=`{{\"timeoutSeconds\":60}}`"),
            "timeoutSeconds 60 must be between 1 and 30",
        ),
        (
            MARKER.replace(
                "path=/mutate-apps-example-com-v1-blog",
                "url=https://user@hooks.example.com/m",
            ),
            "user information is not permitted",
        ),
        (
            MARKER.replace(
                "path=/mutate-apps-example-com-v1-blog",
                "url=https://hooks.example.com/m?x=1",
            ),
            "a query is not permitted",
        ),
        (
            MARKER.replace("/mutate-apps-example-com-v1-blog", "/Mutate_Blog"),
            "each segment must be a DNS-1123 subdomain",
        ),
        (
            format!(
                "{MARKER},patch=`{{\"objectSelector\":{{\"matchLabels\":{{\"tier\":\"gold plated\"}}}}}}`"
            ),
            "not a valid label",
        ),
        (format!("{MARKER}\n{MARKER}"), "a second webhook named"),
    ];
    for (markers, needle) in rows {
        std::fs::write(
            project.join("src/hooks.rs"),
            format!("// Hooks.\n{markers}\npub fn f() {{}}\n"),
        )
        .expect("write");
        let before = tree(session.path());
        let run = run_kopgen(&project, &["manifests"]);
        assert_eq!(run.status, 1, "{markers}: {}", run.stdout);
        assert!(
            run.stderr.contains("src/hooks.rs:") && run.stderr.contains(needle),
            "{markers}: expected {needle:?} in:\n{}",
            run.stderr
        );
        assert!(
            tree(session.path()) == before,
            "{markers}: the tree changed"
        );
    }
}
