//! Reading a table: scan planning (lsm's live files → splits), split reading, net changes
//! between versions and the changelog.

pub mod changelog_scan;
pub mod changes;
pub mod scan;

#[cfg(test)]
mod key_read_tests;
