//! Reading a table: scan planning (live files → splits, pruned), split reading, net changes
//! between versions and the changelog.

pub mod changelog_scan;
pub mod changes;
pub mod scan;
