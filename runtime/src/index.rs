//! A reverse index kept beside a cache, as controller-runtime's field indexes are: each cached
//! object (a source) points at some targets (its controller owner's UID, the objects its spec
//! references), and a lookup by target gives its sources in what they cost, not in what the
//! cache holds. It follows the watch's events, relists included, as the cache does.

use std::{
    collections::{BTreeSet, HashMap},
    hash::Hash,
};

use kube::runtime::watcher::Event;

/// Sources by target, and targets by source.
pub(crate) struct Index<S, T> {
    forward: HashMap<S, Vec<T>>,
    reverse: HashMap<T, BTreeSet<S>>,
    /// A relist under way: the sources it listed so far, swapped in when it completes (the
    /// cache does the same, so that objects deleted while the watch was down go).
    relist: Option<HashMap<S, Vec<T>>>,
}

impl<S, T> Default for Index<S, T> {
    fn default() -> Self {
        Self {
            forward: HashMap::new(),
            reverse: HashMap::new(),
            relist: None,
        }
    }
}

impl<S: Ord + Hash + Clone, T: Hash + Eq + Clone> Index<S, T> {
    /// `source` now points at `targets` (and at nothing else).
    pub(crate) fn set(&mut self, source: S, targets: Vec<T>) {
        self.remove(&source);
        for target in &targets {
            (self.reverse.entry(target.clone()).or_default()).insert(source.clone());
        }
        if !targets.is_empty() {
            self.forward.insert(source, targets);
        }
    }

    /// `source` is gone.
    pub(crate) fn remove(&mut self, source: &S) {
        for target in self.forward.remove(source).into_iter().flatten() {
            if let Some(sources) = self.reverse.get_mut(&target) {
                sources.remove(source);
                if sources.is_empty() {
                    self.reverse.remove(&target);
                }
            }
        }
    }

    /// The sources that point at `target`, in order.
    pub(crate) fn sources(&self, target: &T) -> Vec<S> {
        (self.reverse.get(target).into_iter().flatten())
            .cloned()
            .collect()
    }

    /// Follows one watch event; `entry` gives an object's source key and its targets.
    pub(crate) fn apply<K>(&mut self, event: &Event<K>, entry: impl Fn(&K) -> (S, Vec<T>)) {
        match event {
            Event::Init => self.relist = Some(HashMap::new()),
            Event::InitApply(object) => {
                let (source, targets) = entry(object);
                self.relist.get_or_insert_default().insert(source, targets);
            }
            Event::InitDone => {
                let listed = self.relist.take().unwrap_or_default();
                *self = Self::default();
                for (source, targets) in listed {
                    self.set(source, targets);
                }
            }
            Event::Apply(object) => {
                let (source, targets) = entry(object);
                self.set(source, targets);
            }
            Event::Delete(object) => self.remove(&entry(object).0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lookup_gives_the_sources_of_a_target_as_they_change() {
        let mut index = Index::<&str, &str>::default();
        index.set("a", vec!["x"]);
        index.set("b", vec!["x", "y"]);
        assert_eq!(index.sources(&"x"), ["a", "b"]);
        index.set("a", vec!["y"]);
        assert_eq!(index.sources(&"x"), ["b"]);
        assert_eq!(index.sources(&"y"), ["a", "b"]);
        index.remove(&"b");
        assert_eq!(index.sources(&"x"), Vec::<&str>::new());
        assert!(
            !index.reverse.contains_key("x"),
            "no empty entries are kept"
        );
    }

    #[test]
    fn a_relist_replaces_what_was_indexed_when_it_completes() {
        let mut index = Index::<&str, &str>::default();
        let entry = |object: &(&'static str, &'static str)| (object.0, vec![object.1]);
        index.apply(&Event::Apply(("a", "x")), entry);
        index.apply(&Event::Apply(("gone", "x")), entry);
        index.apply(&Event::Init, entry);
        index.apply(&Event::InitApply(("a", "x")), entry);
        assert_eq!(
            index.sources(&"x"),
            ["a", "gone"],
            "kept until the list completes"
        );
        index.apply(&Event::InitDone, entry);
        assert_eq!(
            index.sources(&"x"),
            ["a"],
            "deleted while the watch was down"
        );
        index.apply(&Event::Delete(("a", "x")), entry);
        assert!(index.sources(&"x").is_empty());
    }
}
