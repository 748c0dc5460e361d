//! What real operators do past "children from the spec": readiness that waits for children,
//! deletion asked by `desired()`, cluster-scoped children, and reads of watched kinds.

use http::{Method, StatusCode};
use k8s_openapi::api::{
    core::v1::{ConfigMap, Namespace},
    rbac::v1::ClusterRole,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, api::ObjectMeta, runtime::reflector::ObjectRef};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::super::*;
use crate::testing::{
    applied_children, converged, converges_and_is_idempotent, converse, deletion_is_released,
    desired_with, drift_is_repaired, events_path, mock_shared, object_from_sample, path_of,
};

/// A kind whose spec names a ConfigMap to read, a child to delete, and whether to wait.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "test.example.com",
    version = "v1",
    kind = "Gate",
    namespaced,
    status = "GateStatus"
)]
pub struct GateSpec {
    #[serde(default)]
    wait: bool,
    #[serde(default)]
    drop: String,
    #[serde(default)]
    config: String,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateStatus {
    #[serde(default)]
    conditions: Vec<Condition>,
    observed_generation: Option<i64>,
}

#[derive(Default)]
struct GateReconciler;

impl Reconcile for GateReconciler {
    type Kind = Gate;
    type Children = (ConfigMap,);
    const NAME: &'static str = "test-gate";

    fn setup(&self) -> Setup<Self> {
        Setup::default().watch(Watch::referenced(|gate: &Gate| {
            let namespace = gate.namespace().unwrap_or_default();
            vec![ObjectRef::<ConfigMap>::new(&gate.spec.config).within(&namespace)]
        }))
    }

    async fn desired(
        &self,
        gate: &Gate,
        _: &Context,
        observed: &Observed<'_>,
    ) -> Result<Desired<Self>> {
        let namespace = gate.namespace().unwrap_or_default();
        // The value the referenced ConfigMap holds, if it exists yet.
        let reference = ObjectRef::<ConfigMap>::new(&gate.spec.config).within(&namespace);
        let value = (observed.get(&reference)?)
            .and_then(|config| config.data.as_ref()?.get("value").cloned())
            .unwrap_or_default();
        let mut desired = Desired::new().child(ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("{}-a", gate.name_any())),
                namespace: Some(namespace),
                ..ObjectMeta::default()
            },
            data: Some([("value".to_owned(), value)].into()),
            ..ConfigMap::default()
        })?;
        for child in observed.children::<ConfigMap>()? {
            if child.name_any() == gate.spec.drop {
                desired = desired.delete(&child)?;
            }
        }
        if gate.spec.wait {
            desired = desired.progressing("ChildNotAvailable", "0 of 1 replicas available");
        }
        Ok(desired)
    }
}

fn gate(spec: &str) -> Gate {
    let sample = format!("kind: Gate\nmetadata:\n  name: g\nspec: {spec}\n");
    object_from_sample(&format!("apiVersion: test.example.com/v1\n{sample}"))
}

fn child_json(name: &str, uid: &str, owner: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": name, "namespace": "testns", "uid": uid, "resourceVersion": "1",
            "labels": { MANAGED_BY: crate::testing::MANAGER },
            "ownerReferences": [{
                "apiVersion": "test.example.com/v1", "kind": "Gate", "name": "g",
                "uid": owner, "controller": true,
            }],
        },
    })
}

/// A child that is not available yet holds the owner `Ready=False` with the reconciler's
/// reason and `Reconciling=True`, as kstatus reads it: no Warning event, no error, so no
/// backoff; a second reconcile writes nothing.
#[tokio::test]
async fn a_progressing_object_is_not_ready_without_an_error_an_event_or_backoff() {
    let object = gate("{wait: true}");
    let children = applied_children(&GateReconciler, &object).await;
    let (shared, mut server) = mock_shared(GateReconciler, children.clone());
    let status_path = format!("{}/status", path_of(&object));
    let reply = serde_json::to_value(&object).expect("serializes");
    let scenario = async move {
        let request = server
            .expect(Method::PATCH, &status_path, StatusCode::OK, reply)
            .await;
        let conditions = &request.body["status"]["conditions"];
        assert_eq!(conditions[0]["type"], "Ready");
        assert_eq!(conditions[0]["status"], "False");
        assert_eq!(conditions[0]["reason"], "ChildNotAvailable");
        assert_eq!(conditions[0]["message"], "0 of 1 replicas available");
        assert_eq!(conditions[1]["type"], "Reconciling");
        assert_eq!(conditions[1]["status"], "True");
        assert_eq!(conditions.as_array().map(Vec::len), Some(2));
        assert_eq!(request.body["status"]["observedGeneration"], 1);
        server
    };
    let (action, requests) = converse(scenario, reconcile(Arc::new(object.clone()), shared)).await;
    assert_eq!(action.expect("no error"), Action::await_change());
    assert!(
        requests.iter().all(|r| !r.path.contains("/events")),
        "no event: {requests:?}"
    );

    // As written: nothing more to write.
    let mut written = serde_json::to_value(&object).expect("serializes");
    written["status"] = requests[0].body["status"].clone();
    let written: Gate = serde_json::from_value(written).expect("a Gate");
    let (shared, server) = mock_shared(GateReconciler, children);
    let (action, requests) =
        converse(async move { server }, reconcile(Arc::new(written), shared)).await;
    assert_eq!(action.expect("no error"), Action::await_change());
    assert!(requests.is_empty(), "{requests:?}");
}

/// Once ready, `Reconciling` goes: the reconciler applies only the conditions it holds.
#[tokio::test]
async fn a_ready_object_drops_reconciling() {
    let mut object = converged::<GateReconciler>(&gate("{}"));
    let status = object.status.get_or_insert_default();
    status.conditions[0].status = "False".into();
    status.conditions[0].reason = "ChildNotAvailable".into();
    let mut reconciling = status.conditions[0].clone();
    reconciling.type_ = "Reconciling".into();
    reconciling.status = "True".into();
    status.conditions.push(reconciling);
    let children = applied_children(&GateReconciler, &object).await;
    let (shared, mut server) = mock_shared(GateReconciler, children);
    let status_path = format!("{}/status", path_of(&object));
    let reply = serde_json::to_value(&object).expect("serializes");
    let scenario = async move {
        let request = server
            .expect(Method::PATCH, &status_path, StatusCode::OK, reply)
            .await;
        let conditions = request.body["status"]["conditions"].as_array().cloned();
        let conditions = conditions.expect("conditions");
        assert_eq!(conditions.len(), 1, "{conditions:?}");
        assert_eq!(conditions[0]["type"], "Ready");
        assert_eq!(conditions[0]["status"], "True");
        server
    };
    let (action, _) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    action.expect("no error");
}

/// `desired()` asks for a child to go; the reconciler deletes that very object (its UID as a
/// precondition), with an event, after applying the rest.
#[tokio::test]
async fn a_child_desired_asks_to_delete_is_deleted_by_uid() {
    let object = converged::<GateReconciler>(&gate("{drop: old}"));
    let mut children = applied_children(&GateReconciler, &object).await;
    children.push(child_json(
        "old",
        "old-uid",
        "7a1e4c2d-0000-4000-8000-000000000001",
    ));
    let (shared, mut server) = mock_shared(GateReconciler, children);
    let events = events_path(&object);
    let scenario = async move {
        let request = server
            .expect(
                Method::DELETE,
                "/api/v1/namespaces/testns/configmaps/old",
                StatusCode::OK,
                json!({}),
            )
            .await;
        assert_eq!(request.body["preconditions"]["uid"], "old-uid");
        assert_eq!(request.body["propagationPolicy"], "Background");
        let event = server
            .expect(Method::POST, &events, StatusCode::CREATED, json!({}))
            .await;
        assert_eq!(event.body["reason"], "Deleted");
        server
    };
    let (action, _) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    action.expect("deleted");
}

/// A deletion is refused for an object the owner does not control, and one already gone (or
/// replaced by a new object of its name, a 409 on the UID precondition) is no failure.
#[tokio::test]
async fn a_deletion_is_refused_for_others_objects_and_fine_when_gone() {
    let object = converged::<GateReconciler>(&gate("{drop: old}"));
    let owned = applied_children(&GateReconciler, &object).await;
    let old = child_json("old", "old-uid", "7a1e4c2d-0000-4000-8000-000000000001");
    let (shared, mut server) =
        mock_shared(GateReconciler, [owned.clone(), vec![old.clone()]].concat());
    let scenario = async move {
        server
            .expect_error(
                Method::DELETE,
                "/api/v1/namespaces/testns/configmaps/old",
                StatusCode::CONFLICT,
            )
            .await;
        server
    };
    let (action, _) = converse(scenario, reconcile(Arc::new(object.clone()), shared)).await;
    action.expect("a 409 on the precondition: another object of that name, left alone");

    // What `desired()` saw was this owner's, but the cache now shows another's: refused.
    let reconciler = GateReconciler;
    let observed_children = [owned.clone(), vec![old.clone()]].concat();
    let desired = desired_with(&reconciler, &object, &observed_children, &[]).await;
    let mut others = old;
    others["metadata"]["ownerReferences"][0]["uid"] = "someone-else".into();
    let (shared, server) = mock_shared(GateReconciler, [owned, vec![others]].concat());
    let refused = apply::write(&object, &desired, &shared).await;
    assert!(
        refused.is_err_and(|e| e.to_string().contains("does not control")),
        "refused"
    );
    drop(shared);
    assert!(server.done().await.is_empty());
}

/// A watched kind's objects are read from its cache: no request per reconcile.
#[tokio::test]
async fn a_watched_kind_is_read_from_its_cache() {
    let object = gate("{config: settings}");
    let settings = ConfigMap {
        metadata: ObjectMeta {
            name: Some("settings".into()),
            namespace: Some("testns".into()),
            ..ObjectMeta::default()
        },
        data: Some([("value".to_owned(), "42".to_owned())].into()),
        ..ConfigMap::default()
    };
    let mut settings = serde_json::to_value(settings).expect("serializes");
    settings["apiVersion"] = "v1".into();
    settings["kind"] = "ConfigMap".into();
    let desired = desired_with(&GateReconciler, &object, &[], &[settings]).await;
    assert_eq!(desired.children[0]["data"]["value"], "42");
    // Not there yet: no error, the default.
    let desired = desired_with(&GateReconciler, &object, &[], &[]).await;
    assert_eq!(desired.children[0]["data"]["value"], "");
}

/// Reading a kind the controller does not watch is an error saying what to add.
#[tokio::test]
async fn reading_an_unwatched_kind_says_to_watch_it() {
    let caches = Caches::filled(Vec::new(), Vec::new(), Vec::new());
    let lookups = Lookups::default();
    let observed = Observed::new(&caches, &lookups, "u".into());
    let error = observed.list::<ConfigMap>().err().map(|e| e.to_string());
    assert!(error.is_some_and(|e| e.contains("Watch") && e.contains("ConfigMap")));
}

/// A cluster-scoped kind with cluster-scoped children: a Namespace and a ClusterRole of its
/// own, created, left alone once converged, repaired, released.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "test.example.com",
    version = "v1",
    kind = "Realm",
    status = "GateStatus"
)]
pub struct RealmSpec {}

#[derive(Default)]
struct RealmReconciler;

impl Reconcile for RealmReconciler {
    type Kind = Realm;
    type Children = (Namespace, ClusterRole);
    const NAME: &'static str = "test-realm";

    async fn desired(&self, realm: &Realm, _: &Context, _: &Observed<'_>) -> Result<Desired<Self>> {
        let meta = |name: String| ObjectMeta {
            name: Some(name),
            ..ObjectMeta::default()
        };
        Desired::new()
            .child(Namespace {
                metadata: meta(format!("realm-{}", realm.name_any())),
                ..Namespace::default()
            })?
            .child(ClusterRole {
                metadata: meta(format!("realm-{}-reader", realm.name_any())),
                ..ClusterRole::default()
            })
    }
}

fn realm() -> Realm {
    object_from_sample(
        "apiVersion: test.example.com/v1\nkind: Realm\nmetadata:\n  name: r\nspec: {}\n",
    )
}

#[tokio::test]
async fn a_cluster_scoped_kind_owns_cluster_scoped_children() {
    let children = applied_children(&RealmReconciler, &realm()).await;
    assert_eq!(
        crate::testing::child_collection::<RealmReconciler>(&children[0]),
        "/api/v1/namespaces"
    );
    assert_eq!(
        crate::testing::child_collection::<RealmReconciler>(&children[1]),
        "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    );
    converges_and_is_idempotent(RealmReconciler, realm()).await;
    drift_is_repaired(RealmReconciler, realm()).await;
    deletion_is_released(RealmReconciler, realm()).await;
}

/// A namespaced object cannot own a cluster-scoped child (the garbage collector would delete
/// it at once): refused, naming why.
#[derive(Default)]
struct Misplaced;

impl Reconcile for Misplaced {
    type Kind = Gate;
    type Children = (Namespace,);
    const NAME: &'static str = "test-misplaced";

    async fn desired(&self, gate: &Gate, _: &Context, _: &Observed<'_>) -> Result<Desired<Self>> {
        Desired::new().child(Namespace {
            metadata: ObjectMeta {
                name: Some(gate.name_any()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        })
    }
}

#[tokio::test]
async fn a_namespaced_owner_of_a_cluster_scoped_child_is_refused() {
    let object = gate("{}");
    let (shared, mut server) = mock_shared(Misplaced, Vec::<Value>::new());
    let status_path = format!("{}/status", path_of(&object));
    let events = events_path(&object);
    let scenario = async move {
        let request = server
            .expect(Method::PATCH, &status_path, StatusCode::OK, json!({}))
            .await;
        let message = request.body["status"]["conditions"][0]["message"].clone();
        assert!(
            message
                .as_str()
                .is_some_and(|m| m.contains("cannot own a cluster-scoped child")),
            "{message}"
        );
        server
            .expect(Method::POST, &events, StatusCode::CREATED, json!({}))
            .await;
        server
    };
    let (action, _) = converse(scenario, reconcile(Arc::new(object), shared)).await;
    assert!(action.is_err());
}

/// The scaffolded pattern checks hold for a controller that is not ready yet.
#[tokio::test]
async fn the_pattern_checks_hold_for_a_progressing_controller() {
    converges_and_is_idempotent(GateReconciler, gate("{wait: true}")).await;
    drift_is_repaired(GateReconciler, gate("{wait: true}")).await;
}
