//! [`Sequences`]: where a table's sequence numbers come from in this process.
//!
//! Paimon orders the versions of a key by sequence number, and the numbers are written into
//! the data files, so they are assigned by the writer before anything is committed — as in
//! Paimon's own writers. A run spilled during a statement gets its numbers when it is written;
//! the in-memory runs of a transaction get theirs at commit, under the commit lock (so a later
//! commit always carries higher numbers in a bucket). Both draw from these counters, whose
//! floor is one above the highest number committed in the bucket as the caller read it.

use std::collections::HashMap;
use std::sync::Mutex;

/// Next sequence number per (partition bytes, bucket) of one table
/// ([`Table::state`](crate::storage::meta::table::Table::state)).
#[derive(Debug, Default)]
pub(in crate::storage) struct Sequences {
    next: Mutex<HashMap<(Vec<u8>, i32), i64>>,
}

impl Sequences {
    /// Reserves `count` sequence numbers in one bucket, starting no lower than `floor` (one
    /// above the highest committed there, as the caller read it).
    pub(in crate::storage) fn reserve(
        &self,
        partition: &[u8],
        bucket: i32,
        floor: i64,
        count: i64,
    ) -> i64 {
        let mut map = self.next.lock().expect("sequence lock");
        let next = map.entry((partition.to_vec(), bucket)).or_insert(floor);
        let start = (*next).max(floor);
        *next = start + count;
        start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserves_above_floor_and_previous() {
        let s = Sequences::default();
        assert_eq!(s.reserve(b"p", 0, 5, 3), 5);
        assert_eq!(s.reserve(b"p", 0, 5, 2), 8, "after the last reservation");
        assert_eq!(s.reserve(b"p", 0, 20, 1), 20, "a higher floor wins");
        assert_eq!(s.reserve(b"p", 1, 0, 1), 0, "buckets count apart");
    }
}
