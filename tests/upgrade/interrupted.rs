//! An upgrade that cannot finish as planned: killed while writing, files that cannot be merged,
//! scratch directories of killed upgrades.

use super::support::{self, Session};
use super::{edit_as_a_user, legacy_project, read};

/// `kopgen upgrade` killed part-way (`kill -9`: the debug build's test hook aborts after the
/// Nth file staged or placed): the next kopgen command finishes the write before it reads
/// anything, so the tree is the one an uninterrupted upgrade writes (killed after it
/// committed) or the old one, which the next `upgrade` then upgrades; either way nothing is
/// left staged or set aside, and PROJECT names the version the tree has.
#[test]
fn an_upgrade_killed_while_writing_is_finished_by_the_next_command() {
    let session = Session::new();
    let clean = legacy_project(&session, "clean");
    edit_as_a_user(&clean);
    let run = support::run_kopgen(&clean, &["upgrade"]);
    assert_eq!(run.status, 0, "{}\n{}", run.stdout, run.stderr);
    let upgraded = support::tree(&clean);
    // What an upgrade places (files new or changed), in its order: by path, PROJECT last.
    let before = {
        let project = legacy_project(&session, "before");
        edit_as_a_user(&project);
        support::tree(&project)
    };
    let mut placed: Vec<&String> = (upgraded.iter())
        .filter(|(path, bytes)| bytes.is_some() && before.get(*path) != Some(*bytes))
        .map(|(path, _)| path)
        .collect();
    placed.sort_by_key(|path| path.as_str() == "PROJECT");
    assert!(placed.len() > 10, "{placed:?}");

    let killed = |name: &str, hook: &str, at: &str, next: &[&str]| {
        let project = legacy_project(&session, name);
        edit_as_a_user(&project);
        let at = project.join(at);
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_kopgen"))
            .arg("upgrade")
            .current_dir(&project)
            .env("SOURCE_DATE_EPOCH", support::SOURCE_DATE_EPOCH)
            .env(hook, &at)
            .output()
            .expect("kopgen runs")
            .status;
        assert!(!status.success(), "{hook}={}: not killed", at.display());
        assert!(
            project.join(".kopgen-journal").exists(),
            "{hook}={}",
            at.display()
        );
        let rerun = support::run_kopgen(&project, next);
        assert_eq!(
            rerun.status, 0,
            "{hook}:\n{}\n{}",
            rerun.stdout, rerun.stderr
        );
        assert!(
            rerun
                .stderr
                .contains("Finished the write an interrupted kopgen command left")
        );
        project
    };
    // Killed after the first file, half of them, or all but PROJECT were placed.
    let last = placed.len() - 2;
    for (n, at) in [placed[0], placed[placed.len() / 2], placed[last]]
        .into_iter()
        .enumerate()
    {
        let hook = "KOPGEN_TEST_ABORT_AFTER_PLACING";
        let project = killed(&format!("placed-{n}"), hook, at, &["manifests", "--check"]);
        let tree = support::tree(&project);
        assert!(
            tree == upgraded,
            "killed after placing {at}: the tree differs from an uninterrupted upgrade in {:?}",
            differing(&tree, &upgraded)
        );
    }
    // Killed while staging: the old tree is back, and the next upgrade upgrades it.
    let at = placed[placed.len() / 2];
    let project = killed(
        "staged",
        "KOPGEN_TEST_ABORT_AFTER_STAGING",
        at,
        &["upgrade"],
    );
    let tree = support::tree(&project);
    assert!(tree == upgraded, "{:?}", differing(&tree, &upgraded));
}

/// The paths whose contents differ between two trees, or that only one has.
fn differing<K: Ord + std::fmt::Debug + Clone, V: PartialEq>(
    a: &std::collections::BTreeMap<K, V>,
    b: &std::collections::BTreeMap<K, V>,
) -> Vec<K> {
    let keys: std::collections::BTreeSet<&K> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

/// What stands where a scaffolded file was and cannot be merged is kept and said so, never
/// taken for a deletion or replaced: a README too large to merge, a directory where the
/// Dockerfile was, a Makefile that is a link (writing would replace the link with a file).
#[test]
fn what_cannot_be_merged_is_kept_with_the_reason() {
    let session = Session::new();
    let project = legacy_project(&session, "odd-files");
    let readme = "# shop\n".repeat(3 << 20);
    std::fs::write(project.join("README.md"), &readme).expect("write");
    std::fs::remove_file(project.join("Dockerfile")).expect("rm");
    std::fs::create_dir(project.join("Dockerfile")).expect("mkdir");
    let makefile = session.join("shared-Makefile");
    std::fs::rename(project.join("Makefile"), &makefile).expect("mv");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&makefile, project.join("Makefile")).expect("symlink");
    let run = support::run_kopgen(&project, &["upgrade"]);
    assert_eq!(run.status, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("you deleted it"), "{}", run.stdout);
    for (file, why) in [
        ("README.md", "too large to merge"),
        ("Dockerfile", "not a file"),
        ("Makefile", "a symbolic link"),
    ] {
        assert!(
            run.stdout.contains(&format!("keep {file}  ({why}")),
            "{file}: {}",
            run.stdout
        );
    }
    assert_eq!(read(&project, "README.md"), readme);
    assert!(project.join("Dockerfile").is_dir());
    assert!(
        std::fs::symlink_metadata(project.join("Makefile"))
            .expect("Makefile")
            .file_type()
            .is_symlink()
    );
}

/// An upgrade replays kopgen's scaffolding in a scratch directory under TMPDIR; the ones a
/// killed upgrade left (their process gone) are removed by the next, a live one's are not.
#[test]
fn scratch_directories_of_killed_upgrades_are_removed() {
    if !std::path::Path::new("/proc/self").exists() {
        return;
    }
    let session = Session::new();
    let project = legacy_project(&session, "scratch");
    let tmp = session.join("tmp");
    // Process ids stop at 2^22 on Linux: this one is never alive.
    let dead = tmp.join("kopgen-replay-999999999-0");
    let alive = tmp.join(format!("kopgen-replay-{}-0", std::process::id()));
    for dir in [&dead, &alive] {
        std::fs::create_dir_all(dir.join("src")).expect("mkdir");
    }
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_kopgen"))
        .args(["upgrade", "--dry-run"])
        .current_dir(&project)
        .env("TMPDIR", &tmp)
        .output()
        .expect("kopgen runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !dead.exists(),
        "the killed upgrade's scratch directory stays"
    );
    assert!(
        alive.exists(),
        "a live process's scratch directory was removed"
    );
    let left: Vec<_> = std::fs::read_dir(&tmp).expect("tmp").flatten().collect();
    assert_eq!(left.len(), 1, "{left:?}");
}
