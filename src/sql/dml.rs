//! Row-level DML as queries: UPDATE, DELETE, MERGE and INSERT ... ON CONFLICT become SELECTs
//! that compute the changes, which the session then writes as Paimon row kinds.
//!
//! DataFusion can't run these statements on a Paimon table the way PostgreSQL does
//! (`delete_from`/`update` get the WHERE as filters, dropped when it holds a subquery;
//! no UPDATE ... FROM, ON CONFLICT, RETURNING or MERGE semantics). So each statement is
//! rewritten, from its parsed AST, into one query whose rows are the changes:
//!
//! `__tarn_action` (0 nothing, 1 insert, 2 update, 3 delete), then the row's new values in the
//! table's column order (the old row for a delete), then the old primary key (to tell an
//! update that moves a key from one that keeps it).
//!
//! The query text is assembled from the statement's own AST nodes (printed by sqlparser) and
//! the table's quoted column names, and parsed again: no SQL text of the client is matched.

use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, ConflictTarget, Delete, Expr, FromTable, Ident, Insert, Merge, MergeAction,
    MergeClauseKind, MergeInsertKind, OnConflictAction, OnInsert, Query, SelectItem, Statement,
    TableFactor, TableObject, Update, UpdateTableFromKind,
};
use datafusion::sql::sqlparser::parser::Parser;

use super::SqlError;
use super::dialect::TarnDialect;

/// Action codes in a change query's first column.
pub mod action {
    pub const NOTHING: i8 = 0;
    pub const INSERT: i8 = 1;
    pub const UPDATE: i8 = 2;
    pub const DELETE: i8 = 3;
}

/// Name of the action column.
pub const ACTION_COLUMN: &str = "__tarn_action";
/// Schema holding a statement's temporary tables (proposed rows, returned rows).
pub const TEMP_SCHEMA: &str = "pg_temp_dml";
/// The rows ON CONFLICT proposes, as the `excluded` relation.
pub const EXCLUDED_TABLE: &str = "__tarn_excluded";
/// The rows a statement wrote, for RETURNING.
pub const RETURNING_TABLE: &str = "__tarn_returning";

/// The columns of the table a statement changes.
#[derive(Debug, Clone)]
pub struct Target {
    /// Every column, in the table's order.
    pub columns: Vec<String>,
    /// The primary key's columns.
    pub keys: Vec<String>,
}

impl Target {
    fn position(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }
}

/// Which kind of DML a statement is, with what the session needs to run it.
#[derive(Debug, Clone)]
pub enum DmlKind {
    Update,
    Delete,
    Merge,
    /// INSERT ... ON CONFLICT: `insert` is the INSERT without ON CONFLICT and RETURNING (its
    /// rows are the proposals); `do_update` tells DO UPDATE from DO NOTHING.
    OnConflict {
        do_update: bool,
    },
}

/// A DML statement's target name and alias (as the change query refers to it).
pub fn target_name(statement: &Statement) -> Option<(String, String)> {
    let from_factor = |f: &TableFactor| match f {
        TableFactor::Table { name, alias, .. } => Some((
            name.to_string(),
            alias
                .as_ref()
                .map_or_else(|| last_ident(name), |a| a.name.to_string()),
        )),
        _ => None,
    };
    match statement {
        Statement::Update(Update { table, .. }) => from_factor(&table.relation),
        Statement::Delete(Delete { from, .. }) => {
            let (FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t)) = from;
            t.first().and_then(|t| from_factor(&t.relation))
        }
        Statement::Merge(Merge { table, .. }) => from_factor(table),
        Statement::Insert(Insert {
            table: TableObject::TableName(name),
            table_alias,
            ..
        }) => Some((
            name.to_string(),
            table_alias
                .as_ref()
                .map_or_else(|| last_ident(name), |a| a.alias.to_string()),
        )),
        _ => None,
    }
}

/// What a DML statement may do to rows that exist, by its clauses (not its data): what a
/// table's merge engine must be able to take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Effects {
    /// Changes rows in place: UPDATE, ON CONFLICT DO UPDATE, MERGE ... UPDATE.
    pub updates: bool,
    /// Deletes rows: DELETE, MERGE ... DELETE.
    pub deletes: bool,
    /// Assigns a primary-key column, so an update may move a row to another key.
    pub moves_keys: bool,
}

/// The [`Effects`] of `statement` on table `t`.
pub fn effects(statement: &Statement, t: &Target) -> Effects {
    let assigns_key = |assignments: &[datafusion::sql::sqlparser::ast::Assignment]| {
        assignments
            .iter()
            .any(|a| assigned_column(&a.target, t).is_ok_and(|i| t.keys.contains(&t.columns[i])))
    };
    let mut out = Effects::default();
    match statement {
        Statement::Update(u) => {
            out.updates = true;
            out.moves_keys = assigns_key(&u.assignments);
        }
        Statement::Delete(_) => out.deletes = true,
        Statement::Merge(m) => {
            for clause in &m.clauses {
                match &clause.action {
                    MergeAction::Update(u) if !u.assignments.is_empty() => {
                        out.updates = true;
                        out.moves_keys |= assigns_key(&u.assignments);
                    }
                    MergeAction::Delete { .. } => out.deletes = true,
                    _ => {}
                }
            }
        }
        Statement::Insert(Insert {
            on: Some(OnInsert::OnConflict(on)),
            ..
        }) => {
            if let OnConflictAction::DoUpdate(u) = &on.action {
                out.updates = true;
                out.moves_keys = assigns_key(&u.assignments);
            }
        }
        _ => {}
    }
    out
}

fn last_ident(name: &datafusion::sql::sqlparser::ast::ObjectName) -> String {
    name.0
        .last()
        .map(|p| p.to_string())
        .unwrap_or_else(|| name.to_string())
}

fn quote(name: &str) -> String {
    Ident::with_quote('"', name).to_string()
}

fn parse_query(text: &str) -> Result<Query, SqlError> {
    let dialect = TarnDialect::default();
    let mut parser = Parser::new(&dialect)
        .try_with_sql(text)
        .map_err(|e| SqlError::Syntax(format!("syntax error: {e}")))?;
    parser
        .parse_query()
        .map(|q| *q)
        .map_err(|e| SqlError::Syntax(format!("syntax error: {e}")))
}

fn unsupported(what: &str) -> SqlError {
    SqlError::Unsupported(what.to_owned())
}

/// The column an assignment sets (`col` or `alias.col`).
fn assigned_column(target: &AssignmentTarget, t: &Target) -> Result<usize, SqlError> {
    let AssignmentTarget::ColumnName(name) = target else {
        return Err(unsupported(
            "multiple-column assignments (SET (a, b) = ...) are not supported; assign each column",
        ));
    };
    let column = name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_default();
    t.position(&column)
        .ok_or_else(|| SqlError::UndefinedColumn(format!("column \"{column}\" does not exist")))
}

/// New values of every column: assigned expressions, or the target's current values.
fn assigned_values(
    assignments: &[datafusion::sql::sqlparser::ast::Assignment],
    t: &Target,
    alias: &str,
) -> Result<Vec<String>, SqlError> {
    let mut values: Vec<Option<String>> = vec![None; t.columns.len()];
    for a in assignments {
        let i = assigned_column(&a.target, t)?;
        if values[i].is_some() {
            return Err(SqlError::Syntax(format!(
                "multiple assignments to same column \"{}\"",
                t.columns[i]
            )));
        }
        if matches!(&a.value, Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
        {
            return Err(unsupported(
                "SET column = DEFAULT is not supported: tarn tables have no column defaults",
            ));
        }
        values[i] = Some(format!("({})", a.value));
    }
    Ok(values
        .into_iter()
        .zip(&t.columns)
        .map(|(v, c)| v.unwrap_or_else(|| format!("{alias}.{}", quote(c))))
        .collect())
}

fn columns_of(alias: &str, columns: &[String]) -> Vec<String> {
    columns
        .iter()
        .map(|c| format!("{alias}.{}", quote(c)))
        .collect()
}

fn select_list(action: &str, new: &[String], old_keys: &[String]) -> String {
    let mut items = vec![format!("{action} AS {ACTION_COLUMN}")];
    items.extend(
        new.iter()
            .enumerate()
            .map(|(i, v)| format!("{v} AS __tarn_c{i}")),
    );
    items.extend(
        old_keys
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{v} AS __tarn_k{i}")),
    );
    items.join(", ")
}

fn with_prefix(with: Option<&datafusion::sql::sqlparser::ast::With>) -> String {
    with.map_or_else(String::new, |w| format!("{w} "))
}

/// UPDATE as its change query.
pub fn update_query(
    update: &Update,
    t: &Target,
    with: Option<&datafusion::sql::sqlparser::ast::With>,
) -> Result<Query, SqlError> {
    if !update.table.joins.is_empty() || update.limit.is_some() || !update.order_by.is_empty() {
        return Err(unsupported(
            "UPDATE with joins, ORDER BY or LIMIT is not supported",
        ));
    }
    let (_, alias) = target_name(&Statement::Update(update.clone()))
        .ok_or_else(|| unsupported("UPDATE of something other than a table"))?;
    let new = assigned_values(&update.assignments, t, &alias)?;
    let old = columns_of(&alias, &t.keys);
    let mut from = vec![update.table.relation.to_string()];
    if let Some(UpdateTableFromKind::AfterSet(extra) | UpdateTableFromKind::BeforeSet(extra)) =
        &update.from
    {
        from.extend(extra.iter().map(ToString::to_string));
    }
    let mut text = format!(
        "{}SELECT {} FROM {}",
        with_prefix(with),
        select_list(&action::UPDATE.to_string(), &new, &old),
        from.join(", ")
    );
    if let Some(w) = &update.selection {
        text.push_str(&format!(" WHERE {w}"));
    }
    parse_query(&text)
}

/// DELETE as its change query (the new values are the old row).
pub fn delete_query(
    delete: &Delete,
    t: &Target,
    with: Option<&datafusion::sql::sqlparser::ast::With>,
) -> Result<Query, SqlError> {
    let (FromTable::WithFromKeyword(tables) | FromTable::WithoutKeyword(tables)) = &delete.from;
    if tables.len() != 1
        || !tables[0].joins.is_empty()
        || !delete.tables.is_empty()
        || delete.limit.is_some()
        || !delete.order_by.is_empty()
    {
        return Err(unsupported(
            "DELETE from several tables, with joins, ORDER BY or LIMIT is not supported",
        ));
    }
    let (_, alias) = target_name(&Statement::Delete(delete.clone()))
        .ok_or_else(|| unsupported("DELETE from something other than a table"))?;
    let new = columns_of(&alias, &t.columns);
    let old = columns_of(&alias, &t.keys);
    let mut from = vec![tables[0].relation.to_string()];
    if let Some(using) = &delete.using {
        from.extend(using.iter().map(ToString::to_string));
    }
    let mut text = format!(
        "{}SELECT {} FROM {}",
        with_prefix(with),
        select_list(&action::DELETE.to_string(), &new, &old),
        from.join(", ")
    );
    if let Some(w) = &delete.selection {
        text.push_str(&format!(" WHERE {w}"));
    }
    parse_query(&text)
}

/// Checks INSERT ... ON CONFLICT's target and returns whether it is DO UPDATE.
pub fn on_conflict_kind(insert: &Insert, t: &Target, table: &str) -> Result<bool, SqlError> {
    let Some(OnInsert::OnConflict(on)) = &insert.on else {
        return Err(unsupported(
            "ON DUPLICATE KEY UPDATE is MySQL's: use ON CONFLICT",
        ));
    };
    match &on.conflict_target {
        None => {
            if matches!(on.action, OnConflictAction::DoUpdate(_)) {
                return Err(SqlError::Syntax(
                    "ON CONFLICT DO UPDATE requires inference specification or constraint name"
                        .to_owned(),
                ));
            }
        }
        Some(ConflictTarget::Columns(columns)) => {
            let mut named: Vec<String> = columns.iter().map(|c| c.value.clone()).collect();
            let mut keys = t.keys.clone();
            named.sort();
            named.dedup();
            keys.sort();
            if named != keys {
                return Err(SqlError::NoMatchingConstraint);
            }
        }
        Some(ConflictTarget::OnConstraint(name)) => {
            let expected = format!("{table}_pkey");
            if last_ident(name).trim_matches('"') != expected {
                return Err(SqlError::UndefinedObject(format!(
                    "constraint \"{}\" for table \"{table}\" does not exist",
                    last_ident(name).trim_matches('"')
                )));
            }
        }
    }
    Ok(matches!(on.action, OnConflictAction::DoUpdate(_)))
}

/// Whether INSERT … ON CONFLICT is `DO UPDATE SET c = EXCLUDED.c, …` assigning every non-key
/// column from the proposed row, with no WHERE: the new row is the proposed row whether the key
/// existed or not, so the statement is an upsert (the caller decides whether the table's merge
/// engine lets it be written as one).
pub fn is_blind_update(insert: &Insert, t: &Target) -> bool {
    let Some(OnInsert::OnConflict(on)) = &insert.on else {
        return false;
    };
    let OnConflictAction::DoUpdate(update) = &on.action else {
        return false;
    };
    if update.selection.is_some() || on.conflict_target.is_none() {
        return false;
    }
    let mut assigned = vec![false; t.columns.len()];
    for a in &update.assignments {
        let Ok(i) = assigned_column(&a.target, t) else {
            return false;
        };
        // `EXCLUDED.<the same column>`, unquoted `excluded`.
        let Expr::CompoundIdentifier(parts) = &a.value else {
            return false;
        };
        let [relation, column] = parts.as_slice() else {
            return false;
        };
        if relation.quote_style.is_some()
            || !relation.value.eq_ignore_ascii_case("excluded")
            || t.position(&column.value) != Some(i)
            || assigned[i]
        {
            return false;
        }
        assigned[i] = true;
    }
    t.columns
        .iter()
        .zip(&assigned)
        .all(|(c, a)| *a || t.keys.contains(c))
        && t.keys
            .iter()
            .all(|k| !assigned[t.position(k).expect("key column")])
}

/// A value of `INSERT … VALUES` that the session writes without a query plan.
#[derive(Debug, Clone, PartialEq)]
pub enum RowValue {
    Null,
    /// `$n` (0-based).
    Param(usize),
    /// An integer literal (PostgreSQL types it `integer` or `bigint`).
    Int(i64),
    /// A quoted string literal (type `unknown` until its column's type applies).
    Text(String),
    Bool(bool),
}

/// The rows of `INSERT … VALUES (…), …` as values per table column (NULL where a column is
/// not named), when every value is a parameter, NULL, an integer, a quoted string or a
/// boolean: `None` for any other shape (expressions, DEFAULT, a query, RETURNING), which the
/// planned path runs.
pub fn values_rows(insert: &Insert, t: &Target) -> Option<Vec<Vec<RowValue>>> {
    use datafusion::sql::sqlparser::ast::{SetExpr, UnaryOperator, Value};
    if insert.returning.is_some()
        || insert.overwrite
        || insert.partitioned.is_some()
        || !insert.after_columns.is_empty()
        || !insert.assignments.is_empty()
        || insert.or.is_some()
        || insert.ignore
        || insert.replace_into
        || insert.priority.is_some()
        || insert.insert_alias.is_some()
        || insert.settings.is_some()
        || insert.format_clause.is_some()
        || insert.output.is_some()
    {
        return None;
    }
    let source = insert.source.as_ref()?;
    if source.with.is_some()
        || source.order_by.is_some()
        || source.limit_clause.is_some()
        || source.fetch.is_some()
        || !source.locks.is_empty()
    {
        return None;
    }
    let SetExpr::Values(values) = source.body.as_ref() else {
        return None;
    };
    if values.explicit_row || values.value_keyword || values.rows.is_empty() {
        return None;
    }
    let targets: Vec<usize> = if insert.columns.is_empty() {
        (0..t.columns.len()).collect()
    } else {
        let mut out = Vec::with_capacity(insert.columns.len());
        for c in &insert.columns {
            let [part] = c.0.as_slice() else {
                return None;
            };
            let ident = part.as_ident()?;
            if ident.quote_style.is_none() && ident.value != ident.value.to_lowercase() {
                return None; // folded to lower case by the planner: let it resolve the name
            }
            let i = t.position(&ident.value)?;
            if out.contains(&i) {
                return None;
            }
            out.push(i);
        }
        out
    };
    let mut rows = Vec::with_capacity(values.rows.len());
    for row in &values.rows {
        let row = &row.content;
        if targets.len() != row.len() {
            return None;
        }
        let mut out = vec![RowValue::Null; t.columns.len()];
        for (&i, e) in targets.iter().zip(row) {
            let (negative, e) = match e {
                Expr::UnaryOp {
                    op: UnaryOperator::Minus,
                    expr,
                } => (true, expr.as_ref()),
                e => (false, e),
            };
            let Expr::Value(v) = e else {
                return None;
            };
            out[i] = match (&v.value, negative) {
                (Value::Null, false) => RowValue::Null,
                (Value::Placeholder(p), false) => {
                    let n: usize = p.strip_prefix('$')?.parse().ok()?;
                    RowValue::Param(n.checked_sub(1)?)
                }
                (Value::Number(digits, false), _)
                    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) =>
                {
                    let n: i64 = digits.parse().ok()?;
                    RowValue::Int(if negative { -n } else { n })
                }
                (Value::SingleQuotedString(text), false) => RowValue::Text(text.clone()),
                (Value::Boolean(b), false) => RowValue::Bool(*b),
                _ => return None,
            };
        }
        rows.push(out);
    }
    Some(rows)
}

/// The INSERT whose rows are ON CONFLICT's proposals (no ON CONFLICT, no RETURNING).
pub fn proposal_insert(insert: &Insert) -> Insert {
    let mut plain = insert.clone();
    plain.on = None;
    plain.returning = None;
    plain.table_alias = None;
    plain
}

/// INSERT ... ON CONFLICT's change query over the proposed rows (registered as
/// [`EXCLUDED_TABLE`] in [`TEMP_SCHEMA`]).
pub fn on_conflict_query(insert: &Insert, t: &Target) -> Result<Query, SqlError> {
    let Some(OnInsert::OnConflict(on)) = &insert.on else {
        return Err(unsupported(
            "ON DUPLICATE KEY UPDATE is MySQL's: use ON CONFLICT",
        ));
    };
    let (table, alias) = target_name(&Statement::Insert(insert.clone()))
        .ok_or_else(|| unsupported("INSERT into something other than a table"))?;
    let absent = format!("{alias}.{} IS NULL", quote(&t.keys[0]));
    let excluded = columns_of("excluded", &t.columns);
    let (action, new) = match &on.action {
        OnConflictAction::DoNothing => (
            format!(
                "CASE WHEN {absent} THEN {} ELSE {} END",
                action::INSERT,
                action::NOTHING
            ),
            excluded,
        ),
        OnConflictAction::DoUpdate(update) => {
            let set = assigned_values(&update.assignments, t, &alias)?;
            let when = update
                .selection
                .as_ref()
                .map_or_else(|| "TRUE".to_owned(), |w| format!("({w})"));
            (
                format!(
                    "CASE WHEN {absent} THEN {} WHEN {when} THEN {} ELSE {} END",
                    action::INSERT,
                    action::UPDATE,
                    action::NOTHING
                ),
                excluded
                    .iter()
                    .zip(&set)
                    .map(|(e, s)| format!("CASE WHEN {absent} THEN {e} ELSE {s} END"))
                    .collect(),
            )
        }
    };
    let old = columns_of("excluded", &t.keys);
    let on_keys: Vec<String> = t
        .keys
        .iter()
        .map(|k| format!("excluded.{q} = {alias}.{q}", q = quote(k)))
        .collect();
    let text = format!(
        "SELECT {} FROM {TEMP_SCHEMA}.{EXCLUDED_TABLE} AS excluded LEFT JOIN {table} AS {alias} \
         ON {}",
        select_list(&action, &new, &old),
        on_keys.join(" AND ")
    );
    parse_query(&text)
}

/// MERGE as its change query: the source LEFT JOIN the target, and for each source row the
/// first WHEN clause that applies.
pub fn merge_query(
    merge: &Merge,
    t: &Target,
    with: Option<&datafusion::sql::sqlparser::ast::With>,
) -> Result<Query, SqlError> {
    let (_, alias) = target_name(&Statement::Merge(merge.clone()))
        .ok_or_else(|| unsupported("MERGE into something other than a table"))?;
    let matched = format!("{alias}.{} IS NOT NULL", quote(&t.keys[0]));
    let current = columns_of(&alias, &t.columns);
    let mut action_case = Vec::new();
    let mut column_cases: Vec<Vec<String>> = vec![Vec::new(); t.columns.len()];
    for clause in &merge.clauses {
        let mut when = match clause.clause_kind {
            MergeClauseKind::Matched => matched.clone(),
            MergeClauseKind::NotMatched | MergeClauseKind::NotMatchedByTarget => {
                format!("NOT ({matched})")
            }
            MergeClauseKind::NotMatchedBySource => {
                return Err(unsupported(
                    "WHEN NOT MATCHED BY SOURCE is not supported (PostgreSQL 15 has no such clause)",
                ));
            }
        };
        if let Some(p) = &clause.predicate {
            when = format!("({when}) AND ({p})");
        }
        let (code, values): (i8, Vec<String>) = match &clause.action {
            MergeAction::Delete { .. } => (action::DELETE, current.clone()),
            MergeAction::Update(u) => {
                if u.update_predicate.is_some() || u.delete_predicate.is_some() {
                    return Err(unsupported("MERGE UPDATE ... WHERE / DELETE WHERE"));
                }
                (action::UPDATE, assigned_values(&u.assignments, t, &alias)?)
            }
            MergeAction::Insert(i) => {
                if i.insert_predicate.is_some() {
                    return Err(unsupported("MERGE INSERT ... WHERE"));
                }
                let MergeInsertKind::Values(values) = &i.kind else {
                    return Err(unsupported("MERGE INSERT ROW"));
                };
                let [row] = values.rows.as_slice() else {
                    return Err(SqlError::Syntax(
                        "MERGE INSERT takes exactly one VALUES row".to_owned(),
                    ));
                };
                let targets: Vec<usize> = if i.columns.is_empty() {
                    (0..row.content.len().min(t.columns.len())).collect()
                } else {
                    i.columns
                        .iter()
                        .map(|c| {
                            let name = last_ident(c).trim_matches('"').to_owned();
                            t.position(&name).ok_or_else(|| {
                                SqlError::UndefinedColumn(format!(
                                    "column \"{name}\" does not exist"
                                ))
                            })
                        })
                        .collect::<Result<_, _>>()?
                };
                if targets.len() != row.content.len() {
                    return Err(SqlError::Syntax(
                        "INSERT has more expressions than target columns".to_owned(),
                    ));
                }
                let mut new = vec!["NULL".to_owned(); t.columns.len()];
                for (c, e) in targets.into_iter().zip(row.content.iter()) {
                    if matches!(e, Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
                    {
                        continue;
                    }
                    new[c] = format!("({e})");
                }
                (action::INSERT, new)
            }
        };
        let code = if matches!(&clause.action, MergeAction::Update(u) if u.assignments.is_empty()) {
            action::NOTHING
        } else {
            code
        };
        action_case.push(format!("WHEN {when} THEN {code}"));
        for (i, v) in values.into_iter().enumerate() {
            column_cases[i].push(format!("WHEN {when} THEN {v}"));
        }
    }
    let action = format!(
        "CASE {} ELSE {} END",
        action_case.join(" "),
        action::NOTHING
    );
    let new: Vec<String> = column_cases
        .into_iter()
        .zip(&current)
        .map(|(cases, cur)| format!("CASE {} ELSE {cur} END", cases.join(" ")))
        .collect();
    let old = columns_of(&alias, &t.keys);
    let text = format!(
        "{}SELECT {} FROM {} LEFT JOIN {} ON {}",
        with_prefix(with),
        select_list(&action, &new, &old),
        merge.source,
        merge.table,
        merge.on
    );
    parse_query(&text)
}

/// RETURNING's query over the rows a statement wrote (registered as [`RETURNING_TABLE`]).
pub fn returning_query(items: &[SelectItem], alias: &str) -> Result<Query, SqlError> {
    let list: Vec<String> = items.iter().map(ToString::to_string).collect();
    parse_query(&format!(
        "SELECT {} FROM {TEMP_SCHEMA}.{RETURNING_TABLE} AS {alias}",
        list.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(sql: &str) -> Statement {
        let dialect = TarnDialect::default();
        Parser::parse_sql(&dialect, sql).unwrap().remove(0)
    }

    fn target() -> Target {
        Target {
            columns: vec!["id".into(), "v".into(), "n".into()],
            keys: vec!["id".into()],
        }
    }

    #[test]
    fn update_keeps_unassigned_columns_and_the_old_key() {
        let Statement::Update(u) =
            statement("UPDATE t AS x SET v = upper(v) FROM s WHERE x.id IN (SELECT id FROM p)")
        else {
            panic!()
        };
        let q = update_query(&u, &target(), None).unwrap().to_string();
        assert_eq!(
            q,
            "SELECT 2 AS __tarn_action, x.\"id\" AS __tarn_c0, (upper(v)) AS __tarn_c1, \
             x.\"n\" AS __tarn_c2, x.\"id\" AS __tarn_k0 FROM t AS x, s \
             WHERE x.id IN (SELECT id FROM p)"
        );
    }

    #[test]
    fn update_refuses_unknown_and_repeated_columns() {
        let Statement::Update(u) = statement("UPDATE t SET nope = 1") else {
            panic!()
        };
        assert!(matches!(
            update_query(&u, &target(), None),
            Err(SqlError::UndefinedColumn(c)) if c.contains("nope")
        ));
        let Statement::Update(u) = statement("UPDATE t SET v = 1, v = 2") else {
            panic!()
        };
        assert!(update_query(&u, &target(), None).is_err());
    }

    #[test]
    fn delete_using_joins_the_extra_tables() {
        let Statement::Delete(d) = statement("DELETE FROM t USING s WHERE t.id = s.id") else {
            panic!()
        };
        let q = delete_query(&d, &target(), None).unwrap().to_string();
        assert!(q.contains("FROM t, s WHERE t.id = s.id"), "{q}");
        assert!(q.starts_with("SELECT 3 AS __tarn_action, t.\"id\""), "{q}");
    }

    #[test]
    fn on_conflict_target_must_be_the_key() {
        let Statement::Insert(i) = statement("INSERT INTO t VALUES (1) ON CONFLICT (v) DO NOTHING")
        else {
            panic!()
        };
        assert!(matches!(
            on_conflict_kind(&i, &target(), "t"),
            Err(SqlError::NoMatchingConstraint)
        ));
        let Statement::Insert(i) =
            statement("INSERT INTO t AS o VALUES (1) ON CONFLICT (id) DO UPDATE SET n = o.n + 1")
        else {
            panic!()
        };
        assert!(on_conflict_kind(&i, &target(), "t").unwrap());
        let q = on_conflict_query(&i, &target()).unwrap().to_string();
        assert!(
            q.contains("LEFT JOIN t AS o ON excluded.\"id\" = o.\"id\""),
            "{q}"
        );
    }

    #[test]
    fn merge_picks_the_first_matching_clause() {
        let Statement::Merge(m) = statement(
            "MERGE INTO t o USING s ON o.id = s.id \
             WHEN MATCHED AND s.op = 'D' THEN DELETE \
             WHEN MATCHED THEN UPDATE SET v = s.v \
             WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, 0)",
        ) else {
            panic!()
        };
        let q = merge_query(&m, &target(), None).unwrap().to_string();
        assert!(q.contains("FROM s LEFT JOIN t o ON o.id = s.id"), "{q}");
        assert!(
            q.starts_with(
                "SELECT CASE WHEN (o.\"id\" IS NOT NULL) AND (s.op = 'D') THEN 3 \
                 WHEN o.\"id\" IS NOT NULL THEN 2 WHEN NOT (o.\"id\" IS NOT NULL) THEN 1 ELSE 0 END"
            ),
            "{q}"
        );
    }

    #[test]
    fn effects_say_what_happens_to_existing_rows() {
        let t = target();
        let of = |sql: &str| effects(&statement(sql), &t);
        let e = |updates, deletes, moves_keys| Effects {
            updates,
            deletes,
            moves_keys,
        };
        assert_eq!(
            of("INSERT INTO t VALUES (1, 'a', 0)"),
            e(false, false, false)
        );
        assert_eq!(
            of("INSERT INTO t VALUES (1, 'a', 0) ON CONFLICT DO NOTHING"),
            e(false, false, false)
        );
        assert_eq!(
            of("INSERT INTO t VALUES (1, 'a', 0) ON CONFLICT (id) DO UPDATE SET v = excluded.v"),
            e(true, false, false)
        );
        assert_eq!(
            of("INSERT INTO t VALUES (1, 'a', 0) ON CONFLICT (id) DO UPDATE SET id = 2"),
            e(true, false, true)
        );
        assert_eq!(of("UPDATE t SET v = 'x'"), e(true, false, false));
        assert_eq!(of("UPDATE t AS x SET id = x.id + 1"), e(true, false, true));
        assert_eq!(of("DELETE FROM t WHERE id = 1"), e(false, true, false));
        assert_eq!(
            of(
                "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, 0)"
            ),
            e(false, false, false)
        );
        assert_eq!(
            of(
                "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.n = 0 THEN DELETE \
                WHEN MATCHED THEN UPDATE SET n = s.n"
            ),
            e(true, true, false)
        );
        assert_eq!(
            of("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = s.n"),
            e(true, false, true)
        );
    }
}
