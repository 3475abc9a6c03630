//! Finding keys in a bucket's higher levels while compacting, for tables with deletion vectors
//! (Paimon's `LookupLevels`).
//!
//! When a compaction merges level-0 rows into level N, the previous version of each of their
//! keys may sit in a level below N that the compaction does not touch. With deletion vectors
//! that version is deleted where it lies (its position joins its file's vector), so that every
//! key keeps at most one live row in levels >= 1 and readers of those levels need no merge.
//! Finding it means knowing the position of a key in a file: the file's page fences
//! (`fences.rs`, cached) point at the page that can hold it, the page's key columns (decoded
//! once, cached as reads by key cache theirs) are binary-searched, and a key's row is the
//! first live one found going down the levels. Nothing held per row of a file, so lookups stay
//! cached at any table size.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use arrow::array::{BooleanArray, RecordBatch};
use arrow::compute::filter_record_batch;
use futures::StreamExt;

use crate::storage::StorageError;
use crate::storage::lsm::data_file::ReadLayout;
use crate::storage::lsm::key_read::{KeyReadStats, layout_signature};
use crate::storage::lsm::key_sets::KeyEncoder;
use crate::storage::lsm::merge::RunStream;
use crate::storage::lsm::split::{Split, compare_keys};
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::manifest::DataFileMeta;

/// The rows a lookup found: positions by data file name, ascending.
pub(crate) type Found = BTreeMap<String, Vec<u64>>;

impl Table {
    /// Where the live rows of `keys` are among `higher` (the bucket's files above a
    /// compaction's output level, with `split`'s deletion vectors): for each key, the first
    /// level that has a live row of it. `range` (min and max key) skips files that cannot hold
    /// any of them.
    pub(crate) async fn lookup_keys(
        &self,
        split: &Split,
        higher: &[DataFileMeta],
        keys: &HashSet<Vec<u8>>,
        range: (&[Datum], &[Datum]),
        encoder: &KeyEncoder,
    ) -> Result<Found, StorageError> {
        let key_types = self.key_types();
        let mut by_level: BTreeMap<i32, Vec<&DataFileMeta>> = BTreeMap::new();
        for f in higher {
            let lo = binary_row::deserialize(&f.min_key, &key_types)?;
            let hi = binary_row::deserialize(&f.max_key, &key_types)?;
            if compare_keys(&hi, range.0).is_lt() || compare_keys(&lo, range.1).is_gt() {
                continue;
            }
            by_level.entry(f.level).or_default().push(f);
        }
        let mut left: HashSet<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let mut found = Found::new();
        // Pages of key columns only, through the page cache reads by key use.
        let layout = encoder.layout();
        let signature = layout_signature(layout);
        let stats = KeyReadStats::default();
        for files in by_level.values() {
            if left.is_empty() {
                break;
            }
            let mut hits: Vec<&[u8]> = Vec::new();
            for f in files {
                let footer = self.footer(split, f).await?;
                let fences = self.page_fences(split, f, &footer, encoder).await?;
                let dv = match split.deletions.as_ref().and_then(|d| d.get(&f.file_name)) {
                    Some(at) => Some(self.deletion_vector(at).await?),
                    None => None,
                };
                // The keys each page may hold, by its fences.
                let mut by_page: BTreeMap<usize, Vec<&[u8]>> = BTreeMap::new();
                for key in &left {
                    for page in fences.pages_of(key) {
                        by_page.entry(page).or_default().push(key);
                    }
                }
                let mut at: Vec<u64> = Vec::new();
                for (page, wanted) in by_page {
                    let range = fences.page(page);
                    let batch = self
                        .page(f, &footer, range.clone(), layout, &signature, &stats)
                        .await?;
                    let columns = &batch.columns()[..layout.keys.len()];
                    for (row, i) in encoder.find_sorted(columns, &wanted)? {
                        let p = range.start + u64::from(row);
                        if dv.as_ref().is_none_or(|dv| !dv.is_deleted(p)) {
                            at.push(p);
                            hits.push(wanted[i]);
                        }
                    }
                }
                if !at.is_empty() {
                    at.sort_unstable();
                    found.insert(f.file_name.clone(), at);
                }
            }
            for key in hits {
                left.remove(key);
            }
        }
        Ok(found)
    }

    /// The rows of `file` at `positions` (ascending), in `layout`.
    pub(crate) async fn read_positions(
        &self,
        split: &Split,
        file: &DataFileMeta,
        positions: Vec<u64>,
        layout: &ReadLayout,
    ) -> Result<RunStream, StorageError> {
        let raw = Split {
            deletions: None,
            ..split.clone()
        };
        let rows = self.open_data_file(&raw, file, layout).await?;
        let wanted: HashSet<u64> = positions.into_iter().collect();
        let mut position: u64 = 0;
        Ok(rows
            .map(move |batch| {
                let batch: RecordBatch = batch?;
                let start = position;
                position += batch.num_rows() as u64;
                let keep: BooleanArray = (start..position)
                    .map(|p| Some(wanted.contains(&p)))
                    .collect();
                Ok(filter_record_batch(&batch, &keep)?)
            })
            .boxed())
    }
}

impl Table {
    /// For a compaction of bucket `split` to `output_level` whose `inputs` include level-0
    /// files: where the previous versions of their keys lie in the levels below (`files`: the
    /// bucket's live files), and, when `with_rows`, those versions as runs to merge in, oldest
    /// level first.
    pub(crate) async fn lookup_for_compaction(
        &self,
        split: &Split,
        files: &[Arc<DataFileMeta>],
        inputs: &[DataFileMeta],
        output_level: i32,
        with_rows: bool,
    ) -> Result<(Found, Vec<(i32, RunStream)>), StorageError> {
        let encoder = KeyEncoder::new(self)?;
        let key_types = self.key_types();
        let mut keys: HashSet<Vec<u8>> = HashSet::new();
        let mut range: Option<(Vec<Datum>, Vec<Datum>)> = None;
        for f in inputs.iter().filter(|f| f.level == 0) {
            keys.extend(self.key_set(split, f, &encoder).await?.iter().cloned());
            let lo = binary_row::deserialize(&f.min_key, &key_types)?;
            let hi = binary_row::deserialize(&f.max_key, &key_types)?;
            range = Some(match range.take() {
                None => (lo, hi),
                Some((a, b)) => (
                    if compare_keys(&lo, &a).is_lt() { lo } else { a },
                    if compare_keys(&hi, &b).is_gt() { hi } else { b },
                ),
            });
        }
        let Some((lo, hi)) = range else {
            return Ok(Default::default());
        };
        let higher: Vec<DataFileMeta> = files
            .iter()
            .filter(|f| {
                f.level > output_level && !inputs.iter().any(|i| i.file_name == f.file_name)
            })
            .map(|f| f.as_ref().clone())
            .collect();
        let found = self
            .lookup_keys(split, &higher, &keys, (&lo, &hi), &encoder)
            .await?;
        let mut runs = Vec::new();
        if with_rows {
            let layout = self.full_layout();
            let mut holding: Vec<&DataFileMeta> = higher
                .iter()
                .filter(|f| found.contains_key(&f.file_name))
                .collect();
            holding.sort_by_key(|f| std::cmp::Reverse(f.level));
            for f in holding {
                let positions = found[&f.file_name].clone();
                let rows = self.read_positions(split, f, positions, &layout).await?;
                runs.push((f.level, rows));
            }
        }
        Ok((found, runs))
    }
}
