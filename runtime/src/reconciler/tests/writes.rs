//! The review's scenarios of a child that is written while the cache lags or the API server
//! refuses it, and of the message people read.
use super::*;

/// A create answered 409 (a reconcile of another replica created the child, the cache does
/// not show it yet): not a failure, no `Ready=False`, no Warning; the cache brings it.
#[tokio::test]
async fn a_child_the_cache_does_not_show_yet_is_no_failure() {
    let object = converged::<ThingReconciler>(&thing("a"));
    let (shared, mut server) = mock_shared(ThingReconciler, NONE);
    let collection = "/api/v1/namespaces/testns/configmaps";
    let scenario = async move {
        server
            .expect_error(Method::POST, collection, StatusCode::CONFLICT)
            .await;
        server
    };
    let (action, requests) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    action.expect("no failure");
    assert_eq!(requests.len(), 1, "no status, no event: {requests:?}");
}

/// A child this manager created a moment ago, which the cache does not show yet, is not
/// created again by the next reconcile (another child's event, or the owner's, can come
/// first): the API server would refuse it (409) after its work. Its own event brings the owner
/// back.
#[tokio::test]
async fn a_child_just_created_is_not_created_again_before_the_cache_shows_it() {
    let object = converged::<ThingReconciler>(&thing("a"));
    let (shared, mut server) = mock_shared(ThingReconciler, NONE);
    let collection = "/api/v1/namespaces/testns/configmaps";
    let events = events_path(&object);
    let mut child = serde_json::to_value(&applied_children(&object).await[0]).expect("JSON");
    child["metadata"]["uid"] = json!("child-uid");
    child["metadata"]["resourceVersion"] = json!("2");
    let scenario = async move {
        (server.expect(Method::POST, collection, StatusCode::CREATED, child)).await;
        server.expect_event(&events, "Created").await;
        server
    };
    let object = Arc::new(object);
    let twice = async {
        let first = reconcile(object.clone(), shared.clone()).await;
        (first, reconcile(object, shared).await)
    };
    let ((first, second), requests) = converse(scenario, twice).await;
    first.expect("created");
    second.expect("no failure");
    let creates = (requests.iter()).filter(|r| r.method == Method::POST && r.path == collection);
    assert_eq!(creates.count(), 1, "created once: {requests:?}");
}

/// A 422 on a child (a policy webhook, a child CRD that lags) is retried with backoff, not
/// when the owner changes; its message is the API server's, not a `Debug` dump.
#[tokio::test]
async fn a_refused_child_is_retried_with_backoff_and_says_why_plainly() {
    let object = converged::<ThingReconciler>(&thing("a"));
    let (shared, mut server) = mock_shared(ThingReconciler, NONE);
    let collection = "/api/v1/namespaces/testns/configmaps";
    let status_path = format!("{}/status", path_of(&object));
    let events = events_path(&object);
    let scenario = async move {
        let denied = json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 422,
            "reason": "Invalid",
            "message": "admission webhook \"policy.example.com\" denied the request: no",
        });
        server
            .expect(
                Method::POST,
                collection,
                StatusCode::UNPROCESSABLE_ENTITY,
                denied,
            )
            .await;
        let request = server
            .expect(Method::PATCH, &status_path, StatusCode::OK, json!({}))
            .await;
        let message = request.body["status"]["conditions"][0]["message"].clone();
        assert_eq!(
            message,
            "ConfigMap testns/t was refused: Kubernetes API error: admission webhook \
             \"policy.example.com\" denied the request: no (Invalid, code 422)"
        );
        assert_eq!(
            request.body["status"]["conditions"][0]["reason"],
            "ChildRefused"
        );
        let conditions = request.body["status"]["conditions"]
            .as_array()
            .map(Vec::len);
        assert_eq!(conditions, Some(1), "not Stalled: it is retried");
        server.expect_event(&events, "ChildRefused").await;
        server
    };
    let (action, _) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    let error = action.expect_err("refused");
    assert_eq!(error.retry(), Retry::Backoff);
    assert!(!format!("{error}").contains("Status {"), "{error}");
}

/// Asks for its ConfigMap without a namespace (a bug in `desired`), pruning ConfigMaps.
#[derive(Default)]
struct Unplaced;

impl Reconcile for Unplaced {
    type Kind = Thing;
    type Children = (ConfigMap,);
    const NAME: &'static str = "test-unplaced";

    async fn desired(&self, _: &Thing, _: &Context, _: &Observed<'_>) -> Result<Desired<Self>> {
        let mut child = ConfigMap::default();
        child.metadata.name = Some("t".into());
        Ok(Desired::new().child(child)?.prune::<ConfigMap>())
    }
}

/// A child that fails before it has a namespace is not told from its existing copy: that
/// copy is not pruned.
#[tokio::test]
async fn a_child_without_a_namespace_does_not_prune_its_copy() {
    let object = converged::<ThingReconciler>(&thing("a"));
    let existing = applied_children(&object).await;
    let existing = cached(&existing[0], "child-uid", "3");
    let (shared, mut server) = mock_shared(Unplaced, vec![existing]);
    let status_path = format!("{}/status", path_of(&object));
    let events = events_path(&object);
    let scenario = async move {
        server
            .expect(Method::PATCH, &status_path, StatusCode::OK, json!({}))
            .await;
        server.expect_event(&events, "ReconcileError").await;
        server
    };
    let (action, requests) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    assert!(action.is_err());
    assert!(
        requests.iter().all(|r| r.method != Method::DELETE),
        "{requests:?}"
    );
}
