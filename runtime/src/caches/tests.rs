use k8s_openapi::api::core::v1::ConfigMap;

use super::*;

/// An owner refused a child's name because another object holds it is looked at again as
/// soon as that object changes or goes away, not at the next slow retry.
#[test]
fn an_owner_waiting_for_a_name_is_released_when_its_holder_changes() {
    let cache = Typed::<ConfigMap> {
        children: watch::store_of(Vec::new()),
        names: watch::store_of(Vec::new()),
        filled: tokio::sync::watch::channel(CHILDREN | NAMES).1,
        waiting: Waiting::default(),
        owners: Owners::default(),
        unseen: Arc::default(),
    };
    let owner = OwnerReference {
        api_version: "example.com/v1".into(),
        kind: "Blog".into(),
        name: "b".into(),
        uid: "blog-uid".into(),
        controller: Some(true),
        ..OwnerReference::default()
    };
    cache.wait_for("ns", "taken", &owner, Some("ns".into()));
    cache.wait_for("ns", "taken", &owner, Some("ns".into()));
    assert!(release(&cache.waiting, "ns", "other").is_none());
    let released = release(&cache.waiting, "ns", "taken").expect("waiting");
    assert_eq!(released.len(), 1, "once per owner");
    assert_eq!(released[0].reference.uid, "blog-uid");
    assert!(
        release(&cache.waiting, "ns", "taken").is_none(),
        "released once"
    );
}

/// The names cache keeps keys and owner references only, not the annotations (a
/// `last-applied-configuration` of up to 256 KiB) of every object of the kind.
#[test]
fn the_names_cache_keeps_keys_and_owners_only() {
    let mut other = ConfigMap::default();
    let meta = other.meta_mut();
    meta.name = Some("n".into());
    meta.namespace = Some("ns".into());
    meta.uid = Some("u".into());
    meta.annotations = Some([("big".into(), "x".repeat(100_000))].into());
    meta.labels = Some([("a".into(), "b".into())].into());
    meta.owner_references = Some(vec![OwnerReference::default()]);
    let cache = filled::filled::<ConfigMap>(
        Vec::new(),
        vec![serde_json::to_value(&other).expect("json")],
    );
    let kept = cache.other("ns", "n").expect("decodes").expect("cached");
    let text = kept.to_string();
    assert!(text.len() < 300, "{text}");
    assert_eq!(kept["metadata"]["uid"], "u");
    assert!(kept["metadata"]["ownerReferences"].is_array());
}

/// However often an owner's children change while the controller is busy, it is queued
/// once; and it is queued again once taken.
#[tokio::test]
async fn an_owner_is_pending_once_however_often_its_children_change() {
    use futures::StreamExt;
    let owner = |uid: &str| Owner {
        reference: OwnerReference {
            uid: uid.into(),
            ..OwnerReference::default()
        },
        namespace: None,
    };
    let pending = Pending::default();
    for _ in 0..1000 {
        pending.push(owner("a"));
    }
    pending.push(owner("b"));
    assert_eq!(lock(&pending.0.queue).1.len(), 2);
    let mut stream = pending.clone().stream();
    let first = stream.next().await.map(|o| o.reference.uid);
    assert_eq!(first.as_deref(), Some("a"));
    pending.push(owner("a"));
    let next: Vec<_> = stream.take(2).map(|o| o.reference.uid).collect().await;
    assert_eq!(next, ["b", "a"]);
}
