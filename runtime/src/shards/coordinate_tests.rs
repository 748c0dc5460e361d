//! The ownership protocol, with replicas taking rounds in turn on one record of owners (as
//! the API server orders their writes): whatever the order, joins and leaves, no bucket is
//! ever worked on by two replicas, and the holders settle on the assignment.

use super::*;

/// A replica in the simulation: its shards, and a reconcile it keeps in flight in each bucket
/// it works on, until the test lets it end.
struct Replica {
    name: String,
    shards: Shards,
    in_flight: Vec<super::super::InFlight>,
}

impl Replica {
    fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            shards: Shards::default(),
            in_flight: Vec::new(),
        }
    }

    /// One round: plan on the record, write it, hold what it records.
    fn round(&mut self, owners: &mut Vec<String>, live: &[String]) {
        *owners = settle(&self.shards, owners, &self.name, live);
        self.shards.hold(held_by(owners, &self.name));
    }

    /// Starts a reconcile in every bucket it may work on, keeping them in flight.
    fn work(&mut self) {
        for bucket in 0..BUCKETS {
            if let Some(in_flight) = self.shards.enter(bucket) {
                self.in_flight.push(in_flight);
            }
        }
    }

    /// The buckets it is working on or may work on.
    fn working(&self) -> Vec<usize> {
        let mut buckets: Vec<usize> = (0..BUCKETS).filter(|&b| self.shards.holding()[b]).collect();
        buckets.sort_unstable();
        buckets
    }
}

fn names(replicas: &[Replica]) -> Vec<String> {
    let mut names: Vec<String> = replicas.iter().map(|r| r.name.clone()).collect();
    names.sort();
    names
}

/// No bucket is held (worked on, or open to work) by two replicas.
fn assert_exclusive(replicas: &[Replica]) {
    let mut holder = vec![None; BUCKETS];
    for replica in replicas {
        for bucket in replica.working() {
            if let Some(other) = holder[bucket].replace(&replica.name) {
                panic!("bucket {bucket} held by {other} and {}", replica.name);
            }
        }
    }
}

/// Runs rounds (each replica in the order `order` gives, with reconciles in flight ending
/// every other round) until the record matches the assignment of the live replicas.
fn settle_all(
    replicas: &mut [Replica],
    owners: &mut Vec<String>,
    order: &dyn Fn(usize) -> Vec<usize>,
) -> usize {
    let live = names(replicas);
    let assignment = assign(&live);
    let wanted: Vec<String> = assignment
        .iter()
        .map(|i| live[i.expect("assigned")].clone())
        .collect();
    for round in 0..50 {
        for index in order(round) {
            replicas[index].round(owners, &live);
            assert_exclusive(replicas);
            replicas[index].work();
        }
        if !round.is_multiple_of(2) {
            for replica in replicas.iter_mut() {
                replica.in_flight.clear();
            }
        }
        if *owners == wanted {
            return round;
        }
    }
    panic!("did not settle: {owners:?}");
}

#[test]
fn replicas_share_the_buckets_without_overlap_through_joins_and_leaves() {
    let mut owners = vec![String::new(); BUCKETS];
    let mut replicas = vec![Replica::new("replica-a")];
    let forward = |n: usize| move |_: usize| (0..n).collect::<Vec<_>>();
    settle_all(&mut replicas, &mut owners, &forward(1));
    assert_eq!(
        replicas[0].working().len(),
        BUCKETS,
        "alone, it holds everything"
    );

    // Two join; the first gives its buckets up only once its reconciles of them are over.
    replicas.push(Replica::new("replica-b"));
    replicas.push(Replica::new("replica-c"));
    let backward = |round: usize| {
        if round.is_multiple_of(2) {
            vec![2, 1, 0]
        } else {
            vec![0, 2, 1]
        }
    };
    let rounds = settle_all(&mut replicas, &mut owners, &backward);
    assert!(rounds >= 1, "a handover waits for the reconciles in flight");
    for replica in &replicas {
        let share = replica.working().len();
        assert_eq!(share, BUCKETS / 3, "{} holds {share}", replica.name);
    }

    // One leaves gracefully: it gives everything back, the others take it over.
    let leaving = replicas.remove(1);
    for owner in owners.iter_mut().filter(|o| **o == leaving.name) {
        owner.clear();
    }
    settle_all(&mut replicas, &mut owners, &forward(2));
    assert_eq!(
        replicas.iter().map(|r| r.working().len()).sum::<usize>(),
        BUCKETS
    );
}

#[test]
fn a_dead_members_buckets_are_freed_and_taken_over() {
    let dead = "replica-dead".to_owned();
    let mut owners: Vec<String> = (0..BUCKETS)
        .map(|b| {
            if b % 2 == 0 {
                dead.clone()
            } else {
                "replica-a".into()
            }
        })
        .collect();
    let mut replicas = vec![Replica::new("replica-a"), Replica::new("replica-b")];
    // The dead member is not among the live ones: its buckets are free for the assignment.
    settle_all(&mut replicas, &mut owners, &|_| vec![1, 0]);
    assert!(owners.iter().all(|o| *o != dead));
}

#[test]
fn a_bucket_owned_by_a_live_member_is_never_taken() {
    let live = vec!["replica-a".to_owned(), "replica-b".to_owned()];
    // Everything recorded as replica-b's, though half is assigned to replica-a: replica-a
    // waits for replica-b to give its share back.
    let owners = vec!["replica-b".to_owned(); BUCKETS];
    let next = plan(&owners, "replica-a", &live, |_, _| {
        panic!("replica-a holds nothing")
    });
    assert_eq!(next, owners);
}

#[test]
fn a_bucket_in_flight_is_kept_until_its_reconciles_end() {
    let live = vec!["replica-a".to_owned(), "replica-b".to_owned()];
    let owners = vec!["replica-a".to_owned(); BUCKETS];
    let shards = Shards::default();
    shards.hold([true; BUCKETS]);
    let in_flight: Vec<_> = (0..BUCKETS).filter_map(|b| shards.enter(b)).collect();
    let next = settle(&shards, &owners, "replica-a", &live);
    assert_eq!(
        next, owners,
        "nothing given back while reconciles are in flight"
    );
    let given: Vec<usize> = (0..BUCKETS)
        .filter(|&b| shards.enter(b).is_none())
        .collect();
    assert_eq!(
        given.len(),
        BUCKETS / 2,
        "new reconciles stop in the buckets to give back"
    );
    drop(in_flight);
    let next = settle(&shards, &owners, "replica-a", &live);
    let kept = next.iter().filter(|o| *o == "replica-a").count();
    assert_eq!(kept, BUCKETS - given.len());
}

/// A Role without `list` on Leases (a project scaffolded before shards) stops the manager with
/// what to add, instead of a replica that never holds a bucket.
#[tokio::test]
async fn a_role_that_may_not_list_leases_is_named() {
    use http::{Method, Request, Response};
    use kube::client::Body;
    use tower_test::mock;

    let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
    let server = tokio::spawn(async move {
        while let Some((request, send)) = handle.next_request().await {
            let path = request.uri().path().to_owned();
            let query = request.uri().query().unwrap_or_default().to_owned();
            let (code, body) = match *request.method() {
                Method::GET if path.ends_with("/leases") && query.contains("labelSelector") => (
                    403,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                        "reason": "Forbidden", "code": 403,
                        "message": "leases is forbidden: cannot list resource"}),
                ),
                Method::GET if path.ends_with("/leases") => (
                    200,
                    json!({"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1",
                        "metadata": {}, "items": []}),
                ),
                Method::GET => (
                    404,
                    json!({"kind": "Status", "apiVersion": "v1",
                    "status": "Failure", "reason": "NotFound", "code": 404, "message": "nf"}),
                ),
                _ => {
                    let bytes = request
                        .into_body()
                        .collect_bytes()
                        .await
                        .unwrap_or_default();
                    let mut lease: serde_json::Value =
                        serde_json::from_slice(&bytes).unwrap_or_default();
                    lease["metadata"]["resourceVersion"] = json!("1");
                    (201, lease)
                }
            };
            send.send_response(
                Response::builder()
                    .status(code)
                    .body(Body::from(serde_json::to_vec(&body).unwrap_or_default()))
                    .expect("a response"),
            );
        }
    });
    let election = LeaderElection {
        lease_name: "demo.example.com".into(),
        namespace: "demo-system".into(),
        identity: Some("replica-a".into()),
        timing: crate::leader::Timing::default(),
    };
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        run(
            Client::new(service, "demo-system"),
            &election,
            Shards::default(),
            Leadership::elected(),
            Arc::new(Metrics::default()),
            CancellationToken::new(),
            Duration::from_secs(1),
        ),
    )
    .await
    .expect("it stops at once");
    let Err(Error::Config(message)) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(
        message.contains("demo-system") && message.contains("list"),
        "{message}"
    );
    server.abort();
}

/// An API server of Leases (get, list, create, merge patches guarded by the resource version),
/// which answers nothing while `silent` is set, as one the replica cannot reach; each request
/// it answers goes to `asked` as `<method> <name>` (no name: the list).
async fn leases_server(
    mut handle: tower_test::mock::Handle<
        http::Request<kube::client::Body>,
        http::Response<kube::client::Body>,
    >,
    silent: Arc<std::sync::atomic::AtomicBool>,
    asked: Arc<std::sync::Mutex<Vec<String>>>,
) {
    use http::{Method, Response};
    use serde_json::Value;

    fn merge(target: &mut Value, patch: &Value) {
        match (target.as_object_mut(), patch.as_object()) {
            (Some(target), Some(patch)) => {
                for (key, value) in patch {
                    match value {
                        Value::Null => drop(target.remove(key)),
                        _ => merge(target.entry(key.clone()).or_insert(Value::Null), value),
                    }
                }
            }
            _ => *target = patch.clone(),
        }
    }
    let mut leases: std::collections::BTreeMap<String, Value> = Default::default();
    let mut version = 0;
    let mut unanswered = Vec::new();
    while let Some((request, send)) = handle.next_request().await {
        if silent.load(std::sync::atomic::Ordering::SeqCst) {
            unanswered.push(send);
            continue;
        }
        let (parts, body) = request.into_parts();
        let bytes = body.collect_bytes().await.unwrap_or_default();
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let name = parts
            .uri
            .path()
            .rsplit_once("/leases")
            .map(|(_, n)| n.trim_start_matches('/'));
        let name = name.unwrap_or_default().to_owned();
        crate::lock(&asked).push(format!("{} {name}", parts.method));
        let missing = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "reason": "NotFound", "code": 404, "message": "not found"});
        let conflict = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "reason": "Conflict", "code": 409, "message": "conflict"});
        version += 1;
        let (code, answer) = match (parts.method, leases.get_mut(&name)) {
            (Method::GET, _) if name.is_empty() => {
                // The members' Leases: those with the group's label (the only selector sent).
                let member = |lease: &&Value| !lease["metadata"]["labels"][GROUP_LABEL].is_null();
                let items: Vec<&Value> = leases.values().filter(member).collect();
                let list = json!({"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1",
                    "metadata": {}, "items": items});
                (200, list)
            }
            (Method::GET, Some(lease)) => (200, lease.clone()),
            (Method::POST, _) => {
                let mut lease = body;
                lease["metadata"]["resourceVersion"] = json!(version.to_string());
                let name = lease["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                leases.insert(name, lease.clone());
                (201, lease)
            }
            (Method::PATCH, Some(lease)) => {
                let expected = &body["metadata"]["resourceVersion"];
                if !expected.is_null() && *expected != lease["metadata"]["resourceVersion"] {
                    (409, conflict)
                } else {
                    merge(lease, &body);
                    lease["metadata"]["resourceVersion"] = json!(version.to_string());
                    (200, lease.clone())
                }
            }
            (Method::DELETE, Some(_)) => (200, leases.remove(&name).unwrap_or_default()),
            _ => (404, missing),
        };
        send.send_response(
            Response::builder()
                .status(code)
                .body(kube::client::Body::from(
                    serde_json::to_vec(&answer).unwrap_or_default(),
                ))
                .expect("a response"),
        );
    }
    drop(unanswered);
}

/// Replica `replica-a` of the group of `demo.example.com`, alone on a [`leases_server`] (silent
/// while `silent` is set, its requests in `asked`), running until `release`.
struct Alone {
    shards: Shards,
    leadership: Leadership,
    release: CancellationToken,
    member: tokio::task::JoinHandle<Result<()>>,
    server: tokio::task::JoinHandle<()>,
}

fn alone(
    timing: crate::leader::Timing,
    silent: Arc<std::sync::atomic::AtomicBool>,
    asked: Arc<std::sync::Mutex<Vec<String>>>,
) -> Alone {
    let (service, handle) = tower_test::mock::pair();
    let server = tokio::spawn(leases_server(handle, silent, asked));
    let election = LeaderElection {
        lease_name: "demo.example.com".into(),
        namespace: "demo-system".into(),
        identity: Some("replica-a".into()),
        timing,
    };
    let (shards, leadership, release) = (
        Shards::default(),
        Leadership::elected(),
        CancellationToken::new(),
    );
    let member = tokio::spawn({
        let (shards, leadership, release) = (shards.clone(), leadership.clone(), release.clone());
        async move {
            let client = Client::new(service, "demo-system");
            let metrics = Arc::new(Metrics::default());
            let drain = Duration::from_secs(1);
            run(
                client, &election, shards, leadership, metrics, release, drain,
            )
            .await
        }
    });
    Alone {
        shards,
        leadership,
        release,
        member,
        server,
    }
}

/// Waits until `done`, 10 s at most.
async fn within(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within 10 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A replica that cannot renew its Lease (the API server stops answering) gives its buckets
/// up by the renew deadline and keeps running, its caches warm; it takes part again only once
/// the reconciles begun before have ended (none of them may write after it holds buckets
/// again) and the API server answers.
#[tokio::test]
async fn a_replica_that_could_not_renew_takes_part_again_once_its_reconciles_ended() {
    use std::sync::atomic::{AtomicBool, Ordering};

    let timing = crate::leader::Timing {
        lease_duration: Duration::from_millis(600),
        renew_deadline: Duration::from_millis(300),
        retry_period: Duration::from_millis(50),
    };
    let silent = Arc::new(AtomicBool::new(false));
    let Alone {
        shards,
        leadership,
        release,
        member,
        server,
    } = alone(timing, silent.clone(), Arc::default());
    let every = |shards: &Shards, held: bool| shards.holding().iter().all(|h| *h == held);
    within("alone, it holds every bucket", || {
        every(&shards, true) && leadership.is_leading()
    })
    .await;
    let in_flight = shards.enter(7).expect("held");

    silent.store(true, Ordering::SeqCst);
    let lapsed = Instant::now();
    within("it gives its buckets up", || {
        every(&shards, false) && !leadership.is_leading()
    })
    .await;
    assert!(
        lapsed.elapsed() < timing.lease_duration,
        "{:?}",
        lapsed.elapsed()
    );
    silent.store(false, Ordering::SeqCst);
    tokio::time::sleep(timing.lease_duration).await;
    assert!(!member.is_finished(), "it keeps running");
    assert!(
        every(&shards, false) && !leadership.is_leading(),
        "not while a reconcile of before is in flight"
    );

    drop(in_flight);
    within("it takes part again", || {
        every(&shards, true) && leadership.is_leading()
    })
    .await;
    release.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(10), member).await;
    assert!(matches!(outcome, Ok(Ok(Ok(())))), "{outcome:?}");
    server.abort();
}

/// Every replica renews every retry period, so a round asks the API server only what it must:
/// its own Lease is patched without being read first (no other replica writes it), and the
/// Lease of owners comes with the members' list instead of a read of its own.
#[tokio::test]
async fn a_round_reads_no_lease_that_a_patch_or_the_list_answers() {
    let timing = crate::leader::Timing {
        lease_duration: Duration::from_millis(600),
        renew_deadline: Duration::from_millis(300),
        retry_period: Duration::from_millis(20),
    };
    let asked: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let Alone {
        shards,
        release,
        member,
        server,
        ..
    } = alone(timing, Arc::default(), asked.clone());
    within("alone, it holds every bucket", || {
        shards.holding().iter().all(|held| *held)
    })
    .await;
    let from = crate::lock(&asked).len();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rounds: Vec<String> = crate::lock(&asked)[from..].to_vec();
    let own = format!("demo.example.com-{:016x}", hash::fnv1a("replica-a"));
    let renewals = rounds
        .iter()
        .filter(|r| **r == format!("PATCH {own}"))
        .count();
    let lists = rounds.iter().filter(|r| *r == "GET ").count();
    assert!(renewals >= 3 && lists >= 3, "{rounds:?}");
    // Reads: the list, and the leader-election Lease (held for the group), nothing else.
    let reads: Vec<&String> = rounds
        .iter()
        .filter(|r| r.starts_with("GET ") && *r != "GET " && *r != "GET demo.example.com")
        .collect();
    assert!(reads.is_empty(), "{reads:?}");
    release.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(5), member).await;
    server.abort();
}
