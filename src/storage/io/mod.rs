//! Input/output and process services every floor above uses: the object store with durable
//! writes (`FileIO`), the injected clock, the bounded caches. Knows paths and bytes, not what
//! they mean.

pub mod clock;
pub mod file_io;
pub(in crate::storage) mod lru;
