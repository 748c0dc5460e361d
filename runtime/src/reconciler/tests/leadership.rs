//! A reconcile that outlives its time or its leadership, on the mocked API server: a timeout,
//! a blocking call past the Lease, a standby that waits to lead, a new leader's catch-up.

use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

use super::*;
use crate::testing::{converged, converse, events_path};

/// Things whose desired state takes far longer than the reconcile timeout (a call to an API
/// that vanished).
#[derive(Default)]
struct HangingReconciler;

impl Reconcile for HangingReconciler {
    type Kind = Thing;
    type Children = (ConfigMap,);
    const NAME: &'static str = "test-hanging";

    async fn desired(&self, _: &Thing, _: &Context, _: &Observed<'_>) -> Result<Desired<Self>> {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok(Desired::new())
    }
}

/// A reconcile that takes longer than `--reconcile-timeout` fails as a timeout (retried with
/// backoff) instead of holding the controller.
#[tokio::test]
async fn a_reconcile_that_takes_too_long_fails_as_a_timeout() {
    let (mut ctx, _server) = crate::testing::mock_context_owned();
    ctx.timeouts.reconcile = Duration::from_millis(50);
    let shared = Arc::new(Shared::filled(
        HangingReconciler,
        Arc::new(ctx),
        vec![],
        vec![],
    ));
    let result = tokio::time::timeout(
        Duration::from_secs(5),
        reconcile(Arc::new(thing("a")), shared),
    )
    .await
    .expect("the reconcile ended at its timeout");
    let error = result.expect_err("timed out");
    assert!(matches!(error, Error::Timeout(_)), "{error}");
    assert!(error.to_string().contains("--reconcile-timeout"), "{error}");
    assert_eq!(error.retry(), crate::Retry::Backoff);
}

/// A Thing whose `desired` blocks its thread (a blocking SDK call) for `BLOCK`.
#[derive(Default)]
struct Blocking;

const BLOCK: std::time::Duration = std::time::Duration::from_millis(300);

impl Reconcile for Blocking {
    type Kind = Thing;
    type Children = (ConfigMap,);
    const NAME: &'static str = "test-blocking";

    async fn desired(
        &self,
        thing: &Thing,
        ctx: &Context,
        o: &Observed<'_>,
    ) -> Result<Desired<Self>> {
        std::thread::sleep(BLOCK);
        ThingReconciler.desired(thing, ctx, o).await.map(|d| {
            let mut desired = Desired::new();
            desired.children = d.children;
            desired
        })
    }
}

/// The review's scenario: leadership lapses while the project's code blocks the thread (no
/// task, the elector's included, runs meanwhile); when the code returns, nothing is written,
/// not the child, not the status, not an event.
#[tokio::test]
async fn a_reconcile_that_blocks_past_its_leadership_writes_nothing() {
    let (mut ctx, server) = crate::testing::mock_context_owned();
    ctx.leadership = crate::Leadership::elected();
    ctx.events = ctx.events.clone().fenced(ctx.leadership.clone());
    ctx.leadership
        .lead_until(std::time::Instant::now() + BLOCK / 3);
    let shared = Arc::new(Shared::filled(
        Blocking,
        Arc::new(ctx),
        Vec::new(),
        Vec::new(),
    ));
    let (outcome, requests) = converse(async move { server }, async move {
        let outcome = reconcile(Arc::new(thing("a")), shared.clone()).await;
        drop(shared);
        outcome
    })
    .await;
    assert!(matches!(outcome, Err(Error::LeadershipLost)), "{outcome:?}");
    assert!(
        requests.is_empty(),
        "written after the lease lapsed: {requests:?}"
    );
}

/// A standby keeps its caches and waits: its reconciles start once it leads.
#[tokio::test]
async fn a_standby_reconciles_only_once_it_leads() {
    let (mut ctx, mut server) = crate::testing::mock_context_owned();
    ctx.leadership = crate::Leadership::elected();
    let leadership = ctx.leadership.clone();
    let object = converged::<ThingReconciler>(&thing("a"));
    let shared = Arc::new(Shared::filled(
        ThingReconciler,
        Arc::new(ctx),
        Vec::new(),
        Vec::new(),
    ));
    let collection = "/api/v1/namespaces/testns/configmaps";
    let events = events_path(&object);
    let created = json!({"metadata": {
        "name": "t", "namespace": "testns", "uid": "c", "resourceVersion": "2",
    }});
    let scenario = async move {
        server
            .expect(Method::POST, collection, StatusCode::CREATED, created)
            .await;
        server.expect_event(&events, "Created").await;
        server
    };
    let under_test = async move {
        let waiting = tokio::spawn(reconcile(Arc::new(object), shared.clone()));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "a standby does not reconcile");
        leadership.lead_until(std::time::Instant::now() + std::time::Duration::from_secs(30));
        let outcome = waiting.await.expect("joins");
        drop(shared);
        outcome
    };
    let (outcome, _) = converse(scenario, under_test).await;
    outcome.expect("reconciled once leading");
}

/// A new leader's catch-up on every cached object waits behind what is queued: the change
/// it waited to reconcile goes first, the catch-up follows as objects leave the queue.
#[tokio::test]
async fn a_new_leaders_catch_up_waits_behind_new_work() {
    use futures::StreamExt;
    use kube::runtime::{reflector, watcher};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (mut ctx, _server) = crate::testing::mock_context_owned();
    ctx.leadership = crate::Leadership::elected();
    let (store, mut writer) = reflector::store();
    for name in ["a", "b", "c"] {
        let mut object = thing(name);
        object.metadata.name = Some(name.to_owned());
        writer.apply_watcher_event(&watcher::Event::Apply(object));
    }
    let queued = Arc::new(AtomicUsize::new(1));
    let left = Arc::new(tokio::sync::Notify::new());
    let room = {
        let queued = queued.clone();
        super::super::priority::Room::new(1, move || queued.load(Ordering::Acquire), left.clone())
    };
    let catch_up = super::super::run::catch_up::<ThingReconciler>(&ctx, &store, true, room);
    let mut catch_up = Box::pin(catch_up);
    let none_yet = std::time::Duration::from_millis(50);
    let next = tokio::time::timeout(none_yet, catch_up.next()).await;
    assert!(next.is_err(), "a standby catches up on nothing: {next:?}");
    ctx.leadership
        .lead_until(std::time::Instant::now() + std::time::Duration::from_secs(30));
    let next = tokio::time::timeout(none_yet, catch_up.next()).await;
    assert!(
        next.is_err(),
        "the catch-up waits behind the queued change: {next:?}"
    );
    queued.store(0, Ordering::Release);
    left.notify_waiters();
    let names: Vec<_> = catch_up.take(3).map(|object| object.name).collect().await;
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["a", "b", "c"],
        "every cached object, once: {names:?}"
    );
}
