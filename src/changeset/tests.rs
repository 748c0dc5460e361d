//! The writer's guarantees, each with the failure that would break it.

use super::*;

thread_local! {
    /// The how-many-th [`place`] of this thread fails (0: none).
    pub(super) static FAIL_PLACING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The write of this thread dies (panics, leaving everything as a kill would) after the
    /// how-many-th file staged (0: never).
    pub(super) static DIE_AFTER_STAGED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// ... or after the how-many-th file placed.
    pub(super) static DIE_AFTER_PLACED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Dies here if `counter` counts down to its last step.
pub(super) fn die_here(counter: &'static std::thread::LocalKey<std::cell::Cell<usize>>) {
    let left = counter.with(|n| {
        let left = n.get();
        n.set(left.saturating_sub(1));
        left
    });
    if left == 1 {
        panic!("killed");
    }
}

/// Files a, b, c and gone (to delete) hold "old ..."; the change set writes a, b, c, d, a
/// new directory's e and PROJECT as "new ...", and deletes gone.
fn interrupted_write(
    root: &Path,
    counter: &'static std::thread::LocalKey<std::cell::Cell<usize>>,
    after: usize,
) {
    for name in ["a", "b", "c", "gone", "PROJECT"] {
        fs::write(root.join(name), format!("old {name}")).expect("write");
    }
    let mut set = ChangeSet::new(root);
    for name in ["a", "b", "c", "d", "dir/e", "PROJECT"] {
        set.put(name, format!("new {name}"));
    }
    set.remove("gone");
    counter.with(|n| n.set(after));
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| set.write()));
    counter.with(|n| n.set(0));
    assert!(died.is_err(), "the write was killed");
    assert!(root.join(journal::NAME).exists(), "the journal stays");
}

/// Every file below `root` with its contents, by relative path.
fn tree(root: &Path) -> BTreeMap<String, String> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let name = e
                .path()
                .strip_prefix(root)
                .expect("below")
                .display()
                .to_string();
            (name, fs::read_to_string(e.path()).unwrap_or_default())
        })
        .collect()
}

fn expected(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_write_killed_after_it_committed_is_rolled_forward_by_the_next_run() {
    for after in 1..=6 {
        let tmp = tempfile::tempdir().expect("tempdir");
        interrupted_write(tmp.path(), &DIE_AFTER_PLACED, after);
        assert!(journal::recover(tmp.path()).expect("recovers"));
        assert_eq!(
            tree(tmp.path()),
            expected(&[
                ("PROJECT", "new PROJECT"),
                ("a", "new a"),
                ("b", "new b"),
                ("c", "new c"),
                ("d", "new d"),
                ("dir/e", "new dir/e"),
            ]),
            "killed after {after} placed"
        );
    }
}

#[test]
fn a_write_killed_while_staging_is_undone_by_the_next_run() {
    for after in 1..=6 {
        let tmp = tempfile::tempdir().expect("tempdir");
        interrupted_write(tmp.path(), &DIE_AFTER_STAGED, after);
        assert!(journal::recover(tmp.path()).expect("recovers"));
        assert_eq!(
            tree(tmp.path()),
            expected(&[
                ("PROJECT", "old PROJECT"),
                ("a", "old a"),
                ("b", "old b"),
                ("c", "old c"),
                ("gone", "old gone"),
            ]),
            "killed after {after} staged"
        );
        assert!(!tmp.path().join("dir").exists(), "no directory is left");
    }
}

#[test]
fn project_is_placed_last() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // Killed after every file but one is placed: PROJECT still says the old version.
    interrupted_write(tmp.path(), &DIE_AFTER_PLACED, 5);
    assert_eq!(
        fs::read_to_string(tmp.path().join("PROJECT")).expect("PROJECT"),
        "old PROJECT"
    );
}

#[test]
fn the_next_write_finishes_an_interrupted_one_before_its_own() {
    let tmp = tempfile::tempdir().expect("tempdir");
    interrupted_write(tmp.path(), &DIE_AFTER_PLACED, 2);
    let mut set = ChangeSet::new(tmp.path());
    set.put("f", "new f".into());
    set.write().expect("writes");
    let tree = tree(tmp.path());
    assert_eq!(tree.get("d").map(String::as_str), Some("new d"), "{tree:?}");
    assert_eq!(tree.get("f").map(String::as_str), Some("new f"), "{tree:?}");
    assert_eq!(
        tree.len(),
        7,
        "nothing staged or set aside is left: {tree:?}"
    );
}

/// A journal is data on disk (a repository can carry one): it renames and removes only
/// kopgen's own staged names, and only below the project.
#[test]
fn a_journal_never_touches_files_outside_the_project_or_not_staged_by_kopgen() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    let (project, elsewhere) = (tmp.path(), outside.path());
    fs::write(elsewhere.join("victim"), "mine").expect("write");
    fs::write(elsewhere.join(".victim.1.2.kopgen-tmp"), "evil").expect("write");
    fs::write(project.join("keep"), "mine").expect("write");
    fs::write(project.join("evil"), "evil").expect("write");
    let journal = journal::Journal {
        state: journal::State::Committed,
        places: vec![
            journal::Placement {
                stage: elsewhere.join(".victim.1.2.kopgen-tmp"),
                dest: elsewhere.join("victim"),
                old: elsewhere.join(".victim.1.2.kopgen-del"),
            },
            journal::Placement {
                stage: project.join("evil"),
                dest: project.join("keep"),
                old: project.join(".keep.1.2.kopgen-del"),
            },
        ],
        deletes: vec![journal::Deletion {
            aside: elsewhere.join("victim"),
            dest: project.join("x"),
        }],
    };
    journal.record(project).expect("record");
    assert!(journal::recover(project).expect("recovers"));
    assert_eq!(
        fs::read_to_string(elsewhere.join("victim")).expect("victim"),
        "mine"
    );
    assert_eq!(
        fs::read_to_string(project.join("keep")).expect("keep"),
        "mine"
    );
    assert!(project.join("evil").exists());
    assert!(!project.join(journal::NAME).exists());
}

#[test]
fn an_unreadable_journal_is_named_and_left_for_the_user() {
    let tmp = tempfile::tempdir().expect("tempdir");
    fs::write(tmp.path().join(journal::NAME), "{not json").expect("write");
    let error = journal::recover(tmp.path())
        .expect_err("refused")
        .to_string();
    assert!(
        error.contains(".kopgen-journal") && error.contains("git status"),
        "{error}"
    );
    assert!(tmp.path().join(journal::NAME).exists());
}

#[test]
fn a_rename_failing_part_way_takes_back_the_ones_before_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for name in ["a", "b", "c"] {
        fs::write(tmp.path().join(name), format!("old {name}")).expect("write");
    }
    let mut set = ChangeSet::new(tmp.path());
    for name in ["a", "b", "c", "d"] {
        set.put(name, format!("new {name}"));
    }
    FAIL_PLACING.with(|n| n.set(3));
    let error = set.write().expect_err("the third rename fails");
    assert!(matches!(error, ChangeError::Write { .. }), "{error}");
    let mut names: Vec<String> = fs::read_dir(tmp.path())
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["a", "b", "c"],
        "nothing staged or set aside is left"
    );
    for name in ["a", "b", "c"] {
        let text = fs::read_to_string(tmp.path().join(name)).expect("read");
        assert_eq!(text, format!("old {name}"));
    }
    FAIL_PLACING.with(|n| n.set(0));
    set.write().expect("the next run succeeds");
    assert_eq!(
        fs::read_to_string(tmp.path().join("d")).expect("d"),
        "new d"
    );
}

#[test]
fn writes_everything_or_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A file where a directory is needed makes the second write fail.
    fs::write(tmp.path().join("blocker"), "x").expect("write");
    let mut set = ChangeSet::new(tmp.path());
    set.put("a/first.txt", "1".into());
    set.put("blocker/second.txt", "2".into());
    assert!(set.write().is_err());
    assert!(
        !tmp.path().join("a").exists(),
        "created directories are removed again"
    );
    let entries: Vec<_> = fs::read_dir(tmp.path()).expect("read_dir").collect();
    assert_eq!(entries.len(), 1, "only the blocker remains");
}

/// Runs that write at the same moment take turns: every one succeeds, the files are whole,
/// and nothing staged is left.
#[test]
fn concurrent_writes_take_turns() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for round in 0..20 {
        let barrier = std::sync::Barrier::new(4);
        std::thread::scope(|scope| {
            for writer in 0..4 {
                let (barrier, root) = (&barrier, tmp.path());
                scope.spawn(move || {
                    let mut set = ChangeSet::new(root);
                    for file in 0..40 {
                        set.put(
                            format!("d{}/f{file}.txt", file % 3),
                            format!("round {round} writer {writer} file {file}\n").repeat(200),
                        );
                    }
                    barrier.wait();
                    set.write().expect("every run writes");
                });
            }
        });
        for dir in 0..3 {
            for entry in fs::read_dir(tmp.path().join(format!("d{dir}"))).expect("dir") {
                let path = entry.expect("entry").path();
                let name = path
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                assert!(!name.ends_with(STAGE_SUFFIX), "{name} left behind");
                let text = fs::read_to_string(&path).expect("read");
                let first = text.lines().next().unwrap_or_default().to_owned();
                assert_eq!(text, format!("{first}\n").repeat(200), "{name} is torn");
            }
        }
    }
}

#[test]
fn files_are_deleted_with_the_directories_they_leave_empty() {
    let tmp = tempfile::tempdir().expect("tempdir");
    fs::create_dir_all(tmp.path().join("a/b")).expect("dirs");
    fs::write(tmp.path().join("a/b/gone.txt"), "x").expect("write");
    fs::write(tmp.path().join("a/kept.txt"), "y").expect("write");
    let mut set = ChangeSet::new(tmp.path());
    set.remove("a/b/gone.txt");
    set.put("a/new.txt", "z".into());
    assert!(!set.exists("a/b/gone.txt"));
    assert_eq!(set.read("a/b/gone.txt").expect("read"), None);
    let written: Vec<_> = set.write().expect("write").iter().map(|c| c.kind).collect();
    assert_eq!(written, [ChangeKind::Delete, ChangeKind::Create]);
    assert!(
        !tmp.path().join("a/b").exists(),
        "the emptied directory goes"
    );
    assert!(tmp.path().join("a/kept.txt").exists());
}

#[test]
fn a_failed_write_puts_deleted_files_back() {
    let tmp = tempfile::tempdir().expect("tempdir");
    fs::write(tmp.path().join("gone.txt"), "x").expect("write");
    fs::write(tmp.path().join("blocker"), "x").expect("write");
    let mut set = ChangeSet::new(tmp.path());
    set.remove("gone.txt");
    set.put("blocker/second.txt", "2".into());
    assert!(set.write().is_err());
    assert_eq!(
        fs::read_to_string(tmp.path().join("gone.txt"))
            .ok()
            .as_deref(),
        Some("x")
    );
    assert_eq!(
        fs::read_dir(tmp.path()).expect("dir").count(),
        2,
        "nothing left aside"
    );
}

#[test]
fn what_a_killed_run_set_aside_is_put_back() {
    let tmp = tempfile::tempdir().expect("tempdir");
    fs::write(tmp.path().join(".gone.txt.123.4.kopgen-del"), "x").expect("write");
    remove_stale_stages(tmp.path());
    assert_eq!(
        fs::read_to_string(tmp.path().join("gone.txt"))
            .ok()
            .as_deref(),
        Some("x")
    );
}

#[test]
fn unchanged_files_are_not_reported() {
    let tmp = tempfile::tempdir().expect("tempdir");
    fs::write(tmp.path().join("same.txt"), "same").expect("write");
    let mut set = ChangeSet::new(tmp.path());
    set.put("same.txt", "same".into());
    set.put("new.txt", "new".into());
    let written: Vec<_> = set
        .write()
        .expect("write")
        .into_iter()
        .map(|c| c.path.clone())
        .collect();
    assert_eq!(written, [PathBuf::from("new.txt")]);
    assert_eq!(set.read("new.txt").expect("read").as_deref(), Some("new"));
}

#[test]
fn the_longest_name_kopgen_writes_is_staged_and_replaced_and_a_longer_one_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let longest = "n".repeat(MAX_FILE_NAME);
    fs::write(tmp.path().join(&longest), "old").expect("write");
    let mut set = ChangeSet::new(tmp.path());
    set.put(&longest, "new".to_owned());
    set.write()
        .expect("the longest name fits, staged and set aside");
    assert_eq!(
        fs::read_to_string(tmp.path().join(&longest)).expect("read"),
        "new"
    );
    let mut set = ChangeSet::new(tmp.path());
    set.put("n".repeat(MAX_FILE_NAME + 1), "x".to_owned());
    set.put("other", "x".to_owned());
    let error = set.write().expect_err("too long");
    assert!(matches!(error, ChangeError::NameTooLong { .. }), "{error}");
    assert!(!tmp.path().join("other").exists(), "nothing was changed");
}
