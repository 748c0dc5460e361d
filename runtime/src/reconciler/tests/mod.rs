//! The reconciler on the mocked API server: the kinds and controllers the tests share, and the
//! basic guarantees (error classes, backoff, owner mapping, adoption refusal, the cache wait,
//! status written once, failures and panics).

mod builtin;
mod children;
mod faults;
mod handover;
mod leadership;
mod reach;

use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::{self, v1::Condition};
use kube::{CustomResource, api::ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::*;
use crate::{backoff::jittered, error::Retry};
use crate::{
    caches::owner_of,
    testing::{
        applied_children_of, converged, converse, events_path, mock_shared, mock_shared_with_names,
        object_from_sample, path_of,
    },
};

/// The ConfigMaps a Thing asks for, as the machinery applies them.
async fn applied_children(object: &Thing) -> Vec<ConfigMap> {
    applied_children_of::<ThingReconciler, ConfigMap>(&ThingReconciler, object).await
}

const NONE: Vec<ConfigMap> = Vec::new();

/// A kind of the tests' own, namespaced, with one ConfigMap child.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "test.example.com",
    version = "v1",
    kind = "Thing",
    namespaced,
    status = "ThingStatus"
)]
pub struct ThingSpec {
    #[serde(default)]
    value: String,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThingStatus {
    #[serde(default)]
    conditions: Vec<Condition>,
    observed_generation: Option<i64>,
}

/// Things' controller: a ConfigMap with the value, `invalid` refused, `panic` panics.
#[derive(Default)]
struct ThingReconciler;

impl Reconcile for ThingReconciler {
    type Kind = Thing;
    type Children = (ConfigMap,);
    const NAME: &'static str = "test-thing";

    async fn desired(&self, thing: &Thing, _: &Context, _: &Observed<'_>) -> Result<Desired<Self>> {
        if thing.spec.value == "invalid" {
            return Err(Error::InvalidSpec("value may not be `invalid`".into()));
        }
        if thing.spec.value == "panic" {
            panic!("the user's code panicked");
        }
        Desired::new().child(ConfigMap {
            metadata: ObjectMeta {
                name: Some(thing.name_any()),
                namespace: thing.namespace(),
                ..ObjectMeta::default()
            },
            data: Some([("value".to_owned(), thing.spec.value.clone())].into()),
            ..ConfigMap::default()
        })
    }
}

/// A cluster-scoped kind whose children live in the manager's namespace.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "test.example.com",
    version = "v1",
    kind = "Tenant",
    status = "ThingStatus"
)]
pub struct TenantSpec {}

#[derive(Default)]
struct TenantReconciler;

impl Reconcile for TenantReconciler {
    type Kind = Tenant;
    type Children = (ConfigMap,);
    const NAME: &'static str = "test-tenant";

    async fn desired(
        &self,
        tenant: &Tenant,
        ctx: &Context,
        _: &Observed<'_>,
    ) -> Result<Desired<Self>> {
        Desired::new().child(ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("tenant-{}", tenant.name_any())),
                namespace: Some(ctx.operator_namespace.clone()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })
    }
}

fn thing(value: &str) -> Thing {
    let sample = format!("kind: Thing\nmetadata:\n  name: t\nspec:\n  value: {value}\n");
    object_from_sample(&format!("apiVersion: test.example.com/v1\n{sample}"))
}

fn api_error(code: u16) -> Error {
    Error::Kube(kube::Error::Api(
        kube::core::Status::failure("refused", "Refused")
            .with_code(code)
            .boxed(),
    ))
}

#[test]
fn errors_are_retried_by_class() {
    assert_eq!(api_error(500).retry(), Retry::Backoff);
    assert_eq!(api_error(409).retry(), Retry::Backoff);
    assert!(matches!(api_error(403).retry(), Retry::After(_)));
    assert_eq!(api_error(422).retry(), Retry::OnChange);
    assert_eq!(Error::InvalidSpec("x".into()).retry(), Retry::OnChange);
    let cleanup = Error::Cleanup(Box::new(api_error(503)));
    assert_eq!(
        cleanup.retry(),
        Retry::Backoff,
        "a cleanup error keeps its class"
    );
    assert_eq!(cleanup.reason(), "CleanupFailed");
}

#[test]
fn retries_are_spread_over_ten_percent_by_object() {
    let delays: Vec<Duration> = (0..50)
        .map(|i| jittered(RESYNC, &format!("uid-{i}")))
        .collect();
    assert!(
        delays
            .iter()
            .all(|d| *d >= RESYNC && *d <= RESYNC.mul_f64(1.1))
    );
    assert_eq!(
        jittered(RESYNC, "uid-1"),
        delays[1],
        "the same object, the same delay"
    );
    let distinct: std::collections::BTreeSet<_> = delays.iter().collect();
    assert!(distinct.len() > 40, "objects retry apart: {delays:?}");
}

#[tokio::test]
async fn backoff_is_per_controller_and_per_uid() {
    let (things, _server) = mock_shared(ThingReconciler, NONE);
    let (tenants, _other) = mock_shared(TenantReconciler, NONE);
    let first = Arc::new(thing("a"));
    let mut renamed = thing("a");
    renamed.meta_mut().uid = Some("another-uid".into());
    let error = api_error(503);
    let delay = |action: Action| format!("{action:?}");
    let one = error_policy(first.clone(), &error, things.clone());
    let two = error_policy(first.clone(), &error, things.clone());
    assert_ne!(
        delay(one),
        delay(two.clone()),
        "the same object backs off further"
    );
    let first_delay = |uid: &str| Action::requeue(jittered(Duration::from_secs(1), uid));
    let other = error_policy(Arc::new(renamed), &error, things.clone());
    assert_eq!(
        delay(other),
        delay(first_delay("another-uid")),
        "another object (same name, other uid) starts afresh"
    );
    let mut tenant = Tenant::new("a", TenantSpec {});
    tenant.meta_mut().uid = Some("tenant-uid".into());
    let elsewhere = error_policy(Arc::new(tenant), &error, tenants);
    assert_eq!(
        delay(elsewhere),
        delay(first_delay("tenant-uid")),
        "another controller has its own table"
    );
}

#[test]
fn children_map_to_their_owner_across_scopes() {
    let mut tenant = Tenant::new("acme", TenantSpec {});
    tenant.meta_mut().uid = Some("tenant-uid".into());
    let mut child = ConfigMap::default();
    child.meta_mut().namespace = Some("operator-system".into());
    child
        .owner_references_mut()
        .push(tenant.controller_owner_ref(&()).expect("uid"));
    let owner = owner_of::<Tenant, _>(&child).expect("mapped");
    assert_eq!(owner.name, "acme");
    assert_eq!(
        owner.namespace, None,
        "a cluster-scoped owner has no namespace"
    );

    let thing = thing("a");
    let mut child = ConfigMap::default();
    child.meta_mut().namespace = Some("testns".into());
    child
        .owner_references_mut()
        .push(thing.controller_owner_ref(&()).expect("uid"));
    let owner = owner_of::<Thing, _>(&child).expect("mapped");
    assert_eq!(owner.namespace.as_deref(), Some("testns"));
    assert!(
        owner_of::<Tenant, _>(&child).is_none(),
        "another kind's child"
    );
}

#[test]
fn only_the_fields_this_manager_applies_are_compared() {
    let desired: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}
    }))
    .expect("a ConfigMap");
    let mut actual = desired.clone();
    actual
        .data
        .get_or_insert_default()
        .insert("other".into(), "theirs".into());
    actual.labels_mut().insert("y".into(), "2".into());
    assert!(is_applied(&desired, &actual).expect("compares"));
    actual
        .data
        .get_or_insert_default()
        .insert("k".into(), "edited".into());
    assert!(!is_applied(&desired, &actual).expect("compares"));
}

#[tokio::test]
async fn an_object_of_the_childs_name_that_this_owner_does_not_control_is_left_alone() {
    let object = thing("a");
    let mut foreign = applied_children(&object).await.remove(0);
    foreign.owner_references_mut().clear();
    foreign.labels_mut().clear();
    let (shared, mut server) = mock_shared_with_names(ThingReconciler, NONE, vec![foreign]);
    let status_path = format!("{}/status", path_of(&object));
    let events = events_path(&object);
    let status_reply = serde_json::to_value(&object).expect("serializes");
    let scenario = async move {
        let request = server
            .expect(Method::PATCH, &status_path, StatusCode::OK, status_reply)
            .await;
        let condition = &request.body["status"]["conditions"][0];
        assert_eq!(condition["status"], "False");
        assert_eq!(condition["reason"], "ChildNotOwned");
        let event = server
            .expect(Method::POST, &events, StatusCode::CREATED, json!({}))
            .await;
        assert_eq!(event.body["type"], "Warning");
        server
    };
    let (result, requests) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    let error = result.expect_err("not adopted");
    assert!(matches!(error, Error::NotOwned { .. }), "{error}");
    assert_eq!(
        requests.len(),
        2,
        "only the status and the event: {requests:?}"
    );
}

/// A reconcile started before the caches of children and names have their first list
/// waits for them: with the child in the cache, a converged object needs no request.
#[tokio::test]
async fn a_reconcile_waits_for_the_first_lists_of_its_caches() {
    let object = converged::<ThingReconciler>(&thing("a"));
    let (ctx, server) = crate::testing::mock_context();
    let (caches, fill) = crate::caches::unfilled::<ConfigMap>();
    let shared = Arc::new(Shared::new(
        Arc::new(ThingReconciler),
        ctx,
        caches,
        Lookups::default(),
    ));
    let mut reconciling = Box::pin(reconcile(Arc::new(object.clone()), shared));
    let early = tokio::time::timeout(Duration::from_millis(200), &mut reconciling).await;
    assert!(early.is_err(), "it waits for the caches");
    fill(applied_children(&object).await, Vec::new());
    let (action, requests) = converse(async move { server }, reconciling).await;
    assert_eq!(action.expect("reconcile succeeds"), Action::await_change());
    assert!(requests.is_empty(), "nothing to write: {requests:?}");
}

/// The cache may hand over the version of an object its children were just applied and its
/// status just written for; neither is written again for it.
#[tokio::test]
async fn a_status_is_written_once_per_version_of_the_object() {
    let object = thing("a");
    let (ctx, mut server) = crate::testing::mock_context();
    let children = applied_children(&object).await;
    let children = children
        .iter()
        .map(|c| serde_json::to_value(c).expect("json"));
    let shared = Arc::new(Shared::filled(
        ThingReconciler,
        ctx,
        children.collect(),
        Vec::new(),
    ));
    let status_path = format!("{}/status", path_of(&object));
    let reply = serde_json::to_value(converged::<ThingReconciler>(&object)).expect("serializes");
    let scenario = async move {
        // The children are as desired (the hash says so): only the status is written.
        server
            .expect(Method::PATCH, &status_path, StatusCode::OK, reply)
            .await;
        server
    };
    let twice = {
        let shared = shared.clone();
        let object = Arc::new(object);
        async move {
            let first = reconcile(object.clone(), shared.clone()).await;
            let second = reconcile(object, shared).await;
            (first.is_ok(), second.is_ok())
        }
    };
    let ((first, second), requests) = converse(scenario, async move {
        let outcome = twice.await;
        drop(shared);
        outcome
    })
    .await;
    assert!(first && second);
    assert_eq!(
        requests.len(),
        1,
        "the second reconcile sent nothing: {requests:?}"
    );
}

#[tokio::test]
async fn a_failure_sets_ready_false_and_only_the_reconcilers_conditions_are_applied() {
    let mut object = converged::<ThingReconciler>(&thing("invalid"));
    let json = serde_json::to_value(&object).expect("serializes");
    let mut with_foreign = json.clone();
    with_foreign["status"]["conditions"]
        .as_array_mut()
        .expect("conditions")
        .push(json!({
            "type": "Backup", "status": "True", "reason": "Done", "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z"
        }));
    object = serde_json::from_value(with_foreign).expect("deserializes");
    let (shared, mut server) = mock_shared(ThingReconciler, NONE);
    let status_path = format!("{}/status", path_of(&object));
    let events = events_path(&object);
    let scenario = async move {
        let request = server
            .expect(Method::PATCH, &status_path, StatusCode::OK, json)
            .await;
        let conditions = request.body["status"]["conditions"]
            .as_array()
            .expect("conditions");
        // Ready, and kstatus' Stalled (invalid input waits for a change); never Backup.
        let types: Vec<_> = conditions.iter().map(|c| c["type"].clone()).collect();
        assert_eq!(types, [json!("Ready"), json!("Stalled")], "{conditions:?}");
        assert_eq!(conditions[0]["status"], "False");
        assert_eq!(conditions[0]["reason"], "InvalidSpec");
        assert_eq!(conditions[1]["status"], "True");
        assert_eq!(conditions[1]["reason"], "InvalidSpec");
        let event = server
            .expect(Method::POST, &events, StatusCode::CREATED, json!({}))
            .await;
        assert_eq!(event.body["reason"], "InvalidSpec");
        server
    };
    let (result, _) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    let error = result.expect_err("invalid spec");
    let (shared, _server) = mock_shared(ThingReconciler, NONE);
    assert_eq!(
        error_policy(Arc::new(thing("invalid")), &error, shared),
        Action::await_change(),
        "invalid input waits for a change"
    );
}

/// A panic in the user's code is that object's error (Ready=False, an event, backoff), not the
/// end of the manager.
#[tokio::test]
async fn a_panic_in_desired_is_an_error_of_that_object() {
    let object = converged::<ThingReconciler>(&thing("panic"));
    let json = serde_json::to_value(&object).expect("serializes");
    let (shared, mut server) = mock_shared(ThingReconciler, NONE);
    let status_path = format!("{}/status", path_of(&object));
    let events = events_path(&object);
    let scenario = async move {
        let request = server
            .expect(Method::PATCH, &status_path, StatusCode::OK, json)
            .await;
        let ready = &request.body["status"]["conditions"][0];
        assert_eq!(
            (&ready["status"], &ready["reason"]),
            (&json!("False"), &json!("ReconcilePanic"))
        );
        assert_eq!(ready["message"], "panicked: the user's code panicked");
        server.expect_event(&events, "ReconcilePanic").await;
        server
    };
    let (result, _) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    let error = result.expect_err("a panic is an error");
    assert_eq!(error.retry(), Retry::Backoff);
    assert_eq!(error.metric_label(), "panic");
}

/// A reconcile and the cache sync wait for the same caches at once: both are woken when the
/// caches fill (kube-runtime's store readiness wakes only the last waiter, which left a leader
/// that started late with a reconcile waiting forever).
#[tokio::test]
async fn every_waiter_is_woken_when_the_caches_fill() {
    let (caches, fill) = crate::caches::unfilled::<ConfigMap>();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let caches = caches.clone();
            tokio::spawn(async move { caches.filled_once().await.is_ok() })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    fill(Vec::new(), Vec::new());
    for waiter in waiters {
        let woken = tokio::time::timeout(Duration::from_secs(5), waiter).await;
        assert!(matches!(woken, Ok(Ok(true))), "a waiter was not woken");
    }
}

/// What a list's object says decides whether it waits behind new work: reconciled at its
/// generation (Ready or not), yes; a newer generation, never reconciled, or being deleted, no.
#[test]
fn an_object_says_whether_it_was_reconciled_at_its_generation() {
    let mut fresh = thing("a");
    fresh.metadata.generation = Some(3);
    let settled = converged::<ThingReconciler>(&fresh);
    assert!(report::observed(&settled));
    assert!(!report::observed(&fresh), "no status yet");
    let mut changed = settled.clone();
    changed.metadata.generation = Some(4);
    assert!(!report::observed(&changed), "a newer generation");
    let mut deleting = settled.clone();
    let now = k8s_openapi::jiff::Timestamp::now();
    deleting.metadata.deletion_timestamp = Some(meta::v1::Time(now));
    assert!(!report::observed(&deleting), "being deleted");
    let mut failed = serde_json::to_value(&settled).expect("json");
    failed["status"]["conditions"][0]["status"] = json!("False");
    let failed: Thing = serde_json::from_value(failed).expect("a Thing");
    assert!(
        report::observed(&failed),
        "a failure at its generation stands"
    );
    let mut old = serde_json::to_value(&settled).expect("json");
    old["status"]["conditions"][0]["observedGeneration"] = json!(2);
    let old: Thing = serde_json::from_value(old).expect("a Thing");
    assert!(!report::observed(&old), "Ready says an older generation");
}
