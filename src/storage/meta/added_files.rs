//! Files added by the commits between two snapshots, per bucket: what a commit or a statement
//! checks its keys and sequence numbers against (compactions only move rows, so they are left
//! out).

use crate::storage::StorageError;
use crate::storage::meta::snapshot::CommitKind;
use crate::storage::meta::table::Table;
use crate::storage::spec::manifest::{DataFileMeta, FileKind};

/// A file a commit added.
#[derive(Debug, Clone)]
pub(in crate::storage) struct Added {
    /// The snapshot that added it.
    pub(in crate::storage) snapshot: i64,
    /// That snapshot's `commitUser`.
    pub(in crate::storage) commit_user: std::sync::Arc<str>,
    /// (partition bytes, bucket).
    pub(in crate::storage) bucket: (Vec<u8>, i32),
    pub(in crate::storage) file: DataFileMeta,
}

/// Files added by the snapshots after `from` up to `to` (compactions left out), oldest first;
/// 40001 when one of those snapshots expired meanwhile (what it added cannot be checked).
pub(in crate::storage) async fn added_since(
    table: &Table,
    from: i64,
    to: i64,
) -> Result<Vec<Added>, StorageError> {
    let mut out = Vec::new();
    for id in from + 1..=to {
        let Some(s) = table.snapshots().get(id).await? else {
            return Err(StorageError::CommitConflict(format!(
                "snapshot {id} of {} expired while this transaction ran",
                table.qualified_name()
            )));
        };
        if s.commit_kind == CommitKind::Compact {
            // Rows moved between files: nothing new to check against.
            continue;
        }
        let user: std::sync::Arc<str> = s.commit_user.as_str().into();
        for meta in table.read_manifest_list(&s.delta_manifest_list).await? {
            for e in table.read_manifest(&meta.file_name).await?.iter() {
                if e.kind == FileKind::Add {
                    out.push(Added {
                        snapshot: id,
                        commit_user: std::sync::Arc::clone(&user),
                        bucket: (e.partition.clone(), e.bucket),
                        file: e.file.clone(),
                    });
                }
            }
        }
    }
    Ok(out)
}
