//! Snapshot pins: the snapshots this process's running reads and transactions use, so that
//! snapshot expiry (and the file deletion that comes with it) never pulls files from under them.
//!
//! Paimon Java protects readers in other processes only through consumers (`consumer/`); within
//! one server, a statement or a REPEATABLE READ transaction can hold a snapshot for longer than
//! `snapshot.time-retained`, so tarn counts the ids in use per table. Expiry keeps every
//! snapshot with an id at or above the smallest pinned one, and the files those reference.
//!
//! Protocol for readers: pin first, then read (or check) the snapshot file. Expiry deletes
//! snapshot files before any data file and looks at the pins again in between: either it sees
//! the pin and keeps the files, or the reader finds the snapshot already gone.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::storage::StorageError;
use crate::storage::meta::table::{Table, TableShared};

/// Counts of pins per snapshot id of one table.
#[derive(Debug, Default)]
pub(crate) struct PinRegistry {
    counts: Mutex<BTreeMap<i64, usize>>,
}

impl PinRegistry {
    fn add(&self, id: i64) {
        *self.counts.lock().expect("pin lock").entry(id).or_default() += 1;
    }

    fn remove(&self, id: i64) {
        let mut counts = self.counts.lock().expect("pin lock");
        if let Some(n) = counts.get_mut(&id) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&id);
            }
        }
    }

    pub(crate) fn min(&self) -> Option<i64> {
        self.counts
            .lock()
            .expect("pin lock")
            .first_key_value()
            .map(|(id, _)| *id)
    }

    pub(crate) fn max(&self) -> Option<i64> {
        self.counts
            .lock()
            .expect("pin lock")
            .last_key_value()
            .map(|(id, _)| *id)
    }
}

/// A snapshot in use: expiry keeps it (and everything newer) while the pin lives. Cloning pins
/// again; dropping the last clone unpins.
#[derive(Debug)]
pub struct SnapshotPin {
    registry: Arc<PinRegistry>,
    id: i64,
}

impl SnapshotPin {
    /// The pinned snapshot id.
    pub fn snapshot_id(&self) -> i64 {
        self.id
    }
}

impl Clone for SnapshotPin {
    fn clone(&self) -> Self {
        self.registry.add(self.id);
        Self {
            registry: Arc::clone(&self.registry),
            id: self.id,
        }
    }
}

impl Drop for SnapshotPin {
    fn drop(&mut self) {
        self.registry.remove(self.id);
    }
}

impl TableShared {
    /// Pins snapshot `snapshot_id` until the returned guard (and its clones) are dropped.
    pub fn pin(&self, snapshot_id: i64) -> SnapshotPin {
        self.pins.add(snapshot_id);
        SnapshotPin {
            registry: Arc::clone(&self.pins),
            id: snapshot_id,
        }
    }

    /// The smallest snapshot id pinned in this process, if any.
    pub fn min_pinned(&self) -> Option<i64> {
        self.pins.min()
    }

    /// The largest snapshot id pinned in this process, if any.
    pub fn max_pinned(&self) -> Option<i64> {
        self.pins.max()
    }
}

impl Table {
    /// Pins snapshot `id` and then checks that its file still exists: `None` when it was
    /// expired (or rolled back) before the pin took hold. A snapshot read through a tag needs
    /// no pin (tags keep their files).
    pub async fn pin_snapshot(&self, id: i64) -> Result<Option<SnapshotPin>, StorageError> {
        let pin = self.shared().pin(id);
        if self.io().exists(&self.snapshots().path_of(id)).await? {
            Ok(Some(pin))
        } else {
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn pins_count_per_id() {
        let t = crate::storage::testkit::table(&[]).await;
        let shared = t.shared();
        assert_eq!(shared.min_pinned(), None);
        let a = shared.pin(7);
        let b = shared.pin(3);
        let b2 = b.clone();
        assert_eq!(
            (shared.min_pinned(), shared.max_pinned()),
            (Some(3), Some(7))
        );
        drop(b);
        assert_eq!(shared.min_pinned(), Some(3), "a clone still pins");
        drop(b2);
        assert_eq!(shared.min_pinned(), Some(7));
        let moved = std::thread::spawn(move || a.snapshot_id()).join().unwrap();
        assert_eq!(moved, 7);
        assert_eq!(shared.min_pinned(), None, "dropped on the other thread");
        fn send_sync<T: Send + Sync>() {}
        send_sync::<SnapshotPin>();
    }
}
