//! A small harness that reads like a user's session: make a directory, run `kopgen` in it,
//! look at what it printed and what it wrote.
#![allow(dead_code)]

pub mod blog;
pub mod corpus;
pub mod dashboards;
pub mod edits;
pub mod ready;
pub mod scan;
pub mod webhook_tls;

use std::{
    collections::BTreeMap,
    io::{Read, Write},
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Command, Output},
    sync::Mutex,
    thread,
    time::{Duration, Instant},
};

/// A fixed clock for copyright years, so snapshots do not change on New Year's Day.
pub const SOURCE_DATE_EPOCH: &str = "1796083200"; // 2026-12-01

pub struct Session {
    dir: tempfile::TempDir,
}

pub struct Run {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Session {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn write(&self, rel: &str, contents: &str) {
        let path = self.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, contents).expect("write");
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    pub fn read_bytes(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// Runs `kopgen args...` with the session directory as working directory.
    pub fn kopgen(&self, args: &[&str]) -> Run {
        run_kopgen(self.path(), args)
    }

    /// Runs kopgen and asserts it succeeded.
    pub fn ok(&self, args: &[&str]) -> Run {
        let run = self.kopgen(args);
        assert_eq!(
            run.status, 0,
            "kopgen {args:?} failed:\n{}\n{}",
            run.stdout, run.stderr
        );
        run
    }

    /// Runs kopgen, asserts it failed without touching the tree, and returns its stderr.
    pub fn fails_cleanly(&self, args: &[&str]) -> String {
        fails_cleanly_in(self.path(), args)
    }

    /// Scaffolds a project named `demo` in directory `demo`, as a user would.
    pub fn init_demo(&self, extra: &[&str]) -> PathBuf {
        self.init_project("demo", extra)
    }

    /// `kopgen init` of a project named `name` (also its directory and package name).
    pub fn init_project(&self, name: &str, extra: &[&str]) -> PathBuf {
        let mut args = vec![
            "init",
            "--path",
            name,
            "--project-name",
            name,
            "--domain",
            "example.com",
        ];
        args.extend_from_slice(extra);
        self.ok(&args);
        self.join(name)
    }
}

/// The kind most tests scaffold.
pub const BLOG: &[&str] = &["--group", "apps", "--version", "v1alpha1", "--kind", "Blog"];

/// Runs `kopgen create api <args>` in `project` and asserts that it succeeded.
pub fn create_api_ok(project: &Path, args: &[&str]) -> Run {
    let mut all = vec!["create", "api"];
    all.extend_from_slice(args);
    let run = run_kopgen(project, &all);
    assert_eq!(
        run.status, 0,
        "create api {args:?} failed:\n{}\n{}",
        run.stdout, run.stderr
    );
    run
}

pub fn run_kopgen(cwd: &Path, args: &[&str]) -> Run {
    let output: Output = Command::new(env!("CARGO_BIN_EXE_kopgen"))
        .args(args)
        .current_dir(cwd)
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
        .output()
        .expect("kopgen runs");
    Run {
        status: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs `kopgen args...` in `dir`, asserts it failed, did not panic and left the tree below
/// `dir` byte-identical, and returns its stderr.
pub fn fails_cleanly_in(dir: &Path, args: &[&str]) -> String {
    let before = tree(dir);
    let run = run_kopgen(dir, args);
    assert_ne!(
        run.status, 0,
        "kopgen {args:?} should have failed:\n{}",
        run.stdout
    );
    assert!(
        !run.stderr.contains("panicked"),
        "kopgen panicked: {}",
        run.stderr
    );
    assert!(
        tree(dir) == before,
        "kopgen {args:?} changed the tree although it failed"
    );
    run.stderr
}

/// A directory's files with their bytes, and its directories (as `None`), by relative path.
pub type Tree = BTreeMap<String, Option<Vec<u8>>>;

/// Every file below `root` with its bytes, and every directory (as `None`), by relative path.
pub fn tree(root: &Path) -> Tree {
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        // Links are recorded as links (never followed: a link may loop), with their target.
        match entry.file_type() {
            Ok(t) if t.is_symlink() => {
                let target = std::fs::read_link(&path).unwrap_or_default();
                out.insert(format!("{rel} -> {}", target.display()), Some(Vec::new()));
            }
            Ok(t) if t.is_dir() => {
                out.insert(format!("{rel}/"), None);
                walk(root, &path, out);
            }
            _ => {
                out.insert(rel, std::fs::read(&path).ok());
            }
        }
    }
}

/// Relative paths of the files below `root`, one per line, sorted.
pub fn file_list(root: &Path) -> String {
    tree(root)
        .into_iter()
        .filter(|(path, contents)| contents.is_some() && !path.starts_with("target/"))
        .map(|(path, _)| path)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where generated projects build: one cargo target directory shared by every generated
/// project and every test run, so kube and k8s-openapi compile once per machine.
pub fn shared_target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("KOPGEN_TEST_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    home.join(".cache/kopgen/target")
}

/// Runs a generated project's `cargo test` with the control-plane binaries of `assets`, and
/// asserts that everything passed and that `test`, a control-plane test of the project's own,
/// ran (a test without binaries prints a skip notice, past libtest's capture).
pub fn project_tests_ok(project: &Path, assets: &Path, test: &str) {
    own_version(project);
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .arg("test")
        .current_dir(project)
        .env("KUBEBUILDER_ASSETS", assets)
        .env("CARGO_TARGET_DIR", shared_target_dir())
        .env("CARGO_INCREMENTAL", "0")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("test {test} ... ok")), "{stdout}");
    assert!(!stderr.contains("skipped"), "a test did not run:\n{stderr}");
}

/// Runs `cargo args...` inside a generated project with the shared target directory.
pub fn cargo(project: &Path, args: &[&str]) -> Output {
    own_version(project);
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        .current_dir(project)
        .env("CARGO_TARGET_DIR", shared_target_dir())
        // Each project is built once and thrown away: incremental state (gigabytes over a few
        // runs, kept per project) would never be reused.
        .env("CARGO_INCREMENTAL", "0")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs")
}

/// Asserts `cargo args...` succeeds in `project`, printing its output otherwise.
pub fn cargo_ok(project: &Path, args: &[&str]) {
    let output = cargo(project, args);
    assert!(
        output.status.success(),
        "cargo {args:?} failed in {}:\n{}\n{}",
        project.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Gives the project's crate a version of its own (`0.1.0-t<build key>`, see [`build_key`]).
/// Cargo names a root crate's artifacts and freshness records by name and version, not by
/// path, so two projects named `demo` built into the shared target directory share them: the
/// second build can be judged fresh (its files are older than the first build) and leave the
/// first project's code in place — a manager without `--finalizer` was run for one with it.
fn own_version(project: &Path) {
    let manifest = project.join("Cargo.toml");
    let Ok(text) = std::fs::read_to_string(&manifest) else {
        return;
    };
    let tagged = format!("\nversion = \"0.1.0-t{:016x}\"\n", build_key(project));
    if text.contains(&tagged) {
        return;
    }
    let edited = text.replacen("\nversion = \"0.1.0\"\n", &tagged, 1);
    std::fs::write(&manifest, edited).expect("write Cargo.toml");
}

/// Different for every project built in one run, and the same for the same project of the
/// same test in the next run: its artifacts then replace the last run's instead of piling up
/// in the shared target directory (a key of the project's temporary path grew it by hundreds
/// of megabytes a run). A rerun's files are newer than the last run's build, so it rebuilds.
fn build_key(project: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    static PROJECTS: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    // The test binary without cargo's hash, the test (libtest names its thread after it), and
    // the project's directory name.
    let exe = std::env::current_exe().unwrap_or_default();
    let stem = exe.file_stem().unwrap_or_default().to_string_lossy();
    let binary = stem
        .rsplit_once('-')
        .map_or(&*stem, |(name, _)| name)
        .to_owned();
    let test = thread::current().name().unwrap_or("main").to_owned();
    let name = project.file_name().unwrap_or_default().to_string_lossy();
    let base = format!("{binary}/{test}/{name}");
    let mut projects = PROJECTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let same_base = projects.iter().filter(|(b, _)| *b == base);
    let nth = match same_base.clone().position(|(_, path)| path == project) {
        Some(nth) => nth,
        None => {
            let nth = same_base.count();
            projects.push((base.clone(), project.to_owned()));
            nth
        }
    };
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (base, nth).hash(&mut hasher);
    hasher.finish()
}

/// Builds a generated project's manager and copies it out of the shared target directory,
/// where every project of the same package name builds to the same path: tests that run side
/// by side would otherwise start each other's binaries. Builds in this process take turns, so
/// the copy is of this build (each project has its own version, see [`own_version`]).
pub fn build_manager(project: &Path, package: &str) -> PathBuf {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    cargo_ok(project, &["build"]);
    let built = shared_target_dir().join("debug").join(package);
    let own = project.with_file_name(format!("{package}-manager"));
    std::fs::copy(&built, &own)
        .unwrap_or_else(|e| panic!("copy {} to {}: {e}", built.display(), own.display()));
    own
}

/// The tests a generated project declares (`#[test]`, `#[tokio::test]`, and the integration
/// tests `converges_and_cleans_up!(name, ...)` declares), by function name, each with whether
/// it is `#[ignore]`d; a name declared twice (in two controllers) is listed twice.
pub fn declared_tests(project: &Path) -> Vec<(String, bool)> {
    let mut tests = Vec::new();
    for (path, contents) in tree(project) {
        let Some(bytes) = contents.filter(|_| {
            // The runtime's own tests run in kopgen's `cargo test`, not the project's.
            path.ends_with(".rs") && !path.starts_with("target/") && !path.starts_with("vendor/")
        }) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let (mut pending, mut ignored, mut invocation) = (false, false, false);
        for line in text.lines().map(str::trim) {
            let ident = |text: &str| -> String {
                text.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect()
            };
            if invocation {
                // rustfmt put a long invocation's arguments on lines of their own.
                tests.push((ident(line), true));
                invocation = false;
            } else if line == "#[test]" || line == "#[tokio::test]" {
                (pending, ignored) = (true, false);
            } else if pending && line.starts_with("#[ignore") {
                ignored = true;
            } else if pending && let Some(at) = line.find("fn ") {
                let name: String = line[at + 3..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                // `fn $test()` in a macro body: its invocations are the tests.
                if !name.is_empty() {
                    tests.push((name, ignored));
                }
                pending = false;
            } else if let Some(rest) = line.strip_prefix("converges_and_cleans_up!(") {
                match ident(rest) {
                    name if name.is_empty() => invocation = true,
                    name => tests.push((name, true)),
                }
            }
        }
    }
    tests.sort();
    tests
}

/// The (name, outcome) of each test libtest reported in `output` (`test a::b ... ok` gives
/// `("b", "ok")`), sorted.
pub fn reported_tests(output: &str) -> Vec<(String, String)> {
    let mut tests: Vec<(String, String)> = output
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("test ")?;
            let (path, outcome) = rest.split_once(" ... ")?;
            let name = path.rsplit("::").next()?.to_owned();
            let outcome = outcome.split([' ', ',']).next()?.to_owned();
            Some((name, outcome))
        })
        .collect();
    tests.sort();
    tests
}

/// Whether an external tool is on PATH; tests that need it print a notice and skip otherwise.
pub fn have(tool: &str) -> bool {
    Command::new(tool).arg("--help").output().is_ok()
}

/// Whether `tool` can be used; when it cannot, the test skips with a notice, or fails where
/// `KOPGEN_REQUIRE_TOOLS=1` (as `.ci/run` sets) so that CI cannot pass by skipping.
pub fn need(tool: &str, test: &str, how: &str) -> bool {
    have(tool) || skip(test, &format!("`{tool}` is not installed ({how})"))
}

/// Skips the calling test: prints the notice where `cargo test` shows it, and returns false;
/// panics instead where `KOPGEN_REQUIRE_TOOLS=1`.
pub fn skip(test: &str, why: &str) -> bool {
    if std::env::var("KOPGEN_REQUIRE_TOOLS").is_ok_and(|v| v == "1") {
        panic!("{test}: {why}, and KOPGEN_REQUIRE_TOOLS=1 forbids skipping");
    }
    control_plane::skip_notice(test, why);
    false
}

#[path = "../../runtime/src/envtest.rs"]
pub mod control_plane;

/// kubectl `args` against `plane`, which must succeed: its standard output.
pub fn kubectl_ok(plane: &control_plane::ControlPlane, args: &[&str]) -> String {
    let out = plane.kubectl().args(args).output().expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Where `.ci/control-plane.sh` puts the control-plane binaries, unless `KUBEBUILDER_ASSETS`
/// names another directory.
pub fn control_plane_assets() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("KUBEBUILDER_ASSETS").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let root = std::env::var_os("KOPGEN_ASSETS_ROOT")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/kopgen/assets"))
        })?;
    let mut built: Vec<PathBuf> = std::fs::read_dir(root)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|dir| dir.join(".stamp").is_file())
        .collect();
    built.sort();
    built.pop()
}

/// A running control plane for `test`, or `None` (after the notice) where the binaries are
/// missing: build them with `.ci/control-plane.sh`.
pub fn control_plane(
    test: &str,
    options: control_plane::Options,
) -> Option<control_plane::ControlPlane> {
    let Some(assets) = control_plane_assets() else {
        skip(
            test,
            "no control-plane binaries (run .ci/control-plane.sh, or set KUBEBUILDER_ASSETS)",
        );
        return None;
    };
    match control_plane::ControlPlane::start_in(assets, options) {
        Ok(plane) => Some(plane),
        Err(why) => {
            // Binaries that exist but do not start are a failure, not a skip.
            panic!("{test}: the control plane did not start: {why}")
        }
    }
}

/// How long anything a test waits for on a control plane may take before the test fails.
pub const CONVERGE: std::time::Duration = std::time::Duration::from_secs(60);

/// `GET http://127.0.0.1:<port><path>`: the status code and body, or `None` if nothing answers.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    http_get_at("127.0.0.1", port, path)
}

/// `GET http://<host>:<port><path>` (`host` an address: `127.0.0.1`, `::1`).
pub fn http_get_at(host: &str, port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect((host, port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let code = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    Some((code, body))
}

/// Polls `check` until it returns `Some`, or fails the test with `what` after `CONVERGE`.
pub fn eventually<T>(what: &str, context: &dyn Fn() -> String, check: impl Fn() -> Option<T>) -> T {
    eventually_within(CONVERGE, what, context, check)
}

/// [`eventually`], failing after `limit`.
pub fn eventually_within<T>(
    limit: Duration,
    what: &str,
    context: &dyn Fn() -> String,
    check: impl Fn() -> Option<T>,
) -> T {
    let deadline = Instant::now() + limit;
    loop {
        let checking = Instant::now();
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {limit:?}\n{}",
            context()
        );
        // A check that lists thousands of objects costs the API server and kubectl the cores
        // the operator under test needs: it waits twice as long as it took, taking at most a
        // third of the time.
        thread::sleep(Duration::from_millis(200).max(checking.elapsed() * 2));
    }
}
