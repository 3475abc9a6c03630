//! Row-level DML of a session: INSERT (plain, UPSERT, ON CONFLICT), UPDATE, DELETE and MERGE
//! on Paimon tables, written into the session's transaction.
//!
//! At Parse time a statement becomes a [`DmlPlan`]: its target table and the planned query
//! whose rows are the changes (`sql::dml` builds those queries). At Execute time the rows
//! stream into the transaction's `TableWrite` through an [`Applier`]. Outside a transaction
//! block each statement is its own transaction, committed before the client hears the tag;
//! one that loses a first-committer-wins race to another writer is re-run on the newer
//! snapshot (as PostgreSQL's READ COMMITTED re-evaluates), a few times at most.
//!
//! Row locks (`query::row_locks`): before a batch of changes is written, the transaction locks
//! the keys it changes, waiting for a transaction that holds one until that one ends. At the
//! statement's end its keys are checked against what committed since its snapshot
//! (`TableWrite::end_statement`): a key changed meanwhile — typically by the transaction it
//! waited for — means the statement worked on an old row. READ COMMITTED then re-runs the
//! whole statement on a fresh statement snapshot, keeping the locks it holds (PostgreSQL's
//! EvalPlanQual, simplified to the whole statement), so `v = v + 1` builds on the other
//! transaction's value; REPEATABLE READ fails the statement with 40001, as PostgreSQL does.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{MemTable, SchemaProvider};
use datafusion::common::ParamValues;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::memory::MemoryStream;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{Query, SelectItem, SetExpr, Statement, With};
use futures::StreamExt;

use super::{Outcome, Output, Session, TxState};
use crate::query::Transaction;
use crate::query::conflict_join::ConflictJoin;
use crate::query::dml::{Applier, ChangeSpec, Repeat, repeated_keys};
use crate::query::pg_types::table_arrow_schema;
use crate::query::row_locks::LockError;
use crate::query::table::PaimonTable;
use crate::server::error::PgError;
use crate::sql::defaults::{TableDefaults, fill_assignments, fill_insert, fill_merge};
use crate::sql::dml::{
    self as rewrite, DmlKind, EXCLUDED_TABLE, RETURNING_TABLE, RowValue, Target,
};
use crate::storage::{
    DmlWhat, MergeOptions, StorageError, Table, WriteMode, dml_notice, dml_support, insert_merges,
    upsert_replaces,
};

/// How many times an autocommit statement is re-run after losing a write-write race (each
/// race has a winner, so this only bounds pathological contention).
const AUTOCOMMIT_ATTEMPTS: usize = 64;

/// How many times a READ COMMITTED statement is re-run because a key it changed was changed
/// by a commit after its snapshot (with row locks held, only writers that take none — other
/// servers, other engines — can make it run more than twice).
const STATEMENT_ATTEMPTS: usize = 64;

/// A DML statement ready to run.
#[derive(Debug, Clone)]
pub struct DmlPlan {
    table: Table,
    /// The name the statement gives the target (its alias, or the table's name).
    alias: String,
    pub tag: &'static str,
    mode: WriteMode,
    spec: ChangeSpec,
    /// The plan whose rows are the changes (ON CONFLICT: the proposed rows).
    pub plan: LogicalPlan,
    /// ON CONFLICT: the change query over the proposals, and whether it is DO UPDATE.
    on_conflict: Option<(Query, bool)>,
    /// ON CONFLICT: the change query, ready to run without planning when it can be.
    conflict_join: Option<Arc<ConflictJoin>>,
    returning: Option<Vec<SelectItem>>,
    /// The columns RETURNING produces.
    pub returning_schema: Option<SchemaRef>,
    table_schema: SchemaRef,
    /// A NOTICE for the client: the table's merge engine gives the statement another meaning
    /// than PostgreSQL's (deletes ignored or retracted).
    notice: Option<String>,
    /// `INSERT … VALUES` of parameters and constants: each row's value per column, so that
    /// Execute builds the rows without running `plan` when they fit the columns' types
    /// (`fast_rows`).
    fast: Option<Vec<Vec<RowValue>>>,
    /// A DELETE of whole partitions: outside a block, those partitions are dropped instead
    /// (`partitions.rs`).
    whole: Option<super::partitions::WholePartitions>,
}

/// What a statement writes: the rows of its planned query, or one row built from its
/// parameters.
enum Input {
    Plan(LogicalPlan),
    Row(RecordBatch),
}

/// Whether `statement` is DML that tarn runs itself.
pub fn is_dml(statement: &DFStatement) -> bool {
    let DFStatement::Statement(s) = statement else {
        return false;
    };
    match s.as_ref() {
        Statement::Insert(_)
        | Statement::Update(_)
        | Statement::Delete(_)
        | Statement::Merge(_) => true,
        Statement::Query(q) => matches!(
            q.body.as_ref(),
            SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_)
        ),
        _ => false,
    }
}

/// The DML statement inside `WITH ... <dml>`, and the WITH.
fn unwrap_with(statement: &Statement) -> (Statement, Option<With>) {
    if let Statement::Query(q) = statement {
        let inner = match q.body.as_ref() {
            SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) | SetExpr::Merge(s) => {
                Some(s.clone())
            }
            _ => None,
        };
        if let Some(inner) = inner {
            return (inner, q.with.clone());
        }
    }
    (statement.clone(), None)
}

impl Session {
    /// Resolves, rewrites and plans a DML statement (`upsert`: UPSERT INTO).
    pub(super) async fn plan_dml(
        &mut self,
        statement: &DFStatement,
        upsert: bool,
    ) -> Result<DmlPlan, PgError> {
        self.refresh_catalog().await?;
        // Past versions read by the statement (`INSERT … SELECT … FROM t VERSION AS OF 3`)
        // are pinned like a query's; DataFusion alone would read the latest data.
        let mut pinned = statement.clone();
        // Temporary tables hide other relations of their names (`session/temp_tables.rs`).
        self.qualify_temp_names(&mut pinned);
        // Views the statement reads become their queries; a view as the target is refused.
        self.expand_views(&mut pinned).await?;
        let time_zone = self.settings().time_zone();
        crate::query::time_travel::pin_versions(&self.ctx, &mut pinned, &time_zone).await?;
        let DFStatement::Statement(s) = &pinned else {
            return Err(PgError::new("XX000", "not a DML statement"));
        };
        let (mut inner, with) = unwrap_with(s);
        let (name, alias) = rewrite::target_name(&inner).ok_or_else(|| {
            PgError::new(
                "0A000",
                "only tables can be the target of INSERT, UPDATE, DELETE or MERGE",
            )
        })?;
        let last = name.rsplit('.').next().unwrap_or(&name).trim_matches('"');
        if crate::query::time_travel::VersionedName::parse(last).is_some() {
            return Err(PgError::new(
                "0A000",
                "a past version of a table cannot be written to; write to the table itself",
            ));
        }
        let provider = self.ctx.table_provider(name.as_str()).await.map_err(|_| {
            PgError::new(
                "42P01",
                format!("relation \"{}\" does not exist", name.trim_matches('"')),
            )
        })?;
        let table = provider
            .downcast_ref::<PaimonTable>()
            .ok_or_else(|| PgError::new("42809", format!("cannot change relation \"{name}\"")))?
            .table()
            .clone();
        let schema = table.schema();
        let target = Target {
            columns: schema.fields.iter().map(|f| f.name.clone()).collect(),
            keys: schema.primary_keys.clone(),
        };
        let key_positions: Vec<usize> = target
            .keys
            .iter()
            .map(|k| {
                target
                    .columns
                    .iter()
                    .position(|c| c == k)
                    .expect("key column")
            })
            .collect();
        let table_schema = table_arrow_schema(&table)?;
        // Omitted columns and DEFAULT take the columns' defaults (`sql::defaults`).
        let defaults = TableDefaults::of(schema)?;
        match &mut inner {
            Statement::Insert(insert) => fill_insert(insert, &defaults)?,
            Statement::Update(update) => fill_assignments(&mut update.assignments, &defaults)?,
            Statement::Merge(merge) => fill_merge(merge, &defaults)?,
            _ => {}
        }
        // `ON CONFLICT (pk) DO UPDATE SET <every other column> = EXCLUDED.<it>`: the new row is
        // the proposed one whether the key exists or not. Under plain deduplicate the newest
        // version is the row, so it is written blind like UPSERT (no read of the old row, no
        // row locks; a concurrent writer of the key is ordered by commit, as for UPSERT); the
        // proposals must still name each key once (21000).
        let blind = match &inner {
            Statement::Insert(insert) => {
                rewrite::is_blind_update(insert, &target)
                    && MergeOptions::from_schema(schema).is_ok_and(|m| upsert_replaces(&m, schema))
            }
            _ => false,
        };
        let needs_key = |what: &str| -> Result<(), PgError> {
            if target.keys.is_empty() {
                Err(PgError::new(
                    "0A000",
                    format!(
                        "{what} is not supported on table \"{}\": it has no primary key (an \
                         append table). Use a table with a PRIMARY KEY for row-level changes",
                        table.name()
                    ),
                ))
            } else {
                Ok(())
            }
        };
        let (kind, query, returning, tag): (Option<DmlKind>, Option<Query>, _, _) = match &inner {
            Statement::Insert(insert) => {
                if insert.on.is_some() {
                    needs_key("INSERT ... ON CONFLICT")?;
                    let do_update = rewrite::on_conflict_kind(insert, &target, table.name())?;
                    if blind {
                        // Written as UPSERT writes: no read of the old row (see `blind`).
                        (None, None, insert.returning.clone(), "INSERT")
                    } else {
                        (
                            Some(DmlKind::OnConflict { do_update }),
                            None,
                            insert.returning.clone(),
                            "INSERT",
                        )
                    }
                } else {
                    if upsert {
                        needs_key("UPSERT")?;
                    }
                    (None, None, insert.returning.clone(), "INSERT")
                }
            }
            Statement::Update(u) => {
                needs_key("UPDATE")?;
                (
                    Some(DmlKind::Update),
                    Some(rewrite::update_query(u, &target, with.as_ref())?),
                    u.returning.clone(),
                    "UPDATE",
                )
            }
            Statement::Delete(d) => {
                // An append table takes DELETEs of whole partitions only (`partitions.rs`).
                if super::partitions::whole_partitions_of(&inner, &alias, with.as_ref(), &table)
                    .is_none()
                {
                    needs_key("DELETE")?;
                }
                (
                    Some(DmlKind::Delete),
                    Some(rewrite::delete_query(d, &target, with.as_ref())?),
                    d.returning.clone(),
                    "DELETE",
                )
            }
            Statement::Merge(m) => {
                needs_key("MERGE")?;
                (
                    Some(DmlKind::Merge),
                    Some(rewrite::merge_query(m, &target, with.as_ref())?),
                    None,
                    "MERGE",
                )
            }
            _ => return Err(PgError::new("0A000", "unsupported DML statement")),
        };
        // What the table's merge engine can take (docs: storage/write/merge_dml.rs).
        let merge = MergeOptions::from_schema(schema).map_err(|reason| {
            PgError::new(
                "0A000",
                format!("cannot write table \"{}\": {reason}", table.name()),
            )
        })?;
        let effects = rewrite::effects(&inner, &target);
        let statement_name = match &inner {
            Statement::Update(_) => "UPDATE",
            Statement::Delete(_) => "DELETE",
            Statement::Merge(_) => "MERGE",
            _ => "INSERT ... ON CONFLICT DO UPDATE",
        };
        let mut notice = None;
        for (what, applies) in [
            (DmlWhat::Update, effects.updates),
            (DmlWhat::Delete, effects.deletes),
            (DmlWhat::MoveKey, effects.moves_keys),
        ] {
            if !applies {
                continue;
            }
            dml_support(&merge, what).map_err(|reason| {
                PgError::new(
                    "0A000",
                    format!(
                        "{statement_name} is not supported on table \"{}\": {reason}",
                        table.name()
                    ),
                )
            })?;
            notice = notice.or_else(|| dml_notice(&merge, what));
        }
        let state = self.ctx.state();
        let (plan, on_conflict) = match (&kind, query) {
            (Some(_), Some(query)) => (
                state
                    .statement_to_plan(DFStatement::Statement(Box::new(Statement::Query(
                        Box::new(query),
                    ))))
                    .await?,
                None,
            ),
            (_, _) => {
                let Statement::Insert(insert) = &inner else {
                    unreachable!("only INSERT has no change query")
                };
                let mut plain = rewrite::proposal_insert(insert);
                if let (Some(w), Some(source)) = (&with, plain.source.as_mut())
                    && source.with.is_none()
                {
                    source.with = Some(w.clone());
                }
                // Constant rows that fit the columns are written from the values themselves:
                // the plan (kept for Describe and as the statement's shape) needs one row only,
                // not a planned and optimised expression per value.
                let constants_fit = kind.is_none()
                    && with.is_none()
                    && rewrite::values_rows(insert, &target).is_some_and(|rows| {
                        rows.len() > 1
                            && build_rows(&rows, &table_schema, &[]).is_ok_and(|b| b.is_some())
                    });
                if constants_fit
                    && let Some(source) = plain.source.as_mut()
                    && let SetExpr::Values(values) = source.body.as_mut()
                {
                    values.rows.truncate(1);
                }
                let planned = state
                    .statement_to_plan(DFStatement::Statement(Box::new(Statement::Insert(plain))))
                    .await?;
                let LogicalPlan::Dml(dml) = planned else {
                    return Err(PgError::new("XX000", "INSERT did not plan as DML"));
                };
                let on_conflict = match &kind {
                    Some(DmlKind::OnConflict { do_update }) => {
                        Some((rewrite::on_conflict_query(insert, &target)?, *do_update))
                    }
                    _ => None,
                };
                (dml.input.as_ref().clone(), on_conflict)
            }
        };
        let mode = match (&kind, upsert || blind) {
            (None, true) => WriteMode::Upsert,
            // An existing key merges with the new row (partial-update, aggregation, ...).
            (None, false) if insert_merges(&merge) => WriteMode::Upsert,
            (None, false) => WriteMode::Insert,
            _ => WriteMode::Change,
        };
        let spec = ChangeSpec {
            with_action: kind.is_some(),
            key_positions: key_positions.clone(),
            repeat: if matches!(kind, Some(DmlKind::Merge)) {
                Repeat::MergeError
            } else {
                Repeat::KeepFirst
            },
            returning: returning.is_some(),
            unique_keys: blind,
        };
        let fast = match &inner {
            Statement::Insert(insert)
                if matches!(kind, None | Some(DmlKind::OnConflict { .. })) && with.is_none() =>
            {
                rewrite::values_rows(insert, &target)
            }
            _ => None,
        };
        let conflict_join = match &on_conflict {
            Some((query, _)) => {
                // Planned once over proposals of the table's columns (no rows needed).
                self.register_temp(
                    EXCLUDED_TABLE,
                    RecordBatch::new_empty(Arc::clone(&table_schema)),
                )?;
                let planned = state
                    .statement_to_plan(DFStatement::Statement(Box::new(Statement::Query(
                        Box::new(query.clone()),
                    ))))
                    .await;
                self.temp.deregister_table(EXCLUDED_TABLE)?;
                ConflictJoin::new(planned?, &key_positions, &state)?.map(Arc::new)
            }
            None => None,
        };
        let whole = match notice {
            // The merge engine ignores or retracts deletes: row by row, as it says.
            None => super::partitions::whole_partitions_of(&inner, &alias, with.as_ref(), &table),
            Some(_) => None,
        };
        let mut dml = DmlPlan {
            table,
            alias,
            tag,
            mode,
            spec,
            plan,
            on_conflict,
            conflict_join,
            returning,
            returning_schema: None,
            table_schema,
            whole,
            notice,
            fast,
        };
        if dml.returning.is_some() {
            let empty = RecordBatch::new_empty(Arc::clone(&dml.table_schema));
            let plan = self.returning_plan(&dml, empty).await?;
            dml.returning_schema = Some(Arc::new(plan.schema().as_arrow().clone()));
        }
        Ok(dml)
    }

    /// Registers `batch` as `pg_temp_dml.<name>` for the next query of this session.
    fn register_temp(&self, name: &str, batch: RecordBatch) -> Result<(), PgError> {
        let table = MemTable::try_new(batch.schema(), vec![vec![batch]])?;
        self.temp.deregister_table(name)?;
        self.temp.register_table(name.to_owned(), Arc::new(table))?;
        Ok(())
    }

    /// RETURNING's plan over the rows written.
    async fn returning_plan(
        &self,
        dml: &DmlPlan,
        rows: RecordBatch,
    ) -> Result<LogicalPlan, PgError> {
        let items = dml.returning.as_ref().expect("RETURNING");
        self.register_temp(RETURNING_TABLE, rows)?;
        let query = rewrite::returning_query(items, &dml.alias)?;
        Ok(self
            .ctx
            .state()
            .statement_to_plan(DFStatement::Statement(Box::new(Statement::Query(
                Box::new(query),
            ))))
            .await?)
    }

    /// Runs a planned DML statement in the session's transaction (or as its own).
    pub(super) async fn run_dml(
        &mut self,
        dml: &DmlPlan,
        params: Option<ParamValues>,
    ) -> Result<Outcome, PgError> {
        let input = match fast_rows(dml, params.as_ref())? {
            Some(row) => Input::Row(row),
            None => Input::Plan(match &params {
                Some(p) => dml.plan.clone().with_param_values(p.clone())?,
                None => dml.plan.clone(),
            }),
        };
        let keyless = dml.table.schema().primary_keys.is_empty();
        if let Some(whole) = &dml.whole {
            if self.tx == TxState::Idle
                && let Some(outcome) = self
                    .delete_partitions(&dml.table, &dml.alias, whole)
                    .await?
            {
                return Ok(outcome);
            }
            if keyless {
                return Err(PgError::new(
                    "0A000",
                    format!(
                        "DELETE on table \"{}\" (no primary key: an append table) removes \
                         whole partitions only, outside a transaction block",
                        dml.table.name()
                    ),
                ));
            }
        }
        if self.tx != TxState::Idle {
            let txn = self.block_transaction();
            return self.run_statement(dml, &input, &txn).await;
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let txn = Arc::new(Transaction::new());
            self.slot.set(Some(Arc::clone(&txn)));
            // Cleared however the statement ends (a cancelled statement's future is dropped):
            // the next statement must not read through this transaction, and dropping it
            // deletes whatever it wrote.
            let slot_reset = SlotReset(Arc::clone(&self.slot));
            let result = self.run_statement(dml, &input, &txn).await;
            drop(slot_reset);
            let outcome = match result {
                Ok(o) => o,
                Err(e) => {
                    abort(&txn).await;
                    return Err(e);
                }
            };
            let flush = self.settings().flush_on_commit();
            match commit(&txn, flush).await {
                Ok(()) => return Ok(outcome),
                Err(e)
                    if e.conflict().is_some()
                        && attempt < AUTOCOMMIT_ATTEMPTS
                        && dml.mode != WriteMode::Insert =>
                {
                    tracing::debug!(
                        attempt,
                        "autocommit statement lost a write race; re-running"
                    );
                    // A short, growing, jittered pause so racing statements spread out.
                    let jitter = u64::from(std::process::id() ^ attempt as u32) % 3;
                    let ms = (attempt as u64).min(20) + jitter;
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The transaction of the open block, started on first use.
    pub(super) fn block_transaction(&mut self) -> Arc<Transaction> {
        if let Some(t) = &self.txn {
            return Arc::clone(t);
        }
        let t = Arc::new(Transaction::new());
        self.txn = Some(Arc::clone(&t));
        self.slot.set(Some(Arc::clone(&t)));
        t
    }

    /// One statement's writes; on error they are undone (the transaction's earlier
    /// statements stay).
    async fn run_statement(
        &mut self,
        dml: &DmlPlan,
        input: &Input,
        txn: &Arc<Transaction>,
    ) -> Result<Outcome, PgError> {
        let writer = txn.writer(&dml.table).await?;
        {
            let mut w = writer.lock().await;
            if w.statement_left_open() {
                // An earlier statement of the block was cancelled mid-write.
                w.rollback_statement().await;
            }
        }
        let repeatable_read =
            self.tx != TxState::Idle && self.block_isolation.as_deref() == Some("repeatable read");
        let mut attempt = 0;
        let applier = loop {
            attempt += 1;
            let read = txn.snapshot_of(&dml.table).await?;
            writer
                .lock()
                .await
                .begin_statement_on(dml.mode, read.as_ref());
            let result = self.write_changes(dml, input, &writer, txn).await;
            let applier = match result {
                Ok(a) => a,
                Err(e) => {
                    writer.lock().await.rollback_statement().await;
                    return Err(e);
                }
            };
            match writer.lock().await.end_statement().await {
                Ok(_) => break applier,
                Err(StorageError::CommitConflict(why)) if repeatable_read => {
                    return Err(PgError::new(
                        "40001",
                        "could not serialize access due to concurrent update",
                    )
                    .with_detail(why));
                }
                Err(StorageError::CommitConflict(why)) if attempt < STATEMENT_ATTEMPTS => {
                    // READ COMMITTED: the rows as the other transaction committed them.
                    tracing::debug!(attempt, %why, "statement re-run on a newer snapshot");
                    txn.new_statement_snapshot();
                }
                Err(e) => return Err(e.into()),
            }
        };
        let rows = applier.count();
        let noticed = |mut outcome: Outcome| {
            if let Some(notice) = &dml.notice {
                outcome
                    .notices
                    .push(("00000", format!("table \"{}\" {notice}", dml.table.name())));
            }
            outcome
        };
        if dml.returning.is_none() {
            return Ok(noticed(
                Output::Count {
                    command: dml.tag,
                    rows,
                }
                .into(),
            ));
        }
        let returned = applier.returned()?;
        let plan = self.returning_plan(dml, returned).await?;
        let df = self.ctx.execute_logical_plan(plan).await?;
        let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
        let batches = df.collect().await?;
        self.temp.deregister_table(RETURNING_TABLE)?;
        let stream = MemoryStream::try_new(batches, Arc::clone(&schema), None)?;
        Ok(noticed(
            Output::Rows {
                schema,
                batches: Box::pin(stream),
                // The protocol appends the row count: `INSERT 0 n`, `UPDATE n`.
                tag: if dml.tag == "INSERT" {
                    "INSERT 0"
                } else {
                    dml.tag
                },
            }
            .into(),
        ))
    }

    async fn write_changes(
        &mut self,
        dml: &DmlPlan,
        input: &Input,
        writer: &crate::query::txn::SharedWrite,
        txn: &Arc<Transaction>,
    ) -> Result<Applier, PgError> {
        let lock_timeout = self
            .settings()
            .lock_timeout_ms()
            .map(std::time::Duration::from_millis);
        let table_name = dml.table.qualified_name();
        let mut applier = Applier::new(dml.spec.clone(), Arc::clone(&dml.table_schema));
        let plan = match (input, &dml.on_conflict) {
            (Input::Row(row), None) => {
                // Plain INSERT/UPSERT rows take no row locks (see `Applier::changed_keys`).
                let mut w = writer.lock().await;
                applier.apply(row.clone(), &mut w).await?;
                return Ok(applier);
            }
            (Input::Plan(plan), None) => plan.clone(),
            (_, Some((query, do_update))) => {
                let batch = self.proposals(dml, input, *do_update).await?;
                let keys = key_filters(&batch, &dml.spec.key_positions, &dml.table_schema)?;
                if let Some(join) = &dml.conflict_join
                    && !keys.is_empty()
                {
                    let changes = join.run(&batch, &keys, &self.ctx.state()).await?;
                    tracing::debug!(rows = batch.num_rows(), "ON CONFLICT joined without a plan");
                    let locks = RowLocking {
                        table: &table_name,
                        timeout: lock_timeout,
                    };
                    self.apply_locked(changes, &mut applier, writer, txn, &locks)
                        .await?;
                    return Ok(applier);
                }
                self.register_temp(EXCLUDED_TABLE, batch)?;
                let plan = self
                    .ctx
                    .state()
                    .statement_to_plan(DFStatement::Statement(Box::new(Statement::Query(
                        Box::new(query.clone()),
                    ))))
                    .await?;
                prune_target(plan, dml.table.name(), keys)?
            }
        };
        let locks = RowLocking {
            table: &table_name,
            timeout: lock_timeout,
        };
        let df = self.ctx.execute_logical_plan(plan).await?;
        let mut stream = df.execute_stream().await?;
        while let Some(batch) = stream.next().await {
            self.apply_locked(batch?, &mut applier, writer, txn, &locks)
                .await?;
        }
        if dml.on_conflict.is_some() {
            self.temp.deregister_table(EXCLUDED_TABLE)?;
        }
        Ok(applier)
    }

    /// ON CONFLICT's proposed rows in the table's types, each key once (a repeated key is
    /// 21000 for DO UPDATE; DO NOTHING keeps its first row).
    async fn proposals(
        &self,
        dml: &DmlPlan,
        input: &Input,
        do_update: bool,
    ) -> Result<RecordBatch, PgError> {
        let schema = Arc::clone(&dml.table_schema);
        let batch = match input {
            Input::Row(row) => cast_to(row, &schema)?,
            Input::Plan(plan) => {
                let df = self.ctx.execute_logical_plan(plan.clone()).await?;
                let proposals = df.collect().await?;
                let batch = datafusion::arrow::compute::concat_batches(&schema, &proposals)
                    .map_err(crate::query::QueryError::from)?;
                cast_to(&batch, &schema)?
            }
        };
        let repeated = repeated_keys(&batch, &dml.spec.key_positions)?;
        if !repeated.iter().any(|r| *r) {
            return Ok(batch);
        }
        if do_update {
            return Err(PgError::new(
                "21000",
                "ON CONFLICT DO UPDATE command cannot affect row a second time",
            )
            .with_hint(
                "Ensure that no rows proposed for insertion within the same command have \
                 duplicate constrained values.",
            ));
        }
        let keep = datafusion::arrow::array::BooleanArray::from(
            repeated.iter().map(|r| !r).collect::<Vec<_>>(),
        );
        Ok(
            datafusion::arrow::compute::filter_record_batch(&batch, &keep)
                .map_err(crate::query::QueryError::from)?,
        )
    }

    /// Takes the locks of the rows `batch` changes (waiting, if another transaction holds
    /// one), then writes it.
    async fn apply_locked(
        &self,
        batch: RecordBatch,
        applier: &mut Applier,
        writer: &crate::query::txn::SharedWrite,
        txn: &Arc<Transaction>,
        locks: &RowLocking<'_>,
    ) -> Result<(), PgError> {
        let keys = applier.changed_keys(&batch)?;
        let table_name = locks.table;
        txn.lock_rows(self.engine.row_locks(), table_name, keys, locks.timeout)
            .await
            .map_err(|e| {
                let (code, message) = e.sqlstate();
                let error = PgError::new(code, message);
                match e {
                    LockError::Deadlock { .. } => error
                        .with_detail(format!(
                            "This transaction waits for a row of {table_name} that another \
                             transaction holds, which waits (directly or not) for a row this \
                             one holds."
                        ))
                        .with_hint("See server log for query details."),
                    LockError::Timeout => error,
                }
            })?;
        let mut w = writer.lock().await;
        applier.apply(batch, &mut w).await?;
        Ok(())
    }

    /// COMMIT of the open block: its writes become one snapshot.
    pub(super) async fn commit_block(&mut self) -> Result<(), PgError> {
        self.slot.set(None);
        if let Some(txn) = self.txn.take() {
            let flush = self.settings().flush_on_commit();
            // The temporary tables' DDL (the session's own warehouse) after the warehouse's.
            let temp = self.take_temp_ddl();
            if !self.block_ddl.is_empty() || !temp.is_empty() {
                // The block's DDL commits with its writes (`block_ddl.rs`).
                return self.commit_block_ddl(&txn, flush, temp).await;
            }
            commit(&txn, flush).await?;
        }
        Ok(())
    }

    /// ROLLBACK of the open block: its writes and its DDL are dropped.
    pub(super) async fn rollback_block(&mut self) {
        self.slot.set(None);
        if let Some(txn) = self.txn.take() {
            abort(&txn).await;
        }
        self.rollback_ddl().await;
    }
}

/// The rows of `INSERT … VALUES` of parameters and constants (see `DmlPlan::fast`), or
/// `None` to run the planned path.
fn fast_rows(dml: &DmlPlan, params: Option<&ParamValues>) -> Result<Option<RecordBatch>, PgError> {
    let Some(rows) = &dml.fast else {
        return Ok(None);
    };
    let values = match params {
        Some(ParamValues::List(list)) => list.as_slice(),
        Some(ParamValues::Map(_)) => return Ok(None),
        None => &[],
    };
    build_rows(rows, &dml.table_schema, values)
}

/// The rows in the table's Arrow types when every column's values are all NULL or all of one
/// kind that needs no cast PostgreSQL would do differently from the planned path: parameters
/// already of the column's type, integers for an integer column (within its range), quoted
/// strings for a text column (varchar/char lengths are checked by storage, as for planned
/// rows), booleans for a boolean column. `None` otherwise: the planned path casts (and
/// reports its errors) as it always does.
fn build_rows(
    rows: &[Vec<RowValue>],
    schema: &SchemaRef,
    params: &[datafusion::common::metadata::ScalarAndMetadata],
) -> Result<Option<RecordBatch>, PgError> {
    use datafusion::arrow::array::{
        ArrayRef, BooleanArray, Int16Array, Int32Array, Int64Array, StringArray, new_null_array,
    };
    use datafusion::arrow::datatypes::DataType;
    use datafusion::common::ScalarValue;
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for (j, field) in schema.fields().iter().enumerate() {
        let column = rows.iter().map(|r| &r[j]);
        let kind = column.clone().find(|v| **v != RowValue::Null);
        let same =
            |a: &RowValue, b: &RowValue| std::mem::discriminant(a) == std::mem::discriminant(b);
        if let Some(k) = kind
            && column.clone().any(|v| *v != RowValue::Null && !same(v, k))
        {
            return Ok(None);
        }
        let ty = field.data_type();
        let array: ArrayRef = match kind {
            None => new_null_array(ty, rows.len()),
            Some(RowValue::Param(_)) => {
                let mut scalars = Vec::with_capacity(rows.len());
                for v in column {
                    let value = match v {
                        RowValue::Param(i) => match params.get(*i) {
                            Some(p) => p.value.clone(),
                            None => return Ok(None),
                        },
                        _ => ScalarValue::Null,
                    };
                    scalars.push(if value.is_null() {
                        ScalarValue::try_from(ty)?
                    } else if &value.data_type() == ty {
                        value
                    } else {
                        return Ok(None);
                    });
                }
                ScalarValue::iter_to_array(scalars)?
            }
            Some(RowValue::Int(_)) => {
                let ints: Vec<Option<i64>> = column
                    .map(|v| match v {
                        RowValue::Int(n) => Some(*n),
                        _ => None,
                    })
                    .collect();
                let fits = |lo: i64, hi: i64| ints.iter().flatten().all(|n| (lo..=hi).contains(n));
                match ty {
                    DataType::Int16 if fits(i16::MIN.into(), i16::MAX.into()) => Arc::new(
                        ints.iter()
                            .map(|n| n.map(|n| n as i16))
                            .collect::<Int16Array>(),
                    ),
                    DataType::Int32 if fits(i32::MIN.into(), i32::MAX.into()) => Arc::new(
                        ints.iter()
                            .map(|n| n.map(|n| n as i32))
                            .collect::<Int32Array>(),
                    ),
                    DataType::Int64 => Arc::new(ints.iter().copied().collect::<Int64Array>()),
                    _ => return Ok(None),
                }
            }
            Some(RowValue::Text(_)) => {
                let plain_text = ty == &DataType::Utf8
                    && !matches!(
                        crate::query::pg_types::pg_type_of(field),
                        Some("json" | "jsonb" | "uuid")
                    );
                if !plain_text {
                    return Ok(None);
                }
                Arc::new(
                    column
                        .map(|v| match v {
                            RowValue::Text(t) => Some(t.as_str()),
                            _ => None,
                        })
                        .collect::<StringArray>(),
                )
            }
            Some(RowValue::Bool(_)) => {
                if ty != &DataType::Boolean {
                    return Ok(None);
                }
                Arc::new(
                    column
                        .map(|v| match v {
                            RowValue::Bool(b) => Some(*b),
                            _ => None,
                        })
                        .collect::<BooleanArray>(),
                )
            }
            Some(RowValue::Null) => unreachable!("a value other than NULL"),
        };
        columns.push(array);
    }
    Ok(Some(
        RecordBatch::try_new_with_options(
            Arc::clone(schema),
            columns,
            &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(rows.len())),
        )
        .map_err(crate::query::QueryError::from)?,
    ))
}

/// Proposals up to this many rows look up only the files that can hold their keys.
const PRUNED_LOOKUP_ROWS: usize = 10_000;

/// `key IN (values)` per primary-key column of the proposals (none when there are many).
fn key_filters(
    batch: &RecordBatch,
    key_positions: &[usize],
    schema: &SchemaRef,
) -> Result<Vec<datafusion::logical_expr::Expr>, PgError> {
    use datafusion::common::ScalarValue;
    use datafusion::logical_expr::{Expr, col, lit};
    if batch.num_rows() == 0 || batch.num_rows() > PRUNED_LOOKUP_ROWS {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for &p in key_positions {
        let column = batch.column(p);
        let mut values: Vec<ScalarValue> = (0..batch.num_rows())
            .map(|i| ScalarValue::try_from_array(column, i))
            .collect::<Result<_, _>>()?;
        values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        values.dedup();
        let name = schema.field(p).name();
        out.push(Expr::InList(datafusion::logical_expr::expr::InList::new(
            Box::new(col(datafusion::common::Column::new_unqualified(name))),
            values.into_iter().map(lit).collect(),
            false,
        )));
    }
    Ok(out)
}

/// Hands ON CONFLICT's key lookups to the target's scan as pruning filters: it then opens only
/// the partitions, buckets and files whose keys can match (its rows stay a superset: the join
/// does the matching).
fn prune_target(
    plan: LogicalPlan,
    table: &str,
    filters: Vec<datafusion::logical_expr::Expr>,
) -> Result<LogicalPlan, PgError> {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    if filters.is_empty() {
        return Ok(plan);
    }
    Ok(plan
        .transform_up(|node| match node {
            LogicalPlan::TableScan(mut scan) if scan.table_name.table() == table => {
                scan.filters.extend(filters.iter().cloned());
                Ok(Transformed::yes(LogicalPlan::TableScan(scan)))
            }
            other => Ok(Transformed::no(other)),
        })?
        .data)
}

/// Which rows a statement locks, and how long it waits for one.
struct RowLocking<'a> {
    table: &'a str,
    timeout: Option<std::time::Duration>,
}

/// Empties a session's transaction slot when dropped.
struct SlotReset(Arc<crate::query::TxnSlot>);

impl Drop for SlotReset {
    fn drop(&mut self) {
        self.0.set(None);
    }
}

/// Casts `batch` to `schema`'s types (same columns).
fn cast_to(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, PgError> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| datafusion::arrow::compute::cast(c, f.data_type()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(crate::query::QueryError::from)?;
    Ok(
        RecordBatch::try_new(Arc::clone(schema), columns)
            .map_err(crate::query::QueryError::from)?,
    )
}

/// Commits what `txn` wrote (nothing written: nothing to do), then releases its row locks
/// (whether the commit worked or not: the transaction is over). With `flush` (the session's
/// `tarn.flush_on_commit`), it returns once the commit is in a Paimon snapshot too.
pub(super) async fn commit(txn: &Transaction, flush: bool) -> Result<(), StorageError> {
    commit_in(txn, flush, None).await
}

/// [`commit`] of the transaction ending `block`, a transaction block with DDL (its log
/// record names the block: `storage/block_ddl.rs`).
pub(super) async fn commit_in(
    txn: &Transaction,
    flush: bool,
    block: Option<&str>,
) -> Result<(), StorageError> {
    let result = commit_writes(txn, flush, block).await;
    txn.release_row_locks();
    result
}

async fn commit_writes(
    txn: &Transaction,
    flush: bool,
    block: Option<&str>,
) -> Result<(), StorageError> {
    let mut writes = Vec::new();
    for writer in txn.take_writers() {
        match Arc::try_unwrap(writer) {
            Ok(m) => writes.push(m.into_inner()),
            Err(_) => {
                return Err(StorageError::internal(
                    "the transaction's writer is still in use at COMMIT",
                ));
            }
        }
    }
    if writes.is_empty() {
        return Ok(());
    }
    let tables: Vec<_> = writes.iter().map(|w| w.table().clone()).collect();
    crate::storage::commit_writes_in(writes, block).await?;
    if flush {
        for table in &tables {
            crate::storage::procedures::flush(table).await?;
        }
    }
    Ok(())
}

/// Drops what `txn` wrote and releases its row locks.
pub(super) async fn abort(txn: &Transaction) {
    for writer in txn.take_writers() {
        if let Ok(m) = Arc::try_unwrap(writer) {
            m.into_inner().abort().await;
        }
    }
    txn.release_row_locks();
}
