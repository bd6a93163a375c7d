//! Things open per key (connections per peer address, event sockets per
//! device), each counted while its slot lives.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

/// How many are open per key.
pub struct Counts<K>(Arc<Mutex<HashMap<K, usize>>>);

impl<K> Default for Counts<K> {
    fn default() -> Self {
        Counts(Arc::default())
    }
}

impl<K> Clone for Counts<K> {
    fn clone(&self) -> Self {
        Counts(self.0.clone())
    }
}

/// One open thing of a key, counted until dropped.
pub struct Slot<K: Eq + Hash> {
    of: Counts<K>,
    key: K,
}

impl<K: Eq + Hash + Clone> Counts<K> {
    /// A slot for one more of `key`, unless it has `max` open already.
    pub fn take(&self, key: K, max: usize) -> Option<Slot<K>> {
        let mut open = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let count = open.entry(key.clone()).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(Slot {
            of: self.clone(),
            key,
        })
    }
}

impl<K: Eq + Hash> Drop for Slot<K> {
    fn drop(&mut self) {
        let mut open = self.of.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_holds_at_most_max_and_a_dropped_slot_frees_its_place() {
        let counts = Counts::default();
        let held: Vec<_> = (0..3).filter_map(|_| counts.take("a", 3)).collect();
        assert_eq!(held.len(), 3);
        assert!(counts.take("a", 3).is_none());
        assert!(
            counts.take("b", 3).is_some(),
            "another key is not held back"
        );
        drop(held);
        assert!(counts.take("a", 3).is_some());
    }
}
