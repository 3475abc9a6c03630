//! Committing: every kind of commit is a message handed to the one committer
//! ([`committer`]), which owns the commit lock, the commit identifier, retries and the hooks
//! that run after a commit; [`snapshot_writer`] publishes what a commit adds as the next Paimon
//! snapshot. The messages of the write path live here (a transaction, a group-commit round,
//! TRUNCATE); maintenance's (compaction, restore, rollback) live with maintenance. How a
//! commit fails on the commit path itself (a failed group round, no answer) is [`error`].
//! [`log`] is the durable commit log; [`logged`] acknowledges commits from it (with
//! `--commit-log`) and flushes them into snapshots.

pub mod committer;
pub mod error;
pub(in crate::storage) mod group;
pub mod hooks;
// Parts of the log's API are not used by the commit path yet (per-record table lists for
// truncation, forgetting a dropped table's state, fault injection outside its tests).
#[allow(dead_code, unused_imports)]
pub mod log;
pub mod logged;
pub mod overwrite;
pub mod snapshot_writer;
pub mod state;
pub mod transaction;

pub use overwrite::{DropOutcome, PartitionDrop, drop_partitions, partition_text, truncate};
pub use transaction::{commit_write, commit_writes, commit_writes_in};
