//! Three replicas of a scaffolded operator sharing the work (`--shards=auto`) on a real control
//! plane, with the API server filtering their watches (`ShardedListAndWatch` on) and without
//! (each replica filters its events itself): every Blog (with two ConfigMaps as children)
//! reaches Ready at its generation, each replica caches about a third of the Blogs and of their
//! children and watches only its share (the first too, which held every bucket until the
//! others joined), every write comes from the replica that held the object's bucket when the API
//! server received it (by the owners record's versions in the audit log), a replica killed
//! mid-run has its objects taken over and reconciled by one replica each (the survivors list
//! only the buckets they gain), and when it comes back its share moves back to it.
//! Both run with 10,000 Blogs (20,000 children), side by side on CI's two cores, in about 13
//! minutes (749 s in CI; `KOPGEN_SHARDING_BLOGS=N` sets another count).

#[path = "sharding/audit.rs"]
mod audit;
mod support;
#[path = "sharding/switch.rs"]
mod switch;
// The runtime's hash, to find which bucket a Blog falls in (its tests are the runtime's).
#[allow(dead_code, unused_imports)]
#[path = "../runtime/src/shards/hash.rs"]
mod hash;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
    time::{Duration, Instant},
};

use audit::{
    assert_one_writer_at_a_time, assert_written_by_holders, audit_lines, bucket, listed,
    open_watches, replica_writes, watched, writers,
};
use hash::BUCKETS;
use serde_json::Value;
use support::blog::{Manager, deploy_edited_blog_project};
use support::control_plane::{ControlPlane, Options};
use support::edits::TWO_CHILDREN;
use support::ready::ReadyWatch;
use support::{http_get, kubectl_ok};

const REPLICAS: [&str; 3] = ["replica-a", "replica-b", "replica-c"];
/// The fewest Blogs for which a third of them is within ±15% of its mean (about 3 standard
/// deviations): the least to count a replica's share in.
const FEWEST: usize = 900;
/// How many Blogs: the 10,000 unless `KOPGEN_SHARDING_BLOGS` says otherwise (below
/// [`FEWEST`], the checks of a third may fail by chance).
fn blogs() -> usize {
    let set = std::env::var("KOPGEN_SHARDING_BLOGS").ok();
    set.and_then(|n| n.parse().ok()).unwrap_or(10_000)
}

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
    let logs = |managers: &[Manager]| -> String {
        managers
            .iter()
            .map(|m| format!("--- {}\n{}", m.name, tail(&m.log())))
            .collect()
    };
    // The first holds every bucket, its caches filled, before the others join: as they do, its
    // watches must come to ask for its share only.
    let mut managers = vec![start(0)];
    wait(
        "the first replica holds every bucket",
        &|| logs(&managers),
        || {
            let first = &managers[0];
            let filled = cached(first, "objects").is_some() && cached(first, "children").is_some();
            (held_buckets(first) == Some(BUCKETS as f64) && filled).then_some(())
        },
    );
    managers.extend((1..REPLICAS.len()).map(start));
    wait("the buckets are shared out", &|| logs(&managers), || {
        shared_out(&managers)
    });
    for manager in &managers {
        assert!(manager.log().contains(mode), "{}", manager.log());
    }
    watching_held_buckets_only(&plane, &managers, feature_gates.is_some());

    // Every Blog becomes Ready; each replica caches a third of them and of their children.
    apply_blogs(&plane, blogs, "one");
    converged(&plane, blogs, blogs, "one", &|| logs(&managers));
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

    // One replica is killed mid-run, while the Blogs change and it reconciles its share: what
    // it had not finished is taken over and reconciled by one replica each.
    let held_before: Vec<BTreeSet<usize>> = managers.iter().map(held_ranges).collect();
    let killed_name = managers[2].name;
    let at_change = audit_lines(&plane);
    // The lists of the takeover start as a survivor's watches hear of the buckets it gained (a
    // watch is audited when it starts). Later lists are a watch's own, after it fell behind the
    // API server's watch cache (410): at 10,000 Blogs, a children's watch lists its buckets
    // again minutes later.
    let resources = sharded_watches(feature_gates.is_some());
    let (killed_at, killed_clock, at_kill, takeover_lists_until) = std::thread::scope(|scope| {
        let applying = scope.spawn(|| apply_blogs(&plane, blogs, "two"));
        wait(
            "the replica to kill is at work",
            &|| logs(&managers),
            || {
                let writes = replica_writes(&plane, at_change, audit_lines(&plane));
                let its = writes.iter().filter(|w| w.user == killed_name).count();
                (its >= 10).then_some(())
            },
        );
        drop(managers.remove(2)); // SIGKILL, as a node that vanished
        let (killed_at, killed_clock) = (Instant::now(), jiff::Timestamp::now());
        let at_kill = audit_lines(&plane);
        // Its buckets are taken over once its Lease expires, in a few coordination rounds (1 s
        // each), while the Blogs are still being changed: a bound for liveness, far above
        // that, not a speed goal.
        let within = Duration::from_secs(60);
        support::eventually_within(
            within,
            "the survivors hold every bucket",
            &|| logs(&managers),
            || {
                let held: f64 = managers.iter().map(held_buckets).sum::<Option<f64>>()?;
                (held == BUCKETS as f64).then_some(())
            },
        );
        let taken = killed_at.elapsed();
        let listed_until = support::eventually_within(
            within,
            "the survivors list the buckets they gained",
            &|| logs(&managers),
            || {
                let until = audit_lines(&plane);
                let lists = |name, watch| listed(&plane, at_kill..until, name, watch);
                (managers.iter())
                    .all(|m| resources.iter().all(|w| !lists(m.name, *w).is_empty()))
                    .then_some(until)
            },
        );
        eprintln!(
            "{test}: after the kill, its buckets were held by the survivors in {taken:?}, listed \
             by them in {:?}",
            killed_at.elapsed()
        );
        applying.join().expect("the apply");
        (killed_at, killed_clock, at_kill, listed_until)
    });
    converged(&plane, blogs, blogs, "two", &|| logs(&managers));
    let took_over = killed_at.elapsed();
    let killed_until = audit_lines(&plane);
    // Across the kill: each write from the bucket's holder, each Blog written by the killed
    // replica, then by one other at most.
    let change_writes = replica_writes(&plane, at_change, killed_until);
    let change = writers(&change_writes);
    assert_eq!(change.len(), blogs, "every Blog was reconciled again");
    assert_one_writer_at_a_time(&change, "across the kill");
    assert_written_by_holders(&plane, &buckets, &change_writes, "across the kill");
    // (By when the API server received them: what it had received before the kill may be
    // answered, and logged, after it.)
    let late =
        (change_writes.iter()).find(|w| w.user == killed_name && w.received() > killed_clock);
    assert!(
        late.is_none(),
        "written as the killed replica after the kill"
    );
    // Mid-run: the survivors finished what it had not, each of its Blogs by one of them.
    let after_kill = writers(change_writes.iter().filter(|w| w.received() > killed_clock));
    let its_blogs: Vec<BTreeSet<&String>> = (after_kill.iter())
        .filter(|(blog, _)| {
            buckets
                .get(*blog)
                .is_some_and(|b| held_before[2].contains(b))
        })
        .map(|(_, writers)| writers.iter().collect())
        .collect();
    assert!(!its_blogs.is_empty(), "the kill left none of its share");
    for survivors in &its_blogs {
        assert_eq!(survivors.len(), 1, "taken over by {survivors:?}");
    }
    eprintln!(
        "{test}: {blogs} Blogs converged {took_over:?} after a replica was killed, {} of its \
         share finished by the survivors",
        its_blogs.len()
    );
    // What the survivors listed to take over: only the buckets they gained, never again those
    // they held with them (Blogs by shardSelector with the gate; children by label always). A
    // list of just the buckets held before is a watch of them listing again after it fell
    // behind the API server (410), as any watch may under load: not the takeover's.
    for (manager, before) in managers.iter().zip(&held_before) {
        for &(resource, part) in &resources {
            let lists = listed(
                &plane,
                at_kill..takeover_lists_until,
                manager.name,
                (resource, part),
            );
            for buckets in lists {
                assert!(
                    buckets.is_disjoint(before) || buckets.is_subset(before),
                    "{} listed {resource} of buckets {buckets:?}, gained and held before \
                     ({before:?}) in one list",
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
    // A third of the Blogs change (`FEWEST` at least): enough for a third of them to be the
    // returned replica's within 15%, in a third of the time of changing them all.
    let at_return = audit_lines(&plane);
    let changed = (blogs / 3).max(FEWEST).min(blogs);
    apply_blogs(&plane, changed, "three");
    converged(&plane, blogs, changed, "three", &|| logs(&managers));
    let returned_until = audit_lines(&plane);
    let after_return = writers(&replica_writes(&plane, at_return, returned_until));
    assert_one_writer_at_a_time(&after_return, "after the return");
    // From the end of the last phase: the return's handover is checked too.
    let since_kill_phase = replica_writes(&plane, killed_until, returned_until);
    assert_written_by_holders(&plane, &buckets, &since_kill_phase, "after the return");
    let changed_names: BTreeSet<String> = (0..changed).map(blog_name).collect();
    let returned: usize = (after_return.iter())
        .filter(|(blog, w)| changed_names.contains(*blog) && w.iter().any(|w| w == killed_name))
        .count();
    let third = changed as f64 / 3.0;
    assert!(
        (third * 0.85..=third * 1.15).contains(&(returned as f64)),
        "the returned replica reconciled {returned} of the {changed} Blogs changed"
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
        (held == BUCKETS as f64).then_some(())
    });
}

/// Every watch each replica has open of the Blogs (where the API server filters them) and of
/// their children asks for the buckets it holds only: a watch that covered buckets given up
/// since asks for fewer from then on (watched again from where it was, not listed), so the API
/// server sends each replica its share alone.
fn watching_held_buckets_only(plane: &ControlPlane, managers: &[Manager], server_side: bool) {
    let watches = sharded_watches(server_side);
    for manager in managers {
        let held = held_ranges(manager);
        for (resource, part) in &watches {
            support::eventually_within(
                Duration::from_secs(30),
                &format!(
                    "{}'s open watches of {resource} ask for its buckets only",
                    manager.name
                ),
                &|| format!("{:?}", open_watches(plane, manager.name, resource, part)),
                || {
                    let open = open_watches(plane, manager.name, resource, part);
                    let narrow = open.iter().all(|asked| asked.is_subset(&held));
                    (!open.is_empty() && narrow).then_some(())
                },
            );
        }
    }
}

/// The watches that ask for a replica's buckets, as resource and a part of their URI: of the
/// ConfigMaps, the children's (the names cache's, `managed-by!=`, is not sharded, and lists
/// every bucket when it lists again); of the Blogs, every watch, where the API server filters.
fn sharded_watches(server_side: bool) -> Vec<(&'static str, &'static str)> {
    let mut watches = vec![("configmaps", "managed-by%3D")];
    if server_side {
        watches.push(("blogs", ""));
    }
    watches
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

/// The `i`th Blog's name.
fn blog_name(i: usize) -> String {
    format!("blog-{i:04}")
}

/// Sets `foo` of the first `blogs` Blogs to `value`, creating those missing, in one request
/// stream.
fn apply_blogs(plane: &ControlPlane, blogs: usize, value: &str) {
    let yaml: Vec<String> = (0..blogs)
        .map(|i| support::blog::blog(&blog_name(i), "v1", value))
        .collect();
    support::blog::apply(plane, &yaml.join("---\n"));
}

/// Waits until all `blogs` Blogs are Ready at their generation and both ConfigMaps of the
/// `changed` first hold `value`: the Blogs followed by a watch started now (the change was
/// accepted before), the children listed only once every Blog is Ready (at 10,000 Blogs,
/// listing their 20,000 ConfigMaps, or the Blogs, at every poll takes cores the replicas need).
fn converged(
    plane: &ControlPlane,
    blogs: usize,
    changed: usize,
    value: &str,
    context: &dyn Fn() -> String,
) {
    let ready = std::cell::RefCell::new(ReadyWatch::start(
        plane,
        "blogs.apps.example.com",
        "default",
    ));
    wait(&format!("{blogs} Blogs are Ready"), context, || {
        (ready.borrow_mut().count(plane) == blogs).then_some(())
    });
    wait(
        &format!("the Blogs' children hold foo={value}"),
        context,
        || {
            let maps = list(plane, "configmaps");
            let holding = maps.iter().filter(|m| m["data"]["foo"] == value).count();
            (holding == 2 * changed).then_some(())
        },
    );
}

fn list(plane: &ControlPlane, resource: &str) -> Vec<Value> {
    let out = kubectl_ok(plane, &["get", resource, "-n", "default", "-o", "json"]);
    let list: Value = serde_json::from_str(&out).expect("kubectl prints JSON");
    list["items"].as_array().cloned().unwrap_or_default()
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

/// `Some` once the replicas hold the 60 buckets between them, a third each.
fn shared_out(managers: &[Manager]) -> Option<()> {
    let held: Vec<f64> = managers.iter().map(held_buckets).collect::<Option<_>>()?;
    let third = (BUCKETS / 3) as f64;
    (held.iter().sum::<f64>() == BUCKETS as f64 && held.iter().all(|h| *h == third)).then_some(())
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

/// A manager's last 30 lines, without the frames of a backtrace (which would push out the
/// error they follow).
fn tail(log: &str) -> String {
    let not_a_frame = |line: &&str| {
        let line = line.trim_start();
        let numbered = line
            .split_once(": ")
            .is_some_and(|(n, _)| n.parse::<u32>().is_ok());
        !(numbered || line.starts_with("at "))
    };
    let lines: Vec<&str> = log.lines().filter(not_a_frame).collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}
