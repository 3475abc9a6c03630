//! A table's manifest files and manifest lists: reading them (decoded once and cached by name:
//! files never change), and writing a manifest file — its entries encoded, stored, cached, and
//! described for a manifest list (counts, partition statistics, bucket and level ranges).
//! Scans, commits, manifest merging and changelog files all go through here.

use std::collections::HashSet;
use std::sync::Arc;

use crate::storage::StorageError;
use crate::storage::io::heap_size::arc_size;
use crate::storage::meta::table::Table;
use crate::storage::spec::binary_row;
use crate::storage::spec::datum::Datum;
use crate::storage::spec::manifest::{
    self, FileKind, ManifestEntry, ManifestFileMeta, SimpleStats,
};

impl Table {
    /// The manifest files a manifest list names (cached by name).
    pub(crate) async fn read_manifest_list(
        &self,
        name: &str,
    ) -> Result<Vec<ManifestFileMeta>, StorageError> {
        if let Some(metas) = self.shared().manifest_lists.get(name) {
            return Ok(metas.as_ref().clone());
        }
        let bytes = self.io().read(&self.manifest_path(name)).await?;
        let metas = manifest::read_manifest_list(&bytes)?;
        let cached = Arc::new(metas.clone());
        let bytes = arc_size(cached.as_ref());
        self.shared().manifest_lists.put(name, cached, bytes);
        Ok(metas)
    }

    /// The entries of a manifest file (cached by name).
    pub(crate) async fn read_manifest(
        &self,
        name: &str,
    ) -> Result<Arc<Vec<ManifestEntry>>, StorageError> {
        if let Some(entries) = self.shared().manifests.get(name) {
            return Ok(entries);
        }
        let bytes = self.io().read(&self.manifest_path(name)).await?;
        let entries = Arc::new(manifest::read_manifest(&bytes)?);
        self.shared()
            .manifests
            .put(name, Arc::clone(&entries), arc_size(entries.as_ref()));
        Ok(entries)
    }
}

/// Writes one manifest file of `entries` and describes it for a manifest list.
pub(in crate::storage) async fn write_manifest(
    table: &Table,
    entries: &[ManifestEntry],
    written: &mut Vec<String>,
) -> Result<ManifestFileMeta, StorageError> {
    let name = format!("manifest-{}-0", uuid::Uuid::new_v4());
    let bytes = manifest::write_manifest(entries)?;
    let size = bytes.len() as i64;
    written.push(name.clone());
    table.io().write(&table.manifest_path(&name), bytes).await?;
    let cached = Arc::new(entries.to_vec());
    let weight = arc_size(cached.as_ref());
    table.shared().manifests.put(&name, cached, weight);
    let types = table.partition_types();
    let mut min: Vec<Datum> = Vec::new();
    let mut max: Vec<Datum> = Vec::new();
    let mut nulls: Vec<i64> = vec![0; types.len()];
    let mut seen: HashSet<&[u8]> = HashSet::new();
    for e in entries {
        if !seen.insert(&e.partition) {
            continue;
        }
        let values = binary_row::deserialize(&e.partition, &types)?;
        for (i, v) in values.into_iter().enumerate().take(types.len()) {
            if v.is_null() {
                nulls[i] += 1;
                continue;
            }
            if min.len() <= i {
                min.resize(types.len(), Datum::Null);
                max.resize(types.len(), Datum::Null);
            }
            if min[i].is_null() || v.compare(&min[i]).is_lt() {
                min[i] = v.clone();
            }
            if max[i].is_null() || v.compare(&max[i]).is_gt() {
                max[i] = v;
            }
        }
    }
    min.resize(types.len(), Datum::Null);
    max.resize(types.len(), Datum::Null);
    let stat = |f: fn(&ManifestEntry) -> i32, pick: fn(i32, i32) -> i32| {
        entries.iter().map(f).reduce(pick)
    };
    Ok(ManifestFileMeta {
        file_name: name,
        file_size: size,
        num_added_files: entries.iter().filter(|e| e.kind == FileKind::Add).count() as i64,
        num_deleted_files: entries
            .iter()
            .filter(|e| e.kind == FileKind::Delete)
            .count() as i64,
        partition_stats: SimpleStats {
            min_values: binary_row::serialize(&min, &types),
            max_values: binary_row::serialize(&max, &types),
            null_counts: Some(nulls.into_iter().map(Some).collect()),
        },
        schema_id: table.schema().id,
        min_bucket: stat(|e| e.bucket, i32::min),
        max_bucket: stat(|e| e.bucket, i32::max),
        min_level: stat(|e| e.file.level, i32::min),
        max_level: stat(|e| e.file.level, i32::max),
        min_row_id: None,
        max_row_id: None,
    })
}
