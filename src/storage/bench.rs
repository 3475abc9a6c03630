//! What only the benches use (`benches/*.rs`, separate crates that see only this library's
//! public items): the compaction simulator, which runs the real policy over modelled files and
//! sizes, and a clock the bench advances by hand (`Warehouse::with_clock`).

pub use crate::storage::io::clock::ManualClock;
pub use crate::storage::maintenance::compact_sim::{
    MergeModel, SimConfig, SimStats, SplitMix64, simulate,
};
