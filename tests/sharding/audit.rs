//! What the API server's audit log says the replicas did: their writes, who held each
//! bucket when (the owners record's versions), and what their lists and watches asked for.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::hash::BUCKETS;
use crate::support::control_plane::ControlPlane;

/// How many whole lines the audit log has now.
pub(crate) fn audit_lines(plane: &ControlPlane) -> usize {
    let log = std::fs::read(plane.audit_log()).expect("the audit log");
    log.iter().filter(|byte| **byte == b'\n').count()
}

/// The events of audit lines `lines` (all: `0..usize::MAX`), each line one JSON event; a line
/// still being written does not parse and is left out.
fn events(plane: &ControlPlane, lines: std::ops::Range<usize>) -> Vec<Value> {
    let log = std::fs::read(plane.audit_log()).expect("the audit log");
    let log = String::from_utf8_lossy(&log);
    let lines = log.lines().skip(lines.start).take(lines.len());
    lines
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// A write of a Blog or its ConfigMaps by a replica that the API server accepted.
pub(crate) struct Write {
    /// The replica.
    pub(crate) user: String,
    /// The Blog written, or whose ConfigMap was.
    blog: String,
    /// What was written: `blogs/<name>` or `configmaps/<name>`.
    object: String,
    /// When the API server received it (RFC 3339, microseconds: ordered as text).
    received: String,
}

impl Write {
    /// When the API server received it.
    pub(crate) fn received(&self) -> jiff::Timestamp {
        self.received.parse().expect("an RFC 3339 time")
    }
}

/// The writes of Blogs and their ConfigMaps by replicas in audit lines `from..to`, in order.
pub(crate) fn replica_writes(plane: &ControlPlane, from: usize, to: usize) -> Vec<Write> {
    (events(plane, from..to).into_iter())
        .filter_map(|event| {
            let user = event["impersonatedUser"]["username"].as_str()?;
            let resource = event["objectRef"]["resource"].as_str().unwrap_or("");
            let name = event["objectRef"]["name"].as_str().unwrap_or("");
            let write = accepted(&event, &["create", "update", "patch", "delete"]);
            let ours = ["blogs", "configmaps"].contains(&resource) && name.starts_with("blog-");
            (write && ours).then(|| Write {
                user: user.to_owned(),
                blog: name.strip_suffix("-copy").unwrap_or(name).to_owned(),
                object: format!("{resource}/{name}"),
                received: event["requestReceivedTimestamp"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            })
        })
        .collect()
}

/// Whether `event` is a request with one of `verbs` that the API server accepted.
fn accepted(event: &Value, verbs: &[&str]) -> bool {
    let verb = event["verb"].as_str().unwrap_or_default();
    let code = event["responseStatus"]["code"].as_u64();
    verbs.contains(&verb) && code.is_some_and(|c| c < 300)
}

/// Per Blog, the replicas that wrote it or its ConfigMaps, in order.
pub(crate) fn writers<'a>(
    writes: impl IntoIterator<Item = &'a Write>,
) -> BTreeMap<String, Vec<String>> {
    let mut writers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for write in writes {
        let blog = writers.entry(write.blog.clone()).or_default();
        blog.push(write.user.clone());
    }
    writers
}

/// Whether a replica's watch of `resource` asked for `parameter` (as the audit log writes it).
pub(crate) fn watched(plane: &ControlPlane, resource: &str, parameter: &str) -> bool {
    (events(plane, 0..usize::MAX).into_iter())
        .filter(|event| event["impersonatedUser"]["username"].is_string())
        .filter(|event| event["verb"] == "watch" && event["objectRef"]["resource"] == resource)
        .any(|event| {
            let uri = event["requestURI"].as_str().unwrap_or_default();
            uri.contains(parameter)
        })
}

/// The buckets of each list of `resource` whose URI has `part` that `user` asked for in audit
/// lines `lines`: a list, or a watch that starts with one (`sendInitialEvents`), by its
/// `shardSelector` ranges or the buckets its label selector does not leave out.
pub(crate) fn listed(
    plane: &ControlPlane,
    lines: std::ops::Range<usize>,
    user: &str,
    (resource, part): (&str, &str),
) -> Vec<BTreeSet<usize>> {
    let mut requests = BTreeMap::new();
    for event in events(plane, lines) {
        let uri = event["requestURI"].as_str().unwrap_or_default();
        let lists = event["verb"] == "list"
            || (event["verb"] == "watch" && uri.contains("sendInitialEvents=true"));
        if lists
            && uri.contains(part)
            && event["impersonatedUser"]["username"] == user
            && event["objectRef"]["resource"] == resource
        {
            let id = event["auditID"].as_str().unwrap_or_default().to_owned();
            requests.insert(id, buckets_asked(uri));
        }
    }
    requests.into_values().collect()
}

/// The buckets a list's URI asks for: its `shardSelector` ranges, or those its label selector
/// does not leave out (`kopgen.io/shard notin (…)`), or all.
fn buckets_asked(uri: &str) -> BTreeSet<usize> {
    let query = uri.split_once('?').map_or("", |(_, query)| query);
    let mut buckets: BTreeSet<usize> = (0..BUCKETS).collect();
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        if name == "shardSelector" {
            let bounds: Vec<u128> = (value.split('\''))
                .filter_map(|part| u128::from_str_radix(part.strip_prefix("0x")?, 16).ok())
                .collect();
            buckets = (bounds.chunks(2))
                .flat_map(|range| bucket(range[0])..bucket(range[range.len() - 1]))
                .collect();
        }
        if name == "labelSelector"
            && let Some((_, notin)) = value.split_once("kopgen.io/shard notin (")
        {
            let others = notin.split(')').next().unwrap_or_default().split(',');
            for other in others.filter_map(|b| b.trim().parse::<usize>().ok()) {
                buckets.remove(&other);
            }
        }
    }
    buckets
}

/// The bucket a bound of the hash space starts (the end of the space: `BUCKETS`).
pub(crate) fn bucket(bound: u128) -> usize {
    u64::try_from(bound).map_or(BUCKETS, crate::hash::bucket_of)
}

/// Who held each bucket from when: every change of the shards' owners record that the API
/// server accepted, in the order it received them (the record changes only with the version
/// read, so these are its versions in order). Reads are left out: one received while a change
/// was being written answers with the version before it, which would then seem to follow it.
fn owners_records(plane: &ControlPlane) -> Vec<(String, Vec<String>)> {
    let mut records: Vec<(String, Vec<String>)> = (events(plane, 0..usize::MAX).into_iter())
        .filter(|event| {
            let name = event["objectRef"]["name"].as_str().unwrap_or_default();
            let write = accepted(event, &["create", "update", "patch"]);
            event["objectRef"]["resource"] == "leases" && name.ends_with("-shards") && write
        })
        .filter_map(|event| {
            let owners =
                event["responseObject"]["metadata"]["annotations"]["kopgen.io/shard-owners"]
                    .as_str()?;
            let owners: Vec<String> = serde_json::from_str(owners).ok()?;
            let received = event["requestReceivedTimestamp"].as_str()?.to_owned();
            Some((received, owners))
        })
        .collect();
    records.sort_by(|a, b| a.0.cmp(&b.0));
    records
}

/// Every write of `writes` came from the replica
/// that held the Blog's bucket when the API server received it: the owners record last changed
/// before then names it. A replica gives a bucket back only once its writes in it are answered,
/// and another starts on it only once the record says it holds it, so a write outside its
/// holder's window is one that two replicas could have made at once.
pub(crate) fn assert_written_by_holders(
    plane: &ControlPlane,
    buckets: &BTreeMap<String, usize>,
    writes: &[Write],
    when: &str,
) {
    let records = owners_records(plane);
    assert!(
        !records.is_empty(),
        "{when}: no owners record in the audit log"
    );
    let mut checked = 0;
    for write in writes {
        let Some(bucket) = buckets.get(&write.blog) else {
            continue;
        };
        // The records are sorted by when they were received: the last one before the write.
        let before = records.partition_point(|(at, _)| *at <= write.received);
        let holder = (before.checked_sub(1)).map(|last| records[last].1[*bucket].as_str());
        assert_eq!(
            holder,
            Some(write.user.as_str()),
            "{when}: {} wrote {} (bucket {bucket}) at {}, held by {holder:?}",
            write.user,
            write.object,
            write.received
        );
        checked += 1;
    }
    assert!(checked > 0, "{when}: no write checked");
}

/// No object's writes alternate between replicas: one writer, then at most one handover.
pub(crate) fn assert_one_writer_at_a_time(writers: &BTreeMap<String, Vec<String>>, when: &str) {
    for (object, writers) in writers {
        let mut runs: Vec<&String> = writers.iter().collect();
        runs.dedup();
        let distinct: BTreeSet<&&String> = runs.iter().collect();
        assert!(
            runs.len() <= 2 && distinct.len() == runs.len(),
            "{when}: {object} was written by {runs:?}"
        );
    }
}

/// The buckets that each watch of `resource` whose URI has `part`, which `user` has open now,
/// asks for: a watch is audited when its response starts, and again when it ends.
pub(crate) fn open_watches(
    plane: &ControlPlane,
    user: &str,
    resource: &str,
    part: &str,
) -> Vec<BTreeSet<usize>> {
    let mut open = BTreeMap::new();
    for event in events(plane, 0..usize::MAX) {
        let uri = event["requestURI"].as_str().unwrap_or_default();
        if event["verb"] != "watch"
            || event["impersonatedUser"]["username"] != user
            || event["objectRef"]["resource"] != resource
            || !uri.contains(part)
        {
            continue;
        }
        let id = event["auditID"].as_str().unwrap_or_default().to_owned();
        match event["stage"].as_str() {
            Some("ResponseStarted") => {
                open.insert(id, buckets_asked(uri));
            }
            _ => {
                open.remove(&id);
            }
        }
    }
    open.into_values().collect()
}
