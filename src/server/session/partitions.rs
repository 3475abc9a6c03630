//! Dropped partitions: `ALTER TABLE t DROP [IF EXISTS] PARTITION (k = v, …)` and a DELETE
//! whose WHERE covers whole partitions, each one OVERWRITE snapshot that deletes those
//! partitions' files (`storage::drop_partitions`) instead of writing a delete per row.
//!
//! DROP PARTITION: every spec must match a partition holding files (42704 otherwise, and
//! nothing is dropped) unless `IF EXISTS` is given; a spec may name some of the partition
//! columns (every partition with those values goes, as in Paimon). It works on every
//! partitioned table tarn can write, with any merge engine or changelog producer, and runs at
//! once — inside a transaction block it is refused (25001), since a block's writes and an
//! overwrite cannot commit as one.
//!
//! DELETE: outside a transaction block, a DELETE without RETURNING, USING or WITH whose WHERE
//! is a conjunction of equalities / IN lists / IS NULL on partition columns (or no WHERE)
//! drops the partitions it admits. Its tag counts the rows first: `count(*)` of the same WHERE
//! at the latest snapshot (after the commit log is flushed), and the drop commits only if
//! those partitions' files are still the ones counted (else it counts again). Not taken for
//! tables whose changelog must show the deletes (a changelog producer) or whose merge engine
//! changes what a delete means (a NOTICE): those delete row by row; so do DELETEs in a block.
//! On a table without a primary key (an append table) a DELETE of whole partitions is the
//! only DELETE tarn runs.
//!
//! What readers see after a drop: time travel before it reads the rows; `table_changes` across
//! it shows them deleted (`-D`, a diff of states); the snapshot has no changelog files (Paimon
//! writes none for an overwrite), so tarn's `table_changelog` and the audit log of a table
//! with a changelog producer show the overwrite's own net change (`-D` per row, as for
//! TRUNCATE); the plain `t$audit_log` (current state) no longer has the rows; Paimon's
//! streaming readers (Flink) skip OVERWRITE snapshots unless `streaming-read-overwrite` is set,
//! so they see nothing — which is why a DELETE on a changelog-producer table stays row by row.

use datafusion::sql::sqlparser::ast::{Expr, Statement, With};

use super::{Outcome, Output, Session, TxState};
use crate::query::quote_ident;
use crate::server::error::PgError;
use crate::sql::alter_table::{AlterAction, AlterTableSpec};
use crate::sql::partitions::{
    Condition, PartitionSpec, SpecError, spec_predicate, whole_partitions,
};
use crate::storage::spec::predicate::Predicate;
use crate::storage::{DropOutcome, Table, drop_partitions, partition_text};

/// How many times a DELETE of whole partitions counts again after a commit changed them.
const COUNT_ATTEMPTS: usize = 8;

/// A DELETE that removes whole partitions: what it drops, and its WHERE for the row count.
#[derive(Debug, Clone)]
pub(super) struct WholePartitions {
    predicate: Predicate,
    selection: Option<Expr>,
}

/// The partitions a DELETE (`inner`, naming its table `alias`) removes whole, when it is of
/// that shape (see the module docs) on a partitioned `table`.
pub(super) fn whole_partitions_of(
    inner: &Statement,
    alias: &str,
    with: Option<&With>,
    table: &Table,
) -> Option<WholePartitions> {
    let Statement::Delete(d) = inner else {
        return None;
    };
    let schema = table.schema();
    if with.is_some()
        || d.returning.is_some()
        || d.using.is_some()
        || !d.tables.is_empty()
        || d.limit.is_some()
        || !d.order_by.is_empty()
        || schema.partition_keys.is_empty()
        || crate::storage::has_changelog(schema)
    {
        return None;
    }
    let spec = match &d.selection {
        Some(selection) => whole_partitions(selection, alias, schema)?,
        None => PartitionSpec::new(),
    };
    let predicate = if spec.is_empty() {
        Predicate::And(Vec::new())
    } else {
        spec_predicate(&spec, schema).ok()?
    };
    Some(WholePartitions {
        predicate,
        selection: d.selection.clone(),
    })
}

fn spec_error(table: &str, e: SpecError) -> PgError {
    match e {
        SpecError::NotPartitioned(_) => not_partitioned(table),
        e => PgError::new(e.sqlstate(), e.to_string()),
    }
}

fn not_partitioned(table: &str) -> PgError {
    PgError::new("42809", format!("table \"{table}\" is not partitioned"))
        .with_hint("DROP PARTITION applies to tables created with PARTITIONED BY (...).")
}

/// A spec as written: `dt = '2026-01-01', hour = 3`.
fn spec_text(spec: &PartitionSpec) -> String {
    spec.iter()
        .map(|(column, condition)| match condition {
            Condition::Eq(Some(v)) => format!("{column} = '{v}'"),
            Condition::Eq(None) | Condition::IsNull => format!("{column} = NULL"),
            Condition::In(values) => format!("{column} IN ('{}')", values.join("', '")),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Session {
    /// `ALTER TABLE t DROP [IF EXISTS] PARTITION (…)[, DROP PARTITION (…)]`.
    pub(super) async fn alter_drop_partitions(
        &mut self,
        spec: AlterTableSpec,
    ) -> Result<Outcome, PgError> {
        let AlterAction::DropPartitions { specs, if_exists } = spec.action else {
            return Err(PgError::new("XX000", "not a DROP PARTITION"));
        };
        if self.tx != TxState::Idle {
            return Err(PgError::new(
                "25001",
                "ALTER TABLE ... DROP PARTITION cannot run inside a transaction block",
            )
            .with_hint(
                "Run it outside the block; DELETE of the partitions' rows inside a block \
                 deletes them row by row.",
            ));
        }
        self.refresh_catalog_now().await?;
        let Some(db) = self.find_table(spec.schema.as_deref(), &spec.name).await? else {
            if spec.if_exists {
                let mut outcome = Outcome::done(spec.tag);
                outcome.notices.push((
                    "00000",
                    format!("relation \"{}\" does not exist, skipping", spec.name),
                ));
                return Ok(outcome);
            }
            return Err(PgError::new(
                "42P01",
                format!("relation \"{}\" does not exist", spec.name),
            ));
        };
        let table = self.warehouse_for(&db).open_table(&db, &spec.name).await?;
        if table.schema().partition_keys.is_empty() {
            return Err(not_partitioned(&spec.name));
        }
        let predicates = specs
            .iter()
            .map(|s| spec_predicate(s, table.schema()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| spec_error(&spec.name, e))?;
        let mut outcome = Outcome::done(spec.tag);
        match drop_partitions(&table, &predicates, !if_exists, None).await? {
            DropOutcome::Dropped(dropped) => {
                if dropped.partitions.is_empty() {
                    outcome.notices.push((
                        "00000",
                        format!(
                            "no partition of relation \"{}\" matches, skipping",
                            spec.name
                        ),
                    ));
                }
                for values in &dropped.partitions {
                    tracing::debug!(
                        table = %table.qualified_name(),
                        partition = %partition_text(&table, values),
                        "partition dropped"
                    );
                }
            }
            DropOutcome::Missing(n) => {
                return Err(PgError::new(
                    "42704",
                    format!(
                        "partition ({}) of relation \"{}\" does not exist",
                        spec_text(&specs[n]),
                        spec.name
                    ),
                )
                .with_hint("Use DROP IF EXISTS PARTITION to skip partitions that do not exist."));
            }
            DropOutcome::Changed => {
                return Err(PgError::new("XX000", "a drop without a base changed"));
            }
        }
        Ok(outcome)
    }

    /// A DELETE of whole partitions of `table` (the statement names it `alias`), outside a
    /// block: the rows counted, then the partitions dropped. `None` when the partitions kept
    /// changing under the count (the statement then deletes row by row).
    pub(super) async fn delete_partitions(
        &mut self,
        table: &Table,
        alias: &str,
        whole: &WholePartitions,
    ) -> Result<Option<Outcome>, PgError> {
        let done = |rows: u64| {
            Some(Outcome::from(Output::Count {
                command: "DELETE",
                rows,
            }))
        };
        for _ in 0..COUNT_ATTEMPTS {
            // Transactions waiting in the commit log are counted (and dropped) too.
            crate::storage::procedures::flush(table).await?;
            let Some(base) = table.snapshots().latest().await? else {
                return Ok(done(0));
            };
            let rows = self.count_at(table, base.id, alias, whole).await?;
            match drop_partitions(
                table,
                std::slice::from_ref(&whole.predicate),
                false,
                Some(base.id),
            )
            .await?
            {
                DropOutcome::Dropped(_) => return Ok(done(rows)),
                DropOutcome::Changed | DropOutcome::Missing(_) => continue,
            }
        }
        Ok(None)
    }

    /// The rows of `table` at snapshot `id` that the DELETE's WHERE admits.
    async fn count_at(
        &self,
        table: &Table,
        id: i64,
        alias: &str,
        whole: &WholePartitions,
    ) -> Result<u64, PgError> {
        let mut sql = format!(
            "SELECT count(*) FROM {}.{} AS {alias}",
            quote_ident(table.database()),
            quote_ident(&format!("{}$snapshot${id}", table.name())),
        );
        if let Some(selection) = &whole.selection {
            sql.push_str(&format!(" WHERE {selection}"));
        }
        let batches = self.ctx.sql(&sql).await?.collect().await?;
        let count = batches
            .first()
            .and_then(|b| {
                b.column(0)
                    .as_any()
                    .downcast_ref::<datafusion::arrow::array::Int64Array>()
            })
            .map_or(0, |c| c.value(0));
        Ok(count.max(0) as u64)
    }
}
