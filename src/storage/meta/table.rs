//! [`Table`]: one Paimon table of the warehouse — its location, schema versions, snapshots, and
//! the state every writer of it in this process shares.
//!
//! A `Table` is a cheap handle: sessions open one per statement (so a schema or snapshot written
//! by another engine is seen at once) while the per-table [`TableShared`] state — the commit lock,
//! the per-bucket sequence counters, the commit user, caches of immutable metadata — lives in the
//! warehouse for the life of the process. Every cache of every table draws on the warehouse's
//! one [`CacheBudget`].

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use object_store::path::Path;

use crate::storage::StorageError;
use crate::storage::io::cache_budget::{BudgetedCache, CacheBudget};
use crate::storage::io::clock::Clock;
use crate::storage::io::file_io::FileIO;
use crate::storage::io::heap_size::arc_size;
use crate::storage::meta::deletion_vector::{DeletionVector, IndexFileNamer};
use crate::storage::meta::pins::PinRegistry;
use crate::storage::meta::snapshot::SnapshotManager;
use crate::storage::spec::datum::{Datum, PartitionText};
use crate::storage::spec::file_index::FileIndex;
use crate::storage::spec::manifest::{ManifestEntry, ManifestFileMeta};
use crate::storage::spec::options::compaction::CompactOptions;
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::types::PaimonType;

/// State of one table shared by every handle in this process: the metadata caches this floor
/// owns, and a slot per state type of the floors above ([`TableShared::state`]).
#[derive(Debug)]
pub struct TableShared {
    /// The warehouse's memory budget, which every cache of the table draws on.
    budget: Arc<CacheBudget>,
    /// Schema versions by id (immutable once written).
    schemas: BudgetedCache<Arc<TableSchema>>,
    /// Decoded manifests by file name (immutable once written).
    pub(crate) manifests: BudgetedCache<Arc<Vec<ManifestEntry>>>,
    /// Decoded manifest lists by file name (immutable once written).
    pub(crate) manifest_lists: BudgetedCache<Arc<Vec<ManifestFileMeta>>>,
    /// Names of the index files this process writes (`index-<uuid>-<n>`).
    pub(crate) index_file_names: IndexFileNamer,
    /// Decoded deletion vectors by index file and offset.
    pub(crate) deletion_vectors: BudgetedCache<Arc<DeletionVector>>,
    /// Decoded file indexes (bloom filters) of data files, by data file name when embedded in
    /// the manifest, else by index file name.
    pub(crate) file_indexes: BudgetedCache<Arc<FileIndex>>,
    /// Snapshot ids in use by this process's running reads and transactions: expiry keeps them.
    pub(crate) pins: Arc<PinRegistry>,
    /// The state of the floors above, one value per type.
    states: FloorStates,
}

/// Per-table state of the floors above `meta` (the LSM caches, the write's sequence counters,
/// the commit lock, the compactor's and expiry's state), one value of each type, made by its
/// `Default` on first use. Each floor names only its own state types, so this floor never
/// imports the floors above it.
#[derive(Default)]
struct FloorStates(Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl std::fmt::Debug for FloorStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.0.lock().map_or(0, |m| m.len());
        f.debug_struct("FloorStates")
            .field("states", &count)
            .finish()
    }
}

impl TableShared {
    fn new(budget: &Arc<CacheBudget>) -> Self {
        Self {
            budget: Arc::clone(budget),
            schemas: budget.cache(cache_kinds::SCHEMA),
            manifests: budget.cache(cache_kinds::MANIFEST),
            manifest_lists: budget.cache(cache_kinds::MANIFEST_LIST),
            index_file_names: IndexFileNamer::new(),
            deletion_vectors: budget.cache(cache_kinds::DELETION_VECTOR),
            file_indexes: budget.cache(cache_kinds::FILE_INDEX),
            pins: Arc::default(),
            states: FloorStates::default(),
        }
    }

    /// The memory budget the table's caches draw on (the floors above make theirs on it).
    pub(crate) fn cache_budget(&self) -> &Arc<CacheBudget> {
        &self.budget
    }

    /// The table's state of type `S` (one per table and process, made on first use).
    pub fn state<S: Any + Send + Sync + Default>(&self) -> Arc<S> {
        self.state_with(|_| S::default())
    }

    /// The table's state of type `S`, made by `make` on first use — for state that needs
    /// what the table shares, such as caches on its [`CacheBudget`]. `make` runs under the
    /// slots' lock (so it runs once), and must not ask for another state.
    pub(crate) fn state_with<S: Any + Send + Sync>(&self, make: impl FnOnce(&Self) -> S) -> Arc<S> {
        let any = Arc::clone(
            self.states
                .0
                .lock()
                .expect("floor state lock")
                .entry(TypeId::of::<S>())
                .or_insert_with(|| Arc::new(make(self))),
        );
        any.downcast::<S>()
            .expect("a state slot holds its own type")
    }

    /// Schema version `id` of the table at `path` (read once, then cached: schema files never
    /// change).
    pub(crate) async fn schema(
        &self,
        io: &FileIO,
        path: &Path,
        id: i64,
    ) -> Result<Arc<TableSchema>, StorageError> {
        if let Some(s) = self.schemas.get(&id.to_string()) {
            return Ok(s);
        }
        let bytes = io.read(&schema_path(path, id)).await?;
        let schema = Arc::new(TableSchema::from_json(&bytes)?);
        self.put_schema(&schema);
        Ok(schema)
    }

    /// Caches `schema` unless it is there already (a table handle is opened per statement
    /// with the latest schema; looking is not a use).
    fn put_schema(&self, schema: &Arc<TableSchema>) {
        let key = schema.id.to_string();
        if self.schemas.peek(&key).is_none() {
            self.schemas
                .put(&key, Arc::clone(schema), arc_size(schema.as_ref()));
        }
    }
}

/// The kinds of cache of this floor (the `kind` label of `tarn_cache_*` in `/metrics`).
pub(crate) mod cache_kinds {
    pub(crate) const SCHEMA: &str = "schema";
    pub(crate) const MANIFEST: &str = "manifest";
    pub(crate) const MANIFEST_LIST: &str = "manifest_list";
    pub(crate) const DELETION_VECTOR: &str = "deletion_vector";
    pub(crate) const FILE_INDEX: &str = "file_index";
}

/// One table: where it lives, its latest schema, its snapshots.
#[derive(Debug, Clone)]
pub struct Table {
    io: FileIO,
    clock: Arc<dyn Clock>,
    database: String,
    name: String,
    path: Path,
    schema: Arc<TableSchema>,
    snapshots: SnapshotManager,
    shared: Arc<TableShared>,
}

impl Table {
    pub(crate) fn new(
        io: FileIO,
        clock: Arc<dyn Clock>,
        database: &str,
        name: &str,
        schema: Arc<TableSchema>,
        shared: Arc<TableShared>,
    ) -> Self {
        shared.put_schema(&schema);
        Self::unwritten(io, clock, database, name, schema, shared)
    }

    /// A handle under `schema`, which is not written yet (a transaction block's pending
    /// CREATE or ALTER): kept out of the shared schema cache, where another engine's
    /// `schema-N` of the same id may go.
    pub(crate) fn unwritten(
        io: FileIO,
        clock: Arc<dyn Clock>,
        database: &str,
        name: &str,
        schema: Arc<TableSchema>,
        shared: Arc<TableShared>,
    ) -> Self {
        let path = table_path(database, name);
        Self {
            snapshots: SnapshotManager::new(io.clone(), &path),
            io,
            clock,
            database: database.to_owned(),
            name: name.to_owned(),
            path,
            schema,
            shared,
        }
    }

    pub fn database(&self) -> &str {
        &self.database
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `db.name`, for messages.
    pub fn qualified_name(&self) -> String {
        format!("{}.{}", self.database, self.name)
    }

    pub fn io(&self) -> &FileIO {
        &self.io
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The latest schema (as of opening this handle).
    pub fn schema(&self) -> &Arc<TableSchema> {
        &self.schema
    }

    pub fn snapshots(&self) -> &SnapshotManager {
        &self.snapshots
    }

    pub fn tags(&self) -> crate::storage::meta::tag::TagManager {
        crate::storage::meta::tag::TagManager::new(self.io.clone(), &self.path)
    }

    pub fn shared(&self) -> &Arc<TableShared> {
        &self.shared
    }

    /// The table's state of type `S` ([`TableShared::state`]).
    pub fn state<S: Any + Send + Sync + Default>(&self) -> Arc<S> {
        self.shared.state()
    }

    /// The same table at `schema` (a newer version than this handle's: see
    /// [`newer_schema`](Self::newer_schema)).
    pub(crate) fn with_schema(&self, schema: Arc<TableSchema>) -> Table {
        self.shared.put_schema(&schema);
        Table {
            schema,
            ..self.clone()
        }
    }

    /// The table's newest schema when it is newer than this handle's (an `ALTER TABLE` since
    /// the handle was opened, by this server or another engine), `None` when the handle's is
    /// the newest: one existence check of `schema-<id + 1>`, a listing only when it exists.
    pub(crate) async fn newer_schema(&self) -> Result<Option<Arc<TableSchema>>, StorageError> {
        if !self
            .io
            .exists(&schema_path(&self.path, self.schema.id + 1))
            .await?
        {
            return Ok(None);
        }
        let latest = latest_schema_id(&self.io, &self.path)
            .await?
            .unwrap_or(self.schema.id);
        Ok(Some(self.schema_by_id(latest).await?))
    }

    /// Schema version `id` (data files name the schema they were written with; a missing
    /// `schema-N` is a [`StorageError::MissingFile`]).
    pub async fn schema_by_id(&self, id: i64) -> Result<Arc<TableSchema>, StorageError> {
        if id == self.schema.id {
            // The handle's own (for an unwritten one, the only copy).
            return Ok(Arc::clone(&self.schema));
        }
        self.shared.schema(&self.io, &self.path, id).await
    }

    /// Whether the table merges as Paimon's `LookupMergeFunction` (see
    /// `CompactOptions::lookup_merge`).
    pub fn lookup_merge(&self) -> bool {
        CompactOptions::from_options(&self.schema.options).is_ok_and(|o| o.lookup_merge)
    }

    /// Types of the partition columns, in order.
    pub fn partition_types(&self) -> Vec<PaimonType> {
        self.schema
            .partition_keys
            .iter()
            .map(|k| self.schema.type_of(k).clone())
            .collect()
    }

    /// Types of the trimmed primary key columns (the LSM key), in order.
    pub fn key_types(&self) -> Vec<PaimonType> {
        self.schema
            .trimmed_primary_keys()
            .iter()
            .map(|k| self.schema.type_of(k).clone())
            .collect()
    }

    /// Folder of a bucket: `[k=v/...]bucket-N`.
    pub fn bucket_path(&self, partition: &[Datum], bucket: i32) -> Path {
        let mut path = self.path.as_ref().to_owned();
        for segment in self.partition_segments(partition, self.legacy_partition_name()) {
            path.push('/');
            path.push_str(&segment);
        }
        path.push_str(&format!("/bucket-{bucket}"));
        self.io.path(&path)
    }

    /// The other naming of a partition folder (legacy `toString` vs cast to string): files of
    /// tables written by engines that disagree on the option are looked up under both.
    pub fn alternate_bucket_path(&self, partition: &[Datum], bucket: i32) -> Option<Path> {
        let legacy = self.legacy_partition_name();
        let ours = self.partition_segments(partition, legacy);
        let other = self.partition_segments(partition, !legacy);
        (ours != other).then(|| {
            let mut path = self.path.as_ref().to_owned();
            for segment in other {
                path.push('/');
                path.push_str(&segment);
            }
            path.push_str(&format!("/bucket-{bucket}"));
            self.io.path(&path)
        })
    }

    pub(crate) fn legacy_partition_name(&self) -> bool {
        self.schema.core_options().legacy_partition_name()
    }

    pub(crate) fn partition_segments(&self, partition: &[Datum], legacy: bool) -> Vec<String> {
        let default_name = self.schema.core_options().partition_default_name();
        self.schema
            .partition_keys
            .iter()
            .zip(partition)
            .map(|(key, value)| {
                let ty = self.schema.type_of(key);
                let text = partition_value_text(value, ty, legacy);
                let text = match text {
                    Some(t) if !t.trim().is_empty() => t,
                    _ => default_name.to_owned(),
                };
                format!("{}={}", escape_path_name(key), escape_path_name(&text))
            })
            .collect()
    }

    /// Path of the manifest file or manifest list `name`.
    pub fn manifest_path(&self, name: &str) -> Path {
        self.path.clone().join("manifest").join(name)
    }
}

/// Text of a partition value in a folder name. Paimon's legacy naming (the default unless the
/// table sets `partition.legacy-name = false`) uses Java's `toString` of the internal value, so a
/// DATE shows as its day number; the newer naming casts to string (`2026-12-01`).
fn partition_value_text(value: &Datum, ty: &PaimonType, legacy: bool) -> Option<String> {
    Some(match (value, legacy) {
        (Datum::Null, _) => return None,
        (Datum::Date(days), true) => days.to_string(),
        (Datum::Time(ms), true) => ms.to_string(),
        (Datum::Timestamp(ts), true) => {
            // java.time.LocalDateTime#toString: 2026-12-01T10:00, seconds and fraction only
            // when non-zero.
            let text = PartitionText(value, ty).to_string();
            let (date, time) = text.split_once(' ').unwrap_or((&text, "00:00:00"));
            let time = if time.ends_with(":00") && ts.millis % 1000 == 0 && ts.nanos_of_milli == 0 {
                &time[..5]
            } else {
                time
            };
            format!("{date}T{time}")
        }
        _ => PartitionText(value, ty).to_string(),
    })
}

/// Paimon's (Hive's) escaping of a partition folder name.
pub fn escape_path_name(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let escape = (c as u32) < 0x20
            || matches!(
                c,
                '"' | '#'
                    | '%'
                    | '\''
                    | '*'
                    | '/'
                    | ':'
                    | '='
                    | '?'
                    | '\\'
                    | '\u{7f}'
                    | '{'
                    | '}'
                    | '['
                    | ']'
                    | '^'
            );
        if escape {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// What a database's folder name ends with (`<db>.db`).
pub const DATABASE_SUFFIX: &str = ".db";

/// `<db>.db/<table>`.
pub fn table_path(database: &str, name: &str) -> Path {
    Path::from_iter([format!("{database}{}", DATABASE_SUFFIX), name.to_owned()])
}

pub fn schema_path(table: &Path, id: i64) -> Path {
    table.clone().join("schema").join(format!("schema-{id}"))
}

/// The id of the newest `schema-N` of the table at `table` (one listing), `None` when it has
/// none (no such table).
pub(crate) async fn latest_schema_id(
    io: &FileIO,
    table: &Path,
) -> Result<Option<i64>, StorageError> {
    let ids = io
        .numbered(&table.clone().join("schema"), "schema-", "")
        .await?;
    Ok(ids.last().map(|&id| id as i64))
}

/// Registry of [`TableShared`] state, one per table for the life of the process, and the
/// memory budget all their caches share.
#[derive(Debug, Default)]
pub(crate) struct TableRegistry {
    tables: Mutex<HashMap<(String, String), Arc<TableShared>>>,
    budget: Arc<CacheBudget>,
}

impl TableRegistry {
    pub(crate) fn shared(&self, database: &str, name: &str) -> Arc<TableShared> {
        Arc::clone(
            self.tables
                .lock()
                .expect("table registry lock")
                .entry((database.to_owned(), name.to_owned()))
                .or_insert_with(|| Arc::new(TableShared::new(&self.budget))),
        )
    }

    /// The memory budget of every table's caches.
    pub(crate) fn cache_budget(&self) -> &Arc<CacheBudget> {
        &self.budget
    }

    /// Every table opened so far: (database, name) and its shared state.
    pub(crate) fn all(&self) -> Vec<((String, String), Arc<TableShared>)> {
        self.tables
            .lock()
            .expect("table registry lock")
            .iter()
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect()
    }

    /// Forgets a dropped table, so a new table of that name starts afresh.
    pub(crate) fn forget(&self, database: &str, name: &str) {
        self.tables
            .lock()
            .expect("table registry lock")
            .remove(&(database.to_owned(), name.to_owned()));
    }

    pub(crate) fn forget_database(&self, database: &str) {
        self.tables
            .lock()
            .expect("table registry lock")
            .retain(|(db, _), _| db != database);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::spec::datum::Timestamp;
    use crate::storage::spec::types::TypeKind;

    #[test]
    fn escapes_like_paimon() {
        assert_eq!(escape_path_name("2026-12-01"), "2026-12-01");
        assert_eq!(escape_path_name("a/b:c=d%"), "a%2Fb%3Ac%3Dd%25");
        assert_eq!(escape_path_name("x y"), "x y");
    }

    #[test]
    fn partition_names_legacy_and_cast() {
        let date = PaimonType::nullable(TypeKind::Date);
        let d = Datum::Date(20_788);
        assert_eq!(partition_value_text(&d, &date, true).unwrap(), "20788");
        assert_eq!(
            partition_value_text(&d, &date, false).unwrap(),
            "2026-12-01"
        );
        let ts = PaimonType::nullable(TypeKind::Timestamp(6));
        let v = Datum::Timestamp(Timestamp::from_millis(1_796_119_200_000));
        assert_eq!(
            partition_value_text(&v, &ts, true).unwrap(),
            "2026-12-01T10:00"
        );
        assert_eq!(
            partition_value_text(&v, &ts, false).unwrap(),
            "2026-12-01 10:00:00"
        );
    }
}
