//! Input/output and process services every floor above uses: the object store with durable
//! writes (`FileIO`), the injected clock, the memory budget every table's caches share. Knows
//! paths and bytes, not what they mean.

pub mod cache_budget;
pub mod clock;
pub mod file_io;
pub(in crate::storage) mod heap_size;
