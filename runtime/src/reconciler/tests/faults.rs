//! What a real cluster does to a controller, on the mocked API server: a field dropped after a
//! failed attempt, a child whose label someone removed, values the API server normalises, a
//! status cache that lags behind a failure, a cleanup that writes the object, fails, or was
//! retired, a status write that fails.

use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{Value, json};

use super::*;
use crate::testing::{
    Recorded, converged, converse, events_path, finalizers_written, mock_shared,
    mock_shared_with_names, path_of,
};

/// `child` as JSON, with `uid` and `version`.
fn cached(child: &ConfigMap, uid: &str, version: &str) -> Value {
    let mut json = serde_json::to_value(child).expect("serializes");
    json["metadata"]["uid"] = uid.into();
    json["metadata"]["resourceVersion"] = version.into();
    json
}

/// A reconcile failed after the API server took the new generation's status (Ready=False at
/// that generation), or a new version of the operator stopped asking for a field: either way
/// the child still carries a field no longer desired, and every field still desired is there.
/// The hash of what was applied differs, so the child is applied again and the field goes.
#[tokio::test]
async fn a_field_no_longer_desired_is_removed_even_when_every_desired_field_is_there() {
    let object = converged::<ThingReconciler>(&thing("a"));
    let mut child = applied_children(&object).await.remove(0);
    // Applied earlier with a key that is no longer desired.
    child
        .data
        .get_or_insert_default()
        .insert("dropped".into(), "x".into());
    child
        .annotations_mut()
        .insert(APPLIED.into(), "earlier".into());
    let path = path_of(&child);
    let reply = cached(&child, "child-uid", "9");
    let (shared, mut server) = mock_shared(ThingReconciler, vec![cached(&child, "child-uid", "8")]);
    let events = events_path(&object);
    let scenario = async move {
        let request = server
            .expect(Method::PATCH, &path, StatusCode::OK, reply)
            .await;
        assert_eq!(
            request.body["data"],
            json!({"value": "a"}),
            "applied without the key"
        );
        server.expect_event(&events, "Updated").await;
        server
    };
    let (action, _) = converse(scenario, reconcile(Arc::new(object.clone()), shared)).await;
    assert_eq!(action.expect("reconcile succeeds"), Action::await_change());
}

/// A child whose `managed-by` label someone removed (kubectl, a policy engine, a restore) leaves
/// the labelled cache for the names cache; it is still this owner's, so it is applied back
/// (label included) instead of created again forever (409).
#[tokio::test]
async fn a_child_whose_label_was_removed_is_applied_back() {
    let object = converged::<ThingReconciler>(&thing("a"));
    let mut child = applied_children(&object).await.remove(0);
    child.labels_mut().clear();
    let path = path_of(&child);
    let reply = cached(&child, "child-uid", "4");
    let (shared, mut server) = mock_shared_with_names(
        ThingReconciler,
        NONE,
        vec![cached(&child, "child-uid", "3")],
    );
    let events = events_path(&object);
    let scenario = async move {
        let request = server
            .expect(Method::PATCH, &path, StatusCode::OK, reply)
            .await;
        assert!(
            request.query.contains("force=true"),
            "an apply: {}",
            request.query
        );
        assert_eq!(
            request.body["metadata"]["labels"][MANAGED_BY],
            crate::testing::MANAGER
        );
        server.expect_event(&events, "Updated").await;
        server
    };
    let (action, _) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    assert!(action.is_ok(), "{action:?}");
}

/// A value this manager applies and someone removed is drift, whatever the value: a removed
/// `allowPrivilegeEscalation: false`, an emptied ConfigMap key, `args` reordered or extended.
/// (What the API server itself drops from this manager's apply is remembered instead: below.)
#[test]
fn a_removed_or_reordered_value_is_drift_whatever_it_is() {
    let desired = json!({
        "metadata": {"name": "a"},
        "data": {"empty": ""},
        "spec": {"args": ["--a", "--b"], "securityContext": {"allowPrivilegeEscalation": false}},
    });
    assert!(apply::contains(&desired, &desired));
    let mut theirs = desired.clone();
    theirs["metadata"]["labels"] = json!({"added": "by someone"});
    theirs["spec"]["other"] = json!(1);
    assert!(
        apply::contains(&theirs, &desired),
        "others' fields are theirs"
    );
    let with = |data: Value, args: Value, context: Value| {
        json!({
            "metadata": {"name": "a"},
            "data": data,
            "spec": {"args": args, "securityContext": context},
        })
    };
    let unprivileged = json!({"allowPrivilegeEscalation": false});
    let drifted = [
        with(json!({}), json!(["--a", "--b"]), unprivileged.clone()),
        with(json!({"empty": ""}), json!(["--a", "--b"]), json!({})),
        with(
            json!({"empty": ""}),
            json!(["--b", "--a"]),
            unprivileged.clone(),
        ),
        with(
            json!({"empty": ""}),
            json!(["--a", "--b", "--c"]),
            unprivileged,
        ),
    ];
    for actual in drifted {
        assert!(!apply::contains(&actual, &desired), "{actual}");
    }
}

/// The API server drops an empty map this manager applies (Go's `omitempty`): the child it
/// answers with is as desired from then on, by its version, with no further write.
#[tokio::test]
async fn what_the_api_server_drops_from_an_apply_is_no_drift() {
    let object = converged::<ThingReconciler>(&thing("a"));
    let children = applied_children(&object).await;
    let mut desired = serde_json::to_value(&children[0]).expect("json");
    desired["metadata"]["labels"]["empty"] = json!(null);
    let mut dropped = cached(&children[0], "child-uid", "5");
    if let Some(data) = dropped["data"].as_object_mut() {
        data.clear();
    }
    dropped.as_object_mut().map(|o| o.remove("data"));
    let (shared, mut server) = mock_shared(ThingReconciler, vec![dropped.clone()]);
    let path = "/api/v1/namespaces/testns/configmaps/t";
    let events = events_path(&object);
    let scenario = async move {
        // `data` is missing: applied; the answer (the same version) is remembered.
        server
            .expect(Method::PATCH, path, StatusCode::OK, dropped)
            .await;
        server
    };
    let (action, requests) = converse(scenario, async {
        let first = reconcile(Arc::new(object.clone()), shared.clone()).await;
        let second = reconcile(Arc::new(object.clone()), shared.clone()).await;
        drop(shared);
        first.and(second)
    })
    .await;
    assert!(action.is_ok(), "{action:?}");
    assert_eq!(requests.len(), 1, "one apply, then nothing: {requests:?}");
    assert!(
        requests.iter().all(|r| r.path != events),
        "no event for a no-op"
    );
}

/// A value the API server rewrites (here `a` comes back as `A`) differs from what is desired
/// forever; the version the server returned for this manager's apply is remembered with what
/// was applied, so the child at that version is not applied again, and an apply the server
/// found nothing to change in (same version) tells no event.
#[tokio::test]
async fn values_the_api_server_rewrites_are_applied_once_and_then_left() {
    let object = converged::<ThingReconciler>(&thing("a"));
    let mut child = applied_children(&object).await.remove(0);
    child.data = Some([("value".to_owned(), "A".to_owned())].into());
    let normalised = cached(&child, "child-uid", "5");
    let path = path_of(&child);
    let (shared, mut server) = mock_shared(ThingReconciler, vec![normalised.clone()]);
    let scenario = async move {
        server
            .expect(Method::PATCH, &path, StatusCode::OK, normalised)
            .await;
        server
    };
    let twice = {
        let (shared, object) = (shared.clone(), Arc::new(object));
        async move {
            let first = reconcile(object.clone(), shared.clone()).await;
            let second = reconcile(object, shared).await;
            (first.is_ok(), second.is_ok())
        }
    };
    let (outcome, requests) = converse(scenario, async move {
        let outcome = twice.await;
        drop(shared);
        outcome
    })
    .await;
    assert_eq!(outcome, (true, true));
    assert_eq!(
        requests.len(),
        1,
        "one apply, no event, nothing the second time: {requests:?}"
    );
}

/// The cache shows `Ready=True` for a version whose failure this manager has just written
/// (`Ready=False`); the next reconcile succeeds: `Ready=True` is written again, not skipped
/// because the stale cache already says it.
#[tokio::test]
async fn a_success_right_after_a_failure_is_written_though_the_cache_still_says_ready() {
    let failing = converged::<ThingReconciler>(&thing("invalid"));
    let fixed = converged::<ThingReconciler>(&thing("a"));
    let children: Vec<Value> = (applied_children(&fixed).await.iter())
        .map(|c| serde_json::to_value(c).expect("json"))
        .collect();
    let (shared, mut server) = mock_shared(ThingReconciler, children);
    let status_path = format!("{}/status", path_of(&fixed));
    let reply = serde_json::to_value(&fixed).expect("serializes");
    let events = events_path(&fixed);
    let scenario = async move {
        let failed = server
            .expect(Method::PATCH, &status_path, StatusCode::OK, reply.clone())
            .await;
        assert_eq!(failed.body["status"]["conditions"][0]["status"], "False");
        server.expect_event(&events, "InvalidSpec").await;
        let recovered = server
            .expect(Method::PATCH, &status_path, StatusCode::OK, reply)
            .await;
        assert_eq!(recovered.body["status"]["conditions"][0]["status"], "True");
        server
    };
    let twice = {
        let shared = shared.clone();
        async move {
            let first = reconcile(Arc::new(failing), shared.clone()).await;
            let second = reconcile(Arc::new(fixed), shared).await;
            (first.is_err(), second.is_ok())
        }
    };
    let (outcome, _) = converse(scenario, async move {
        let outcome = twice.await;
        drop(shared);
        outcome
    })
    .await;
    assert_eq!(outcome, (true, true));
}

/// A success whose status write fails is not a success: the reconcile fails and is retried,
/// instead of leaving the object without `Ready` until the next resync.
#[tokio::test]
async fn a_status_write_that_fails_fails_the_reconcile() {
    let object = thing("a");
    let children: Vec<Value> = (applied_children(&object).await.iter())
        .map(|c| serde_json::to_value(c).expect("json"))
        .collect();
    let (shared, mut server) = mock_shared(ThingReconciler, children);
    let status_path = format!("{}/status", path_of(&object));
    let scenario = async move {
        server
            .expect_error(Method::PATCH, &status_path, StatusCode::SERVICE_UNAVAILABLE)
            .await;
        server
    };
    let (result, _) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    let error = result.expect_err("the status was not written");
    assert_eq!(error.retry(), crate::Retry::Backoff, "{error}");
}

/// Things with a finalizer whose cleanup writes the object (as the Kubebuilder tutorial's sets
/// a condition), fails for `fail`, and which retired an older finalizer.
#[derive(Default)]
struct CleaningReconciler;

impl Reconcile for CleaningReconciler {
    type Kind = Thing;
    type Children = (ConfigMap,);
    const NAME: &'static str = "test-cleaning";
    const FINALIZER: Option<&'static str> = Some("test.example.com/finalizer");
    const RETIRED_FINALIZERS: &'static [&'static str] = &["test.example.com/old"];

    async fn desired(
        &self,
        thing: &Thing,
        ctx: &Context,
        observed: &Observed<'_>,
    ) -> Result<Desired<Self>> {
        let desired = ThingReconciler.desired(thing, ctx, observed).await?;
        let mut own = Desired::new();
        own.children = desired.children;
        Ok(own)
    }

    async fn cleanup(&self, thing: &Thing, ctx: &Context) -> Result<()> {
        if thing.spec.value == "fail" {
            return Err(Error::Other("the bucket cannot be deleted yet".into()));
        }
        let api: kube::Api<Thing> = kube::Api::namespaced(ctx.client.clone(), "testns");
        let note = json!({"metadata": {"annotations": {"example.com/cleaned": "true"}}});
        api.patch(
            &thing.name_any(),
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(note),
        )
        .await?;
        Ok(())
    }
}

fn deleting(value: &str, finalizers: &[&str]) -> Thing {
    let mut object = converged::<ThingReconciler>(&thing(value));
    let meta = object.meta_mut();
    meta.finalizers = Some(finalizers.iter().map(|f| (*f).to_owned()).collect());
    meta.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::now(),
    ));
    object
}

/// Cleanup wrote the object, so its resource version moved: the finalizer is removed by a
/// patch that tests the finalizer list as read, not the version, with the retired finalizer;
/// another manager's finalizer stays.
#[tokio::test]
async fn the_finalizer_is_released_after_a_cleanup_that_wrote_the_object() {
    let finalizers = [
        "test.example.com/finalizer",
        "other.example.com/keep",
        "test.example.com/old",
    ];
    let object = deleting("a", &finalizers);
    let path = path_of(&object);
    let mut after_cleanup = serde_json::to_value(&object).expect("serializes");
    after_cleanup["metadata"]["resourceVersion"] = "2".into();
    let (shared, mut server) = mock_shared(CleaningReconciler, NONE);
    let events = events_path(&object);
    let scenario = async move {
        let cleanup = server
            .expect(Method::PATCH, &path, StatusCode::OK, after_cleanup.clone())
            .await;
        assert!(cleanup.body["metadata"]["annotations"].is_object());
        let release = server
            .expect(Method::PATCH, &path, StatusCode::OK, after_cleanup)
            .await;
        assert_eq!(
            release.body[0],
            json!({"op": "test", "path": "/metadata/finalizers", "value": finalizers}),
            "guarded by the list as read, not by the version"
        );
        let kept = finalizers_written(release);
        assert_eq!(kept, Some(json!(["other.example.com/keep"])));
        server.expect_event(&events, "CleanedUp").await;
        server
    };
    let (action, _) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    assert_eq!(action.expect("released"), Action::await_change());
}

/// A finalizer list that changed meanwhile (the patch's test fails: 422) is a conflict,
/// retried with backoff on the list as the cache then has it.
#[tokio::test]
async fn a_finalizer_list_that_changed_meanwhile_is_retried() {
    let object = deleting("a", &["test.example.com/old"]);
    let path = path_of(&object);
    let (shared, mut server) = mock_shared(CleaningReconciler, NONE);
    let scenario = async move {
        server
            .expect_error(Method::PATCH, &path, StatusCode::UNPROCESSABLE_ENTITY)
            .await;
        server
    };
    let (result, _) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    let error = result.expect_err("conflict");
    assert!(matches!(error, Error::Conflict(_)), "{error}");
    assert_eq!(error.retry(), crate::Retry::Backoff);
}

/// A cleanup that fails keeps the finalizer and says why: `Ready=False` with reason
/// `CleanupFailed` and a warning event; it is retried with backoff.
#[tokio::test]
async fn a_failing_cleanup_says_why() {
    let object = deleting("fail", &["test.example.com/finalizer"]);
    let status_path = format!("{}/status", path_of(&object));
    let reply = serde_json::to_value(&object).expect("serializes");
    let (shared, mut server) = mock_shared(CleaningReconciler, NONE);
    let events = events_path(&object);
    let scenario = async move {
        let request = server
            .expect(Method::PATCH, &status_path, StatusCode::OK, reply)
            .await;
        let ready = &request.body["status"]["conditions"][0];
        assert_eq!(
            (&ready["status"], &ready["reason"]),
            (&json!("False"), &json!("CleanupFailed"))
        );
        let message = ready["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("the bucket cannot be deleted yet"),
            "{message}"
        );
        let event = server.expect_event(&events, "CleanupFailed").await;
        assert_eq!(event.body["type"], "Warning");
        server
    };
    let (result, requests) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    let error = result.expect_err("cleanup failed");
    assert_eq!(error.retry(), crate::Retry::Backoff);
    let released = |r: &Recorded| finalizers_written(r).is_some();
    assert!(
        !requests.iter().any(released),
        "the finalizer stays: {requests:?}"
    );
}

/// A controller without a finalizer any more still lets go of objects that carry the one it
/// retired: they are not stuck in Terminating.
#[tokio::test]
async fn a_retired_finalizer_is_released_without_cleanup() {
    let object = deleting("a", &["test.example.com/old"]);
    let path = path_of(&object);
    let current = serde_json::to_value(&object).expect("serializes");
    let (shared, mut server) = mock_shared(CleaningReconciler, NONE);
    let scenario = async move {
        let release = server
            .expect(Method::PATCH, &path, StatusCode::OK, current)
            .await;
        assert_eq!(finalizers_written(release), Some(json!([])));
        server
    };
    let (action, requests) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    assert_eq!(action.expect("released"), Action::await_change());
    assert_eq!(requests.len(), 1, "no cleanup, no event: {requests:?}");
}

#[path = "writes.rs"]
mod writes;
