//! What keeps a table healthy between commits: compaction (policy, runs, the background
//! compactor), snapshot expiry, partition expiration, automatic tags, rollback, restore, orphan-file removal, and the
//! hooks that start them after a commit.

pub mod auto_tag;
pub mod compact;
pub(in crate::storage) mod compact_changelog;
pub mod compact_policy;
pub mod compact_sim;
pub mod compactor;
pub mod expire;
pub(in crate::storage) mod hooks;
pub mod orphan;
pub mod partition_expire;
pub mod restore;
pub mod rollback;

#[cfg(test)]
mod compact_changelog_tests;
#[cfg(test)]
mod compact_tests;
