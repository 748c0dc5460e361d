//! Caches filled by hand, for tests: the reconciler's, and a project's controller tests.

use std::sync::Arc;

use kube::core::PartialObjectMeta;
use serde_json::Value;

use super::{CHILDREN, Cache, NAMES, Owners, Typed, Waiting, owner_entry};
use crate::{kinds::Child, lock, watch};
#[cfg(test)]
use {
    super::{Cached, Caches, owner, owner_ref},
    crate::kinds::{self, KindScope},
    kube::{
        Resource,
        api::ApiResource,
        runtime::reflector::{self, ObjectRef},
    },
    std::any::TypeId,
};

/// The `ObjectRef` of `child`'s controller owner, if that is an object of `K`.
#[cfg(test)]
pub(crate) fn owner_of<K, C: Child>(child: &C) -> Option<ObjectRef<K>>
where
    K: Resource<DynamicType = (), Scope: KindScope>,
{
    owner(child).and_then(owner_ref::<K>)
}

#[cfg(test)]
type Writer<K> = reflector::store::Writer<watch::Packed<K>>;

/// The names of other objects of kind `C`, as the names cache holds them.
#[cfg(test)]
type Names<C> = Vec<PartialObjectMeta<C>>;

/// Caches of kind `C` that have not had their first list yet, for tests: the caches, and a
/// function that gives each its first list (`children`, and `others` as names).
#[cfg(test)]
pub(crate) fn unfilled<C: Child>() -> (Caches, impl FnOnce(Vec<C>, Names<C>)) {
    let (children, mut writer): (_, Writer<C>) = reflector::store();
    let (names, mut names_writer): (_, Writer<PartialObjectMeta<C>>) = reflector::store();
    let (filled, filled_rx) = tokio::sync::watch::channel(0);
    let owners = Owners::default();
    let cache: Arc<dyn Cache> = Arc::new(Typed {
        children,
        names,
        filled: filled_rx,
        waiting: Waiting::default(),
        owners: owners.clone(),
        unseen: Arc::default(),
    });
    let caches = Caches {
        kinds: vec![Cached {
            type_id: TypeId::of::<C>(),
            resource: ApiResource::erase::<C>(&()),
            namespaced: kinds::namespaced::<C>(),
            cache,
        }],
    };
    let fill = move |children: Vec<C>, others: Vec<PartialObjectMeta<C>>| {
        let mut index = lock(&owners);
        for child in &children {
            let (key, owner) = owner_entry(child);
            index.set(key, owner);
        }
        drop(index);
        watch::fill(&mut writer, children);
        watch::fill(&mut names_writer, others);
        filled.send_replace(CHILDREN | NAMES);
    };
    (caches, fill)
}

/// Caches of kind `C` that hold `children`, and the names of `others`, for tests.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn filled<C: Child>(children: Vec<Value>, others: Vec<Value>) -> Arc<dyn Cache> {
    use kube::core::PartialObjectMetaExt;
    let decode =
        |object: Value| -> C { serde_json::from_value(object).expect("an object of its kind") };
    let children: Vec<C> = children.into_iter().map(decode).collect();
    let names: Vec<PartialObjectMeta<C>> = (others.into_iter())
        .map(|other| {
            let mut meta = decode(other).meta().clone().into_request_partial::<C>();
            watch::names_only(&mut meta);
            meta
        })
        .collect();
    let owners = Owners::default();
    for child in &children {
        let (key, owner) = owner_entry(child);
        lock(&owners).set(key, owner);
    }
    Arc::new(Typed {
        children: watch::store_of(children),
        names: watch::store_of(names),
        filled: tokio::sync::watch::channel(CHILDREN | NAMES).1,
        waiting: Waiting::default(),
        owners,
        unseen: Arc::default(),
    })
}
