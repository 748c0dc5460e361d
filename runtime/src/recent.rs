//! A memo of values that matter for a while (until a cache catches up with a write, or an event
//! may repeat), swept at most once per lifetime so that remembering stays O(1) however many
//! objects there are. On tokio's clock, so that tests can move it.

use std::{collections::HashMap, time::Duration};

use tokio::time::Instant;

/// How long an entry is kept by default: entries of objects deleted meanwhile go with the next
/// sweep.
pub const REMEMBER: Duration = Duration::from_secs(300);

/// Values by key (an object's UID, or its namespace and name) that expire after a lifetime
/// ([`REMEMBER`] unless told), swept as new ones come.
pub struct Recent<V> {
    entries: HashMap<String, (V, Instant)>,
    swept: Option<Instant>,
    keep: Duration,
}

impl<V> Default for Recent<V> {
    fn default() -> Self {
        Self::keeping(REMEMBER)
    }
}

impl<V> Recent<V> {
    /// A memo whose entries expire `keep` after they were inserted.
    pub fn keeping(keep: Duration) -> Self {
        Self {
            entries: HashMap::new(),
            swept: None,
            keep,
        }
    }

    /// The value remembered for `key`, if it is younger than the memo's lifetime.
    pub fn get(&self, key: &str) -> Option<&V> {
        self.entries
            .get(key)
            .filter(|(_, at)| at.elapsed() < self.keep)
            .map(|(value, _)| value)
    }

    /// Remembers `value` for `key` from now on; drops expired entries once per lifetime.
    pub fn insert(&mut self, key: String, value: V) {
        let now = Instant::now();
        if self.swept.is_none_or(|at| now - at >= self.keep) {
            let keep = self.keep;
            self.entries.retain(|_, (_, at)| now - *at < keep);
            self.swept = Some(now);
        }
        self.entries.insert(key, (value, now));
    }

    /// Forgets `key`.
    pub fn remove(&mut self, key: &str) {
        self.entries.remove(key);
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// How many entries are held, expired ones not swept yet included.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
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

    #[tokio::test(start_paused = true)]
    async fn an_entry_expires_with_its_lifetime_and_goes_with_a_later_insert() {
        let keep = Duration::from_secs(60);
        let mut recent = Recent::keeping(keep);
        recent.insert("a".into(), ());
        tokio::time::advance(keep - Duration::from_secs(1)).await;
        assert!(recent.get("a").is_some());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(recent.get("a").is_none());
        recent.insert("b".into(), ());
        assert_eq!(recent.len(), 1, "the expired one swept");
    }
}
