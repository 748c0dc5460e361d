//! Three replicas of a scaffolded operator sharing the work (`--shards=auto`) on a real control
//! plane, with the API server filtering their watches (`ShardedListAndWatch` on) and without
//! (each replica filters its events itself): every Blog (with two ConfigMaps as children)
//! reaches Ready at its generation, each replica caches about a third of the Blogs and of their
//! children, every write comes from the replica that held the object's bucket when the API
//! server received it (by the owners record's versions in the audit log), a replica killed
//! mid-run has its objects taken over and reconciled by one replica each (the survivors list
//! only the buckets they gain), and when it comes back its share moves back to it.
//! `KOPGEN_SHARDING_BLOGS=10000` runs it at the scale (900 by default, for CI's two
//! cores).

mod support;
// The runtime's hash, to find which bucket a Blog falls in (its tests are the runtime's).
#[allow(dead_code, unused_imports)]
#[path = "../runtime/src/shards/hash.rs"]
mod hash;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
    time::{Duration, Instant},
};

use serde_json::Value;
use support::blog::{Manager, deploy_edited_blog_project};
use support::control_plane::{ControlPlane, Options};
use support::{http_get, kubectl_ok};

const REPLICAS: [&str; 3] = ["replica-a", "replica-b", "replica-c"];
/// Enough Blogs that a third of them is within ±15% of its mean (about 3 standard deviations).
fn blogs() -> usize {
    std::env::var("KOPGEN_SHARDING_BLOGS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(900)
}

/// A second child for every Blog, a copy of the first.
const TWO_CHILDREN: &[(&str, &str)] = &[(
    "        Desired::new().child(ConfigMap {",
    "        let copy = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!(\"{name}-copy\")),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            data: Some(data.clone()),
            ..ConfigMap::default()
        };
        Desired::new().child(copy)?.child(ConfigMap {",
)];
/// Short Lease durations, so that a dead replica's share is taken over in seconds.
const TIMING: [&str; 3] = [
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=1s",
];
/// How long the Blogs may take to converge, three replicas and a control plane on two cores.
const CONVERGE: Duration = Duration::from_secs(600);

#[test]
fn three_replicas_share_the_work_with_the_api_servers_sharded_watches() {
    scenario(
        "three_replicas_share_the_work_with_the_api_servers_sharded_watches",
        Some("ShardedListAndWatch=true"),
        "the API server filters list and watch by shard",
    );
}

#[test]
fn three_replicas_share_the_work_filtering_by_shard_themselves() {
    scenario(
        "three_replicas_share_the_work_filtering_by_shard_themselves",
        None,
        "the API server does not filter by shard",
    );
}

fn scenario(test: &str, feature_gates: Option<&'static str>, mode: &str) {
    let options = Options {
        audit: true,
        feature_gates,
        ..Options::default()
    };
    let Some(plane) = support::control_plane(test, options) else {
        return;
    };
    let session = support::Session::new();
    let binary = deploy_edited_blog_project(&plane, &session, TWO_CHILDREN);
    let blogs = blogs();
    let kubeconfigs: Vec<PathBuf> = REPLICAS.iter().map(|r| replica_user(&plane, r)).collect();
    let start = |index: usize| {
        let args = [
            &["--shards=auto", "--metrics-secure=false"][..],
            &TIMING[..],
        ]
        .concat();
        let dir = session.join("");
        Manager::start_with(&binary, &kubeconfigs[index], REPLICAS[index], &dir, &args)
    };
    let mut managers: Vec<Manager> = (0..REPLICAS.len()).map(start).collect();
    let logs = |managers: &[Manager]| -> String {
        managers
            .iter()
            .map(|m| format!("--- {}\n{}", m.name, tail(&m.log())))
            .collect()
    };
    wait("the buckets are shared out", &|| logs(&managers), || {
        shared_out(&managers)
    });
    for manager in &managers {
        assert!(manager.log().contains(mode), "{}", manager.log());
    }

    // Every Blog becomes Ready; each replica caches a third of them and of their children.
    apply_blogs(&plane, blogs, "one");
    converged(&plane, blogs, "one", &|| logs(&managers));
    let written = audit_lines(&plane);
    for manager in &managers {
        for (cache, per_blog) in [("objects", 1.0), ("children", 2.0)] {
            let cached = wait(
                &format!("{} reports its {cache}", manager.name),
                &|| logs(&managers),
                || cached(manager, cache).filter(|c| *c > 0.0),
            );
            let third = blogs as f64 * per_blog / 3.0;
            assert!(
                (third * 0.85..=third * 1.15).contains(&cached),
                "{} caches {cached} {cache}, not within 15% of {third}",
                manager.name
            );
        }
    }
    let first = replica_writes(&plane, 0, written);
    assert_one_writer_at_a_time(&writers(&first), "while all three ran");
    let buckets = buckets_of_blogs(&plane);
    assert_written_by_holders(&plane, &buckets, &first, "while all three ran");
    // The API server filters: children by their bucket's label always, the Blogs by
    // shardSelector where it can.
    let (blogs_filtered, children_filtered) = (
        watched(&plane, "blogs", "shardSelector="),
        watched(&plane, "configmaps", "kopgen.io%2Fshard+notin+%28"),
    );
    assert!(
        children_filtered,
        "the children's watches leave out other buckets"
    );
    assert_eq!(blogs_filtered, feature_gates.is_some());

    // One replica is killed: its share is taken over and reconciled by one replica each.
    let held_before: Vec<BTreeSet<usize>> = managers.iter().map(held_ranges).collect();
    let killed = managers.remove(2);
    let killed_name = killed.name;
    drop(killed); // SIGKILL, as a node that vanished
    let at_kill = audit_lines(&plane);
    let killed_at = Instant::now();
    // Its buckets are taken over once its Lease expires (4 s), in a few coordination rounds
    // (1 s each): a bound for liveness, far above that, not a speed goal.
    support::eventually_within(
        Duration::from_secs(30),
        "the survivors hold every bucket",
        &|| logs(&managers),
        || {
            let held: f64 = managers.iter().map(held_buckets).sum::<Option<f64>>()?;
            (held == 64.0).then_some(())
        },
    );
    eprintln!(
        "{test}: buckets taken over {:?} after the kill",
        killed_at.elapsed()
    );
    // The lists of the takeover start as a survivor gains its buckets (a watch is audited when
    // it starts). Later lists are a watch's own, after it fell behind the API server's watch
    // cache (410): at 10,000 Blogs, a children's watch lists its buckets again minutes later.
    std::thread::sleep(Duration::from_secs(2));
    let takeover_lists_until = audit_lines(&plane);
    apply_blogs(&plane, blogs, "two");
    converged(&plane, blogs, "two", &|| logs(&managers));
    let took_over = killed_at.elapsed();
    let killed_until = audit_lines(&plane);
    let after_kill_writes = replica_writes(&plane, at_kill, killed_until);
    let after_kill = writers(&after_kill_writes);
    assert!(
        after_kill.values().flatten().all(|w| w != killed_name),
        "nothing is written as the killed replica"
    );
    assert_one_writer_at_a_time(&after_kill, "after the kill");
    assert_written_by_holders(&plane, &buckets, &after_kill_writes, "after the kill");
    assert_eq!(after_kill.len(), blogs, "every Blog was reconciled again");
    eprintln!("{test}: {blogs} Blogs converged {took_over:?} after a replica was killed");
    // What the survivors listed to take over: only the buckets they gained, never again those
    // they held (Blogs by shardSelector with the gate; children by label always).
    for (manager, before) in managers.iter().zip(&held_before) {
        let mut resources = vec!["configmaps"];
        resources.extend(feature_gates.map(|_| "blogs"));
        for resource in resources {
            let lists = listed(
                &plane,
                at_kill,
                takeover_lists_until,
                manager.name,
                resource,
            );
            assert!(!lists.is_empty(), "{} listed no {resource}", manager.name);
            for buckets in lists {
                assert!(
                    buckets.is_disjoint(before),
                    "{} listed {resource} of buckets {buckets:?}, some held before: {before:?}",
                    manager.name
                );
            }
        }
    }

    // It comes back: its share moves back to it, without two writers at once.
    managers.push(start(2));
    wait(
        "the killed replica holds its share again",
        &|| logs(&managers),
        || shared_out(&managers),
    );
    let at_return = audit_lines(&plane);
    apply_blogs(&plane, blogs, "three");
    converged(&plane, blogs, "three", &|| logs(&managers));
    let returned_until = audit_lines(&plane);
    let after_return = writers(&replica_writes(&plane, at_return, returned_until));
    assert_one_writer_at_a_time(&after_return, "after the return");
    // From the end of the last phase: the return's handover is checked too.
    let since_kill_phase = replica_writes(&plane, killed_until, returned_until);
    assert_written_by_holders(&plane, &buckets, &since_kill_phase, "after the return");
    let returned: usize = after_return
        .values()
        .filter(|w| w.iter().any(|w| w == killed_name))
        .count();
    let third = blogs as f64 / 3.0;
    assert!(
        (third * 0.85..=third * 1.15).contains(&(returned as f64)),
        "the returned replica reconciled {returned} Blogs"
    );

    // A replica stopped as the kubelet stops it gives its share back and deletes its Lease:
    // the others need not wait for it to expire.
    let mut leaving = managers.remove(0);
    assert_eq!(leaving.terminate(), Some(0), "{}", leaving.log());
    let holders = kubectl_ok(
        &plane,
        &[
            "get",
            "leases",
            "-n",
            "demo-system",
            "-o",
            "jsonpath={.items[*].spec.holderIdentity}",
        ],
    );
    assert!(!holders.contains(leaving.name), "{holders}");
    wait("the others hold every bucket", &|| logs(&managers), || {
        let held: f64 = managers.iter().map(held_buckets).sum::<Option<f64>>()?;
        (held == 64.0).then_some(())
    });
}

/// A user of the manager's RBAC of its own, so that the audit log tells the replicas apart.
fn replica_user(plane: &ControlPlane, name: &str) -> PathBuf {
    kubectl_ok(
        plane,
        &[
            "create",
            "clusterrolebinding",
            &format!("{name}-manager"),
            "--clusterrole=demo-manager-role",
            &format!("--user={name}"),
        ],
    );
    kubectl_ok(
        plane,
        &[
            "create",
            "rolebinding",
            &format!("{name}-leader-election"),
            "-n",
            "demo-system",
            "--role=demo-leader-election-role",
            &format!("--user={name}"),
        ],
    );
    plane.kubeconfig_as(name).expect("kubeconfig")
}

/// Applies `blogs` Blogs with `foo: value`, in one request stream.
fn apply_blogs(plane: &ControlPlane, blogs: usize, value: &str) {
    let yaml: Vec<String> = (0..blogs)
        .map(|i| support::blog::blog(&format!("blog-{i:04}"), "v1", value))
        .collect();
    support::blog::apply(plane, &yaml.join("---\n"));
}

/// Waits until every Blog is Ready at its generation and both its ConfigMaps hold `value`.
fn converged(plane: &ControlPlane, blogs: usize, value: &str, context: &dyn Fn() -> String) {
    wait(
        &format!("{blogs} Blogs converge on foo={value}"),
        context,
        || {
            let ready = list(plane, "blogs.apps.example.com")
                .iter()
                .filter(|b| {
                    let conditions = b["status"]["conditions"].as_array();
                    conditions.is_some_and(|c| {
                        c.iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    }) && b["status"]["observedGeneration"] == b["metadata"]["generation"]
                })
                .count();
            let maps = list(plane, "configmaps");
            let holding = maps.iter().filter(|m| m["data"]["foo"] == value).count();
            (ready == blogs && holding == 2 * blogs).then_some(())
        },
    );
}

fn list(plane: &ControlPlane, resource: &str) -> Vec<Value> {
    let out = kubectl_ok(plane, &["get", resource, "-n", "default", "-o", "json"]);
    let list: Value = serde_json::from_str(&out).expect("kubectl prints JSON");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// How many whole lines the audit log has now.
fn audit_lines(plane: &ControlPlane) -> usize {
    let log = std::fs::read(plane.audit_log()).expect("the audit log");
    log.iter().filter(|byte| **byte == b'\n').count()
}

/// A write of a Blog or its ConfigMaps by a replica that the API server accepted.
struct Write {
    /// The replica.
    user: String,
    /// The Blog written, or whose ConfigMap was.
    blog: String,
    /// What was written: `blogs/<name>` or `configmaps/<name>`.
    object: String,
    /// When the API server received it (RFC 3339, microseconds: ordered as text).
    received: String,
}

/// The writes of Blogs and their ConfigMaps by replicas in audit lines `from..to`, in order.
fn replica_writes(plane: &ControlPlane, from: usize, to: usize) -> Vec<Write> {
    let log = std::fs::read(plane.audit_log()).expect("the audit log");
    let log = String::from_utf8_lossy(&log);
    let events = log.lines().skip(from).take(to - from);
    events
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|event| {
            let user = event["impersonatedUser"]["username"].as_str()?;
            let verb = event["verb"].as_str().unwrap_or("");
            let resource = event["objectRef"]["resource"].as_str().unwrap_or("");
            let ok = event["responseStatus"]["code"]
                .as_u64()
                .is_some_and(|c| c < 300);
            let name = event["objectRef"]["name"].as_str().unwrap_or("");
            let write = ["create", "update", "patch", "delete"].contains(&verb);
            let ours = ["blogs", "configmaps"].contains(&resource) && name.starts_with("blog-");
            (write && ok && ours).then(|| Write {
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

/// Per Blog, the replicas that wrote it or its ConfigMaps, in order.
fn writers(writes: &[Write]) -> BTreeMap<String, Vec<String>> {
    let mut writers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for write in writes {
        let blog = writers.entry(write.blog.clone()).or_default();
        blog.push(write.user.clone());
    }
    writers
}

/// Whether a replica's watch of `resource` asked for `parameter` (as the audit log writes it).
fn watched(plane: &ControlPlane, resource: &str, parameter: &str) -> bool {
    let log = std::fs::read(plane.audit_log()).expect("the audit log");
    let log = String::from_utf8_lossy(&log);
    log.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["impersonatedUser"]["username"].is_string())
        .filter(|event| event["verb"] == "watch" && event["objectRef"]["resource"] == resource)
        .any(|event| {
            let uri = event["requestURI"].as_str().unwrap_or_default();
            uri.contains(parameter)
        })
}

/// The buckets of each list of `resource` that `user` asked for in audit lines `from..to`: a
/// list, or a watch that starts with one (`sendInitialEvents`), by its `shardSelector` ranges
/// or the buckets its label selector does not leave out.
fn listed(
    plane: &ControlPlane,
    from: usize,
    to: usize,
    user: &str,
    resource: &str,
) -> Vec<BTreeSet<usize>> {
    let log = std::fs::read(plane.audit_log()).expect("the audit log");
    let log = String::from_utf8_lossy(&log);
    let mut requests = BTreeMap::new();
    for line in log.lines().skip(from).take(to - from) {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let uri = event["requestURI"].as_str().unwrap_or_default();
        let lists = event["verb"] == "list"
            || (event["verb"] == "watch" && uri.contains("sendInitialEvents=true"));
        if lists
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
    let mut buckets: BTreeSet<usize> = (0..64).collect();
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

/// The bucket a bound of the hash space starts.
fn bucket(bound: u128) -> usize {
    usize::try_from(bound >> 58).unwrap_or(64)
}

/// The buckets a replica holds, by the ranges it reports (`demo_shard_range`).
fn held_ranges(manager: &Manager) -> BTreeSet<usize> {
    let (_, body) = http_get(manager.metrics, "/metrics").expect("metrics");
    let ranges = body
        .lines()
        .filter(|line| line.starts_with("demo_shard_range{"));
    ranges
        .filter_map(|line| {
            let (start, end) = line.split('"').nth(1)?.split_once('-')?;
            let hex = |bound: &str| u128::from_str_radix(bound.strip_prefix("0x")?, 16).ok();
            Some(bucket(hex(start)?)..bucket(hex(end)?))
        })
        .flatten()
        .collect()
}

/// Each Blog's bucket, by its name.
fn buckets_of_blogs(plane: &ControlPlane) -> BTreeMap<String, usize> {
    (list(plane, "blogs").iter())
        .map(|blog| {
            let name = blog["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let uid = blog["metadata"]["uid"].as_str().unwrap_or_default();
            (name, hash::bucket_of(hash::fnv1a(uid)))
        })
        .collect()
}

/// Who held each bucket from when: every change of the shards' owners record that the API
/// server accepted, in the order it received them (the record changes only with the version
/// read, so these are its versions in order).
fn owners_records(log: &str) -> Vec<(String, Vec<String>)> {
    let mut records: Vec<(String, Vec<String>)> = log
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| {
            let name = event["objectRef"]["name"].as_str().unwrap_or_default();
            let ok = event["responseStatus"]["code"]
                .as_u64()
                .is_some_and(|c| c < 300);
            event["objectRef"]["resource"] == "leases" && name.ends_with("-shards") && ok
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
fn assert_written_by_holders(
    plane: &ControlPlane,
    buckets: &BTreeMap<String, usize>,
    writes: &[Write],
    when: &str,
) {
    let log = std::fs::read(plane.audit_log()).expect("the audit log");
    let log = String::from_utf8_lossy(&log);
    let records = owners_records(&log);
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
fn assert_one_writer_at_a_time(writers: &BTreeMap<String, Vec<String>>, when: &str) {
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

/// A metric of the replica's `/metrics`: the sum of the series whose line contains `series`.
fn metric(manager: &Manager, series: &str) -> Option<f64> {
    let (_, body) = http_get(manager.metrics, "/metrics")?;
    let values: Vec<f64> = body
        .lines()
        .filter(|line| line.starts_with(series.split('{').next().unwrap_or(series)))
        .filter(|line| line.contains(series))
        .filter_map(|line| line.rsplit(' ').next()?.parse().ok())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

/// `Some` once the replicas hold the 64 buckets between them, a third each.
fn shared_out(managers: &[Manager]) -> Option<()> {
    let held: Vec<f64> = managers.iter().map(held_buckets).collect::<Option<_>>()?;
    (held.iter().sum::<f64>() == 64.0 && held.iter().all(|h| (21.0..=22.0).contains(h)))
        .then_some(())
}

fn held_buckets(manager: &Manager) -> Option<f64> {
    metric(manager, "demo_shard_buckets")
}

fn cached(manager: &Manager, cache: &str) -> Option<f64> {
    let kind = if cache == "objects" {
        "Blog"
    } else {
        "ConfigMap"
    };
    metric(
        manager,
        &format!(
            "demo_cache_objects{{controller=\"apps-blog\",kind=\"{kind}\",cache=\"{cache}\"}}"
        ),
    )
}

/// Polls `check` until it returns `Some`, for up to [`CONVERGE`].
fn wait<T>(what: &str, context: &dyn Fn() -> String, check: impl Fn() -> Option<T>) -> T {
    support::eventually_within(CONVERGE, what, context, check)
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}
