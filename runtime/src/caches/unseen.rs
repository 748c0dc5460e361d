//! The children this manager created that its children cache has not shown yet. The watch
//! shows such a child a moment after the create, and a reconcile of its owner in that moment
//! (another child of the same owner came first, or the owner changed) would create it again:
//! the API server refuses that (409), but only after decoding, admitting and trying to store
//! it. client-go's controllers keep "expectations" for the same reason; here they are per
//! name, and the watch's own events end them.

use std::{sync::Mutex, time::Duration};

use kube::{ResourceExt, runtime::watcher::Event};

use crate::{kinds::Child, lock, recent::Recent};

/// How long a created child counts as on its way when no event of its name comes: far longer
/// than a watch takes to show it, and short enough that a child the cache missed (a relist
/// that ended it counts; nothing else should) is created again by a later reconcile.
const UNSEEN_FOR: Duration = Duration::from_secs(60);

/// Created children by `namespace/name` (`/name` for a cluster-scoped kind: a name holds no
/// `/`, so the key is unambiguous).
pub(crate) struct Unseen {
    created: Mutex<Recent<()>>,
}

impl Default for Unseen {
    fn default() -> Self {
        Self {
            created: Mutex::new(Recent::keeping(UNSEEN_FOR)),
        }
    }
}

fn key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

impl Unseen {
    /// `namespace/name` was created just now.
    pub(crate) fn created(&self, namespace: &str, name: &str) {
        lock(&self.created).insert(key(namespace, name), ());
    }

    /// Whether `namespace/name` was created less than [`UNSEEN_FOR`] ago and no event of it
    /// came since.
    pub(crate) fn contains(&self, namespace: &str, name: &str) -> bool {
        lock(&self.created).get(&key(namespace, name)).is_some()
    }

    /// Follows one event of the children's watch: a child it names is seen (or gone), and a
    /// relist shows every child that exists, so what was created before it is settled by it.
    pub(crate) fn follow<C: Child>(&self, event: &Event<C>) {
        let mut created = lock(&self.created);
        match event {
            Event::Init => created.clear(),
            Event::InitApply(child) | Event::Apply(child) | Event::Delete(child) => {
                created.remove(&key(
                    &child.namespace().unwrap_or_default(),
                    &child.name_any(),
                ));
            }
            Event::InitDone => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn config_map(name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[test]
    fn a_created_child_is_unseen_until_an_event_of_its_name_or_a_relist() {
        let unseen = Unseen::default();
        unseen.created("ns", "a");
        unseen.created("ns", "b");
        assert!(unseen.contains("ns", "a") && unseen.contains("ns", "b"));
        assert!(!unseen.contains("other", "a"), "by namespace and name");
        unseen.follow(&Event::Apply(config_map("a")));
        assert!(!unseen.contains("ns", "a"), "the cache shows it");
        assert!(unseen.contains("ns", "b"), "only the one the event names");
        unseen.follow(&Event::<ConfigMap>::Init);
        assert!(!unseen.contains("ns", "b"), "a relist settles it");
        unseen.created("ns", "c");
        unseen.follow(&Event::Delete(config_map("c")));
        assert!(!unseen.contains("ns", "c"), "gone again: to be created");
    }

    #[tokio::test(start_paused = true)]
    async fn a_child_no_event_shows_is_unseen_for_a_while_only() {
        let unseen = Unseen::default();
        unseen.created("ns", "a");
        tokio::time::advance(UNSEEN_FOR - Duration::from_secs(1)).await;
        assert!(unseen.contains("ns", "a"));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(!unseen.contains("ns", "a"));
        unseen.created("ns", "b");
        assert_eq!(lock(&unseen.created).len(), 1, "the expired one dropped");
    }
}
