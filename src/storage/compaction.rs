//! The facade's door to the compaction policy, read-only: the figures query's `$buckets`
//! system table shows (a bucket's sorted runs, whether the policy would compact it now) and the
//! options the compaction simulator bench runs the policy with. Nothing here compacts; `CALL
//! sys.compact` goes through [`procedures`](super::procedures).

pub use crate::storage::maintenance::compact::{options_of, summary};
pub use crate::storage::maintenance::compact_policy::{
    CompactOptions, FileSummary, PickState, PickTime, pick, runs,
};
pub use crate::storage::maintenance::compactor::pick_time;
