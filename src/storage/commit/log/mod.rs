//! The durable commit log (issue 17) — **built, not yet wired**: nothing on the commit path
//! appends to it yet. The plan it is built for: COMMIT appends a [`TransactionRecord`] and is
//! acknowledged when [`CommitLog::append`] resolves (one fdatasync per group of concurrent
//! commits); a flusher turns records into one Paimon snapshot per table with
//! `commitIdentifier` = the flush's last LSN and `commitUser` = [`LogState::commit_user`],
//! records it in [`LogState`], then calls [`CommitLog::truncate_through`] with
//! [`flushed_through`]; reads union the unflushed records with the table's snapshot; on start
//! the server replays what [`CommitLog::open`] returns from each table's [`replay_from`].
//!
//! The log lives on the server's local disk (`fdatasync` needs a file system), also when the
//! warehouse is an object store. Pieces:
//! - [`segment`] — segment files and record frames as bytes; torn tail vs damage;
//! - [`replay`] — opening the directory: every segment read, a torn tail cut;
//! - [`writer`] — [`CommitLog`]: group commit, segment rolls, truncation, poisoning, figures;
//! - [`state`] — `log-state.json`: the commit user and flushed LSNs; the pure replay rules;
//! - [`payload`] — a committed transaction's rows as a record's payload (Arrow IPC);
//! - [`files`] — fsync of directories, atomic file replacement;
//! - [`crash_points`] — `TARN_CRASH_AT`: named places to abort at, for the kill -9 tests.

pub mod crash_points;
pub mod files;
pub mod payload;
pub mod replay;
pub mod segment;
pub mod state;
pub mod writer;

#[cfg(test)]
mod tests;

pub use payload::{BucketChanges, TableChanges, TransactionRecord, record_summary, record_tables};
pub use replay::{Replay, TornTail};
pub use segment::Lsn;
pub use state::{LogState, flushed_through, replay_from, table_needs};
pub use writer::{CommitLog, LogFigures, LogOptions};
