//! A cache that keeps a value only from its second use on.

use std::collections::{HashMap, HashSet};

/// Values kept from their second use on, so that the (common) values used once are never
/// cloned.
pub(super) struct SecondUse<K, V> {
    values: HashMap<K, V>,
    seen: HashSet<K>,
}

impl<K: std::hash::Hash + Eq + Clone, V: Clone> SecondUse<K, V> {
    pub(super) fn new() -> Self {
        Self {
            values: HashMap::new(),
            seen: HashSet::new(),
        }
    }

    pub(super) fn get<Q: std::hash::Hash + Eq + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
    {
        self.values.get(key)
    }

    /// Records that `value` was computed for `key`, keeping a copy if it was computed before.
    pub(super) fn computed(&mut self, key: K, value: &V) {
        if !self.seen.insert(key.clone()) {
            self.values.insert(key, value.clone());
        }
    }
}
