//! Resource bounds of `kopgen manifests` on hostile input: peak memory stays under a bound
//! proportional to the input (deep nesting once grew with its square), and one run reads a
//! bounded total. A test, not a benchmark: these are limits.

mod support;

use std::process::Command;

use support::Session;

/// Runs `kopgen args` in `dir` and returns (exit code, stderr, peak resident memory in bytes).
/// The child is reaped with `wait4`, which gives its own peak, not `wait`.
#[allow(clippy::zombie_processes)]
fn peak_memory(dir: &std::path::Path, args: &[&str]) -> (i32, String, u64) {
    let child = Command::new(env!("CARGO_BIN_EXE_kopgen"))
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kopgen starts");
    let pid = i32::try_from(child.id()).expect("pid");
    let stderr = std::io::read_to_string(child.stderr.expect("stderr")).unwrap_or_default();
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is valid, and `wait4` writes only into the two values given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    // Linux reports `ru_maxrss` in KiB.
    (
        code,
        stderr,
        u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024,
    )
}

const BASE: u64 = 96 << 20;

#[test]
fn peak_memory_grows_linearly_with_the_input() {
    let session = Session::new();
    // Many files of plain structs.
    let mut lib = String::new();
    let mut bytes = 0;
    for i in 0..200 {
        lib.push_str(&format!("pub mod f{i};\n"));
        let text: String = (0..400)
            .map(|j| format!("pub struct S{j} {{ pub a: i32, pub b: Vec<String> }}\n"))
            .collect();
        bytes += text.len() as u64;
        session.write(&format!("wide/src/f{i}.rs"), &text);
    }
    session.write("wide/src/lib.rs", &lib);
    let (code, stderr, peak) = peak_memory(
        session.path(),
        &[
            "manifests",
            "--derive",
            "static",
            "--paths",
            "wide/src",
            "--stdout",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("no #[derive(CustomResource)]"), "{stderr}");
    assert!(
        peak < BASE + 200 * bytes,
        "{peak} bytes for {bytes} bytes of input"
    );

    // Deeply nested modules: each level's path once held the levels above it.
    let depth = 20_000;
    let nested = format!("{}{}", "mod m {".repeat(depth), "}".repeat(depth));
    session.write("nest/src/lib.rs", &nested);
    let (code, stderr, peak) = peak_memory(
        session.path(),
        &[
            "manifests",
            "--derive",
            "static",
            "--paths",
            "nest/src",
            "--stdout",
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("src/lib.rs:1:")
            && stderr.contains("modules nest more than 64 levels deep"),
        "{stderr}"
    );
    // The stack the parser needs is proportional to the nesting (debug builds' frames are large).
    let per_byte: u64 = if cfg!(debug_assertions) {
        8 << 10
    } else {
        2 << 10
    };
    let input = nested.len() as u64;
    assert!(
        peak < BASE + per_byte * input,
        "{peak} bytes for {input} bytes of nesting"
    );
}

#[test]
fn one_run_reads_a_bounded_total() {
    let session = Session::new();
    let chunk = "// padding\n".repeat((5 << 20) / 11);
    for i in 0..6 {
        session.write(&format!("src/f{i}.rs"), &chunk);
    }
    let stderr = support::fails_cleanly_in(
        session.path(),
        &["manifests", "--paths", "src", "--output-dir", "out"],
    );
    assert!(
        stderr.contains("over kopgen's limit of 25165824 bytes for one run"),
        "{stderr}"
    );
}
