//! [`HeapSize`] of the decoded metadata tables cache (manifest entries and lists, schemas,
//! index manifest entries), so the cache budget weighs them in bytes. Implemented here rather
//! than beside the types: `spec` is below `io`, where the trait lives.

use crate::storage::io::heap_size::HeapSize;
use crate::storage::meta::deletion_vector::DeletionVector;
use crate::storage::meta::index_manifest::{
    DeletionVectorMeta, GlobalIndexMeta, IndexFileMeta, IndexManifestEntry,
};
use crate::storage::spec::manifest::{DataFileMeta, ManifestEntry, ManifestFileMeta, SimpleStats};
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::types::{DataField, PaimonType, TypeKind};

impl HeapSize for SimpleStats {
    fn heap_size(&self) -> usize {
        self.min_values.heap_size() + self.max_values.heap_size() + self.null_counts.heap_size()
    }
}

impl HeapSize for DataFileMeta {
    fn heap_size(&self) -> usize {
        self.file_name.heap_size()
            + self.min_key.heap_size()
            + self.max_key.heap_size()
            + self.key_stats.heap_size()
            + self.value_stats.heap_size()
            + self.extra_files.heap_size()
            + self.embedded_file_index.heap_size()
            + self.value_stats_cols.heap_size()
            + self.external_path.heap_size()
            + self.write_cols.heap_size()
            + self.write_cols_sequences.heap_size()
    }
}

impl HeapSize for ManifestEntry {
    fn heap_size(&self) -> usize {
        self.partition.heap_size() + self.file.heap_size()
    }
}

impl HeapSize for ManifestFileMeta {
    fn heap_size(&self) -> usize {
        self.file_name.heap_size() + self.partition_stats.heap_size()
    }
}

impl HeapSize for TypeKind {
    fn heap_size(&self) -> usize {
        match self {
            TypeKind::Array(t) | TypeKind::Multiset(t) => t.heap_size(),
            TypeKind::Map(k, v) => k.heap_size() + v.heap_size(),
            TypeKind::Row(fields) => fields.heap_size(),
            TypeKind::Other(name) => name.heap_size(),
            _ => 0,
        }
    }
}

impl HeapSize for PaimonType {
    fn heap_size(&self) -> usize {
        self.kind.heap_size()
    }
}

impl HeapSize for DataField {
    fn heap_size(&self) -> usize {
        self.name.heap_size()
            + self.data_type.heap_size()
            + self.description.heap_size()
            + self.default_value.heap_size()
    }
}

impl HeapSize for TableSchema {
    fn heap_size(&self) -> usize {
        self.fields.heap_size()
            + self.partition_keys.heap_size()
            + self.primary_keys.heap_size()
            + self.options.heap_size()
            + self.comment.heap_size()
    }
}

impl HeapSize for DeletionVectorMeta {
    fn heap_size(&self) -> usize {
        self.data_file_name.heap_size()
    }
}

impl HeapSize for GlobalIndexMeta {
    fn heap_size(&self) -> usize {
        self.extra_field_ids.heap_size()
            + self.index_meta.heap_size()
            + self.source_meta.heap_size()
    }
}

impl HeapSize for IndexFileMeta {
    fn heap_size(&self) -> usize {
        self.index_type.heap_size()
            + self.file_name.heap_size()
            + self.dv_ranges.heap_size()
            + self.external_path.heap_size()
            + self.global_index.heap_size()
    }
}

impl HeapSize for IndexManifestEntry {
    fn heap_size(&self) -> usize {
        self.partition.heap_size() + self.index_file.heap_size()
    }
}

impl HeapSize for DeletionVector {
    fn heap_size(&self) -> usize {
        self.memory_size()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::storage::io::heap_size::total_size;
    use crate::storage::spec::manifest::FileKind;

    /// An ADD entry of file `name` in bucket 0 of an empty partition, its keys and statistics
    /// `key_bytes` wide.
    pub(crate) fn entry(name: &str, key_bytes: usize) -> ManifestEntry {
        let stats = || SimpleStats {
            min_values: vec![0; key_bytes],
            max_values: vec![0; key_bytes],
            null_counts: Some(vec![Some(0); 4]),
        };
        ManifestEntry {
            kind: FileKind::Add,
            partition: vec![0; 12],
            bucket: 0,
            total_buckets: 1,
            file: DataFileMeta {
                file_name: name.to_owned(),
                file_size: 1,
                row_count: 1,
                min_key: vec![0; key_bytes],
                max_key: vec![0; key_bytes],
                key_stats: stats(),
                value_stats: stats(),
                min_sequence_number: 0,
                max_sequence_number: 0,
                schema_id: 0,
                level: 0,
                extra_files: Vec::new(),
                creation_time: None,
                delete_row_count: None,
                embedded_file_index: None,
                file_source: None,
                value_stats_cols: None,
                external_path: None,
                first_row_id: None,
                write_cols: None,
                write_cols_sequences: None,
            },
        }
    }

    #[test]
    fn a_manifest_weighs_its_entries_and_their_bytes() {
        let narrow = entry("data-1.parquet", 8);
        let wide = entry("data-1.parquet", 800);
        // Six byte vectors of the key's width, plus the name, partition and null counts.
        assert_eq!(wide.heap_size() - narrow.heap_size(), 6 * 792);
        assert!(narrow.heap_size() >= 14 + 12 + 6 * 8 + 2 * 4 * 16);
        let manifest = vec![narrow.clone(); 100];
        assert_eq!(
            total_size(&manifest),
            std::mem::size_of::<Vec<ManifestEntry>>()
                + 100 * (std::mem::size_of::<ManifestEntry>() + narrow.heap_size())
        );
    }
}
