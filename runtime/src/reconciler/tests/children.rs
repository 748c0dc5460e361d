//! What the reconciler does with several child kinds, the kind's own status fields, a requeue
//! the kind computes, pruning, and children it may not have.

use std::time::Duration;

use http::{Method, StatusCode};
use k8s_openapi::{
    api::core::v1::{ConfigMap, Secret},
    apimachinery::pkg::apis::meta::v1::Condition,
};
use kube::{CustomResource, api::ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::super::*;
use crate::error::Retry;
use crate::testing::{
    applied_children, child_collection, child_path, converged, converges_and_is_idempotent,
    converse, deletion_is_released, drift_is_repaired, events_path, mock_shared,
    object_from_sample, path_of,
};

/// A kind with two child kinds and status fields of its own.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "test.example.com",
    version = "v1",
    kind = "Site",
    namespaced,
    status = "SiteStatus"
)]
pub struct SiteSpec {
    #[serde(default)]
    pages: Vec<String>,
    /// Where the child goes; empty: the site's namespace.
    #[serde(default)]
    elsewhere: String,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SiteStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pages: Option<usize>,
}

#[derive(Default)]
struct SiteReconciler;

impl Reconcile for SiteReconciler {
    type Kind = Site;
    type Children = (ConfigMap, Secret);
    const NAME: &'static str = "test-site";

    async fn desired(
        &self,
        site: &Site,
        _: &Context,
        observed: &Observed<'_>,
    ) -> Result<Desired<Self>> {
        let namespace = match site.spec.elsewhere.as_str() {
            "" => site.namespace(),
            other => Some(other.to_owned()),
        };
        let meta = |name: String| ObjectMeta {
            name: Some(name),
            namespace: namespace.clone(),
            ..ObjectMeta::default()
        };
        let pages = site.spec.pages.iter().map(|page| ConfigMap {
            metadata: meta(format!("{}-{page}", site.name_any())),
            ..ConfigMap::default()
        });
        let key = Secret {
            metadata: meta(format!("{}-key", site.name_any())),
            ..Secret::default()
        };
        let existing = observed.children::<ConfigMap>()?.len();
        Ok(Desired::new()
            .children(pages)?
            .child(key)?
            .status(SiteStatus {
                pages: Some(existing),
                conditions: vec![crate::status::condition(
                    "Published",
                    existing > 0,
                    "Pages",
                    format!("{existing} pages"),
                    site.meta().generation,
                )],
                ..SiteStatus::default()
            })?
            .prune::<ConfigMap>()
            .requeue_after(Duration::from_secs(90)))
    }
}

fn site(pages: &[&str]) -> Site {
    let pages = pages.join(", ");
    let sample = format!("kind: Site\nmetadata:\n  name: s\nspec:\n  pages: [{pages}]\n");
    object_from_sample(&format!("apiVersion: test.example.com/v1\n{sample}"))
}

/// `object` converged, its own status fields written too.
fn published(object: &Site, pages: usize) -> Site {
    let mut object = converged::<SiteReconciler>(object);
    let status = object.status.get_or_insert_default();
    status.pages = Some(pages);
    let mut published = crate::status::condition(
        "Published",
        pages > 0,
        "Pages",
        format!("{pages} pages"),
        Some(1),
    );
    let ready = &status.conditions[0];
    published.last_transition_time = ready.last_transition_time.clone();
    status.conditions.push(published);
    object
}

#[tokio::test]
async fn every_child_kind_is_created_owned_and_then_left_alone() {
    // The pattern checks of every scaffolded controller, on two kinds at once.
    converges_and_is_idempotent(SiteReconciler, site(&["home", "about"])).await;
    drift_is_repaired(SiteReconciler, site(&["home"])).await;
    deletion_is_released(SiteReconciler, site(&["home"])).await;
}

#[tokio::test]
async fn own_status_fields_are_applied_by_a_field_manager_of_their_own_and_only_when_they_change() {
    let object = converged::<SiteReconciler>(&site(&["home"]));
    let children = applied_children(&SiteReconciler, &object).await;
    let (shared, mut server) = mock_shared(SiteReconciler, children.clone());
    let status_path = format!("{}/status", path_of(&object));
    let reply = serde_json::to_value(&object).expect("serializes");
    let scenario = async move {
        let request = server
            .expect(Method::PATCH, &status_path, StatusCode::OK, reply)
            .await;
        assert!(
            request.query.contains("fieldManager=test-manager-status"),
            "{}",
            request.query
        );
        let status = &request.body["status"];
        assert_eq!(status["pages"], 1);
        assert_eq!(status["conditions"][0]["type"], "Published");
        assert_eq!(status["conditions"].as_array().map(Vec::len), Some(1));
        assert!(status.get("observedGeneration").is_none(), "{status}");
        server
    };
    let (action, requests) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    assert_eq!(
        action.expect("reconcile succeeds"),
        Action::requeue(Duration::from_secs(90)),
        "the kind's own requeue"
    );
    assert_eq!(requests.len(), 1, "{requests:?}");

    let object = published(&site(&["home"]), 1);
    let (shared, server) = mock_shared(SiteReconciler, children);
    let (_, requests) = converse(async move { server }, reconcile(Arc::new(object), shared)).await;
    assert!(requests.is_empty(), "nothing changed: {requests:?}");
}

#[tokio::test]
async fn children_of_a_pruned_kind_that_are_no_longer_desired_are_deleted() {
    let before = published(&site(&["home", "old"]), 2);
    let children = applied_children(&SiteReconciler, &before).await;
    let object = published(&site(&["home"]), 2);
    let mut old = children
        .iter()
        .find(|c| c["metadata"]["name"] == "s-old")
        .cloned()
        .expect("the old page");
    old["metadata"]["uid"] = json!("old-uid");
    let kept: Vec<Value> = (children.iter())
        .filter(|c| c["metadata"]["name"] != "s-old")
        .cloned()
        .chain([old.clone()])
        .collect();
    let (shared, mut server) = mock_shared(SiteReconciler, kept);
    let old_path = child_path::<SiteReconciler>(&old);
    let events = events_path(&object);
    let scenario = async move {
        let request = server
            .expect(Method::DELETE, &old_path, StatusCode::OK, old)
            .await;
        assert_eq!(
            request.body["preconditions"]["uid"], "old-uid",
            "only that object"
        );
        let event = server
            .expect(Method::POST, &events, StatusCode::CREATED, json!({}))
            .await;
        assert_eq!(event.body["reason"], "Deleted");
        server
    };
    let (action, _) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    assert!(action.is_ok(), "{action:?}");
}

/// A child the API server refuses does not keep the others from being written: each is tried,
/// the reconcile then fails with the first error (and is retried).
#[tokio::test]
async fn one_failing_child_does_not_stop_the_others() {
    let object = published(&site(&["home", "about"]), 2);
    let children = applied_children(&SiteReconciler, &object).await;
    let (shared, mut server) = mock_shared(SiteReconciler, Vec::<Value>::new());
    let status_path = format!("{}/status", path_of(&object));
    let events = events_path(&object);
    let reply = serde_json::to_value(&object).expect("serializes");
    let scenario = async move {
        let (home, rest) = children.split_first().expect("children");
        server
            .expect_error(
                Method::POST,
                &child_collection::<SiteReconciler>(home),
                StatusCode::SERVICE_UNAVAILABLE,
            )
            .await;
        for child in rest {
            server
                .expect(
                    Method::POST,
                    &child_collection::<SiteReconciler>(child),
                    StatusCode::CREATED,
                    child.clone(),
                )
                .await;
        }
        let status = server
            .expect(Method::PATCH, &status_path, StatusCode::OK, reply)
            .await;
        assert_eq!(status.body["status"]["conditions"][0]["status"], "False");
        server.expect_event(&events, "ApiError").await;
        server
    };
    let (result, requests) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    assert!(result.is_err(), "the first child's error");
    let created = requests.iter().filter(|r| r.method == Method::POST).count();
    assert!(created >= 3, "every child was tried: {requests:?}");
}

#[tokio::test]
async fn a_namespaced_objects_child_in_another_namespace_is_refused() {
    let mut object = converged::<SiteReconciler>(&site(&["home"]));
    object.spec.elsewhere = "other".into();
    let (shared, mut server) = mock_shared(SiteReconciler, Vec::<Value>::new());
    let status_path = format!("{}/status", path_of(&object));
    let events = events_path(&object);
    let reply = serde_json::to_value(&object).expect("serializes");
    let scenario = async move {
        let request = server
            .expect(Method::PATCH, &status_path, StatusCode::OK, reply)
            .await;
        let condition = &request.body["status"]["conditions"][0];
        assert_eq!(condition["status"], "False");
        let message = condition["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("must be in its namespace (testns)"),
            "{message}"
        );
        server
            .expect(Method::POST, &events, StatusCode::CREATED, json!({}))
            .await;
        server
    };
    let (result, _) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    let error = result.expect_err("refused");
    assert_eq!(error.retry(), Retry::OnChange, "{error}");
}

#[test]
fn a_child_of_a_kind_the_controller_does_not_declare_is_an_error() {
    let error = Desired::<SiteReconciler>::new()
        .child(k8s_openapi::api::core::v1::Service::default())
        .err()
        .expect("refused");
    assert!(
        error.to_string().contains("Service is not among"),
        "{error}"
    );
}
