//! A snapshot's live data files, read from its manifests: the ADD/DELETE entries of the base
//! and delta manifest lists replayed into the files that are live, skipping manifests,
//! partitions, buckets and files that a [`ScanFilter`] rules out (partition statistics, the
//! bucket a key predicate hashes to, key statistics, then the bloom filters of key columns,
//! `meta/file_indexes.rs`). Reads plan their splits from these entries, writes and compactions
//! keep per-bucket live files from them (`live_files.rs`); [`ScanPlan`] counts what was opened
//! and skipped.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream;
use futures::{StreamExt, TryStreamExt};

use crate::storage::StorageError;
use crate::storage::lsm::split::{FileId, Split, file_id};
use crate::storage::meta::snapshot::Snapshot;
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::manifest::{DataFileMeta, FileKind, ManifestEntry, ManifestFileMeta};
use crate::storage::spec::predicate::{ColumnStats, Predicate};
use crate::storage::spec::types::PaimonType;

/// What a scan will read.
#[derive(Debug, Clone, Default)]
pub struct ScanPlan {
    pub snapshot: Option<Snapshot>,
    pub splits: Vec<Split>,
    /// Manifest files opened to plan (for tests and EXPLAIN).
    pub manifests_read: usize,
    /// Bytes of the manifest files opened (as their manifest lists record them).
    pub manifest_bytes_read: i64,
    /// Manifest files skipped by their partition statistics.
    pub manifests_skipped: usize,
    /// Data files skipped by partition or key statistics, or by key columns' file indexes.
    pub files_skipped: usize,
}

/// Which data a scan may skip.
#[derive(Debug, Clone, Default)]
pub struct ScanFilter {
    /// On partition columns only: evaluated exactly per partition.
    pub partition: Option<Predicate>,
    /// On primary-key columns only: evaluated on each file's key statistics.
    pub key: Option<Predicate>,
}

/// Most keys a read by key reads (the product of its key columns' value lists).
pub const MAX_KEY_LOOKUPS: usize = 256;

impl ScanFilter {
    /// The full keys the key predicate pins (each key column `= v` or `IN (…)` in the top-level
    /// conjunction), in the order of `key_names`; `None` when a column is left open or there
    /// would be more than [`MAX_KEY_LOOKUPS`] keys. Every row the predicate admits has one of
    /// these keys.
    pub fn pinned_keys(&self, key_names: &[String]) -> Option<Vec<Vec<Datum>>> {
        let predicate = self.key.as_ref()?;
        if key_names.is_empty() {
            return None;
        }
        let mut conjuncts = Vec::new();
        flatten_and(predicate, &mut conjuncts);
        let mut choices: Vec<Vec<Datum>> = Vec::new();
        for k in key_names {
            let mut values = conjuncts.iter().find_map(|p| pinned_values(p, k))?;
            values.sort_by(|a, b| a.compare(b));
            values.dedup_by(|a, b| a.compare(b).is_eq());
            choices.push(values);
        }
        let combos = choices
            .iter()
            .try_fold(1usize, |n, v| n.checked_mul(v.len()))?;
        if combos > MAX_KEY_LOOKUPS {
            return None;
        }
        let mut keys = Vec::with_capacity(combos);
        for i in 0..combos {
            let mut rest = i;
            let mut key = Vec::with_capacity(choices.len());
            for values in &choices {
                key.push(values[rest % values.len()].clone());
                rest /= values.len();
            }
            keys.push(key);
        }
        Some(keys)
    }
}

impl Table {
    /// Replays the manifest entries of `snapshot` into its live files, skipping what `filter`
    /// rules out.
    pub(crate) async fn live_entries(
        &self,
        snapshot: &Snapshot,
        filter: &ScanFilter,
        plan: &mut ScanPlan,
    ) -> Result<Vec<ManifestEntry>, StorageError> {
        let mut metas = self
            .read_manifest_list(&snapshot.base_manifest_list)
            .await?;
        metas.extend(
            self.read_manifest_list(&snapshot.delta_manifest_list)
                .await?,
        );
        let partition_types = self.partition_types();
        let partition_names = self.schema().partition_keys.clone();
        let wanted: Vec<ManifestFileMeta> = metas
            .into_iter()
            .filter(|m| {
                let keep = match &filter.partition {
                    Some(p) => manifest_may_match(m, p, &partition_names, &partition_types),
                    None => true,
                };
                if !keep {
                    plan.manifests_skipped += 1;
                }
                keep
            })
            .collect();
        plan.manifests_read += wanted.len();
        plan.manifest_bytes_read += wanted.iter().map(|m| m.file_size).sum::<i64>();
        let manifests: Vec<Arc<Vec<ManifestEntry>>> = stream::iter(wanted)
            .map(|m| async move { self.read_manifest(&m.file_name).await })
            .buffered(8)
            .try_collect()
            .await?;

        let key_names = self.schema().trimmed_primary_keys();
        let key_types = self.key_types();
        let buckets = filter.key.as_ref().and_then(|k| self.key_buckets(k));
        let mut partition_ok: HashMap<Vec<u8>, bool> = HashMap::new();
        let mut live: HashMap<FileId, ManifestEntry> = HashMap::new();
        let mut order: Vec<FileId> = Vec::new();
        for manifest in manifests {
            for e in manifest.iter() {
                if let Some(p) = &filter.partition {
                    let ok = match partition_ok.get(&e.partition) {
                        Some(ok) => *ok,
                        None => {
                            let values = binary_row::deserialize(&e.partition, &partition_types)?;
                            let ok = p.eval(&|c| {
                                partition_names
                                    .iter()
                                    .position(|n| n == c)
                                    .and_then(|i| values.get(i))
                            });
                            partition_ok.insert(e.partition.clone(), ok);
                            ok
                        }
                    };
                    if !ok {
                        if e.kind == FileKind::Add {
                            plan.files_skipped += 1;
                        }
                        continue;
                    }
                }
                if buckets.as_ref().is_some_and(|b| !b.contains(&e.bucket)) {
                    if e.kind == FileKind::Add {
                        plan.files_skipped += 1;
                    }
                    continue;
                }
                if let Some(k) = &filter.key
                    && !key_names.is_empty()
                    && !file_may_match(&e.file, k, &key_names, &key_types)?
                {
                    if e.kind == FileKind::Add {
                        plan.files_skipped += 1;
                    }
                    continue;
                }
                let id = file_id(e);
                match e.kind {
                    FileKind::Add => {
                        if live.insert(id.clone(), e.clone()).is_none() {
                            order.push(id);
                        }
                    }
                    FileKind::Delete => {
                        live.remove(&id);
                    }
                }
            }
        }
        let live: Vec<ManifestEntry> = order
            .into_iter()
            .filter_map(|id| live.remove(&id))
            .collect();
        // Bloom filters of key columns, over the live files only: applied after the replay, so
        // a DELETE entry always removes its file whatever that file's index says.
        match &filter.key {
            Some(k) if !key_names.is_empty() => {
                let (live, skipped) =
                    crate::storage::meta::file_indexes::prune(self, live, k).await?;
                plan.files_skipped += skipped;
                Ok(live)
            }
            _ => Ok(live),
        }
    }

    /// The buckets a key predicate can reach: when it fixes every bucket-key column to one
    /// value (or a few, with IN), a point lookup reads one bucket, not all.
    pub(crate) fn key_buckets(
        &self,
        predicate: &Predicate,
    ) -> Option<std::collections::HashSet<i32>> {
        let schema = self.schema();
        let num_buckets = schema.bucket();
        if num_buckets <= 0 {
            return None;
        }
        let mut conjuncts = Vec::new();
        flatten_and(predicate, &mut conjuncts);
        let keys = schema.bucket_keys();
        let mut choices: Vec<Vec<Datum>> = Vec::new();
        for k in &keys {
            let values = conjuncts.iter().find_map(|p| pinned_values(p, k))?;
            choices.push(values);
        }
        let combos: usize = choices.iter().map(Vec::len).product();
        if combos == 0 || combos > 256 {
            return None;
        }
        let types: Vec<PaimonType> = keys.iter().map(|k| schema.type_of(k).clone()).collect();
        let mut out = std::collections::HashSet::new();
        let mut writer = binary_row::BinaryRowWriter::new(keys.len());
        for i in 0..combos {
            writer.reset();
            let mut rest = i;
            for (pos, values) in choices.iter().enumerate() {
                let v = &values[rest % values.len()];
                rest /= values.len();
                writer.write_datum(pos, v, &types[pos]).ok()?;
            }
            let hash = crate::storage::spec::bucket::hash_row(writer.bytes());
            out.insert(crate::storage::spec::bucket::bucket_of_hash(
                hash,
                num_buckets,
            ));
        }
        Some(out)
    }
}

/// The values `p` allows column `k`, when it allows only a list of them: `k = v`, `k IN (…)`,
/// or an OR of those (DataFusion turns short IN lists into ORs).
fn pinned_values(p: &Predicate, k: &str) -> Option<Vec<Datum>> {
    match p {
        Predicate::Compare {
            column,
            op: crate::storage::spec::predicate::CmpOp::Eq,
            value,
        } if column == k => Some(vec![value.clone()]),
        Predicate::In { column, values } if column == k => Some(values.clone()),
        Predicate::Or(ps) => {
            let mut out = Vec::new();
            for p in ps {
                out.extend(pinned_values(p, k)?);
            }
            Some(out)
        }
        _ => None,
    }
}

fn flatten_and<'a>(p: &'a Predicate, out: &mut Vec<&'a Predicate>) {
    match p {
        Predicate::And(ps) => ps.iter().for_each(|p| flatten_and(p, out)),
        other => out.push(other),
    }
}

fn manifest_may_match(
    m: &ManifestFileMeta,
    predicate: &Predicate,
    names: &[String],
    types: &[PaimonType],
) -> bool {
    stats_may_match(
        &m.partition_stats,
        m.num_added_files + m.num_deleted_files,
        predicate,
        names,
        types,
    )
}

pub(crate) fn file_may_match(
    f: &DataFileMeta,
    predicate: &Predicate,
    names: &[String],
    types: &[PaimonType],
) -> Result<bool, StorageError> {
    Ok(stats_may_match(
        &f.key_stats,
        f.row_count,
        predicate,
        names,
        types,
    ))
}

/// Whether rows described by `stats` (min/max/null counts of columns `names`) may satisfy
/// `predicate`; unreadable statistics never exclude anything.
fn stats_may_match(
    stats: &crate::storage::spec::manifest::SimpleStats,
    row_count: i64,
    predicate: &Predicate,
    names: &[String],
    types: &[PaimonType],
) -> bool {
    let (Ok(min), Ok(max)) = (
        binary_row::deserialize(&stats.min_values, types),
        binary_row::deserialize(&stats.max_values, types),
    ) else {
        return true;
    };
    if min.len() != names.len() || max.len() != names.len() {
        return true;
    }
    predicate.may_match(&|c| {
        let i = names.iter().position(|n| n == c)?;
        Some(ColumnStats {
            min: (!min[i].is_null()).then(|| min[i].clone()),
            max: (!max[i].is_null()).then(|| max[i].clone()),
            null_count: stats
                .null_counts
                .as_ref()
                .and_then(|n| n.get(i).copied().flatten()),
            row_count,
        })
    })
}
