//! [`LogState`]: the small durable document next to the log's segments, `log-state.json` — the
//! server's persistent commit user and, per table (its path in the warehouse, `db.db/table`),
//! the last LSN flushed into one of its Paimon snapshots — and the pure rules built on it:
//! where a table's replay starts ([`replay_from`]), which records a table still needs
//! ([`table_needs`]), and how far the log may be truncated ([`flushed_through`]).
//!
//! Why a document of its own: Paimon's exactly-once rule for a writer that replays (Flink's
//! `filterCommitted`) asks the table which `commitIdentifier`s of *this* `commitUser` it already
//! holds, so the commit user must survive restarts — it is created once, here, and kept. The
//! flushed LSNs are the answer to that question that survives snapshot expiry (an expired
//! snapshot no longer says which identifier it carried). The order of a flush is: publish the
//! snapshot (identifier = the flush's last LSN), then record it here, then truncate the log. A
//! crash between the first two replays records the table already holds; the flusher must then
//! skip identifiers the table's retained snapshots show, and this file only ever moves forward
//! (`mark_flushed` keeps the larger LSN).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicU64;

use serde::{Deserialize, Serialize};

use super::files::{FileError, write_atomically};
use super::segment::Lsn;
use crate::storage::StorageError;

/// The file name of the log state, in the log's directory.
pub const STATE_FILE: &str = "log-state.json";
/// The format of [`STATE_FILE`] this code writes and reads.
const STATE_VERSION: u32 = 1;

/// The log's durable state (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogState {
    version: u32,
    /// Paimon's `commitUser` of every snapshot a flush of this log publishes.
    #[serde(rename = "commitUser")]
    pub commit_user: String,
    /// Per table path in the warehouse, the last LSN flushed into one of its snapshots.
    flushed: BTreeMap<String, Lsn>,
}

impl LogState {
    /// A new state: a fresh commit user, nothing flushed.
    pub fn new() -> Self {
        Self {
            version: STATE_VERSION,
            commit_user: uuid::Uuid::new_v4().to_string(),
            flushed: BTreeMap::new(),
        }
    }

    /// The last LSN flushed into `table`'s snapshots (0: none).
    pub fn flushed(&self, table: &str) -> Lsn {
        self.flushed.get(table).copied().unwrap_or(0)
    }

    /// Records that `table`'s snapshots hold every record of it through `lsn`. Never moves
    /// back: a flush that finishes late does not undo a later one.
    pub fn mark_flushed(&mut self, table: &str, lsn: Lsn) {
        let entry = self.flushed.entry(table.to_owned()).or_insert(0);
        *entry = (*entry).max(lsn);
    }

    /// Forgets a table (dropped): its records need no flush any more.
    pub fn forget(&mut self, table: &str) {
        self.flushed.remove(table);
    }

    /// The highest LSN any table has flushed: the log must hold records at least this far, or
    /// acknowledged records went missing.
    pub fn max_flushed(&self) -> Lsn {
        self.flushed.values().copied().max().unwrap_or(0)
    }

    /// Reads `dir/log-state.json`, or creates it (with a new commit user) if it is absent.
    /// Blocking. A file that does not parse is damage (XX001), never replaced by a new one:
    /// a new commit user would break the exactly-once check of every table.
    pub fn load_or_create(dir: &Path, fsyncs: &AtomicU64) -> Result<Self, StorageError> {
        let path = dir.join(STATE_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let state: LogState = serde_json::from_slice(&bytes).map_err(|e| {
                    StorageError::format(format!(
                        "commit log state {} is damaged: {e}",
                        path.display()
                    ))
                })?;
                if state.version != STATE_VERSION {
                    return Err(StorageError::format(format!(
                        "commit log state {} has format version {}, this server reads {}",
                        path.display(),
                        state.version,
                        STATE_VERSION
                    )));
                }
                Ok(state)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let state = Self::new();
                state.store(dir, fsyncs)?;
                Ok(state)
            }
            Err(source) => Err(FileError { path, source }.into()),
        }
    }

    /// Writes the state atomically to `dir/log-state.json` (temporary file, fsync, rename,
    /// fsync of the directory). Blocking.
    pub fn store(&self, dir: &Path, fsyncs: &AtomicU64) -> Result<(), StorageError> {
        let bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| StorageError::internal(format!("log state to JSON: {e}")))?;
        write_atomically(dir, STATE_FILE, &bytes, fsyncs)?;
        Ok(())
    }
}

impl Default for LogState {
    fn default() -> Self {
        Self::new()
    }
}

/// The first LSN whose records `table` still needs after a restart.
pub fn replay_from(state: &LogState, table: &str) -> Lsn {
    state.flushed(table) + 1
}

/// Whether `table` still needs its rows of record `lsn` (not yet in one of its snapshots).
pub fn table_needs(state: &LogState, table: &str, lsn: Lsn) -> bool {
    lsn > state.flushed(table)
}

/// How far the log may be truncated: the last LSN such that every record up to it is in the
/// snapshots of every table it wrote. `records` are the log's records from `first` on, in
/// order, each with the tables it wrote; the answer is `first - 1` when the first one still
/// waits for a flush.
pub fn flushed_through<'a, R, T>(state: &LogState, first: Lsn, records: R) -> Lsn
where
    R: IntoIterator<Item = (Lsn, T)>,
    T: IntoIterator<Item = &'a str>,
{
    let mut through = first.saturating_sub(1);
    for (lsn, tables) in records {
        debug_assert_eq!(lsn, through + 1, "records in log order");
        if tables.into_iter().any(|t| table_needs(state, t, lsn)) {
            break;
        }
        through = lsn;
    }
    through
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_starts_after_the_last_flush() {
        let mut s = LogState::new();
        assert_eq!(replay_from(&s, "public.db/t"), 1);
        s.mark_flushed("public.db/t", 41);
        assert_eq!(replay_from(&s, "public.db/t"), 42);
        assert_eq!(replay_from(&s, "public.db/u"), 1);
        assert!(!table_needs(&s, "public.db/t", 41));
        assert!(table_needs(&s, "public.db/t", 42));
        assert!(table_needs(&s, "public.db/u", 1));
    }

    #[test]
    fn flushed_lsns_never_move_back() {
        let mut s = LogState::new();
        s.mark_flushed("a", 10);
        s.mark_flushed("a", 7);
        assert_eq!(s.flushed("a"), 10);
        s.mark_flushed("b", 12);
        assert_eq!(s.max_flushed(), 12);
        s.forget("b");
        assert_eq!(s.max_flushed(), 10);
    }

    #[test]
    fn truncation_stops_at_the_first_record_a_table_still_needs() {
        let mut s = LogState::new();
        s.mark_flushed("a", 5);
        s.mark_flushed("b", 3);
        let records: Vec<(Lsn, Vec<&str>)> = vec![
            (3, vec!["a", "b"]),
            (4, vec!["a"]),
            (5, vec!["a"]),
            (6, vec!["b"]), // b flushed only through 3
            (7, vec!["a"]),
        ];
        assert_eq!(flushed_through(&s, 3, records.clone()), 5);
        s.mark_flushed("b", 6);
        assert_eq!(flushed_through(&s, 3, records.clone()), 6);
        // A record that needs a table never flushed stops it at once.
        let fresh = vec![(3, vec!["c"])];
        assert_eq!(flushed_through(&s, 3, fresh), 2);
        // A record that wrote no table (nothing to flush) is done.
        assert_eq!(flushed_through(&s, 1, vec![(1, Vec::<&str>::new())]), 1);
    }

    #[test]
    fn the_commit_user_survives_reloads_and_bad_files_are_damage() {
        let dir = std::env::temp_dir().join(format!("tarn-log-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fsyncs = AtomicU64::new(0);
        let mut first = LogState::load_or_create(&dir, &fsyncs).unwrap();
        assert!(fsyncs.load(std::sync::atomic::Ordering::Relaxed) >= 2);
        first.mark_flushed("public.db/t", 9);
        first.store(&dir, &fsyncs).unwrap();
        let again = LogState::load_or_create(&dir, &fsyncs).unwrap();
        assert_eq!(again, first);
        assert!(!dir.join("log-state.json.tmp").exists());

        std::fs::write(dir.join(STATE_FILE), b"{\"version\":1,").unwrap();
        let err = LogState::load_or_create(&dir, &fsyncs).unwrap_err();
        assert!(matches!(err, StorageError::Format(_)), "{err:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
