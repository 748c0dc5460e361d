//! The create-then-apply hand-over: a child this manager created keeps its fields in an
//! `Update` entry of its managed fields, which no apply prunes, until an update hands them over.

use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;
use kube::api::ObjectMeta;
use serde_json::{Value, json};

use super::*;
use crate::testing::{converged, converse, events_path, mock_shared, path_of};

/// A converged Thing, its child, and the child as cached: applied for another value (the
/// hash differs), so that a reconcile updates it.
async fn child_applied_for_another_value() -> (Thing, ConfigMap, ConfigMap) {
    let object = converged::<ThingReconciler>(&thing("a"));
    let children = applied_children(&object).await;
    let child = children[0].clone();
    let mut cached = child.clone();
    cached
        .annotations_mut()
        .insert(APPLIED.into(), "0ld".into());
    (object, child, cached)
}

/// This manager's entry of a child's managed fields.
fn managed_entry(operation: &str, fields: Value) -> Value {
    json!({
        "manager": crate::testing::MANAGER, "operation": operation, "apiVersion": "v1",
        "fieldsType": "FieldsV1", "fieldsV1": fields,
    })
}

/// A child this manager created has its fields in the manager's `Update` entry, which no
/// apply prunes: its first update hands them to the `Apply` entry (guarded by the resource
/// version) and applies again, so that a key the spec dropped is removed.
#[tokio::test]
async fn the_first_update_of_a_created_child_hands_its_fields_to_the_apply() {
    let (object, child, cached) = child_applied_for_another_value().await;
    let mut applied = serde_json::to_value(&child).expect("serializes");
    applied["metadata"]["resourceVersion"] = json!("7");
    applied["metadata"]["managedFields"] = json!([
        managed_entry("Update", json!({"f:data": {".": {}, "f:dropped": {}}})),
        managed_entry("Apply", json!({"f:data": {"f:value": {}}})),
        {"manager": "someone-else", "operation": "Update", "apiVersion": "v1"},
    ]);
    let mut reply = serde_json::to_value(&child).expect("serializes");
    reply["metadata"]["resourceVersion"] = json!("8");
    let (shared, mut server) = mock_shared(ThingReconciler, vec![cached]);
    let child_path = path_of(&child);
    let events = events_path(&object);
    let scenario = async move {
        let first = server
            .expect(Method::PATCH, &child_path, StatusCode::OK, applied)
            .await;
        assert!(first.query.contains("force=true"), "{}", first.query);
        let handover = server
            .expect(Method::PATCH, &child_path, StatusCode::OK, reply.clone())
            .await;
        let metadata = &handover.body["metadata"];
        assert_eq!(metadata["resourceVersion"], "7", "guarded by the version");
        let entries = metadata["managedFields"].as_array().expect("entries");
        assert_eq!(entries.len(), 2, "the Update entry is gone: {entries:?}");
        assert_eq!(entries[0]["operation"], "Apply");
        assert_eq!(
            entries[0]["fieldsV1"],
            json!({"f:data": {".": {}, "f:dropped": {}, "f:value": {}}}),
            "the create's fields join the apply's"
        );
        assert_eq!(
            entries[1]["manager"], "someone-else",
            "others' entries stay"
        );
        let again = server
            .expect(Method::PATCH, &child_path, StatusCode::OK, reply)
            .await;
        assert!(again.query.contains("force=true"), "applied again");
        assert_eq!(again.body["data"], json!({"value": "a"}));
        server
            .expect(Method::POST, &events, StatusCode::CREATED, json!({}))
            .await;
        server
    };
    let (action, _) = converse(scenario, reconcile(Arc::new(object.clone()), shared)).await;
    assert_eq!(action.expect("reconcile succeeds"), Action::await_change());
    assert!(
        hand_over_created_fields(child.meta(), crate::testing::MANAGER).is_none(),
        "nothing to hand over without an Update entry"
    );
}

/// While the apply sets every field the create did, the `Update` entry keeps no field alone:
/// an update that changes values only is one write, and the handover waits for an apply that
/// stops setting one (the API server's entries, as a 1.37 API server records them).
#[tokio::test]
async fn an_update_of_values_only_is_one_write() {
    let (object, child, cached) = child_applied_for_another_value().await;
    let owner = json!({"k:{\"uid\":\"u\"}": {}});
    let apply = json!({
        "f:data": {"f:value": {}},
        "f:metadata": {"f:annotations": {"f:a": {}}, "f:ownerReferences": owner},
    });
    let mut created_owner = owner.clone();
    created_owner["."] = json!({});
    let create = json!({
        "f:data": {".": {}},
        "f:metadata": {"f:annotations": {}, "f:ownerReferences": created_owner},
    });
    let mut applied = serde_json::to_value(&child).expect("serializes");
    applied["metadata"]["resourceVersion"] = json!("8");
    applied["metadata"]["managedFields"] = json!([
        managed_entry("Apply", apply),
        managed_entry("Update", create)
    ]);
    let meta: ObjectMeta = serde_json::from_value(applied["metadata"].clone()).expect("metadata");
    assert!(hand_over_created_fields(&meta, crate::testing::MANAGER).is_none());
    let (shared, mut server) = mock_shared(ThingReconciler, vec![cached]);
    let child_path = path_of(&child);
    let events = events_path(&object);
    let scenario = async move {
        server
            .expect(Method::PATCH, &child_path, StatusCode::OK, applied)
            .await;
        let next = server
            .expect(Method::POST, &events, StatusCode::CREATED, json!({}))
            .await;
        assert_eq!(
            next.body["reason"], "Updated",
            "no handover: {:?}",
            next.body
        );
        server
    };
    let (action, _) = converse(scenario, reconcile(Arc::new(object.clone()), shared)).await;
    assert_eq!(action.expect("reconcile succeeds"), Action::await_change());

    // An apply that no longer sets a created field leaves it to the `Update` entry: handed over.
    let with = |applied: Value, created: Value| {
        let mut meta = meta.clone();
        let entries = meta.managed_fields.as_mut().expect("entries");
        entries[0].fields_v1 = Some(FieldsV1(applied));
        entries[1].fields_v1 = Some(FieldsV1(created));
        hand_over_created_fields(&meta, crate::testing::MANAGER)
    };
    let data = json!({"f:data": {"f:value": {}}});
    assert!(with(data, json!({"f:data": {".": {}, "f:gone": {}}})).is_some());
    // Nor does a map the apply no longer sets anything in count as applied.
    assert!(with(json!({"f:data": {}}), json!({"f:data": {".": {}}})).is_some());
}
