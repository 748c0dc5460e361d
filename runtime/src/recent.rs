//! A memo of values that matter for a while (until a cache catches up with a write, or an event
//! may repeat), swept at most once per [`REMEMBER`] so that remembering stays O(1) however many
//! objects there are.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

/// How long an entry is kept: entries of objects deleted meanwhile go with the next sweep.
pub const REMEMBER: Duration = Duration::from_secs(300);

/// Values by key (an object's UID) that expire after [`REMEMBER`], swept as new ones come.
pub struct Recent<V> {
    entries: HashMap<String, (V, Instant)>,
    swept: Option<Instant>,
}

impl<V> Default for Recent<V> {
    fn default() -> Self {
        Self {
            entries: HashMap::new(),
            swept: None,
        }
    }
}

impl<V> Recent<V> {
    /// The value remembered for `key`, if it is younger than [`REMEMBER`].
    pub fn get(&self, key: &str) -> Option<&V> {
        self.entries
            .get(key)
            .filter(|(_, at)| at.elapsed() < REMEMBER)
            .map(|(value, _)| value)
    }

    /// Remembers `value` for `key` from now on; drops expired entries every [`REMEMBER`].
    pub fn insert(&mut self, key: String, value: V) {
        let now = Instant::now();
        if self
            .swept
            .is_none_or(|at| now.duration_since(at) >= REMEMBER)
        {
            self.entries
                .retain(|_, (_, at)| now.duration_since(*at) < REMEMBER);
            self.swept = Some(now);
        }
        self.entries.insert(key, (value, now));
    }

    /// Forgets `key`.
    pub fn remove(&mut self, key: &str) {
        self.entries.remove(key);
    }

    /// Whether nothing is remembered.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_found_until_removed() {
        let mut recent = Recent::default();
        recent.insert("a".into(), 1);
        assert_eq!(recent.get("a"), Some(&1));
        assert_eq!(recent.get("b"), None);
        recent.remove("a");
        assert!(recent.is_empty());
    }
}
