//! The edit–build loop of a generated project beside a Kubebuilder one's, in one run.
//!
//! `cargo bench --bench edit_loop` scaffolds a project with one kind (`init`, `create api
//! --kind Blog`), builds it once (`cargo build`, `cargo test --no-run`: debug, incremental, in a
//! target directory of its own so nothing else is rebuilt in it), then for each round changes
//! one line of the user's controller (a string literal) and times `cargo build` and
//! `cargo test --no-run`. The Kubebuilder operator of `benches/operators/build-go-operator.sh`
//! gets the same change in its controller and is timed with `go build` and `go test -c` of the
//! controller package. `KOPGEN_BENCH_BASELINE=<kopgen binary>` adds a row for a project
//! scaffolded by another kopgen (an older one, to compare layouts); `KOPGEN_BENCH_ROUNDS`
//! (default 5) sets the rounds. Prints a Markdown table of medians.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rounds: usize = std::env::var("KOPGEN_BENCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    let root = bench_root().join("edit-loop");
    std::fs::create_dir_all(&root).expect("bench directory");
    let mut rows = vec![rust_side(
        "kopgen (this build)",
        Path::new(env!("CARGO_BIN_EXE_kopgen")),
        &root.join("current"),
        rounds,
    )];
    if let Some(baseline) = std::env::var_os("KOPGEN_BENCH_BASELINE") {
        rows.push(rust_side(
            "kopgen (baseline)",
            Path::new(&baseline),
            &root.join("baseline"),
            rounds,
        ));
    }
    rows.push(go_side(rounds));
    println!("| project | build after a one-line edit | tests after it | both |");
    println!("| --- | --- | --- | --- |");
    let go = rows.last().map(|r| r.build + r.test).unwrap_or_default();
    for row in &rows {
        let both = row.build + row.test;
        println!(
            "| {} | {:.2} s | {:.2} s | {:.2} s ({:.1}× go) |",
            row.name,
            row.build.as_secs_f64(),
            row.test.as_secs_f64(),
            both.as_secs_f64(),
            both.as_secs_f64() / go.as_secs_f64().max(f64::EPSILON),
        );
    }
}

struct Row {
    name: &'static str,
    build: Duration,
    test: Duration,
}

fn bench_root() -> PathBuf {
    std::env::var_os("KOPGEN_BENCH_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            home.unwrap_or_else(std::env::temp_dir)
                .join(".cache/kopgen/bench")
        })
}

fn run_ok(command: &mut Command) {
    let out = command.stderr(Stdio::piped()).output().expect("runs");
    assert!(
        out.status.success(),
        "{command:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn timed(command: &mut Command) -> Duration {
    let start = Instant::now();
    run_ok(command);
    start.elapsed()
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values.get(values.len() / 2).copied().unwrap_or_default()
}

/// Changes the line holding `needle` so that it holds `round` (a new string literal).
fn edit(file: &Path, needle: &str, round: usize) {
    let text = std::fs::read_to_string(file).expect("the controller");
    let edited: String = text
        .lines()
        .map(|line| match line.find(needle) {
            Some(at) => {
                let end = at + needle.len();
                let rest = line[end..].trim_start_matches(|c: char| c.is_ascii_digit());
                format!("{}{round}{rest}\n", &line[..end])
            }
            None => format!("{line}\n"),
        })
        .collect();
    assert_ne!(edited, text, "{needle} not found in {}", file.display());
    std::fs::write(file, edited).expect("write the controller");
}

fn rust_side(name: &'static str, kopgen: &Path, dir: &Path, rounds: usize) -> Row {
    eprintln!("{name}: scaffolding and building once");
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("scratch");
    run_ok(Command::new(kopgen).current_dir(dir).args([
        "init",
        "--path",
        "editloop",
        "--project-name",
        "editloop",
        "--domain",
        "example.com",
    ]));
    let project = dir.join("editloop");
    let blog = ["--group", "apps", "--version", "v1", "--kind", "Blog"];
    run_ok(
        Command::new(kopgen)
            .current_dir(&project)
            .args(["create", "api"])
            .args(blog),
    );
    let cargo = |args: &[&str]| {
        let mut command = Command::new("cargo");
        command
            .current_dir(&project)
            .args(args)
            .env("CARGO_TARGET_DIR", dir.join("target"))
            .env_remove("CARGO_INCREMENTAL")
            .env_remove("RUSTFLAGS");
        command
    };
    run_ok(&mut cargo(&["build"]));
    run_ok(&mut cargo(&["test", "--no-run"]));
    let controller = project.join("src/controllers/apps/blog_controller.rs");
    let (mut build, mut test) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        edit(&controller, "data.insert(\"foo", round);
        build.push(timed(&mut cargo(&["build"])));
        test.push(timed(&mut cargo(&["test", "--no-run"])));
        eprintln!(
            "{name}: round {round}: {:?} {:?}",
            build[round], test[round]
        );
    }
    Row {
        name,
        build: median(build),
        test: median(test),
    }
}

fn go_side(rounds: usize) -> Row {
    eprintln!("Kubebuilder: building the operator");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(repo.join("benches/operators/build-go-operator.sh"))
        .stderr(Stdio::inherit())
        .output()
        .expect("the build script runs");
    assert!(out.status.success(), "build-go-operator.sh failed");
    let project = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let go = |args: &[&str]| {
        let mut command = Command::new("go");
        command
            .current_dir(&project)
            .args(args)
            .env("GOWORK", "off");
        command
    };
    let test_binary = project.join("bin/controller.test");
    let test_args = [
        "test",
        "-c",
        "-o",
        "bin/controller.test",
        "./internal/controller",
    ];
    run_ok(&mut go(&test_args));
    let controller = project.join("internal/controller/blog_controller.go");
    let (mut build, mut test) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        edit(&controller, "data[\"foo", round);
        build.push(timed(&mut go(&[
            "build",
            "-o",
            "bin/manager",
            "cmd/main.go",
        ])));
        test.push(timed(&mut go(&test_args)));
        eprintln!(
            "Kubebuilder: round {round}: {:?} {:?}",
            build[round], test[round]
        );
    }
    let _ = std::fs::remove_file(test_binary);
    Row {
        name: "Kubebuilder (go build, go test -c)",
        build: median(build),
        test: median(test),
    }
}
