//! A transaction block's DDL made crash-atomic with the block's writes.
//!
//! COMMIT of a block holding DDL (`server/session/block_ddl.rs`) runs this protocol:
//!
//! 1. **Intent.** [`Warehouse::begin_block`] writes `_tarn/ddl/block-<id>.json`
//!    (create-if-absent, durable) before any other file: every change of the block (each
//!    created table's `schema-0`, each altered table's base id and the `schema-N` it gets,
//!    renames, drops), whether the block has writes, and its owner (the commit log's
//!    persistent commit user, when the log is on).
//! 2. **Reversible DDL.** [`BlockCommit::apply`] writes the creates (`schema-0`,
//!    create-if-absent), the alters (exactly the block's evolved schema as `schema-<base+1>`,
//!    under the table's commit lock, only while the latest schema is still `base`) and the
//!    renames (folder renames), in statement order. Each step is idempotent (a step already
//!    done is recognised by its file's content).
//! 3. **Commit point.** With writes: the block's transaction commits
//!    ([`commit_writes_in`](crate::storage::commit_writes_in)); through the commit log its
//!    one record names the block, and the log keeps that record from truncation until the
//!    block is settled, so a start after a crash still finds it. Without writes:
//!    [`BlockCommit::decide`] writing `_tarn/ddl/block-<id>.decided` is the commit point. (With
//!    writes the decision is written right after they commit too, to settle it cheaply.)
//! 4. **Irreversible DDL.** [`BlockCommit::finish`] drops the dropped tables (a drop cannot
//!    be undone, so it comes after the commit point; an already dropped table is fine), then
//!    deletes the intent and the decision and releases the log's record.
//!
//! [`Warehouse::recover_blocks`] (at start, after the commit log's replay) settles every
//! intent left by a crash: **forward** (finish step 4) when the decision exists, or the log
//! held the block's record at open, or the block's new schemas are already in use (a snapshot
//! or a log record of a created table, or of an altered table at its new schema id: undoing
//! them would break those commits); **back** otherwise: the renames renamed back, each
//! `schema-N` written on the recorded base deleted, each created table's folder deleted — in
//! reverse order, each only when its file is still the block's — then the intent deleted.
//!
//! What a crash can leave, step by step: an intent alone (undone), part of the reversible DDL
//! (undone), all of it (undone), the writes committed without the decision (forward: the
//! record or the new schema in use says so), the decision without the drops or with some of
//! them (forward, the drops again). Known gap: writes that commit directly into a snapshot
//! (the log off; a table's first commit, spilled writes, dynamic buckets) are recognised
//! only through the decision written right after, or when they wrote a table the block
//! created or altered; a crash in the instant between such a snapshot and the decision, for a
//! block whose writes touch only tables its DDL did not change, undoes the DDL and keeps the
//! rows. Other engines reading the warehouse (pypaimon, Flink) may briefly see a created
//! table or a `schema-N` that is later undone.

use object_store::path::Path;
use serde::{Deserialize, Serialize};

use crate::storage::StorageError;
use crate::storage::commit::log::crash_points::crash_point;
use crate::storage::commit::logged::{drain_locked, table_key};
use crate::storage::commit::state::CommitState;
use crate::storage::meta::table::{Table, latest_schema_id, schema_path, table_path};
use crate::storage::spec::schema::TableSchema;
use crate::storage::warehouse::Warehouse;

/// Where intents and decisions live.
const ROOT: &str = "_tarn/ddl";
const INTENT_SUFFIX: &str = ".json";
const DECISION_SUFFIX: &str = ".decided";

/// One change of a block, as COMMIT hands it over.
#[derive(Clone, Debug)]
pub enum DdlChange {
    /// CREATE TABLE: the pending handle (`Warehouse::pending_table`), whose schema becomes
    /// `schema-0`.
    Create {
        table: Table,
    },
    /// ALTER TABLE of a table at schema `base`: the pending handle, whose schema (id
    /// `base + 1`) is written.
    Alter {
        table: Table,
        base: i64,
    },
    Rename {
        database: String,
        from: String,
        to: String,
    },
    Drop {
        database: String,
        name: String,
    },
}

/// A change as the intent document records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum ChangeDoc {
    Create {
        database: String,
        name: String,
        /// The `schema-0` file's contents.
        schema: String,
    },
    Alter {
        database: String,
        name: String,
        base: i64,
        /// The `schema-<base+1>` file's contents.
        schema: String,
    },
    Rename {
        database: String,
        from: String,
        to: String,
    },
    Drop {
        database: String,
        name: String,
    },
}

/// `_tarn/ddl/block-<id>.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IntentDoc {
    id: String,
    /// The commit log's commit user of the server committing it (`None`: the log is off).
    owner: Option<String>,
    time_millis: i64,
    /// Whether the block has writes (their commit is the commit point).
    writes: bool,
    changes: Vec<ChangeDoc>,
}

/// How [`Warehouse::recover_blocks`] (or a failed COMMIT) settled a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settled {
    /// The block committed: its DDL was finished.
    Forward,
    /// The block did not commit: its DDL was undone.
    Back,
}

/// One block's COMMIT in progress (see the module docs).
#[derive(Debug)]
pub struct BlockCommit {
    warehouse: Warehouse,
    doc: IntentDoc,
}

fn intent_path(id: &str) -> Path {
    Path::from(format!("{ROOT}/block-{id}{INTENT_SUFFIX}"))
}

fn decision_path(id: &str) -> Path {
    Path::from(format!("{ROOT}/block-{id}{DECISION_SUFFIX}"))
}

fn schema_text(table: &Table) -> String {
    String::from_utf8(table.schema().to_json()).expect("schema JSON is UTF-8")
}

/// Whether the file at `path` holds `schema` (the block's own file, not another writer's).
async fn holds(warehouse: &Warehouse, path: &Path, schema: &str) -> Result<bool, StorageError> {
    let Some(bytes) = warehouse.io().read_if_exists(path).await? else {
        return Ok(false);
    };
    let ours = TableSchema::from_json(schema.as_bytes())?;
    Ok(TableSchema::from_json(&bytes).is_ok_and(|theirs| theirs == ours))
}

impl Warehouse {
    /// Step 1: records the intent of a block's `changes` (see the module docs); nothing else
    /// is written yet.
    pub async fn begin_block(
        &self,
        changes: &[DdlChange],
        writes: bool,
    ) -> Result<BlockCommit, StorageError> {
        let doc = IntentDoc {
            id: uuid::Uuid::new_v4().to_string(),
            owner: self.commit_log().map(|l| l.commit_user().to_owned()),
            time_millis: self.clock().now_millis(),
            writes,
            changes: changes
                .iter()
                .map(|c| match c {
                    DdlChange::Create { table } => ChangeDoc::Create {
                        database: table.database().to_owned(),
                        name: table.name().to_owned(),
                        schema: schema_text(table),
                    },
                    DdlChange::Alter { table, base } => ChangeDoc::Alter {
                        database: table.database().to_owned(),
                        name: table.name().to_owned(),
                        base: *base,
                        schema: schema_text(table),
                    },
                    DdlChange::Rename { database, from, to } => ChangeDoc::Rename {
                        database: database.clone(),
                        from: from.clone(),
                        to: to.clone(),
                    },
                    DdlChange::Drop { database, name } => ChangeDoc::Drop {
                        database: database.clone(),
                        name: name.clone(),
                    },
                })
                .collect(),
        };
        let bytes = serde_json::to_vec_pretty(&doc)
            .map_err(|e| StorageError::internal(format!("block intent: {e}")))?;
        if !self.io().write_new(&intent_path(&doc.id), bytes).await? {
            return Err(StorageError::internal(format!(
                "block intent {} exists already",
                doc.id
            )));
        }
        Ok(BlockCommit {
            warehouse: self.clone(),
            doc,
        })
    }

    /// Settles every block a crash (or a failed COMMIT) left undecided (see the module docs):
    /// forward or back. Intents of another server (another commit log's user) are left to
    /// it. Returns the settled blocks. Run at start, after the commit log's replay.
    pub async fn recover_blocks(&self) -> Result<Vec<(String, Settled)>, StorageError> {
        let own = self.commit_log().map(|l| l.commit_user().to_owned());
        let files = match self.io().list_dir(&Path::from(ROOT)).await {
            Ok((files, _)) => files,
            Err(e) if e.is_missing_file() => Vec::new(),
            Err(e) => return Err(e),
        };
        let names: Vec<String> = files
            .iter()
            .filter_map(|f| f.location.filename().map(str::to_owned))
            .collect();
        let mut settled = Vec::new();
        for name in &names {
            let Some(id) = name
                .strip_prefix("block-")
                .and_then(|n| n.strip_suffix(INTENT_SUFFIX))
            else {
                continue;
            };
            let Some(bytes) = self.io().read_if_exists(&intent_path(id)).await? else {
                continue;
            };
            let doc: IntentDoc = serde_json::from_slice(&bytes).map_err(|e| {
                StorageError::format(format!("block intent {name} does not decode: {e}"))
            })?;
            if doc.owner.is_some() && doc.owner != own {
                continue;
            }
            let block = BlockCommit {
                warehouse: self.clone(),
                doc,
            };
            let outcome = block.settle().await?;
            tracing::info!(block = id, ?outcome, "settled a transaction block's DDL");
            settled.push((id.to_owned(), outcome));
        }
        // Decisions whose intent is gone (a crash between the two deletes).
        for name in &names {
            if let Some(id) = name
                .strip_prefix("block-")
                .and_then(|n| n.strip_suffix(DECISION_SUFFIX))
                && !names.contains(&format!("block-{id}{INTENT_SUFFIX}"))
            {
                self.io().delete(&decision_path(id)).await?;
            }
        }
        Ok(settled)
    }
}

impl BlockCommit {
    /// The block's id (named by its log record).
    pub fn id(&self) -> &str {
        &self.doc.id
    }

    /// Step 2: the creates, alters and renames, in order. On an error, call
    /// [`undo`](Self::undo) (or [`settle`](Self::settle)).
    pub async fn apply(&self) -> Result<(), StorageError> {
        for change in &self.doc.changes {
            match change {
                ChangeDoc::Create {
                    database,
                    name,
                    schema,
                } => self.create(database, name, schema).await?,
                ChangeDoc::Alter {
                    database,
                    name,
                    base,
                    schema,
                } => self.alter(database, name, *base, schema).await?,
                ChangeDoc::Rename { database, from, to } => {
                    let wh = &self.warehouse;
                    if !wh.table_exists(database, from).await?
                        && wh.table_exists(database, to).await?
                    {
                        // Done already.
                        continue;
                    }
                    wh.rename_table(database, from, to).await?;
                }
                ChangeDoc::Drop { .. } => {}
            }
        }
        crash_point("ddl-applied");
        Ok(())
    }

    async fn create(&self, database: &str, name: &str, schema: &str) -> Result<(), StorageError> {
        let wh = &self.warehouse;
        let path = schema_path(&table_path(database, name), 0);
        if holds(wh, &path, schema).await? {
            return Ok(());
        }
        if !wh.database_exists(database).await? {
            return Err(StorageError::DatabaseNotFound(database.to_owned()));
        }
        if wh.table_exists(database, name).await?
            || !wh.io().write_new(&path, schema.as_bytes().to_vec()).await?
        {
            return Err(StorageError::TableExists(name.to_owned()));
        }
        Ok(())
    }

    /// The block's schema as `schema-<base+1>`, under the table's commit lock after its
    /// unflushed commits are flushed (as `Warehouse::alter_table` does); a conflict when
    /// another writer changed the schema since the block read it.
    async fn alter(
        &self,
        database: &str,
        name: &str,
        base: i64,
        schema: &str,
    ) -> Result<(), StorageError> {
        let wh = &self.warehouse;
        let path = table_path(database, name);
        let next = schema_path(&path, base + 1);
        let table = wh.open_table(database, name).await?;
        let commit = table.state::<CommitState>();
        let _lock = commit.lock.lock().await;
        if holds(wh, &next, schema).await? {
            return Ok(());
        }
        if let Some(log) = &commit.log {
            drain_locked(log, &table).await?;
        }
        let changed = || {
            StorageError::CommitConflict(format!(
                "table \"{name}\" was altered by another session since this transaction \
                 block's DDL"
            ))
        };
        if latest_schema_id(wh.io(), &path).await? != Some(base) {
            return Err(changed());
        }
        if !wh.io().write_new(&next, schema.as_bytes().to_vec()).await? {
            return Err(changed());
        }
        Ok(())
    }

    /// Step 3 without writes (the commit point), or right after the writes committed: the
    /// decision, durable.
    pub async fn decide(&self) -> Result<(), StorageError> {
        self.warehouse
            .io()
            .write_new(&decision_path(&self.doc.id), Vec::<u8>::new())
            .await?;
        Ok(())
    }

    /// Whether the block's writes are known to have committed: its record was durable in
    /// the commit log (found at open, or appended by this server).
    pub fn writes_logged(&self) -> bool {
        self.warehouse
            .commit_log()
            .is_some_and(|l| l.found_block(&self.doc.id))
    }

    /// Step 4: the drops, then the intent, the decision and the log's hold go.
    pub async fn finish(self) -> Result<(), StorageError> {
        let wh = &self.warehouse;
        for change in &self.doc.changes {
            if let ChangeDoc::Drop { database, name } = change {
                match wh.drop_table(database, name).await {
                    Ok(()) | Err(StorageError::TableNotFound(_)) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        self.forget().await
    }

    /// The block did not commit: what step 2 wrote is undone (each step only where its file
    /// is still the block's), in reverse order, then the intent goes.
    pub async fn undo(self) -> Result<(), StorageError> {
        let wh = &self.warehouse;
        for change in self.doc.changes.iter().rev() {
            match change {
                ChangeDoc::Create {
                    database,
                    name,
                    schema,
                } => {
                    let path = schema_path(&table_path(database, name), 0);
                    if holds(wh, &path, schema).await? {
                        match wh.drop_table(database, name).await {
                            Ok(()) | Err(StorageError::TableNotFound(_)) => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
                ChangeDoc::Alter {
                    database,
                    name,
                    base,
                    schema,
                } => {
                    let next = schema_path(&table_path(database, name), base + 1);
                    if !holds(wh, &next, schema).await? {
                        continue;
                    }
                    let table = wh.open_table(database, name).await?;
                    let commit = table.state::<CommitState>();
                    {
                        let _lock = commit.lock.lock().await;
                        wh.io().delete(&next).await?;
                        // Handles under the undone schema never commit; its cached decoding
                        // goes with the table's shared state.
                        commit.retire();
                        wh.tables().forget(database, name);
                    }
                }
                ChangeDoc::Rename { database, from, to } => {
                    if !wh.table_exists(database, from).await?
                        && wh.table_exists(database, to).await?
                    {
                        wh.rename_table(database, to, from).await?;
                    }
                }
                ChangeDoc::Drop { .. } => {}
            }
        }
        self.forget().await
    }

    /// Settles the block by what the warehouse shows (see the module docs): forward when it
    /// is decided, its writes' record was found, or its new schemas are in use; back
    /// otherwise.
    pub async fn settle(self) -> Result<Settled, StorageError> {
        if self.committed().await? {
            self.finish().await?;
            Ok(Settled::Forward)
        } else {
            self.undo().await?;
            Ok(Settled::Back)
        }
    }

    async fn committed(&self) -> Result<bool, StorageError> {
        let wh = &self.warehouse;
        if self.writes_logged() || wh.io().exists(&decision_path(&self.doc.id)).await? {
            return Ok(true);
        }
        for change in &self.doc.changes {
            let (database, name, at_least, schema) = match change {
                ChangeDoc::Create {
                    database,
                    name,
                    schema,
                } => (database, name, 0, schema),
                ChangeDoc::Alter {
                    database,
                    name,
                    base,
                    schema,
                } => (database, name, base + 1, schema),
                _ => continue,
            };
            let path = schema_path(&table_path(database, name), at_least);
            if !holds(wh, &path, schema).await? {
                continue;
            }
            let logged = wh
                .commit_log()
                .and_then(|l| l.found_schema(&table_key(database, name)));
            if logged.is_some_and(|s| s >= at_least) {
                return Ok(true);
            }
            let table = wh.open_table(database, name).await?;
            if let Some(latest) = table.snapshots().latest().await?
                && latest.schema_id >= at_least
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    async fn forget(self) -> Result<(), StorageError> {
        let io = self.warehouse.io();
        io.delete(&intent_path(&self.doc.id)).await?;
        io.delete(&decision_path(&self.doc.id)).await?;
        if let Some(log) = self.warehouse.commit_log() {
            log.release_block(&self.doc.id);
        }
        Ok(())
    }
}

/// Ends the process at `ddl-after-writes` when armed (`TARN_CRASH_AT`): the block's writes
/// committed, its decision not written.
pub fn crash_after_writes() {
    crash_point("ddl-after-writes");
}

#[cfg(test)]
#[path = "block_ddl_tests.rs"]
mod tests;
