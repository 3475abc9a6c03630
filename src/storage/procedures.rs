//! The facade's door to maintenance: what Paimon's `sys.*` procedures do to one table, for the
//! query layer's `CALL` (`query::procedures`). The layers above name these, never the
//! `maintenance` floor's modules, so maintenance can change shape behind them.

pub use crate::storage::commit::logged::flush;
pub use crate::storage::maintenance::compactor::{CompactReport, compact_full, compact_minor};
pub use crate::storage::maintenance::expire::{ExpireConfig, ExpireReport, expire_snapshots};
pub use crate::storage::maintenance::orphan::{
    ORPHAN_DEFAULT_AGE, OrphanReport, remove_orphan_files,
};
pub use crate::storage::maintenance::partition_expire::expire_partitions;
pub use crate::storage::maintenance::restore::restore;
pub use crate::storage::maintenance::rollback::{RollbackReport, rollback_to};
