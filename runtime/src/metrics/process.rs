//! The process metrics Prometheus' Go client serves (`process_*`), read from `/proc` at each
//! scrape: Kubebuilder's dashboards chart CPU and resident memory from them. Elsewhere than
//! Linux nothing is served.

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{MetricType, counter::ConstCounter, gauge::ConstGauge},
};

/// Clock ticks per second in `/proc/<pid>/stat`: Linux fixes `USER_HZ` at 100 for userspace.
const TICKS: f64 = 100.0;

#[derive(Debug, Default)]
pub(super) struct Process;

/// What `/proc` says of this process.
struct Sample {
    cpu_seconds: f64,
    resident_bytes: f64,
    virtual_bytes: f64,
    start_seconds: f64,
    open_fds: f64,
    max_fds: f64,
}

fn sample() -> Option<Sample> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let field = |n: usize| -> Option<f64> { fields.get(n - 3)?.parse().ok() };
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kilobytes = |key: &str| -> Option<f64> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        Some(line.split_whitespace().nth(1)?.parse::<f64>().ok()? * 1024.0)
    };
    let boot = std::fs::read_to_string("/proc/stat").ok()?;
    let btime: f64 = boot
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let max_fds = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0);
    Some(Sample {
        cpu_seconds: (field(14)? + field(15)?) / TICKS,
        resident_bytes: kilobytes("VmRSS:")?,
        virtual_bytes: kilobytes("VmSize:")?,
        start_seconds: btime + field(22)? / TICKS,
        open_fds: std::fs::read_dir("/proc/self/fd").ok()?.count() as f64,
        max_fds,
    })
}

impl Collector for Process {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(sample) = sample() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(sample.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            None,
            cpu.metric_type(),
        )?)?;
        for (name, help, value) in [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                sample.resident_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                sample.virtual_bytes,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                sample.start_seconds,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                sample.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                sample.max_fds,
            ),
        ] {
            ConstGauge::new(value).encode(encoder.encode_descriptor(
                name,
                help,
                None,
                MetricType::Gauge,
            )?)?;
        }
        Ok(())
    }
}
