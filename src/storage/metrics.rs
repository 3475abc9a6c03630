//! Figures for metrics outside SQL (`--metrics-listen`, Prometheus' text format), without a
//! query or any I/O: per table, what `"t$compaction"` and `"t$buckets"` show, for every table
//! this process has opened; per kind of cache, what the warehouse's cache budget holds and how
//! often it is hit.
//!
//! Counters come from each table's `CompactorState` (this process's work since it started);
//! the file, run and level figures from the live files of the newest snapshot a write or a
//! compaction of this process looked at (the table's cached `LiveFiles`), so a table only read
//! — or whose live files the cache budget evicted — has counters but no file figures. Reading
//! snapshots to fill them in would make a scrape cost object-store requests per table;
//! `$buckets` is there for exact, current answers.

use std::sync::atomic::Ordering;

use crate::storage::commit::state::CommitState;
pub use crate::storage::io::cache_budget::CacheStats;
use crate::storage::lsm::caches::LATEST;
use crate::storage::maintenance::compact::summary;
use crate::storage::maintenance::compact_policy;
use crate::storage::maintenance::compactor::CompactorState;
use crate::storage::meta::table::TableShared;
use crate::storage::warehouse::Warehouse;

/// One table's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableMetrics {
    pub database: String,
    pub table: String,
    pub compactions: u64,
    pub compactions_abandoned: u64,
    pub compaction_bytes_read: u64,
    pub compaction_bytes_written: u64,
    pub commit_bytes: u64,
    pub write_stalls: u64,
    pub compaction_running: bool,
    /// From the latest cached live files, when there are some.
    pub files: Option<FileMetrics>,
}

/// A table's data files as of one snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileMetrics {
    pub snapshot_id: i64,
    pub buckets: u64,
    pub files: u64,
    pub bytes: u64,
    pub level0_files: u64,
    /// The most sorted runs any bucket has.
    pub max_sorted_runs: u64,
    pub max_level: u64,
}

/// The warehouse's cache budget and its caches' figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CacheMetrics {
    /// Bytes all caches of all tables may hold together (`--cache-memory`).
    pub budget_bytes: u64,
    /// Bytes they hold now.
    pub used_bytes: u64,
    /// By kind of cache (`manifest`, `key_set`, …), summed over the tables; kinds no table
    /// has made yet are missing.
    pub kinds: Vec<CacheStats>,
}

impl Warehouse {
    /// The figures of the cache budget every table's caches share.
    pub fn cache_metrics(&self) -> CacheMetrics {
        let budget = self.tables().cache_budget();
        CacheMetrics {
            budget_bytes: budget.limit() as u64,
            used_bytes: budget.used() as u64,
            kinds: budget.stats(),
        }
    }

    /// Figures of every table this process has opened, by database and name.
    pub fn table_metrics(&self) -> Vec<TableMetrics> {
        let mut out: Vec<TableMetrics> = self
            .tables()
            .all()
            .into_iter()
            .map(|((database, table), shared)| of(database, table, &shared))
            .collect();
        out.sort_by(|a, b| (&a.database, &a.table).cmp(&(&b.database, &b.table)));
        out
    }
}

fn of(database: String, table: String, shared: &TableShared) -> TableMetrics {
    let c = shared.state::<CompactorState>();
    let files = shared.lsm_caches().live_files.peek(LATEST).map(|live| {
        let mut m = FileMetrics {
            snapshot_id: live.snapshot_id(),
            ..FileMetrics::default()
        };
        for (_, files) in live.buckets() {
            m.buckets += 1;
            m.files += files.len() as u64;
            let summaries: Vec<_> = files.iter().map(|f| summary(f)).collect();
            m.max_sorted_runs = m
                .max_sorted_runs
                .max(compact_policy::runs(&summaries).len() as u64);
            for f in files.iter() {
                m.bytes += u64::try_from(f.file_size).unwrap_or(0);
                m.level0_files += u64::from(f.level == 0);
                m.max_level = m.max_level.max(u64::try_from(f.level).unwrap_or(0));
            }
        }
        m
    });
    TableMetrics {
        database,
        table,
        compactions: c.compactions.load(Ordering::Relaxed),
        compactions_abandoned: c.abandoned.load(Ordering::Relaxed),
        compaction_bytes_read: c.bytes_read.load(Ordering::Relaxed),
        compaction_bytes_written: c.bytes_written.load(Ordering::Relaxed),
        commit_bytes: shared
            .state::<CommitState>()
            .bytes_committed
            .load(Ordering::Relaxed),
        write_stalls: c.stalls.load(Ordering::Relaxed),
        compaction_running: !c.is_idle(),
        files,
    }
}

#[cfg(test)]
mod tests {
    use crate::storage::spec::types::{MAX_LENGTH, PaimonType, TypeKind};
    use crate::storage::testkit::keyed_schema;
    use crate::storage::write::table_write::{TableWrite, WriteMode};

    #[tokio::test]
    async fn figures_of_opened_tables() {
        let wh = crate::storage::testkit::warehouse(None).await;
        let schema = keyed_schema(
            &[("v", PaimonType::nullable(TypeKind::VarChar(MAX_LENGTH)))],
            &[("bucket", "2"), ("write-only", "true")],
        );
        let t = wh.create_table("public", "t", schema).await.unwrap();
        assert_eq!(
            wh.table_metrics()[0].files,
            None,
            "no snapshot looked at yet"
        );
        for i in 0..3i64 {
            let mut w = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
            let batch = arrow::array::RecordBatch::try_new(
                crate::storage::testkit::arrow_schema(t.schema()),
                vec![
                    std::sync::Arc::new(arrow::array::Int64Array::from(vec![i, i + 10])),
                    std::sync::Arc::new(arrow::array::StringArray::from(vec!["a", "b"])),
                ],
            )
            .unwrap();
            w.write(batch).await.unwrap();
            crate::storage::commit::commit_write(w).await.unwrap();
        }
        // The next write looks at the latest snapshot's files.
        let _ = TableWrite::new(t.clone(), WriteMode::Upsert).await.unwrap();
        let m = wh.table_metrics();
        assert_eq!(m.len(), 1);
        assert_eq!(
            (m[0].database.as_str(), m[0].table.as_str()),
            ("public", "t")
        );
        let files = m[0].files.clone().expect("file figures");
        assert_eq!(files.level0_files, files.files);
        assert!(files.files >= 3 && files.buckets >= 1, "{files:?}");
        assert!(files.max_sorted_runs >= 2, "{files:?}");
        assert!(m[0].commit_bytes > 0);
        assert_eq!(m[0].compactions, 0);
    }
}
