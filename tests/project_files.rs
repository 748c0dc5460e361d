//! Files kopgen reads that are not what they should be: a FIFO, a device behind a symlink, a
//! PROJECT that does not parse. Each is a clear error naming the file, never a read that
//! blocks or never ends, never "up to date", and the tree is unchanged.

mod support;

use std::path::Path;

use support::{BLOG, Session, fails_cleanly_in};

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// Runs `args` in `project` and returns stderr, asserting a failure. (`fails_cleanly_in`
/// would read the special file to compare the tree.)
fn fails(project: &Path, args: &[&str]) -> String {
    let run = support::run_kopgen(project, args);
    assert_ne!(run.status, 0, "{args:?} should fail:\n{}", run.stdout);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run.stderr
}

#[test]
fn special_files_where_kopgen_reads_are_errors() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    support::create_api_ok(&project, BLOG);
    let create = [
        "create",
        "api",
        "--group",
        "web",
        "--version",
        "v1",
        "--kind",
        "Page",
    ];
    let kinds_before = std::fs::read_to_string(project.join("src/api/mod.rs")).expect("mod.rs");
    // (file replaced, special, command, what the error says)
    let cases: [(&str, &str, &[&str], &str); 8] = [
        (
            "config/rbac/role.yaml",
            "fifo",
            &["manifests"],
            "a special file (a FIFO, socket or device) is where this file goes",
        ),
        (
            "PROJECT",
            "fifo",
            &["manifests", "--check"],
            "not a regular file",
        ),
        (
            "PROJECT",
            "device",
            &["manifests", "--check"],
            "not a regular file",
        ),
        ("PROJECT", "fifo", &create, "not a regular file"),
        ("PROJECT", "device", &create, "not a regular file"),
        (
            "src/api/mod.rs",
            "fifo",
            &["manifests", "--check"],
            "file not found for module `api`",
        ),
        (
            "src/api/mod.rs",
            "fifo",
            &["manifests"],
            "file not found for module `api`",
        ),
        (
            "src/api/mod.rs",
            "device",
            &["manifests"],
            "a symlink that leads outside the project",
        ),
    ];
    for (file, special, args, needle) in cases {
        let path = project.join(file);
        let saved = std::fs::read(&path).expect("saved");
        std::fs::remove_file(&path).expect("remove");
        match special {
            "fifo" => mkfifo(&path),
            _ => std::os::unix::fs::symlink("/dev/zero", &path).expect("symlink"),
        }
        let stderr = fails(&project, args);
        assert!(
            stderr.contains(needle),
            "{file} as a {special}, {args:?}: {stderr}"
        );
        // Left as it was: still the special file, nothing else written.
        assert!(
            !std::fs::symlink_metadata(&path)
                .expect("still there")
                .is_file()
        );
        std::fs::remove_file(&path).expect("remove");
        std::fs::write(&path, saved).expect("restore");
    }
    assert_eq!(
        std::fs::read_to_string(project.join("src/api/mod.rs")).expect("mod.rs"),
        kinds_before
    );
    assert!(!project.join("src/api/web").exists());
    // A Rust source that is a FIFO, named on the command line.
    mkfifo(&project.join("src/pipe.rs"));
    let stderr = fails(
        &project,
        &["manifests", "--paths", "src/pipe.rs", "--stdout"],
    );
    assert!(stderr.contains("src/pipe.rs"), "{stderr}");
    // A path that is not there is a typo, never "no kinds".
    let stderr = fails(
        &project,
        &["manifests", "--paths", "src/missing.rs", "--stdout"],
    );
    assert!(stderr.contains("src/missing.rs"), "{stderr}");
}

#[test]
fn a_project_file_that_does_not_parse_is_never_up_to_date() {
    let session = Session::new();
    let project = session.init_demo(&[]);
    support::create_api_ok(&project, BLOG);
    let path = project.join("PROJECT");
    let mut text = std::fs::read_to_string(&path).expect("PROJECT");
    text.push_str("resources: [\n");
    std::fs::write(&path, text).expect("write");
    for args in [&["manifests", "--check"][..], &["manifests"]] {
        let stderr = fails_cleanly_in(&project, args);
        assert!(
            stderr.contains("PROJECT") && stderr.contains("invalid PROJECT file"),
            "{args:?}: {stderr}"
        );
    }
}
