//! Commands that race, and runs killed midway.

use std::{path::Path, process::Command};

use super::HEADER;
use crate::support::{Session, run_kopgen, tree};

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
