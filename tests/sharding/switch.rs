//! A rolling update that turns shards on, then off again: a manager without shards leads, a
//! replica with shards joins and waits (holding no bucket) until that leader has stopped and
//! released the Lease, then works alone; a manager without shards started beside it waits until
//! the group's Lease expires. By the API server's audit log, the writes of each mode come
//! after the last write of the one before: never two modes writing at once.

use super::*;

const BLOGS: usize = 30;
/// Long enough for a replica to start and renew its Leases once.
const WAITS: Duration = Duration::from_secs(60);

#[test]
fn turning_shards_on_and_off_never_has_two_modes_writing() {
    let test = "turning_shards_on_and_off_never_has_two_modes_writing";
    let options = Options {
        audit: true,
        ..Options::default()
    };
    let Some(plane) = support::control_plane(test, options) else {
        return;
    };
    let session = support::Session::new();
    let binary = deploy_edited_blog_project(&plane, &session, TWO_CHILDREN);
    let start = |name: &'static str, shards: bool| {
        let mut args = vec!["--metrics-secure=false"];
        args.extend(TIMING);
        if shards {
            args.push("--shards=auto");
        }
        let kubeconfig = replica_user(&plane, name);
        Manager::start_with(&binary, &kubeconfig, name, &session.join(""), &args)
    };
    let lease_holder = || support::blog::lease_holder(&plane);
    let context = |managers: &[&Manager]| -> String {
        managers
            .iter()
            .map(|m| format!("--- {}\n{}", m.name, tail(&m.log())))
            .collect()
    };

    // Without shards: one leader.
    let mut old = start("replica-a", false);
    wait("replica-a leads", &|| context(&[&old]), || {
        (lease_holder()? == "replica-a").then_some(())
    });
    apply_blogs(&plane, BLOGS, "one");
    converged(&plane, BLOGS, BLOGS, "one", &|| context(&[&old]));

    // Shards on: the new replica waits, holding nothing, while the old leader works on.
    let mut sharded = start("replica-b", true);
    let up = "replica-b serves its metrics";
    support::eventually_within(WAITS, up, &|| context(&[&old, &sharded]), || {
        http_get(sharded.metrics, "/metrics").map(|_| ())
    });
    // Two of its rounds: time to take shards, were it to.
    std::thread::sleep(Duration::from_secs(2));
    apply_blogs(&plane, BLOGS, "two");
    converged(&plane, BLOGS, BLOGS, "two", &|| context(&[&old, &sharded]));
    let waited = (sharded.log(), held_buckets(&sharded));
    assert_eq!(old.terminate(), Some(0), "{}", old.log());
    wait(
        "replica-b holds every bucket",
        &|| context(&[&sharded]),
        || (held_buckets(&sharded)? == BUCKETS as f64).then_some(()),
    );
    apply_blogs(&plane, BLOGS, "three");
    converged(&plane, BLOGS, BLOGS, "three", &|| context(&[&sharded]));

    // Shards off: the new leader waits while the group renews the Lease.
    let new = start("replica-c", false);
    apply_blogs(&plane, BLOGS, "four");
    converged(&plane, BLOGS, BLOGS, "four", &|| context(&[&sharded, &new]));
    let beside = (lease_holder(), new.log());
    assert_eq!(sharded.terminate(), Some(0), "{}", sharded.log());
    wait("replica-c leads", &|| context(&[&new]), || {
        (lease_holder()? == "replica-c").then_some(())
    });
    apply_blogs(&plane, BLOGS, "five");
    converged(&plane, BLOGS, BLOGS, "five", &|| context(&[&new]));

    let writes = replica_writes(&plane, 0, audit_lines(&plane));
    let window = |user: &str| {
        let times: Vec<jiff::Timestamp> = (writes.iter())
            .filter(|w| w.user == user)
            .map(audit::Write::received)
            .collect();
        let first = times.iter().min().copied();
        (
            first.expect("writes"),
            times.iter().max().copied().expect("writes"),
        )
    };
    let (a, b, c) = (
        window("replica-a"),
        window("replica-b"),
        window("replica-c"),
    );
    assert!(
        a.1 < b.0,
        "replica-a wrote until {}, replica-b from {}",
        a.1,
        b.0
    );
    assert!(
        b.1 < c.0,
        "replica-b wrote until {}, replica-c from {}",
        b.1,
        c.0
    );
    // While the leader without shards ran, the replica with shards said why it waited, and
    // held no bucket.
    assert!(
        waited.0.contains("waiting for the leader-election Lease")
            && waited.1.unwrap_or(0.0) == 0.0,
        "{waited:?}"
    );
    // And the manager without shards started beside the group did not lead.
    assert_eq!(
        beside.0.as_deref(),
        Some("kopgen.io/shards"),
        "{}",
        beside.1
    );
    assert!(!beside.1.contains("became leader"), "{}", beside.1);
    assert!(
        beside
            .1
            .contains("the Lease is held by replicas with --shards"),
        "{}",
        beside.1
    );
}
