//! Time travel in queries: every table reference with a version clause reads a pinned past
//! snapshot of its table.
//!
//! DataFusion's SQL planner drops a table reference's version (see
//! `../shared/notes/known-pitfalls.md`), so [`pin_versions`] takes it out of the AST first: a
//! `FOR SYSTEM_TIME AS OF` expression is evaluated in the session (a zone-less timestamp is
//! read in the session's TimeZone, as PostgreSQL does), and the reference is renamed to a
//! versioned name that the schema provider resolves ([`VersionedName`]:
//! `orders$snapshot$42`, `orders$tag$month_end`, `orders$timestamp$<millis>`), aliased to the
//! name the query used so qualified columns still resolve. Each reference is resolved on its
//! own, so one query can join two versions of a table, in subqueries and CTEs too.

use std::ops::ControlFlow;
use std::str::FromStr;

use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{
    Expr, Ident, ObjectNamePart, TableAlias, TableFactor, Visit, VisitMut, Visitor, VisitorMut,
};

use super::QueryError;
use crate::sql::versions::{VersionRef, version_ref};
use crate::storage::VersionSpec;

/// A table name with a version: what a versioned reference is renamed to.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionedName {
    pub table: String,
    pub version: VersionSpec,
}

impl VersionedName {
    /// Reads `orders$snapshot$42` / `orders$tag$x` / `orders$timestamp$1700000000000`.
    pub fn parse(name: &str) -> Option<Self> {
        let (table, rest) = name.split_once('$')?;
        let (kind, value) = rest.split_once('$')?;
        let version = match kind {
            "snapshot" => VersionSpec::SnapshotId(value.parse().ok()?),
            "tag" => VersionSpec::Tag(value.to_owned()),
            "timestamp" => VersionSpec::TimestampMillis(value.parse().ok()?),
            _ => return None,
        };
        Some(Self {
            table: table.to_owned(),
            version,
        })
    }

    fn render(&self) -> String {
        match &self.version {
            VersionSpec::SnapshotId(id) => format!("{}$snapshot${id}", self.table),
            VersionSpec::Tag(tag) => format!("{}$tag${tag}", self.table),
            VersionSpec::TimestampMillis(ms) => format!("{}$timestamp${ms}", self.table),
        }
    }
}

/// Rewrites the versioned table references of `statement` (see the module docs).
pub async fn pin_versions(
    ctx: &SessionContext,
    statement: &mut DFStatement,
    time_zone: &str,
) -> Result<(), QueryError> {
    let statement = match statement {
        DFStatement::Statement(s) => s,
        // EXPLAIN shows the plan of the versions its statement reads.
        DFStatement::Explain(explain) => {
            return Box::pin(pin_versions(ctx, &mut explain.statement, time_zone)).await;
        }
        _ => return Ok(()),
    };
    super::changes::pin_changes(ctx, statement, time_zone).await?;
    // The versions, in visiting order.
    struct Collect(Vec<Result<VersionRef, String>>);
    impl Visitor for Collect {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table {
                version: Some(v), ..
            } = factor
            {
                self.0.push(version_ref(v));
            }
            ControlFlow::Continue(())
        }
    }
    let mut collect = Collect(Vec::new());
    let _ = Visit::visit(&**statement, &mut collect);
    if collect.0.is_empty() {
        return Ok(());
    }
    let mut specs = Vec::new();
    for v in collect.0 {
        specs.push(match v.map_err(QueryError::Unsupported)? {
            VersionRef::Snapshot(id) => VersionSpec::SnapshotId(id),
            VersionRef::Tag(tag) => VersionSpec::Tag(tag),
            VersionRef::Parameter(p) => {
                return Err(QueryError::Unsupported(format!(
                    "VERSION AS OF {p}: a parameter cannot name a table version; write the \
                     snapshot id or tag in the statement"
                )));
            }
            VersionRef::Timestamp(expr) => {
                VersionSpec::TimestampMillis(timestamp_millis(ctx, *expr, time_zone).await?)
            }
        });
    }
    struct Rename(std::vec::IntoIter<VersionSpec>);
    impl VisitorMut for Rename {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table {
                name,
                alias,
                version: version @ Some(_),
                ..
            } = factor
                && let Some(spec) = self.0.next()
                && let Some(ObjectNamePart::Identifier(last)) = name.0.last_mut()
            {
                // PostgreSQL folds unquoted names; the versioned name is quoted so a tag's
                // case survives.
                let table = match last.quote_style {
                    Some(_) => last.value.clone(),
                    None => last.value.to_lowercase(),
                };
                if alias.is_none() {
                    *alias = Some(TableAlias {
                        explicit: true,
                        name: Ident::with_quote('"', table.clone()),
                        columns: Vec::new(),
                        at: None,
                    });
                }
                *last = Ident::with_quote(
                    '"',
                    VersionedName {
                        table,
                        version: spec,
                    }
                    .render(),
                );
                *version = None;
            }
            ControlFlow::Continue(())
        }
    }
    let _ = VisitMut::visit(&mut **statement, &mut Rename(specs.into_iter()));
    Ok(())
}

/// Evaluates a `FOR SYSTEM_TIME AS OF` expression to milliseconds since the epoch.
async fn timestamp_millis(
    ctx: &SessionContext,
    expr: Expr,
    time_zone: &str,
) -> Result<i64, QueryError> {
    let what = format!("FOR SYSTEM_TIME AS OF {expr}");
    let column = evaluate(ctx, expr, &what).await?;
    to_millis(&column, time_zone, &what)
}

/// The value of a constant expression (`what` names it in errors; NULL is refused).
pub(crate) async fn evaluate(
    ctx: &SessionContext,
    expr: Expr,
    what: &str,
) -> Result<ArrayRef, QueryError> {
    // The expression's own text, parsed back as a query (tarn's rewrites apply to it too).
    let commands = crate::sql::parse(&format!("SELECT {expr}"))
        .map_err(|e| QueryError::Unsupported(format!("{what}: {e}")))?;
    let Some(crate::sql::Command::Plan(query)) = commands.into_iter().next() else {
        return Err(QueryError::Unsupported(format!(
            "{what}: not an expression"
        )));
    };
    let plan = ctx.state().statement_to_plan(query).await?;
    let batches = ctx.execute_logical_plan(plan).await?.collect().await?;
    let column = batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .map(|b| std::sync::Arc::clone(b.column(0)))
        .ok_or_else(|| QueryError::Unsupported(format!("{what} needs a value")))?;
    if column.is_null(0) {
        return Err(QueryError::Unsupported(format!(
            "{what}: NULL names no version of the table"
        )));
    }
    Ok(column)
}

/// A timestamp value (first row of `column`) in milliseconds since the epoch; a zone-less one
/// is a wall-clock time in `time_zone`.
pub(crate) fn to_millis(column: &ArrayRef, time_zone: &str, what: &str) -> Result<i64, QueryError> {
    let naive = match column.data_type() {
        DataType::Timestamp(_, Some(_)) => false,
        DataType::Timestamp(_, None)
        | DataType::Date32
        | DataType::Date64
        | DataType::Utf8
        | DataType::Utf8View
        | DataType::LargeUtf8 => true,
        other => {
            return Err(QueryError::Unsupported(format!(
                "{what} needs a timestamp, not a value of type {other}"
            )));
        }
    };
    let millis = datafusion::arrow::compute::cast(
        column,
        &DataType::Timestamp(TimeUnit::Millisecond, None),
    )?;
    let value = millis
        .as_primitive::<datafusion::arrow::datatypes::TimestampMillisecondType>()
        .value(0);
    if !naive {
        return Ok(value);
    }
    // A wall-clock time in the session's zone.
    let zone = time_zone;
    let tz = Tz::from_str(zone)
        .map_err(|e| QueryError::Unsupported(format!("time zone {zone}: {e}")))?;
    let local = chrono::DateTime::from_timestamp_millis(value)
        .ok_or_else(|| QueryError::Unsupported("timestamp out of range".into()))?
        .naive_utc();
    use chrono::TimeZone;
    let at = tz.from_local_datetime(&local).earliest().ok_or_else(|| {
        QueryError::Unsupported(format!("{local} does not exist in time zone {zone}"))
    })?;
    Ok(at.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versioned_names_round_trip() {
        for v in [
            VersionSpec::SnapshotId(42),
            VersionSpec::Tag("Month$End".into()),
            VersionSpec::TimestampMillis(-5),
        ] {
            let name = VersionedName {
                table: "orders".into(),
                version: v,
            };
            assert_eq!(VersionedName::parse(&name.render()), Some(name));
        }
        assert_eq!(VersionedName::parse("orders"), None);
        assert_eq!(VersionedName::parse("orders$snapshots"), None);
        assert_eq!(VersionedName::parse("orders$snapshot$x"), None);
    }
}
