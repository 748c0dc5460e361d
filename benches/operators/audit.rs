//! What the manager asked of the API server, read from its audit log: how many requests, by
//! verb and resource, and when.

use std::{collections::BTreeMap, fmt::Write as _, path::PathBuf};

use crate::MANAGER_USER;
use crate::control_plane::ControlPlane;

/// The manager's requests logged since the last look, read from where the last look ended (the
/// log holds every request of the run, and the API server's own keep coming).
pub struct AuditTail {
    path: PathBuf,
    offset: u64,
}

impl AuditTail {
    pub fn at_end(plane: &ControlPlane) -> Self {
        let path = plane.audit_log();
        let offset = std::fs::metadata(&path).map_or(0, |m| m.len());
        AuditTail { path, offset }
    }

    pub fn new_requests(&mut self) -> usize {
        use std::io::{Read, Seek, SeekFrom};
        let mut text = String::new();
        let read = std::fs::File::open(&self.path).and_then(|mut file| {
            file.seek(SeekFrom::Start(self.offset))?;
            file.read_to_string(&mut text)
        });
        if read.is_err() {
            return 0;
        }
        // Whole lines only; a line being written is read next time.
        let complete = text.rfind('\n').map_or(0, |end| end + 1);
        self.offset += complete as u64;
        let needle = manager_needle();
        text[..complete]
            .lines()
            .filter(|l| l.contains(&needle))
            .count()
    }
}

/// What marks an audit log line as the manager's request.
fn manager_needle() -> String {
    format!("\"impersonatedUser\":{{\"username\":\"{MANAGER_USER}\"")
}

/// Requests the manager's ServiceAccount sent, by the audit log.
pub fn requests(plane: &ControlPlane) -> usize {
    let needle = manager_needle();
    std::fs::read_to_string(plane.audit_log())
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&needle))
        .count()
}

/// The manager's requests after its first `skip`, by verb and resource, with their median
/// latency in the API server (request received to response complete; watches have none): where
/// a phase's time goes.
pub fn breakdown(plane: &ControlPlane, skip: usize) -> String {
    let needle = manager_needle();
    let log = std::fs::read_to_string(plane.audit_log()).unwrap_or_default();
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut spans = Vec::new();
    for line in log.lines().filter(|l| l.contains(&needle)).skip(skip) {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let object = &event["objectRef"];
        let text = |value: &serde_json::Value| value.as_str().unwrap_or_default().to_owned();
        let mut key = format!("{} {}", text(&event["verb"]), text(&object["resource"]));
        if let Some(sub) = object["subresource"].as_str() {
            key = format!("{key}/{sub}");
        }
        let span = (
            time_at(&event, "requestReceivedTimestamp"),
            time_at(&event, "stageTimestamp"),
        );
        let latency = match span {
            (Some(start), Some(end)) => (end - start).as_seconds_f64() * 1000.0,
            _ => f64::NAN,
        };
        let writes = matches!(text(&event["verb"]).as_str(), "create" | "update" | "patch")
            && text(&object["resource"]) != "events";
        if let (true, (Some(start), Some(end))) = (writes, span) {
            spans.push((start, end));
        }
        by.entry(key).or_default().push(latency);
    }
    let mut out = pace(&spans);
    for (key, mut latencies) in by {
        latencies.sort_by(f64::total_cmp);
        let median = latencies[latencies.len() / 2];
        let _ = writeln!(
            out,
            "  {key}: {} requests, median {median:.1} ms",
            latencies.len()
        );
    }
    out
}

/// The RFC 3339 time at `key` of a JSON record: an audit event's `requestReceivedTimestamp` or
/// `stageTimestamp`, a manager's log line's `timestamp`.
pub fn time_at(record: &serde_json::Value, key: &str) -> Option<time::OffsetDateTime> {
    let text = record[key].as_str()?;
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()
}

/// When the objects were created and when the manager wrote, from the first object's creation:
/// how much of the time until Ready is the creators', and how soon the manager started.
pub fn timeline(plane: &ControlPlane) -> String {
    let needle = manager_needle();
    let log = std::fs::read_to_string(plane.audit_log()).unwrap_or_default();
    let (mut created, mut written) = (Vec::new(), Vec::new());
    for line in log.lines() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let Some(at) = time_at(&event, "requestReceivedTimestamp") else {
            continue;
        };
        let (verb, resource) = (&event["verb"], &event["objectRef"]["resource"]);
        if line.contains(&needle) && (verb == "patch" || verb == "create" || verb == "update") {
            written.push(at);
        } else if verb == "create" && resource == "blogs" {
            created.push(at);
        }
    }
    let (Some(first), Some(last_created)) = (created.iter().min(), created.iter().max()) else {
        return String::new();
    };
    let (Some(first_write), Some(last_write)) = (written.iter().min(), written.iter().max()) else {
        return String::new();
    };
    format!(
        "  from the first object created: all created after {:.1} s, the manager's first write after {:.1} s, its last after {:.1} s\n",
        (*last_created - *first).as_seconds_f64(),
        (*first_write - *first).as_seconds_f64(),
        (*last_write - *first).as_seconds_f64(),
    )
}

/// Where the time of a manager that reconciles one object at a time goes, from the spans of its
/// writes (its reads are from its caches; events are sent in the background): in the API
/// server, or between one response and the next request (the manager's own work, the network,
/// waiting for a core).
fn pace(spans: &[(time::OffsetDateTime, time::OffsetDateTime)]) -> String {
    let mut spans = spans.to_vec();
    spans.sort();
    let in_server: f64 = spans.iter().map(|(s, e)| (*e - *s).as_seconds_f64()).sum();
    let mut gaps: Vec<f64> = spans
        .windows(2)
        .map(|w| (w[1].0 - w[0].1).as_seconds_f64())
        .filter(|gap| *gap >= 0.0)
        .collect();
    gaps.sort_by(f64::total_cmp);
    let Some(median) = gaps.get(gaps.len() / 2) else {
        return String::new();
    };
    format!(
        "  writes: {} requests, {in_server:.1} s in the API server, {:.1} s between them (median {:.1} ms)\n",
        spans.len(),
        gaps.iter().sum::<f64>(),
        median * 1000.0
    )
}
