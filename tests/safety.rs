//! Bad input never harms: no write outside the project, no crash, no silent loss, no
//! half-written tree. Each row of the table is one bad input, run as a user would, and the
//! tree must be byte-identical afterwards.

mod support;

use std::{path::Path, process::Command};

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

/// One bad input: what to write under `src/`, and what the error must say.
struct Row {
    what: &'static str,
    lib: String,
    needle: &'static str,
}

fn row(what: &'static str, lib: String, needle: &'static str) -> Row {
    Row { what, lib, needle }
}

/// Names and paths the API server refuses, or that would lead out of the output directory.
fn bad_attributes() -> Vec<Row> {
    let with = |extra: &str| kind(&format!("{GOOD}, {extra}"), "pub x: i32,");
    let group = |g: &str| {
        kind(
            &format!("group = \"{g}\", version = \"v1\", kind = \"Foo\""),
            "pub x: i32,",
        )
    };
    vec![
        row(
            "group climbing out",
            group("../../../src/evil"),
            "group \"../../../src/evil\" is not a DNS-1123 subdomain",
        ),
        row(
            "absolute group",
            group("/tmp/evil.example.com"),
            "is not a DNS-1123 subdomain",
        ),
        row(
            "group with a slash",
            group("a/b.example.com"),
            "is not a DNS-1123 subdomain",
        ),
        row(
            "group without a dot",
            group("example"),
            "with at least one dot",
        ),
        row(
            "uppercase group",
            group("Example.com"),
            "is not a DNS-1123 subdomain",
        ),
        row(
            "group too long",
            group(&format!("{}.example.com", "a".repeat(250))),
            "is not a DNS-1123 subdomain",
        ),
        row(
            "empty version",
            kind(
                "group = \"a.example.com\", version = \"\", kind = \"Foo\"",
                "pub x: i32,",
            ),
            "version \"\" is not a DNS-1035 label",
        ),
        row(
            "uppercase version",
            kind(
                "group = \"a.example.com\", version = \"V1\", kind = \"Foo\"",
                "pub x: i32,",
            ),
            "version \"V1\"",
        ),
        row(
            "version with a dot",
            kind(
                "group = \"a.example.com\", version = \"v1.2\", kind = \"Foo\"",
                "pub x: i32,",
            ),
            "version \"v1.2\"",
        ),
        row(
            "kind too long",
            kind(
                &format!(
                    "group = \"a.example.com\", version = \"v1\", kind = \"K{}\"",
                    "a".repeat(63)
                ),
                "pub x: i32,",
            ),
            "is not a PascalCase name of at most 63",
        ),
        row(
            "lowercase kind",
            kind(
                "group = \"a.example.com\", version = \"v1\", kind = \"foo\"",
                "pub x: i32,",
            ),
            "kind \"foo\"",
        ),
        row(
            "plural climbing out",
            with("plural = \"../foos\""),
            "plural \"../foos\" is not a DNS-1035 label",
        ),
        row(
            "plural with a slash",
            with("plural = \"a/b\""),
            "plural \"a/b\"",
        ),
        row(
            "uppercase plural",
            with("plural = \"Foos\""),
            "plural \"Foos\"",
        ),
        row(
            "plural too long",
            with(&format!("plural = \"{}\"", "f".repeat(64))),
            "is not a DNS-1035 label",
        ),
        row(
            "singular with a space",
            with("singular = \"a foo\""),
            "singular \"a foo\"",
        ),
        row(
            "short name with a dot",
            with("shortname = \"f.o\""),
            "short name \"f.o\"",
        ),
        row(
            "category uppercase",
            with("category = \"All\""),
            "category \"All\"",
        ),
        row(
            "printcolumn type",
            with(
                "printcolumn = r#\"{\"name\":\"X\",\"type\":\"text\",\"jsonPath\":\".spec.x\"}\"#",
            ),
            "printcolumn \"X\" has type \"text\"",
        ),
        row(
            "printcolumn format",
            with(
                "printcolumn = r#\"{\"name\":\"X\",\"type\":\"string\",\"format\":\"hex\",\"jsonPath\":\".spec.x\"}\"#",
            ),
            "has format \"hex\"",
        ),
        row(
            "printcolumn path",
            with(
                "printcolumn = r#\"{\"name\":\"X\",\"type\":\"string\",\"jsonPath\":\"spec.x\"}\"#",
            ),
            "has json_path \"spec.x\"",
        ),
        row(
            "selectable path",
            with("selectable = \"spec.x\""),
            "selectable field \"spec.x\" is not a JSON path",
        ),
        row(
            "scale spec path",
            with(
                "status = \"FooStatus\", scale(spec_replicas_path = \".status.n\", status_replicas_path = \".status.n\")",
            ),
            "scale spec_replicas_path",
        ),
        row(
            "printer column without a name",
            with(
                "printcolumn = r#\"{\"name\":\"\",\"type\":\"string\",\"jsonPath\":\".spec.x\"}\"#",
            ),
            "a printcolumn has no name",
        ),
        row(
            "label value with a space",
            with("label(\"tier\", \"gold plated\")"),
            "label `tier: gold plated` is not one the API server accepts",
        ),
        row(
            "annotation key with two slashes",
            with("annotation(\"a/b/c\", \"x\")"),
            "annotation `a/b/c: x`",
        ),
        row(
            "selectable list",
            kind(
                &format!("{GOOD}, selectable = \".spec.tags\""),
                "pub tags: Vec<String>,",
            ),
            "selectable field `.spec.tags` does not name a string, boolean or integer field",
        ),
        row(
            "selectable metadata",
            with("selectable = \".metadata.name\""),
            "points into metadata",
        ),
        row(
            "selectable twice",
            with("selectable = \".spec.x\", selectable = \".spec.x\""),
            "is given twice",
        ),
        row(
            "nine selectable fields",
            kind(
                &format!(
                    "{GOOD}, {}",
                    (0..9)
                        .map(|i| format!("selectable = \".spec.f{i}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                &(0..9)
                    .map(|i| format!("pub f{i}: i32,"))
                    .collect::<String>(),
            ),
            "9 selectable fields",
        ),
        row(
            "look-ahead pattern",
            kind(
                GOOD,
                "#[schemars(regex(pattern = \"^(?=a).*$\"))]\npub x: String,",
            ),
            "is not a regular expression the API server (Go's RE2) compiles",
        ),
        row(
            "CEL nested too deep",
            with(&format!(
                "validation = \"{}self.spec.x{} > 0\"",
                "(".repeat(260),
                ")".repeat(260)
            )),
            "nests 261 levels deep",
        ),
        row(
            "CRD name too long",
            kind(
                &format!(
                    "group = \"{}.{}.{}.{}.io\", version = \"v1\", kind = \"Foo\", plural = \"{}\"",
                    "a".repeat(60),
                    "b".repeat(60),
                    "c".repeat(60),
                    "d".repeat(50),
                    "f".repeat(20)
                ),
                "pub x: i32,",
            ),
            "is longer than 195 characters",
        ),
    ]
}

/// Inputs that once crashed or looped: now each is an error.
fn bad_sources() -> Vec<Row> {
    vec![
        row(
            "alias cycle",
            format!(
                "{}pub type X = Y;\npub type Y = Vec<X>;\n",
                kind(GOOD, "pub x: X,")
            ),
            "nests more than 256 levels deep",
        ),
        row(
            "alias naming itself",
            format!("{}pub type X = X;\n", kind(GOOD, "pub x: X,")),
            "nests more than 256 levels deep",
        ),
        row(
            "generic alias growing",
            format!(
                "{}pub type W<T> = Vec<W<T>>;\n",
                kind(GOOD, "pub x: W<u8>,")
            ),
            "nests more than 256 levels deep",
        ),
        row(
            "alias cycle in a default",
            format!(
                "{}pub type X = X;\n",
                kind(GOOD, "#[serde(default)]\npub x: X,")
            ),
            "nests more than 256 levels deep",
        ),
        row(
            "kinds colliding",
            format!(
                "{}{}",
                kind(GOOD, "pub x: i32,"),
                kind(GOOD, "pub x: i32,")
                    .replace("FooSpec", "FoOSpec")
                    .replace("kind = \"Foo\"", "kind = \"FoO\"")
                    .replace(HEADER, "")
            ),
            "would both be the CRD foos.a.example.com",
        ),
        row(
            "versions of one kind with different plurals",
            format!(
                "pub mod v1 {{\n{}}}\npub mod v2 {{\n{}}}\n",
                kind(&format!("{GOOD}, plural = \"foos\""), "pub x: i32,"),
                kind(
                    "group = \"a.example.com\", version = \"v2\", kind = \"Foo\", plural = \"fooz\", storage = false",
                    "pub x: i32,"
                )
            ),
            "has the plural `foos` and version v2",
        ),
        row(
            "a kind colliding with another kind's non-storage version",
            format!(
                "pub mod v1 {{\n{}}}\npub mod v2 {{\n{}}}\npub mod bar {{\n{}}}\n",
                kind(&format!("{GOOD}, plural = \"foos\""), "pub x: i32,"),
                kind(
                    "group = \"a.example.com\", version = \"v2\", kind = \"Foo\", plural = \"fooz\", storage = false",
                    "pub x: i32,"
                ),
                kind(
                    "group = \"a.example.com\", version = \"v1\", kind = \"Bar\", plural = \"fooz\"",
                    "pub x: i32,"
                )
                .replace("FooSpec", "BarSpec")
            ),
            "kinds Bar and Foo would both be the CRD fooz.a.example.com",
        ),
        row("syntax error", "pub struct {".into(), "cannot parse Rust"),
        row(
            "missing group",
            kind("version = \"v1\", kind = \"Foo\"", "pub x: i32,"),
            "needs `group`",
        ),
        row(
            "module file missing",
            format!("mod missing;\n{}", kind(GOOD, "pub x: i32,")),
            "file not found for module `missing`",
        ),
    ]
}

#[test]
fn bad_input_in_the_source_is_an_error_and_changes_nothing() {
    let rows: Vec<Row> = bad_attributes().into_iter().chain(bad_sources()).collect();
    assert!(rows.len() >= 30);
    for row in rows {
        let session = Session::new();
        session.write("src/lib.rs", &row.lib);
        session.write("out/keep.yaml", "kept\n");
        let stderr = fails_cleanly_in(
            session.path(),
            &["manifests", "--paths", "src", "--output-dir", "out"],
        );
        assert!(
            stderr.contains("src/lib.rs:") && stderr.contains(row.needle),
            "{}: expected {:?} in:\n{stderr}",
            row.what,
            row.needle
        );
        assert!(
            !session.join("src/evil_foos.yaml").exists()
                && !Path::new("/tmp/evil.example.com_foos.yaml").exists()
        );
    }
}

/// Files kopgen cannot read as Rust, and output paths it cannot write: errors that say where
/// and why, with nothing written.
#[test]
fn unreadable_sources_and_blocked_outputs_are_errors() {
    let session = Session::new();
    session.write("src/lib.rs", &kind(GOOD, "pub x: i32,"));
    std::fs::write(session.join("src/bad.rs"), b"pub struct A;\n// caf\xe9\n").expect("write");
    let stderr = fails_cleanly_in(
        session.path(),
        &["manifests", "--paths", "src", "--output-dir", "out"],
    );
    assert!(
        stderr.contains("src/bad.rs:2:7: the file is not UTF-8"),
        "{stderr}"
    );
    std::fs::remove_file(session.join("src/bad.rs")).expect("remove");

    session.write("src/huge.rs", &format!("// {}\n", "x".repeat(9 << 20)));
    let stderr = fails_cleanly_in(
        session.path(),
        &["manifests", "--paths", "src", "--output-dir", "out"],
    );
    assert!(
        stderr.contains("src/huge.rs") && stderr.contains("over kopgen's limit"),
        "{stderr}"
    );
    std::fs::remove_file(session.join("src/huge.rs")).expect("remove");

    session.write("out", "a file\n");
    let stderr = fails_cleanly_in(
        session.path(),
        &["manifests", "--paths", "src", "--output-dir", "out"],
    );
    assert!(
        stderr.contains("is a file (or a link to nothing) where a directory is needed"),
        "{stderr}"
    );
    let stderr = fails_cleanly_in(
        session.path(),
        &["manifests", "--paths", "src", "--output-dir", "out/crds"],
    );
    assert!(
        stderr.contains("is a file (or a link to nothing) where a directory is needed"),
        "{stderr}"
    );

    session.write("empty/lib.rs", "pub struct Nothing;\n");
    let run = session.kopgen(&["manifests", "--paths", "empty", "--stdout"]);
    assert_eq!(run.status, 0);
    assert!(
        run.stderr
            .contains("note: no #[derive(CustomResource)] in empty"),
        "{}",
        run.stderr
    );
}

/// Command-line input of every command: the error names the rule, nothing is written.
#[test]
fn bad_flags_are_errors_and_change_nothing() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    support::create_api_ok(&project, support::BLOG);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "init".into(),
                "--path".into(),
                "x".into(),
                "--owner".into(),
                "ACME\nInc".into(),
            ],
            "invalid owner",
        ),
        (
            vec![
                "init".into(),
                "--path".into(),
                "x".into(),
                "--owner".into(),
                "a\u{7}b".into(),
            ],
            "invalid owner",
        ),
        (
            vec![
                "init".into(),
                "--path".into(),
                "x".into(),
                "--owner".into(),
                "Evil\u{202E}Corp".into(),
            ],
            "invalid owner",
        ),
        (
            vec![
                "init".into(),
                "--path".into(),
                "x".into(),
                "--owner".into(),
                "Zero\u{200B}Width".into(),
            ],
            "invalid owner",
        ),
        (
            vec![
                "init".into(),
                "--path".into(),
                "x".into(),
                "--domain".into(),
                format!("{}.com", "a".repeat(250)),
            ],
            "invalid domain",
        ),
        (
            vec![
                "init".into(),
                "--path".into(),
                "x".into(),
                "--domain".into(),
                "BAD_DOMAIN".into(),
            ],
            "invalid domain",
        ),
        (
            vec![
                "create".into(),
                "api".into(),
                "--path".into(),
                "demo".into(),
                "--group".into(),
                "apps".into(),
                "--version".into(),
                "v1".into(),
                "--kind".into(),
                format!("K{}", "a".repeat(63)),
            ],
            "invalid kind",
        ),
        (
            vec![
                "create".into(),
                "api".into(),
                "--path".into(),
                "demo".into(),
                "--group".into(),
                "../x".into(),
                "--version".into(),
                "v1".into(),
                "--kind".into(),
                "Blog".into(),
            ],
            "invalid group",
        ),
        (
            vec![
                "create".into(),
                "api".into(),
                "--path".into(),
                "demo".into(),
                "--group".into(),
                "apps".into(),
                "--version".into(),
                "v1".into(),
                "--kind".into(),
                "Blog".into(),
                "--plural".into(),
                "../blogs".into(),
            ],
            "invalid plural",
        ),
        (
            vec![
                "manifests".into(),
                "--path".into(),
                "demo".into(),
                "--paths".into(),
                "does-not-exist".into(),
            ],
            "no such file or directory",
        ),
        (
            create(&["--kind", &format!("K{}", "a".repeat(62))]),
            "at most 62 characters",
        ),
        (
            create(&["--kind", "BLOG"]),
            "differs only in case from Kind=Blog",
        ),
        (
            create(&["--kind", "BLOG", "--force"]),
            "differs only in case from Kind=Blog",
        ),
        (
            create(&["--kind", "Blogs", "--plural", "blogs"]),
            "would be the CRD blogs.apps.example.com, which Kind=Blog already is",
        ),
        (
            create(&["--kind", "Post", "--version", "v1.0"]),
            "invalid version",
        ),
        (
            create(&["--kind", "Post", "--group", "Apps"]),
            "invalid group",
        ),
        (
            create(&["--kind", "Post", "--plural", "Posts"]),
            "invalid plural",
        ),
        (create(&["--kind", "Self"]), "invalid kind"),
        (create(&["--kind", "JsonSchema"]), "invalid kind"),
        (create(&["--kind", "Reconcile"]), "invalid kind"),
        (create(&["--kind", "ObjectMeta"]), "invalid kind"),
        // What the webhook modules import beside the kind.
        (create(&["--kind", "Review"]), "invalid kind"),
        (create(&["--kind", "Verdict"]), "invalid kind"),
        (create(&["--kind", "Ok"]), "invalid kind"),
        (
            create(&["--kind", "BlogSpec"]),
            "would generate the same Rust type",
        ),
        (
            [
                "init",
                "--path",
                "long",
                "--project-name",
                "long",
                "--domain",
                &format!(
                    "{}.{}.{}.{}.io",
                    "a".repeat(63),
                    "b".repeat(63),
                    "c".repeat(63),
                    "d".repeat(63)
                ),
            ]
            .map(String::from)
            .to_vec(),
            "invalid domain",
        ),
        (
            [
                "init",
                "--path",
                "demo",
                "--force",
                "--domain",
                "example.com",
            ]
            .map(String::from)
            .to_vec(),
            "the project has kinds (apps/Blog)",
        ),
        (
            create(&["--kind", "Post", "--resource=false", "--controller=false"]),
            "nothing to scaffold",
        ),
    ];
    assert!(project.is_dir());
    let project_file = std::fs::read_to_string(project.join("PROJECT")).expect("PROJECT");
    // Hand edits of PROJECT that `init` or `create api` would have refused.
    let site = create(&["--group", "web", "--version", "v1", "--kind", "Site"]);
    let site: Vec<&str> = site.iter().map(String::as_str).collect();
    for (from, to, needle) in [
        (
            "domain: example.com",
            "domain: BAD_DOMAIN",
            "invalid domain \"BAD_DOMAIN\"",
        ),
        (
            "kind: Blog\n",
            "kind: ../Blog\n",
            "invalid kind \"../Blog\"",
        ),
        (
            "group: apps\n",
            "group: ../apps\n",
            "invalid group \"../apps\"",
        ),
    ] {
        std::fs::write(project.join("PROJECT"), project_file.replacen(from, to, 1)).expect("write");
        let stderr = fails_cleanly_in(session.path(), &site);
        assert!(
            stderr.contains("PROJECT") && stderr.contains(needle),
            "{stderr}"
        );
        let stderr = fails_cleanly_in(session.path(), &["upgrade", "--path", "demo"]);
        assert!(
            stderr.contains("PROJECT") && stderr.contains(needle),
            "upgrade: {stderr}"
        );
    }
    std::fs::write(project.join("PROJECT"), &project_file).expect("restore");
    for (args, needle) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let stderr = fails_cleanly_in(session.path(), &args);
        assert!(
            stderr.contains(needle),
            "{args:?}: expected {needle:?} in:\n{stderr}"
        );
    }
}

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

/// A project with a few CRDs of some size, for runs that race and runs that are killed.
fn busy_project(session: &Session) {
    let mut lib = String::from(HEADER);
    for i in 0..8 {
        lib.push_str(&format!(
            "#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]\n#[kube(group = \"a.example.com\", version = \"v1\", kind = \"K{i}\")]\npub struct K{i}Spec {{ pub template: k8s_openapi::api::core::v1::PodTemplateSpec }}\n"
        ));
    }
    session.write("src/lib.rs", &lib);
}

/// The arguments of the runs that race and are killed.
const BUSY_ARGS: [&str; 7] = [
    "manifests",
    "--paths",
    "src",
    "--output-dir",
    "out",
    "--lint",
    "off",
];

/// A busy project, and what a run from scratch writes for it (in another directory).
fn busy_session() -> (Session, std::collections::BTreeMap<String, Option<Vec<u8>>>) {
    let session = Session::new();
    busy_project(&session);
    let reference = Session::new();
    busy_project(&reference);
    assert_eq!(reference.kopgen(&BUSY_ARGS).status, 0);
    (session, tree(&reference.join("out")))
}

/// Every file below `dir` is complete (the CRDs of a run from scratch), and nothing staged is left.
fn assert_complete(dir: &Path, expected: &std::collections::BTreeMap<String, Option<Vec<u8>>>) {
    let found = tree(dir);
    assert!(
        !found.keys().any(|k| k.contains("kopgen-tmp")),
        "staged files left: {:?}",
        found.keys().collect::<Vec<_>>()
    );
    for (path, contents) in &found {
        if let Some(bytes) = contents {
            assert_eq!(
                Some(bytes),
                expected.get(path).and_then(Option::as_ref),
                "{path} is torn"
            );
        }
    }
}

/// Two different commands in one project at once: each is a transaction (read, plan, write), so
/// both changes are there, whichever ran first.
#[test]
fn concurrent_commands_both_land() {
    for trial in 0..10 {
        let session = Session::new();
        let project = session.init_project(&format!("race{trial}"), &[]);
        let spawn = |group: &str, kind: &str| {
            Command::new(env!("CARGO_BIN_EXE_kopgen"))
                .args([
                    "create",
                    "api",
                    "--group",
                    group,
                    "--version",
                    "v1",
                    "--kind",
                    kind,
                ])
                .current_dir(&project)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("kopgen")
        };
        let children = [spawn("web", "Page"), spawn("shop", "Post")];
        for child in children {
            let output = child.wait_with_output().expect("wait");
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let read = |file: &str| std::fs::read_to_string(project.join(file)).expect(file);
        let project_file = read("PROJECT");
        assert!(
            project_file.contains("kind: Page") && project_file.contains("kind: Post"),
            "trial {trial}: {project_file}"
        );
        let modules = read("src/api/mod.rs");
        assert!(
            modules.contains("pub mod shop;") && modules.contains("pub mod web;"),
            "trial {trial}: {modules}"
        );
        let controllers = read("src/controllers/mod.rs");
        assert!(
            controllers.contains("page_controller::START")
                && controllers.contains("post_controller::START"),
            "trial {trial}: {controllers}"
        );
    }
}

#[test]
fn concurrent_runs_take_turns() {
    let (session, expected) = busy_session();
    for _ in 0..10 {
        let _ = std::fs::remove_dir_all(session.join("out"));
        let children: Vec<_> = (0..3)
            .map(|_| {
                Command::new(env!("CARGO_BIN_EXE_kopgen"))
                    .args(BUSY_ARGS)
                    .current_dir(session.path())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("kopgen")
            })
            .collect();
        for child in children {
            let output = child.wait_with_output().expect("wait");
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        assert_complete(&session.join("out"), &expected);
        assert_eq!(tree(&session.join("out")).len(), expected.len());
    }
}

#[test]
fn a_killed_run_leaves_complete_files_and_the_next_run_succeeds() {
    let (session, expected) = busy_session();
    // Delays spread over a run's length (tens of milliseconds), the last well past its end.
    for delay_ms in [0, 2, 5, 10, 15, 20, 30, 45, 60, 200] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kopgen"))
            .args(BUSY_ARGS)
            .current_dir(session.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("kopgen");
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        // Whatever the killed run left: only whole files (staged ones are cleared next time).
        let left = tree(&session.join("out"));
        for (path, contents) in &left {
            if let (Some(bytes), false) = (contents, path.contains("kopgen-tmp")) {
                assert_eq!(
                    Some(bytes),
                    expected.get(path).and_then(Option::as_ref),
                    "{path} is torn"
                );
            }
        }
        let run = run_kopgen(session.path(), &BUSY_ARGS);
        assert_eq!(run.status, 0, "{}", run.stderr);
        assert_complete(&session.join("out"), &expected);
    }
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
