use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use serde_json::{Value, json};
use tower_test::mock;

use super::*;

const FAST: Timing = Timing {
    lease_duration: Duration::from_millis(600),
    renew_deadline: Duration::from_millis(300),
    retry_period: Duration::from_millis(50),
};

fn election(identity: &str) -> LeaderElection {
    LeaderElection {
        lease_name: "operator-lock".into(),
        namespace: "testns".into(),
        identity: Some(identity.into()),
        timing: FAST,
    }
}

fn status(code: u16) -> Value {
    let reason = match code {
        404 => "NotFound",
        409 => "Conflict",
        _ => "InternalError",
    };
    json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure",
        "reason": reason, "code": code, "message": reason,
    })
}

/// An API server holding one Lease: get, create, and merge patches guarded by the
/// resource version. After `fail_after` requests it answers 500 to everything, as an API
/// server the replica cannot reach. Returns every holder the Lease had, in order.
async fn lease_server(
    handle: mock::Handle<Request<Body>, Response<Body>>,
    fail_after: usize,
) -> Vec<Value> {
    lease_server_with(handle, fail_after, false, Arc::default()).await
}

/// [`lease_server`], which after `fail_after` requests either answers 500 or (`hang`)
/// never answers, as an API server that vanished; `renewed` gets the time of each write of
/// the Lease it answered.
async fn lease_server_with(
    mut handle: mock::Handle<Request<Body>, Response<Body>>,
    fail_after: usize,
    hang: bool,
    renewed: Arc<std::sync::Mutex<Vec<Instant>>>,
) -> Vec<Value> {
    let mut lease: Option<Value> = None;
    let mut holders = Vec::new();
    let mut version = 0;
    let mut served = 0;
    let mut unanswered = Vec::new();
    while let Some((request, send)) = handle.next_request().await {
        let (parts, body) = request.into_parts();
        let bytes = body.collect_bytes().await.expect("request body");
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        served += 1;
        if served > fail_after && hang {
            unanswered.push(send);
            continue;
        }
        if matches!(parts.method, Method::POST | Method::PATCH) && served <= fail_after {
            renewed.lock().expect("lock").push(Instant::now());
        }
        let (code, answer) = match (parts.method, lease.as_mut()) {
            _ if served > fail_after => (StatusCode::INTERNAL_SERVER_ERROR, status(500)),
            (Method::GET, Some(lease)) => (StatusCode::OK, lease.clone()),
            (Method::GET, None) => (StatusCode::NOT_FOUND, status(404)),
            (Method::POST, _) => {
                let mut created = body;
                version += 1;
                created["metadata"]["resourceVersion"] = json!(version.to_string());
                holders.push(created["spec"]["holderIdentity"].clone());
                lease = Some(created.clone());
                (StatusCode::CREATED, created)
            }
            (Method::PATCH, Some(lease)) => {
                if body["metadata"]["resourceVersion"] != lease["metadata"]["resourceVersion"] {
                    (StatusCode::CONFLICT, status(409))
                } else {
                    for (key, value) in body["spec"].as_object().into_iter().flatten() {
                        if value.is_null() {
                            if let Some(spec) = lease["spec"].as_object_mut() {
                                spec.remove(key);
                            }
                        } else {
                            lease["spec"][key] = value.clone();
                        }
                    }
                    version += 1;
                    lease["metadata"]["resourceVersion"] = json!(version.to_string());
                    let holder = lease["spec"]["holderIdentity"].clone();
                    if holders.last() != Some(&holder) {
                        holders.push(holder);
                    }
                    (StatusCode::OK, lease.clone())
                }
            }
            (method, _) => panic!("unexpected {method} {}", parts.uri),
        };
        send.send_response(
            Response::builder()
                .status(code)
                .body(Body::from(serde_json::to_vec(&answer).expect("JSON")))
                .expect("response"),
        );
    }
    holders
}

/// With no other replica, the operator takes the Lease, runs its controllers, and gives
/// the Lease back when they stop, so that the next replica need not wait for it to expire.
#[tokio::test]
async fn takes_the_lease_runs_and_releases_it() {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let server = tokio::spawn(lease_server(handle, usize::MAX));
    let ran = Arc::new(AtomicBool::new(false));
    let work = {
        let ran = Arc::clone(&ran);
        async move {
            ran.store(true, Ordering::SeqCst);
            Ok(())
        }
    };
    let client = Client::new(service, "testns");
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        run_as_leader(
            client,
            &election("replica-a"),
            CancellationToken::new(),
            work,
        ),
    )
    .await
    .expect("leadership is taken at once when nobody holds the Lease");
    assert!(outcome.is_ok(), "{outcome:?}");
    assert!(ran.load(Ordering::SeqCst), "the controllers ran");
    let holders = server.await.expect("server");
    assert_eq!(
        holders,
        [json!("replica-a"), Value::Null],
        "held, then released"
    );
}

/// Shut down before leadership comes: the work never starts.
#[tokio::test]
async fn a_shutdown_before_leadership_runs_nothing() {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let server = tokio::spawn(lease_server(handle, usize::MAX));
    let shutdown = CancellationToken::new();
    shutdown.cancel();
    let ran = Arc::new(AtomicBool::new(false));
    let work = {
        let ran = Arc::clone(&ran);
        async move {
            ran.store(true, Ordering::SeqCst);
            Ok(())
        }
    };
    let client = Client::new(service, "testns");
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        run_as_leader(client, &election("replica-b"), shutdown, work),
    )
    .await
    .expect("a cancelled run returns");
    assert!(outcome.is_ok(), "{outcome:?}");
    assert!(!ran.load(Ordering::SeqCst), "nothing ran");
    drop(server);
}

/// A leader whose renewals fail stops its work within the renew deadline: before the
/// lease duration, after which another replica may take the Lease.
#[tokio::test]
async fn a_leader_that_cannot_renew_steps_down_before_the_lease_can_expire() {
    struct DropFlag(Arc<AtomicBool>);
    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    // get (404) and create succeed; every later request fails.
    let server = tokio::spawn(lease_server(handle, 2));
    let stopped = Arc::new(AtomicBool::new(false));
    let work = {
        let flag = DropFlag(Arc::clone(&stopped));
        async move {
            let _flag = flag;
            std::future::pending::<Result<()>>().await
        }
    };
    let client = Client::new(service, "testns");
    let started = Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        run_as_leader(
            client,
            &election("replica-c"),
            CancellationToken::new(),
            work,
        ),
    )
    .await
    .expect("the leader gives up");
    assert!(matches!(outcome, Err(Error::LeadershipLost)), "{outcome:?}");
    assert!(
        stopped.load(Ordering::SeqCst),
        "the controllers were stopped"
    );
    assert!(
        started.elapsed() < FAST.lease_duration,
        "stopped after {:?}, not before the Lease could expire",
        started.elapsed()
    );
    drop(server);
}

/// The longest a leader acts after its last successful renewal, when the API server stops
/// answering (requests hang, as to a server that vanished): at most the renew deadline,
/// well before the lease duration a follower waits. Renewals are slow beside the deadline
/// here (each try may wait a retry period per request), which is where a deadline checked
/// only between tries let a leader run past the lease duration.
#[tokio::test]
async fn a_leader_never_acts_longer_than_the_lease_after_its_last_renewal() {
    let slow = Timing {
        lease_duration: Duration::from_millis(1000),
        renew_deadline: Duration::from_millis(700),
        retry_period: Duration::from_millis(300),
    };
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let renewed = Arc::new(std::sync::Mutex::new(Vec::new()));
    // get (404), create, then two renewals (get, patch); then silence.
    let server = tokio::spawn(lease_server_with(handle, 6, true, renewed.clone()));
    let stopped_at = Arc::new(std::sync::Mutex::new(None));
    let work = {
        struct Stamp(Arc<std::sync::Mutex<Option<Instant>>>);
        impl Drop for Stamp {
            fn drop(&mut self) {
                *self.0.lock().expect("lock") = Some(Instant::now());
            }
        }
        let stamp = Stamp(stopped_at.clone());
        async move {
            let _stamp = stamp;
            std::future::pending::<Result<()>>().await
        }
    };
    let client = Client::new(service, "testns");
    let election = LeaderElection {
        timing: slow,
        ..election("replica-d")
    };
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        run_as_leader(client, &election, CancellationToken::new(), work),
    )
    .await
    .expect("the leader gives up");
    assert!(matches!(outcome, Err(Error::LeadershipLost)), "{outcome:?}");
    let last_renewal = *renewed.lock().expect("lock").last().expect("renewed once");
    let stopped = stopped_at
        .lock()
        .expect("lock")
        .expect("the work was stopped");
    let acted = stopped.duration_since(last_renewal);
    assert!(
        acted <= slow.renew_deadline + Duration::from_millis(100),
        "the leader acted {acted:?} after its last renewal (deadline {:?})",
        slow.renew_deadline
    );
    assert!(acted < slow.lease_duration, "{acted:?}");
    server.abort();
}

fn elector(client: &Client, identity: &str) -> Elector {
    Elector {
        api: Api::namespaced(client.clone(), "testns"),
        name: "operator-lock".into(),
        identity: identity.into(),
        timing: FAST,
        observed: None,
        told_of_group: false,
    }
}

/// A rolling update that turns shards on, then off: the group of replicas with shards waits
/// while a leader without them holds the Lease and takes it once released; a leader without
/// shards then waits while any member renews it, and takes it only the lease duration after the
/// group's last renewal (by which time every member has passed its renew deadline).
#[tokio::test]
async fn a_leader_and_a_group_with_shards_never_hold_the_lease_at_once() {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let server = tokio::spawn(lease_server(handle, usize::MAX));
    let client = Client::new(service, "testns");
    let mut old = elector(&client, "leader-a");
    assert!(old.try_acquire_or_renew().await.expect("taken"));
    let mut group = GroupLease::new(client.clone(), &election("unused"));
    for _ in 0..3 {
        assert!(
            group.hold().await.expect("read").is_none(),
            "the leader holds it"
        );
        assert_eq!(group.holder(), Some("leader-a"));
        assert!(old.try_acquire_or_renew().await.expect("renewed"));
    }
    old.release().await.expect("released");
    assert!(
        group.hold().await.expect("taken").is_some(),
        "released: the group takes it"
    );

    let mut new = elector(&client, "leader-b");
    let mut last_group_renewal = Instant::now();
    let renewing = Instant::now();
    while renewing.elapsed() < FAST.lease_duration * 2 {
        assert!(
            !new.try_acquire_or_renew().await.expect("read"),
            "the group holds it"
        );
        tokio::time::sleep(FAST.retry_period).await;
        last_group_renewal = Instant::now();
        assert!(group.hold().await.expect("renewed").is_some());
    }
    // The members are gone: the Lease expires the lease duration after their last renewal.
    loop {
        if new.try_acquire_or_renew().await.expect("read") {
            break;
        }
        tokio::time::sleep(FAST.retry_period).await;
    }
    assert!(last_group_renewal.elapsed() >= FAST.lease_duration);
    assert!(
        group.hold().await.expect("read").is_none(),
        "the new leader holds it"
    );
    drop(client);
    drop((old, group, new));
    let holders = server.await.expect("server");
    assert_eq!(
        holders,
        [
            json!("leader-a"),
            Value::Null,
            json!(GROUP_HOLDER),
            json!("leader-b")
        ]
    );
}

/// Answers each request with the next `(status, body)`, checking its method.
async fn scripted(
    mut handle: mock::Handle<Request<Body>, Response<Body>>,
    script: Vec<(Method, u16, Value)>,
) {
    for (method, code, body) in script {
        let (request, send) = handle.next_request().await.expect("a request");
        assert_eq!(request.method(), method, "{}", request.uri());
        send.send_response(
            Response::builder()
                .status(code)
                .body(Body::from(serde_json::to_vec(&body).expect("JSON")))
                .expect("response"),
        );
    }
}

fn lease(holder: &str, version: &str) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "operator-lock", "namespace": "testns", "resourceVersion": version},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": 1,
            "renewTime": "2026-01-01T00:00:00.000000Z",
        },
    })
}

/// Two members renew (or create) the group's Lease at once and one's write conflicts: the
/// Lease is still the group's. A conflict with a leader that took the Lease is not.
#[tokio::test]
async fn a_member_that_loses_the_write_to_another_member_still_holds_for_the_group() {
    let renewal = |now| {
        vec![
            (Method::GET, 200, lease(GROUP_HOLDER, "1")),
            (Method::PATCH, 409, status(409)),
            (Method::GET, 200, lease(now, "2")),
        ]
    };
    let creation = |now| {
        vec![
            (Method::GET, 404, status(404)),
            (Method::POST, 409, status(409)),
            (Method::GET, 200, lease(now, "1")),
        ]
    };
    for (script, now, held) in [
        (renewal(GROUP_HOLDER), GROUP_HOLDER, true),
        (renewal("leader-b"), "leader-b", false),
        (creation(GROUP_HOLDER), GROUP_HOLDER, true),
        (creation("leader-b"), "leader-b", false),
    ] {
        let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
        let server = tokio::spawn(scripted(handle, script));
        let mut group = GroupLease::new(Client::new(service, "testns"), &election("unused"));
        assert_eq!(
            group.hold().await.expect("answered").is_some(),
            held,
            "held by {now}"
        );
        server.await.expect("every answer sent");
    }
}

/// One write of the group's Lease per round, however many members: a member that finds it
/// renewed since its last look writes nothing and counts the hold from that look (the renewal
/// it saw came after it); once no other member renews, it renews the Lease itself.
#[tokio::test]
async fn a_member_renews_the_groups_lease_only_when_no_other_member_did() {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let written = Arc::<std::sync::Mutex<Vec<Instant>>>::default();
    let server = tokio::spawn(lease_server_with(
        handle,
        usize::MAX,
        false,
        written.clone(),
    ));
    let client = Client::new(service, "testns");
    let writes = || written.lock().expect("lock").len();
    let (mut a, mut b) = (
        GroupLease::new(client.clone(), &election("unused")),
        GroupLease::new(client.clone(), &election("unused")),
    );
    // When a last looked: between these two instants.
    let mut a_looked = (Instant::now(), Instant::now());
    assert!(a.hold().await.expect("created").is_some());
    a_looked.1 = Instant::now();
    assert!(
        b.hold().await.expect("renewed").is_some(),
        "b renews: a was first"
    );
    assert_eq!(writes(), 2);
    for round in 0..3 {
        let before = Instant::now();
        let since = a.hold().await.expect("held").expect("for the group");
        assert!(
            a_looked.0 <= since && since <= a_looked.1,
            "round {round}: from a's last look, not from now"
        );
        assert_eq!(
            writes(),
            2 + round,
            "round {round}: a saw b's renewal and wrote nothing"
        );
        a_looked = (before, Instant::now());
        assert!(b.hold().await.expect("renewed").is_some());
        assert_eq!(
            writes(),
            3 + round,
            "round {round}: b saw none but its own and renewed"
        );
    }
    // b stops: a sees its last renewal, then nothing new, and renews.
    assert!(a.hold().await.expect("held").is_some());
    assert_eq!(writes(), 5);
    let before = Instant::now();
    let since = a.hold().await.expect("held").expect("for the group");
    assert!(since >= before, "renewed now");
    assert_eq!(writes(), 6);
    drop((a, b, client));
    server.await.expect("server");
}
