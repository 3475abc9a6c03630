//! [`CommitError`]: the ways a commit fails that only the commit path has.
//!
//! Why its own type: a group-commit round commits many transactions in one snapshot, so when
//! the round fails every transaction in it fails with the round's error — and each must still
//! see that error's own kind (a conflict stays a retryable 40001, an I/O failure stays 58030),
//! plus the fact that it failed as part of a group, rather than one flattened message. And a
//! waiter whose committer went away without answering does not know whether it committed,
//! which is neither a conflict nor an I/O failure.

use std::sync::Arc;

use crate::storage::StorageError;

/// Why a commit failed, where it failed on the commit path itself.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// The group-commit round holding this transaction failed with this error: no
    /// transaction of the round committed. Shared by every waiter of the round.
    #[error("{0}")]
    Group(Arc<StorageError>),
    /// The group commit ended without answering this transaction (its task stopped), so
    /// whether it committed is not known here.
    #[error("the group commit holding this transaction ended without saying whether it committed")]
    Unanswered,
}

impl CommitError {
    /// The error of the round, for a [`CommitError::Group`].
    pub fn group_error(&self) -> Option<&StorageError> {
        match self {
            Self::Group(e) => Some(e),
            Self::Unanswered => None,
        }
    }
}
