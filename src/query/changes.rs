//! `table_changes(table, from, to)`: the net change of a table between two versions, and
//! `table_changelog(table, from, to)`: every commit's changes in between (its changelog files,
//! or its own net change where it has none), as tables in FROM; and the audit log of tables
//! with a changelog producer.
//!
//! DataFusion's table functions are synchronous and see no session, but resolving a table by
//! search_path and a version by tag or time needs both, so the call is taken out of the AST
//! like a version clause (see `time_travel.rs`): its arguments are evaluated in the session and
//! the call becomes a reference to a [`ChangesName`] (`orders$changes$s40$s42`,
//! `orders$changelog$...`) that the schema
//! provider resolves. Bounds: an integer is a snapshot id (0: before the first snapshot), a
//! string a tag name, a timestamp (or date) the version current at that time. `from` is
//! exclusive, `to` inclusive; a `from` time before the first snapshot (none expired) is the
//! empty table. The rows come from `storage/changes.rs` and `storage/changelog_scan.rs`.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::{MemTable, TableType};
use datafusion::error::Result;
use datafusion::logical_expr::Expr as DfExpr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, Ident, ObjectName, ObjectNamePart, TableAlias, TableFactor,
    Visit, VisitMut, Visitor, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;

use super::QueryError;
use super::pg_types::table_arrow_schema;
use super::system_tables::scan_rows;
use super::table::storage_error;
use super::time_travel::{evaluate, to_millis};
use crate::storage::{Snapshot, StorageError, Table, VersionError, VersionSpec};

/// The functions in FROM: the net change, every commit's changes.
const NET: &str = "table_changes";
const LOG: &str = "table_changelog";

/// A table name with a range of versions: what a `table_changes` or `table_changelog` call is
/// renamed to.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangesName {
    pub table: String,
    pub from: VersionSpec,
    pub to: VersionSpec,
    /// `table_changelog`: every commit's changes rather than the net change.
    pub log: bool,
}

impl ChangesName {
    /// Reads `orders$changes$<from>$<to>` (or `$changelog$`).
    pub fn parse(name: &str) -> Option<Self> {
        let (table, rest, log) = match name.split_once("$changelog$") {
            Some((table, rest)) => (table, rest, true),
            None => {
                let (table, rest) = name.split_once("$changes$")?;
                (table, rest, false)
            }
        };
        let (from, to) = rest.split_once('$')?;
        Some(Self {
            table: table.to_owned(),
            from: decode(from)?,
            to: decode(to)?,
            log,
        })
    }

    fn render(&self) -> String {
        format!(
            "{}${}${}${}",
            self.table,
            if self.log { "changelog" } else { "changes" },
            encode(&self.from),
            encode(&self.to)
        )
    }
}

/// `s<id>`, `m<millis>`, `t<hex of the tag>` (a tag may hold any character, `$` too).
fn encode(v: &VersionSpec) -> String {
    match v {
        VersionSpec::SnapshotId(id) => format!("s{id}"),
        VersionSpec::TimestampMillis(ms) => format!("m{ms}"),
        VersionSpec::Tag(tag) => {
            let hex: String = tag.bytes().map(|b| format!("{b:02x}")).collect();
            format!("t{hex}")
        }
    }
}

fn decode(text: &str) -> Option<VersionSpec> {
    let value = text.get(1..)?;
    match text.as_bytes().first()? {
        b's' => Some(VersionSpec::SnapshotId(value.parse().ok()?)),
        b'm' => Some(VersionSpec::TimestampMillis(value.parse().ok()?)),
        b't' => {
            let bytes: Option<Vec<u8>> = (0..value.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(value.get(i..i + 2)?, 16).ok())
                .collect();
            Some(VersionSpec::Tag(String::from_utf8(bytes?).ok()?))
        }
        _ => None,
    }
}

/// Rewrites every `table_changes(...)` in FROM of `statement` (see the module docs).
pub(crate) async fn pin_changes(
    ctx: &SessionContext,
    statement: &mut datafusion::sql::sqlparser::ast::Statement,
    time_zone: &str,
) -> Result<(), QueryError> {
    struct Collect(Vec<(&'static str, Vec<FunctionArg>)>);
    impl Visitor for Collect {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table {
                name,
                args: Some(args),
                ..
            } = factor
                && let Some(function) = changes_function(name)
            {
                self.0.push((function, args.args.clone()));
            }
            ControlFlow::Continue(())
        }
    }
    let mut collect = Collect(Vec::new());
    let _ = Visit::visit(&*statement, &mut collect);
    if collect.0.is_empty() {
        return Ok(());
    }
    let mut names = Vec::new();
    for (function, args) in collect.0 {
        names.push(changes_name(ctx, function, args, time_zone).await?);
    }
    struct Rename(std::vec::IntoIter<(Vec<Ident>, ChangesName)>);
    impl VisitorMut for Rename {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table {
                name, args, alias, ..
            } = factor
                && args.is_some()
                && let Some(function) = changes_function(name)
                && let Some((mut parts, changes)) = self.0.next()
            {
                parts.push(Ident::with_quote('"', changes.render()));
                *name = ObjectName(parts.into_iter().map(ObjectNamePart::Identifier).collect());
                *args = None;
                if alias.is_none() {
                    // PostgreSQL names a function in FROM after the function.
                    *alias = Some(TableAlias {
                        explicit: true,
                        name: Ident::new(function),
                        columns: Vec::new(),
                        at: None,
                    });
                }
            }
            ControlFlow::Continue(())
        }
    }
    let _ = VisitMut::visit(statement, &mut Rename(names.into_iter()));
    Ok(())
}

/// Which of the change functions `name` calls, if any.
fn changes_function(name: &ObjectName) -> Option<&'static str> {
    let [ObjectNamePart::Identifier(i)] = name.0.as_slice() else {
        return None;
    };
    if i.quote_style.is_some() {
        return None;
    }
    [NET, LOG]
        .into_iter()
        .find(|f| i.value.eq_ignore_ascii_case(f))
}

/// The schema parts and the changes name of one call's arguments.
async fn changes_name(
    ctx: &SessionContext,
    function: &'static str,
    args: Vec<FunctionArg>,
    time_zone: &str,
) -> Result<(Vec<Ident>, ChangesName), QueryError> {
    let usage = format!(
        "{function}(table, from, to) takes a table name, then two versions: snapshot ids, tag \
         names or timestamps"
    );
    let exprs: Vec<Expr> = args
        .into_iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e),
            _ => Err(QueryError::Unsupported(usage.clone())),
        })
        .collect::<Result<_, _>>()?;
    let [table, from, to]: [Expr; 3] = exprs
        .try_into()
        .map_err(|_| QueryError::Unsupported(usage.clone()))?;
    let table_text = evaluate(ctx, table, &format!("{function}'s table")).await?;
    let table_text = single_text(&table_text).ok_or_else(|| {
        QueryError::Unsupported(format!("{usage}; the table is a string like 'orders'"))
    })?;
    let mut parts = table_parts(function, &table_text)?;
    let table = parts.pop().expect("a name has a part");
    let from = version(ctx, from, time_zone, &format!("{function}'s from")).await?;
    let to = version(ctx, to, time_zone, &format!("{function}'s to")).await?;
    Ok((
        parts,
        ChangesName {
            table: table.value,
            from,
            to,
            log: function == LOG,
        },
    ))
}

/// `'orders'`, `'public.orders'`, `'"Mixed"'`: unquoted parts fold to lower case.
fn table_parts(function: &str, text: &str) -> Result<Vec<Ident>, QueryError> {
    let bad = || {
        QueryError::Unsupported(format!(
            "{function}: {text:?} is not a table name (write 'table' or 'schema.table')"
        ))
    };
    let dialect = PostgreSqlDialect {};
    let mut parser = Parser::new(&dialect)
        .try_with_sql(text)
        .map_err(|_| bad())?;
    let name = parser.parse_object_name(false).map_err(|_| bad())?;
    if parser.peek_token().token != Token::EOF {
        return Err(bad());
    }
    let parts: Vec<Ident> = name
        .0
        .into_iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => Ok(match i.quote_style {
                Some(_) => Ident::with_quote('"', i.value),
                None => Ident::with_quote('"', i.value.to_lowercase()),
            }),
            _ => Err(bad()),
        })
        .collect::<Result<_, _>>()?;
    if parts.is_empty() || parts.len() > 2 {
        return Err(bad());
    }
    Ok(parts)
}

/// One bound: an integer is a snapshot id, a string a tag, anything else a point in time.
async fn version(
    ctx: &SessionContext,
    expr: Expr,
    time_zone: &str,
    what: &str,
) -> Result<VersionSpec, QueryError> {
    let value = evaluate(ctx, expr, what).await?;
    if value.data_type().is_integer() {
        let id = datafusion::arrow::compute::cast(&value, &DataType::Int64)?;
        return Ok(VersionSpec::SnapshotId(
            id.as_primitive::<datafusion::arrow::datatypes::Int64Type>()
                .value(0),
        ));
    }
    if let Some(tag) = single_text(&value) {
        return Ok(VersionSpec::Tag(tag));
    }
    Ok(VersionSpec::TimestampMillis(to_millis(
        &value, time_zone, what,
    )?))
}

fn single_text(value: &ArrayRef) -> Option<String> {
    let text = datafusion::arrow::compute::cast(value, &DataType::Utf8).ok()?;
    match value.data_type() {
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => {
            Some(text.as_string::<i32>().value(0).to_owned())
        }
        _ => None,
    }
}

/// The changes of `table` named by `name`, computed now.
pub async fn changes_table(table: Table, name: &ChangesName) -> Result<Arc<dyn TableProvider>> {
    let from = match name.from {
        VersionSpec::SnapshotId(0) => None,
        ref spec => match table.resolve_version(spec).await {
            Ok(s) => Some(s),
            // A time before the first snapshot, none expired: the table was empty then.
            Err(StorageError::Version(VersionError::NoSnapshotAtTime {
                earliest: Some((1, _)),
                ..
            })) => None,
            Err(e) => return Err(storage_error(e)),
        },
    };
    let to = table
        .resolve_version(&name.to)
        .await
        .map_err(storage_error)?;
    let batches = if name.log {
        table.changelog(from.as_ref(), &to).await
    } else {
        table.changes(from.as_ref(), &to).await
    }
    .map_err(storage_error)?;
    // The table's own column types (as its scans show them) after rowkind and snapshot_id.
    let storage_schema = table.changes_schema().map_err(storage_error)?;
    let columns = table_arrow_schema(&table)?;
    let mut fields: Vec<_> = storage_schema.fields()[..2].to_vec();
    fields.extend(columns.fields().iter().cloned());
    let schema = Arc::new(Schema::new(fields));
    let batches = batches
        .into_iter()
        .map(|b| RecordBatch::try_new(Arc::clone(&schema), b.columns().to_vec()))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(Arc::new(MemTable::try_new(schema, vec![batches])?))
}

/// `t$audit_log` of a table with a changelog producer: the earliest retained state as
/// inserts, then every commit's changes up to `version` (the latest at scan time when `None`).
/// Rows are read when a plan runs, like every system table's.
#[derive(Debug)]
pub struct ChangelogAudit {
    table: Table,
    version: Option<Snapshot>,
    schema: SchemaRef,
}

impl ChangelogAudit {
    pub fn new(table: Table, version: Option<Snapshot>) -> Result<Self> {
        let mut fields = vec![Arc::new(Field::new("rowkind", DataType::Utf8, false))];
        fields.extend(table_arrow_schema(&table)?.fields().iter().cloned());
        Ok(Self {
            table,
            version,
            schema: Arc::new(Schema::new(fields)),
        })
    }
}

#[async_trait::async_trait]
impl TableProvider for ChangelogAudit {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[DfExpr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let to = match &self.version {
            Some(s) => Some(s.clone()),
            None => self
                .table
                .snapshots()
                .latest()
                .await
                .map_err(storage_error)?,
        };
        let mut batches = Vec::new();
        if let Some(to) = to {
            for b in self
                .table
                .changelog_history(&to)
                .await
                .map_err(storage_error)?
            {
                // Paimon's audit log has no snapshot column.
                let mut columns = b.columns().to_vec();
                columns.remove(1);
                batches.push(RecordBatch::try_new(Arc::clone(&self.schema), columns)?);
            }
        }
        scan_rows(&self.schema, batches, state, projection, filters, limit).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_names_round_trip() {
        for (from, to, log) in [
            (
                VersionSpec::SnapshotId(0),
                VersionSpec::SnapshotId(42),
                false,
            ),
            (
                VersionSpec::Tag("Month$End é".into()),
                VersionSpec::TimestampMillis(-5),
                true,
            ),
            (
                VersionSpec::Tag("a$changes$b".into()),
                VersionSpec::SnapshotId(3),
                true,
            ),
        ] {
            let name = ChangesName {
                table: "orders".into(),
                from,
                to,
                log,
            };
            assert_eq!(ChangesName::parse(&name.render()), Some(name));
        }
        assert_eq!(ChangesName::parse("orders"), None);
        assert_eq!(ChangesName::parse("orders$changes$x1$s2"), None);
        assert_eq!(ChangesName::parse("orders$changes$t4$s2"), None);
    }

    #[test]
    fn table_arguments_fold_like_postgres() {
        let names = |t: &str| -> Vec<String> {
            table_parts(NET, t)
                .unwrap()
                .into_iter()
                .map(|i| i.value)
                .collect()
        };
        assert_eq!(names("Orders"), ["orders"]);
        assert_eq!(names("public.Orders"), ["public", "orders"]);
        assert_eq!(names("\"Mixed\""), ["Mixed"]);
        assert!(table_parts(NET, "a.b.c").is_err());
        assert!(table_parts(NET, "not a name").is_err());
    }
}
