//! Committing: a transaction's, a group's, a compaction's or an overwrite's files become the
//! next Paimon snapshot (conflict checks, manifests, `snapshot-N` create-if-absent, retry).

pub mod committer;
pub mod state;
