//! Bad command-line input of every command.

use super::create;
use crate::support::{self, Session, fails_cleanly_in};

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
