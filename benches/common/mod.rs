//! What the benches that run operators on a real control plane share: the control plane's
//! binaries, the kopgen operator they run, `kubectl`, and the figures read from `/proc`.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use crate::control_plane::ControlPlane;

/// Readies `plane` for a bench's manager: namespace `bench`, the ServiceAccount `bench:manager`
/// as cluster-admin, and the CRDs of `crds`, established.
pub fn install(plane: &ControlPlane, crds: &Path) {
    kubectl(plane, &["create", "namespace", "bench"]);
    kubectl(
        plane,
        &[
            "create",
            "clusterrolebinding",
            "bench-manager",
            "--clusterrole=cluster-admin",
            "--serviceaccount=bench:manager",
        ],
    );
    kubectl(
        plane,
        &["apply", "--server-side", "-f", &crds.display().to_string()],
    );
    kubectl(
        plane,
        &[
            "wait",
            "--for=condition=Established",
            "crd",
            "--all",
            "--timeout=60s",
        ],
    );
}

/// kopgen's scaffold (`bench`): one namespaced kind, Blog, its manifests, a release build.
/// Returns the manager's binary and the CRDs' directory.
pub fn build_kopgen_operator(scratch: &Path) -> (PathBuf, PathBuf) {
    build_edited_kopgen_operator(scratch, "bench", &[])
}

/// kopgen's scaffold as the project `name`, its Blog controller edited as a user would: each
/// `(scaffolded, written)` replaces the scaffolded text once.
pub fn build_edited_kopgen_operator(
    scratch: &Path,
    name: &str,
    edits: &[(&str, &str)],
) -> (PathBuf, PathBuf) {
    let kopgen = env!("CARGO_BIN_EXE_kopgen");
    run_ok(Command::new(kopgen).current_dir(scratch).args([
        "init",
        "--path",
        name,
        "--project-name",
        name,
        "--domain",
        "example.com",
    ]));
    let project = scratch.join(name);
    run_ok(Command::new(kopgen).current_dir(&project).args([
        "create",
        "api",
        "--group",
        "apps",
        "--version",
        "v1",
        "--kind",
        "Blog",
    ]));
    crate::edits::edit_blog_controller(&project, edits);
    run_ok(Command::new(kopgen).current_dir(&project).arg("manifests"));
    eprintln!("building the kopgen operator {name} (release)");
    run_ok(
        Command::new("cargo")
            .current_dir(&project)
            .args(["build", "--release"])
            .env("CARGO_TARGET_DIR", shared_target_dir())
            .env_remove("RUSTFLAGS"),
    );
    (
        shared_target_dir().join("release").join(name),
        project.join("config/crd/bases"),
    )
}

pub fn assets() -> PathBuf {
    if let Some(dir) = std::env::var_os("KUBEBUILDER_ASSETS") {
        return PathBuf::from(dir);
    }
    let out = Command::new(repo().join(".ci/control-plane.sh"))
        .stderr(Stdio::inherit())
        .output()
        .expect(".ci/control-plane.sh runs");
    assert!(out.status.success(), "the control plane could not be built");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn shared_target_dir() -> PathBuf {
    std::env::var_os("KOPGEN_TEST_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").expect("HOME")).join(".cache/kopgen/target")
        })
}

pub fn run_ok(command: &mut Command) -> String {
    let out = command.output().expect("the command runs");
    assert!(
        out.status.success(),
        "{command:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn kubectl(plane: &ControlPlane, args: &[&str]) -> String {
    run_ok(plane.kubectl().args(args))
}

/// (VmHWM, VmRSS) in KiB, and CPU time, of a running process.
pub fn usage(pid: u32) -> (u64, u64, Duration) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
    // After the command name: state is field 3, utime 14 and stime 15 (1-based, of the line).
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|i| fields.get(*i)?.parse::<u64>().ok())
        .sum();
    (kib("VmHWM:"), kib("VmRSS:"), clock_ticks(ticks))
}

/// The resident memory of `pid` that is its own (`RssAnon`, KiB): its RSS without the pages of
/// files it maps, most of them its executable's code, which every replica on a node shares
/// through the page cache and the kernel can drop and read again.
#[allow(
    dead_code,
    reason = "the shards bench reports it, the operators bench does not"
)]
pub fn anonymous_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    (status.lines())
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The resident pages of `pid`'s own executable file (KiB, from `/proc/<pid>/smaps`): the part
/// of its file-backed RSS that is its code and read-only data, as against shared libraries'.
#[allow(
    dead_code,
    reason = "the shards bench reports it, the operators bench does not"
)]
pub fn executable_kib(pid: u32) -> u64 {
    let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) else {
        return 0;
    };
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let exe = exe.to_string_lossy();
    let mut own = false;
    let mut kib = 0;
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        match fields.next() {
            // A mapping's header: its address range first, its path (if any) last.
            Some(first) if first.contains('-') && !first.ends_with(':') => {
                own = line.trim_end().ends_with(exe.as_ref());
            }
            Some("Rss:") if own => {
                kib += fields
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
            _ => {}
        }
    }
    kib
}

/// `ticks` of `/proc`'s CPU times (USER_HZ, 100 a second on Linux) as a duration.
pub fn clock_ticks(ticks: u64) -> Duration {
    Duration::from_millis(ticks * 10)
}
