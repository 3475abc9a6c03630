//! Writing a table: one transaction's writes (`TableWrite`), bucket assignment (fixed and
//! dynamic), which row changes each merge engine takes, and `changelog-producer = input`.

pub mod changelog;
pub mod dynamic_bucket;
pub mod merge_dml;
pub mod restriction;
pub(in crate::storage) mod sequences;
pub mod table_write;
