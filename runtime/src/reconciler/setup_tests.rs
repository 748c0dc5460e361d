use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::ObjectMeta;

use super::*;
use crate::{Desired, Observed, Result};

/// Deployments stand in for a kind of the project's own: one that references a Secret.
type Owner = k8s_openapi::api::apps::v1::Deployment;

struct Referrer;

impl Reconcile for Referrer {
    type Kind = Owner;
    type Children = ();
    const NAME: &'static str = "test-referrer";

    async fn desired(&self, _: &Owner, _: &Context, _: &Observed<'_>) -> Result<Desired<Self>> {
        Ok(Desired::new())
    }
}

fn owner(name: &str, secret: &str) -> Owner {
    Owner {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            annotations: Some([("secret".to_owned(), secret.to_owned())].into()),
            generation: Some(1),
            ..ObjectMeta::default()
        },
        ..Owner::default()
    }
}

fn secret_named(object: &Owner) -> Vec<ObjectRef<Secret>> {
    let namespace = object.namespace().unwrap_or_default();
    (object.annotations().get("secret").into_iter())
        .map(|name| ObjectRef::new(name).within(&namespace))
        .collect()
}

fn changed<C: Child>(object: C) -> Meta {
    Meta {
        key: key_of(&object),
        labels: object.labels().clone(),
        object: Box::new(object),
    }
}

fn secret(name: &str, labels: &[(&str, &str)]) -> Secret {
    let labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            labels: Some(labels.collect()),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    }
}

fn names(refs: Vec<ObjectRef<Owner>>) -> Vec<String> {
    let named =
        |r: &ObjectRef<Owner>| format!("{}/{}", r.namespace.as_deref().unwrap_or(""), r.name);
    refs.iter().map(named).collect()
}

/// A Secret maps to every object that references it, as the objects say now: a change
/// of the reference moves the object's entry, a deleted object has none.
#[test]
fn a_referenced_object_maps_to_the_objects_that_reference_it() {
    let watch = Watch::<Referrer>::referenced(secret_named);
    let index = watch.index().expect("a referenced watch keeps an index");
    let map = Map::<Referrer>::Referenced(Some(index.index.clone()));
    index.apply(&watcher::Event::Apply(owner("a", "creds")));
    index.apply(&watcher::Event::Apply(owner("b", "creds")));
    index.apply(&watcher::Event::Apply(owner("c", "other")));
    let creds = changed(secret("creds", &[]));
    assert_eq!(names(map.objects(&creds)), ["ns/a", "ns/b"]);
    index.apply(&watcher::Event::Apply(owner("b", "other")));
    index.apply(&watcher::Event::Delete(owner("a", "creds")));
    assert!(map.objects(&creds).is_empty());
    assert_eq!(
        names(map.objects(&changed(secret("other", &[])))),
        ["ns/b", "ns/c"]
    );
}

#[test]
fn a_labelled_object_maps_to_the_object_its_label_names() {
    let watch = Watch::<Referrer>::labelled::<Secret>("example.com/owner");
    assert_eq!(watch.selector.labels.as_deref(), Some("example.com/owner"));
    let map = Map::<Referrer>::Labelled("example.com/owner".into());
    let labelled = changed(secret("s", &[("example.com/owner", "web")]));
    assert_eq!(names(map.objects(&labelled)), ["ns/web"]);
    assert!(map.objects(&changed(secret("s", &[]))).is_empty());
}

#[test]
fn a_mapped_object_maps_by_the_function() {
    fn by_data(config: &ConfigMap) -> Vec<ObjectRef<Owner>> {
        let data = config.data.iter().flatten();
        data.map(|(_, name)| ObjectRef::new(name).within("ns"))
            .collect()
    }
    let Mapping::Mapped(map) = Watch::<Referrer>::mapped(by_data).map else {
        panic!("a mapped watch")
    };
    let map = Map::<Referrer>::Mapped(map);
    let config = ConfigMap {
        data: Some(
            [
                ("a".to_owned(), "x".to_owned()),
                ("b".to_owned(), "y".to_owned()),
            ]
            .into(),
        ),
        ..ConfigMap::default()
    };
    assert_eq!(names(map.objects(&changed(config))), ["ns/x", "ns/y"]);
}

#[test]
fn every_object_is_reconciled_on_a_change_of_a_kind_watched_whole() {
    let (store, mut writer) = reflector::store::<Owner>();
    writer.apply_watcher_event(&watcher::Event::Apply(owner("a", "")));
    writer.apply_watcher_event(&watcher::Event::Apply(owner("b", "")));
    let mut all = names(Map::<Referrer>::All(store).objects(&changed(secret("s", &[]))));
    all.sort();
    assert_eq!(all, ["ns/a", "ns/b"]);
}

/// The generation always triggers, labels and annotations only when asked for, and a
/// status write never does.
#[test]
fn triggers_are_the_generation_and_what_was_opted_in() {
    let base = owner("a", "creds");
    let mut relabelled = base.clone();
    relabelled.labels_mut().insert("tier".into(), "gold".into());
    let mut annotated = base.clone();
    annotated
        .annotations_mut()
        .insert("restartedAt".into(), "now".into());
    let mut with_status = base.clone();
    with_status.status = Some(Default::default());
    let mut next = base.clone();
    next.metadata.generation = Some(2);

    let plain = Setup::<Referrer>::default().trigger_key();
    assert_ne!(plain(&base), plain(&next));
    assert_eq!(plain(&base), plain(&relabelled));
    assert_eq!(plain(&base), plain(&annotated));
    assert_eq!(plain(&base), plain(&with_status));

    let labels = Setup::<Referrer>::default().on_labels().trigger_key();
    assert_ne!(labels(&base), labels(&relabelled));
    assert_eq!(labels(&base), labels(&annotated));

    let annotations = Setup::<Referrer>::default().on_annotations().trigger_key();
    assert_ne!(annotations(&base), annotations(&annotated));
    assert_eq!(annotations(&base), annotations(&with_status));

    // `Deployment.spec` is an `Option` under Kubernetes 1.36 and before: read and write it as
    // JSON, so that the test builds under every version.
    fn replicas(object: &Owner) -> u64 {
        let object = serde_json::to_value(object).unwrap_or_default();
        object["spec"]["replicas"].as_u64().unwrap_or(0)
    }
    let custom = Setup::<Referrer>::default()
        .on_change(replicas)
        .trigger_key();
    let mut scaled = serde_json::to_value(&base).expect("JSON");
    scaled["spec"]["replicas"] = 3.into();
    let scaled: Owner = serde_json::from_value(scaled).expect("a Deployment");
    assert_ne!(custom(&base), custom(&scaled));
    assert_eq!(custom(&base), custom(&relabelled));
}

#[test]
fn options_override_the_managers_and_selectors_scope_the_watch() {
    let setup = Setup::<Referrer>::default()
        .concurrency(0)
        .resync(Duration::from_secs(60))
        .labels("tier=gold")
        .fields("metadata.name=main");
    assert_eq!(setup.concurrency, Some(1), "at least one worker");
    assert_eq!(setup.resync, Some(Duration::from_secs(60)));
    let config = setup.selector.config();
    assert_eq!(config.label_selector.as_deref(), Some("tier=gold"));
    assert_eq!(config.field_selector.as_deref(), Some("metadata.name=main"));
    let watch = Watch::<Referrer>::all::<Secret>()
        .labels("app=web")
        .fields("type=x");
    let config = watch.selector.config();
    assert_eq!(config.label_selector.as_deref(), Some("app=web"));
    assert_eq!(config.field_selector.as_deref(), Some("type=x"));
}

/// A watch of `PartialObjectMeta<K>` caches metadata only, and is read as such.
#[tokio::test]
async fn a_metadata_only_watch_is_read_as_metadata() {
    use kube::core::PartialObjectMeta;
    fn named(object: &Owner) -> Vec<ObjectRef<PartialObjectMeta<Secret>>> {
        let namespace = object.namespace().unwrap_or_default();
        vec![ObjectRef::new("creds").within(&namespace)]
    }
    let setup = Setup::<Referrer>::default().watch(Watch::referenced(named));
    let secret = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "ns", "labels": {"rotated": "yes"}},
    });
    let lookups = setup.filled(&[secret]);
    let caches = crate::children::Caches { kinds: Vec::new() };
    let observed = Observed::new(&caches, &lookups, "u".into());
    let found = observed.get(&named(&owner("a", ""))[0]).expect("watched");
    let labels = found.map(|meta| meta.labels().clone()).unwrap_or_default();
    assert_eq!(labels.get("rotated").map(String::as_str), Some("yes"));
}
