//! The generated operator side by side with a Kubebuilder one, on a real control plane.
//!
//! `cargo bench --bench operators` builds both managers (kopgen's scaffold in release mode;
//! the Kubebuilder project of `benches/operators/build-go-operator.sh`), then for each and for
//! each object count (`KOPGEN_BENCH_OBJECTS`, default `1000,10000`) starts a fresh etcd and
//! kube-apiserver (`.ci/control-plane.sh` builds them), installs the operator's CRD, starts the
//! manager as a ServiceAccount, creates the objects at once and measures:
//! - the time until every object is Ready at its generation (followed with a watch: polling a
//!   list of 10,000 objects would take the cores the managers are measured on);
//! - the API requests the manager sent per object (from the API server's audit log);
//! - while the objects converge, how busy the machine was and the CPU the API server, etcd, the
//!   manager and the rest used (from `/proc`);
//! - the manager's peak and steady resident memory and CPU seconds (from `/proc`);
//! - the same after a restart of the manager (a relist of everything, nothing to change),
//!   settled once it has neither sent a request nor been busy on the CPU for 5 s.
//!
//! It prints a Markdown table, with the ratio of kopgen's figures to Kubebuilder's; with
//! `KOPGEN_BENCH_RUNS=N`, the median of N runs (the managers take turns, each first in every
//! other round). Both managers run with their defaults (one reconcile at a time, no leader
//! election); `KOPGEN_BENCH_CONCURRENCY=N` runs both with N reconciles at once. `KOPGEN_BENCH_ONLY=kopgen` or `=kubebuilder` runs one side.
//!
//! `cargo bench --bench operators -- sharded` runs the sharded mode instead (see `sharded.rs`):
//! kopgen's operator as one manager, with a warm standby, and over two and three shards
//! (`KOPGEN_BENCH_RUNS` there too).

#[path = "operators/audit.rs"]
mod audit;
mod common;
#[path = "../runtime/src/envtest.rs"]
mod control_plane;
#[path = "../tests/support/edits.rs"]
mod edits;
#[path = "../tests/support/ready.rs"]
mod ready;
#[path = "operators/sharded.rs"]
mod sharded;

use std::{
    fmt::Write as _,
    io::Write as _,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use audit::{AuditTail, breakdown, requests, timeline};
use common::{assets, build_kopgen_operator, clock_ticks, install, repo, run_ok, usage};
use control_plane::{ControlPlane, Options, free_port};
use ready::ReadyWatch;

pub(crate) const MANAGER_USER: &str = "system:serviceaccount:bench:manager";

struct Operator {
    name: &'static str,
    binary: PathBuf,
    crds: PathBuf,
    /// Flags beside the probe address.
    args: Vec<String>,
    /// How it is told how many objects to reconcile at once.
    concurrency: Setting,
}

enum Setting {
    Flag(&'static str),
    Env(&'static str),
}

#[derive(Default)]
struct Figures {
    ready_after: Duration,
    requests: usize,
    peak_rss_kib: u64,
    steady_rss_kib: u64,
    cpu: Duration,
    relist_after: Duration,
    relist_requests: usize,
    relist_cpu: Duration,
    relist_peak_rss_kib: u64,
}

fn main() {
    // `cargo bench` passes `--bench`, and after `--` the filter: `sharded` picks that mode.
    if std::env::args().skip(1).any(|arg| arg == "sharded") {
        sharded::bench();
        return;
    }
    let counts = object_counts("1000,10000");
    let assets = assets();
    let scratch = tempfile::tempdir().expect("tempdir");
    // `KOPGEN_BENCH_ONLY=kopgen` (or `kubebuilder`) runs one side, e.g. while tuning it.
    let only = std::env::var("KOPGEN_BENCH_ONLY")
        .unwrap_or_default()
        .to_lowercase();
    let mut operators = Vec::new();
    if !only.contains("kubebuilder") {
        operators.push(rust_operator(scratch.path()));
    }
    if !only.contains("kopgen") {
        operators.push(go_operator());
    }
    let runs = runs();
    let mut table = format!(
        "| operator | objects | {} |\n|{}\n",
        COLUMNS.map(|(name, _, _)| name).join(" | "),
        " --- |".repeat(COLUMNS.len() + 2)
    );
    for &count in &counts {
        let mut results = vec![Vec::new(); operators.len()];
        for round in 1..=runs {
            // Each goes first in every other round, so that a machine getting faster or slower
            // during the runs favours neither.
            let mut order: Vec<usize> = (0..operators.len()).collect();
            if round % 2 == 0 {
                order.reverse();
            }
            for i in order {
                let columns = run(&assets, &operators[i], count).columns(count);
                eprintln!(
                    "run {round} of {runs}:\n{}",
                    row(operators[i].name, count, &columns)
                );
                results[i].push(columns);
            }
        }
        let medians: Vec<[f64; 9]> = results.iter().map(|r| median(r)).collect();
        for (operator, columns) in operators.iter().zip(&medians) {
            table.push_str(&row(operator.name, count, columns));
        }
        if let [kopgen, kubebuilder] = &medians[..] {
            // Of the figures as shown: a ratio of two that round to zero means nothing.
            let ratios: Vec<String> = COLUMNS
                .iter()
                .zip(kopgen.iter().zip(kubebuilder))
                .map(|((_, _, decimals), (k, g))| {
                    let shown = |v: f64| format!("{v:.decimals$}").parse().unwrap_or(0.0);
                    match (shown(*k), shown(*g)) {
                        (k, g) if k > 0.0 && g > 0.0 => format!("{:.2}×", k / g),
                        _ => "–".into(),
                    }
                })
                .collect();
            let _ = writeln!(
                table,
                "| kopgen ÷ Kubebuilder | {count} | {} |",
                ratios.join(" | ")
            );
        }
        eprintln!("{table}");
    }
    if runs > 1 {
        let _ = writeln!(table, "\nMedians of {runs} runs.");
    }
    if let Ok(n) = std::env::var("KOPGEN_BENCH_CONCURRENCY") {
        let _ = writeln!(table, "\nBoth managers reconcile {n} objects at once.");
    }
    println!("{table}");
}

/// The object counts to run at: `KOPGEN_BENCH_OBJECTS` (comma-separated), else `default`.
fn object_counts(default: &str) -> Vec<usize> {
    std::env::var("KOPGEN_BENCH_OBJECTS")
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect()
}

/// The table's figures: name, unit and decimals.
const COLUMNS: [(&str, &str, usize); 9] = [
    ("all Ready after", " s", 1),
    ("requests / object", "", 2),
    ("peak RSS", " MiB", 1),
    ("steady RSS", " MiB", 1),
    ("CPU", " s", 1),
    ("relist: settled after", " s", 1),
    ("relist: requests / object", "", 2),
    ("relist: CPU", " s", 1),
    ("relist: peak RSS", " MiB", 1),
];

impl Figures {
    /// The figures in the table's order and units.
    fn columns(&self, count: usize) -> [f64; 9] {
        let mib = |kib: u64| kib as f64 / 1024.0;
        [
            self.ready_after.as_secs_f64(),
            self.requests as f64 / count as f64,
            mib(self.peak_rss_kib),
            mib(self.steady_rss_kib),
            self.cpu.as_secs_f64(),
            self.relist_after.as_secs_f64(),
            self.relist_requests as f64 / count as f64,
            self.relist_cpu.as_secs_f64(),
            mib(self.relist_peak_rss_kib),
        ]
    }
}

fn row(name: &str, count: usize, columns: &[f64; 9]) -> String {
    let cells: Vec<String> = COLUMNS
        .iter()
        .zip(columns)
        .map(|((_, unit, decimals), value)| format!("{value:.decimals$}{unit}"))
        .collect();
    format!("| {name} | {count} | {} |\n", cells.join(" | "))
}

/// `KOPGEN_BENCH_RUNS=3` runs each size three times, the managers (or modes) taking turns, and
/// reports the median of each figure: time to Ready varies by ±10% from run to run on 2 cores.
fn runs() -> usize {
    std::env::var("KOPGEN_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// Each figure's median over the runs (the upper one of an even count).
fn median<const N: usize>(runs: &[[f64; N]]) -> [f64; N] {
    std::array::from_fn(|i| {
        let mut values: Vec<f64> = runs.iter().map(|r| r[i]).collect();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    })
}

/// kopgen's scaffold: one namespaced kind, its manifests, a release build.
fn rust_operator(scratch: &Path) -> Operator {
    let (binary, crds) = build_kopgen_operator(scratch);
    Operator {
        name: "kopgen (kube-rs 5)",
        binary,
        crds,
        args: vec!["--metrics-bind-address=0".into()],
        concurrency: Setting::Flag("--max-concurrent-reconciles"),
    }
}

/// The Kubebuilder project (controller-runtime v0.25), built by its script.
fn go_operator() -> Operator {
    eprintln!("building the Kubebuilder operator");
    let out = run_ok(
        Command::new(repo().join("benches/operators/build-go-operator.sh"))
            .stderr(Stdio::inherit()),
    );
    let project = PathBuf::from(out.trim());
    Operator {
        name: "Kubebuilder (controller-runtime 0.25)",
        binary: project.join("bin/manager"),
        crds: project.join("config/crd/bases"),
        args: vec!["--metrics-bind-address=0".into()],
        // Read by benches/operators/blog_controller.go.
        concurrency: Setting::Env("BENCH_MAX_CONCURRENT_RECONCILES"),
    }
}

/// Starts a manager, under `KOPGEN_BENCH_WRAPPER` if set (e.g. `heaptrack -o /tmp/heap`, to see
/// where its memory goes; the figures are then the wrapper's).
fn start_manager(operator: &Operator, kubeconfig: &Path, log: &Path) -> Child {
    let port = free_port().expect("port");
    let wrapper = std::env::var("KOPGEN_BENCH_WRAPPER").unwrap_or_default();
    let mut words = wrapper.split_whitespace();
    let mut command = match words.next() {
        Some(program) => {
            let mut command = Command::new(program);
            command.args(words).arg(&operator.binary);
            command
        }
        None => Command::new(&operator.binary),
    };
    // `KOPGEN_BENCH_CONCURRENCY=N` runs both with N reconciles at once (default: their own, one).
    if let Ok(n) = std::env::var("KOPGEN_BENCH_CONCURRENCY") {
        match operator.concurrency {
            Setting::Flag(flag) => command.arg(format!("{flag}={n}")),
            Setting::Env(name) => command.env(name, n),
        };
    }
    command
        .args(&operator.args)
        .arg(format!("--health-probe-bind-address=127.0.0.1:{port}"))
        .env("KUBECONFIG", kubeconfig)
        .env("POD_NAMESPACE", "bench")
        .env("RUST_LOG", "warn")
        .stdout(std::fs::File::create(log).expect("log"))
        .stderr(
            std::fs::File::options()
                .append(true)
                .open(log)
                .expect("log"),
        )
        .spawn()
        .expect("the manager starts")
}

/// CPU time used so far: by the whole machine (busy and all, in clock ticks, from
/// `/proc/stat`) and by the API server, etcd and the manager. Two of these, before and after the
/// objects converge, show whose work the time to `Ready` is: on a machine that is busy all along,
/// a manager can only shorten it by what it saves of its own CPU or of the API server's.
struct CpuShares {
    busy: u64,
    total: u64,
    apiserver: Duration,
    etcd: Duration,
    manager: Duration,
}

impl CpuShares {
    fn now(plane: &ControlPlane, manager: u32) -> Self {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let ticks: Vec<u64> = (stat.lines().next().unwrap_or_default())
            .split_whitespace()
            .skip(1)
            .filter_map(|t| t.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal ...: idle and iowait are not busy.
        let total: u64 = ticks.iter().take(8).sum();
        let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
        let cpu_of = |name: &str| plane_pid(plane, name).map_or(Duration::ZERO, |p| usage(p).2);
        CpuShares {
            busy: total.saturating_sub(idle),
            total,
            apiserver: cpu_of("kube-apiserver"),
            etcd: cpu_of("etcd"),
            manager: usage(manager).2,
        }
    }

    fn since(&self, before: &CpuShares) -> String {
        let seconds = |ticks: u64| clock_ticks(ticks).as_secs_f64();
        let busy = seconds(self.busy.saturating_sub(before.busy));
        let total = seconds(self.total.saturating_sub(before.total));
        let (apiserver, etcd, manager) = (
            (self.apiserver.saturating_sub(before.apiserver)).as_secs_f64(),
            (self.etcd.saturating_sub(before.etcd)).as_secs_f64(),
            (self.manager.saturating_sub(before.manager)).as_secs_f64(),
        );
        format!(
            "  CPU: the machine busy {:.0}% of the time ({busy:.1} of {total:.1} s on all cores): API server {apiserver:.1} s, etcd {etcd:.1} s, manager {manager:.1} s, the rest (the object creators, the Ready watch) {:.1} s\n",
            100.0 * busy / total.max(f64::MIN_POSITIVE),
            (busy - apiserver - etcd - manager).max(0.0),
        )
    }
}

/// The process id of the control plane's `name` (`kube-apiserver`, `etcd`): the process of that
/// name whose command line holds the control plane's directory.
fn plane_pid(plane: &ControlPlane, name: &str) -> Option<u32> {
    let dir = plane.kubeconfig().parent()?.display().to_string();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(entry.path().join("comm")).ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            (comm.trim() == name && String::from_utf8_lossy(&cmdline).contains(&dir)).then_some(pid)
        })
}

/// Where a process's resident memory is: its heap and stacks (`RssAnon`) or mapped files, the
/// binary's code mostly (`RssFile`).
fn rss_parts(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .filter(|l| l.starts_with("RssAnon:") || l.starts_with("RssFile:"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(", ")
}

fn run(assets: &Path, operator: &Operator, count: usize) -> Figures {
    eprintln!("{}: {count} objects", operator.name);
    let options = Options {
        audit: true,
        ..Options::default()
    };
    let plane = ControlPlane::start_in(assets.to_path_buf(), options).expect("control plane");
    let dir = tempfile::tempdir().expect("tempdir");
    install(&plane, &operator.crds);
    let kubeconfig = plane.kubeconfig_as(MANAGER_USER).expect("kubeconfig");
    let mut manager = start_manager(operator, &kubeconfig, &dir.path().join("manager.log"));
    thread::sleep(Duration::from_secs(3));

    // The objects, in four files created in parallel.
    let mut files = Vec::new();
    for part in 0..4 {
        let path = dir.path().join(format!("blogs-{part}.yaml"));
        let mut file = std::fs::File::create(&path).expect("file");
        for i in (part..count).step_by(4) {
            let _ = writeln!(
                file,
                "---\napiVersion: apps.example.com/v1\nkind: Blog\nmetadata:\n  name: blog-{i}\n  namespace: bench\nspec:\n  foo: value-{i}"
            );
        }
        files.push(path);
    }
    let mut watch = ReadyWatch::start(&plane, "blogs.apps.example.com", "bench");
    let cpu_before = CpuShares::now(&plane, manager.id());
    let started = Instant::now();
    let creators: Vec<Child> = files
        .iter()
        .map(|file| {
            plane
                .kubectl()
                .args(["create", "-f"])
                .arg(file)
                .stdout(Stdio::null())
                .spawn()
                .expect("kubectl create")
        })
        .collect();
    for mut creator in creators {
        let _ = creator.wait();
    }
    let mut peak = 0;
    while watch.count(&plane) < count {
        peak = peak.max(usage(manager.id()).0);
        assert!(
            started.elapsed() < Duration::from_secs(1800),
            "{} did not converge: {}",
            operator.name,
            std::fs::read_to_string(dir.path().join("manager.log")).unwrap_or_default()
        );
        thread::sleep(Duration::from_millis(100));
    }
    let ready_after = started.elapsed();
    drop(watch);
    let cpu_shares = CpuShares::now(&plane, manager.id()).since(&cpu_before);
    let mut figures = Figures {
        ready_after,
        requests: requests(&plane),
        ..Figures::default()
    };
    eprintln!(
        "{}, {count} objects, until Ready:\n{}{cpu_shares}{}",
        operator.name,
        timeline(&plane),
        breakdown(&plane, 0)
    );
    thread::sleep(Duration::from_secs(10));
    let (hwm, rss, cpu) = usage(manager.id());
    eprintln!("  resident when steady: {}", rss_parts(manager.id()));
    figures.peak_rss_kib = hwm.max(peak);
    figures.steady_rss_kib = rss;
    figures.cpu = cpu;

    // A restart: the new manager lists everything and finds nothing to change.
    let _ = Command::new("kill")
        .args(["-TERM", &manager.id().to_string()])
        .status();
    let _ = manager.wait();
    let before = requests(&plane);
    let restarted = Instant::now();
    let mut manager = start_manager(operator, &kubeconfig, &dir.path().join("relist.log"));
    // Settled: for 5 s, no request from the manager and no more CPU than idle timers use (20 ms
    // per 100 ms), i.e. every object has been processed.
    let mut audit = AuditTail::at_end(&plane);
    let (mut cpu, mut last_change) = (Duration::ZERO, Instant::now());
    let mut relist_peak = 0;
    while last_change.elapsed() < Duration::from_secs(5) {
        thread::sleep(Duration::from_millis(100));
        let (hwm, _, now_cpu) = usage(manager.id());
        relist_peak = relist_peak.max(hwm);
        if audit.new_requests() > 0 || now_cpu.saturating_sub(cpu) > Duration::from_millis(20) {
            last_change = Instant::now();
        }
        cpu = now_cpu;
    }
    eprintln!(
        "{}, {count} objects, relist:\n{}",
        operator.name,
        breakdown(&plane, before)
    );
    figures.relist_after = last_change.duration_since(restarted);
    figures.relist_requests = requests(&plane) - before;
    let (hwm, _, cpu) = usage(manager.id());
    eprintln!("  resident after the relist: {}", rss_parts(manager.id()));
    figures.relist_cpu = cpu;
    figures.relist_peak_rss_kib = hwm.max(relist_peak);
    let _ = manager.kill();
    let _ = manager.wait();
    figures
}
