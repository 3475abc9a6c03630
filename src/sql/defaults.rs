//! Column defaults: PostgreSQL's `DEFAULT` clause kept in the Paimon schema, and the values
//! INSERT and UPDATE take from it.
//!
//! Where a default lives:
//! - a **literal** (`DEFAULT 'web'`, `DEFAULT 0`, `DEFAULT '2026-01-01'::date`) goes into the
//!   field's `defaultValue` in `schema-N`, where Paimon 1.3+ keeps defaults, so Java and Flink
//!   writers fill it too (they also turn an *explicit* NULL into it; tarn keeps PostgreSQL's
//!   meaning, where only an omitted column or `DEFAULT` takes it). pypaimon ignores defaults.
//! - an **expression** (`now()`, `nextval('t_id_seq'::regclass)`, `current_date + 1`) has no
//!   place in Paimon (`defaultValue` must be a literal), so it is kept as SQL text in the table
//!   option `tarn.default.<column>`; other engines write NULL where tarn evaluates it.
//!
//! Filling: before an INSERT is planned, [`fill_insert`] makes it name every column — an
//! omitted column and the `DEFAULT` keyword become the column's default expression (NULL
//! without one), `DEFAULT VALUES` becomes one row of defaults — so the planner evaluates
//! volatile defaults per row like any other expression. MERGE's `WHEN NOT MATCHED THEN INSERT`
//! rows are filled the same way ([`fill_merge`]). An identity column `GENERATED ALWAYS`
//! refuses a value, as PostgreSQL does, unless the INSERT says `OVERRIDING SYSTEM VALUE`;
//! `OVERRIDING USER VALUE` gives identity columns their sequence's values whatever VALUES
//! says (`sql::overriding` reads the clause).

use datafusion::sql::sqlparser::ast::{
    Assignment, AssignmentTarget, Expr, Ident, Insert, Merge, MergeAction, MergeInsertKind,
    ObjectName, Parens, Query, SelectItem, SetExpr, TableAlias, TableFactor, TableWithJoins,
    UnaryOperator, Value, Values, visit_expressions,
};
use datafusion::sql::sqlparser::parser::Parser;
use std::ops::ControlFlow;

use super::SqlError;
use super::ast;
use super::dialect::TarnDialect;
use super::overriding::Overriding;
use crate::storage::spec::options::DEFAULT_PREFIX;
use crate::storage::spec::schema::TableSchema;
use crate::storage::spec::schema_change::{SchemaChange, check_default, default_literal};
use crate::storage::spec::types::{PaimonType, TypeKind};

/// Where one column's default is kept.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnDefault {
    /// Paimon's `defaultValue` text (strings quoted, as Paimon strips one pair of `'`).
    Literal(String),
    /// SQL text for `tarn.default.<column>`.
    Expression(String),
}

/// The default a `DEFAULT expr` clause gives a column of type `ty` (`None`: `DEFAULT NULL`).
pub fn column_default(
    expr: &Expr,
    ty: &PaimonType,
    column: &str,
) -> Result<Option<ColumnDefault>, SqlError> {
    if let Some(text) = literal_text(expr) {
        let Some(text) = text else {
            return Ok(None);
        };
        let stored = if is_numeric(ty) || matches!(ty.kind, TypeKind::Boolean) {
            text.clone()
        } else {
            format!("'{text}'")
        };
        return match check_default(ty, &stored) {
            Ok(()) => Ok(Some(ColumnDefault::Literal(stored))),
            Err(why) => Err(SqlError::InvalidText(format!(
                "invalid default for column \"{column}\" of type {ty}: {text} ({why})"
            ))),
        };
    }
    check_expression(expr)?;
    Ok(Some(ColumnDefault::Expression(
        parenthesized(expr.clone()).to_string(),
    )))
}

/// `expr` with each operator expression in parentheses, as PostgreSQL shows a default
/// (`2 + 3 * 4` is `(2 + (3 * 4))`); the text is what `pg_get_expr` and
/// `information_schema.columns` show.
fn parenthesized(expr: Expr) -> Expr {
    match expr {
        Expr::Nested(inner) => match *inner {
            e @ Expr::BinaryOp { .. } => parenthesized(e),
            e => Expr::Nested(Box::new(parenthesized(e))),
        },
        Expr::BinaryOp { left, op, right } => Expr::Nested(Box::new(Expr::BinaryOp {
            left: Box::new(parenthesized(*left)),
            op,
            right: Box::new(parenthesized(*right)),
        })),
        other => other,
    }
}

/// The literal's text when `expr` is a literal (`Some(None)`: NULL), possibly signed or cast.
fn literal_text(expr: &Expr) -> Option<Option<String>> {
    match expr {
        Expr::Value(v) => match &v.value {
            Value::Null => Some(None),
            Value::Number(n, _) => Some(Some(n.clone())),
            Value::SingleQuotedString(s) => Some(Some(s.clone())),
            Value::Boolean(b) => Some(Some(b.to_string())),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            Expr::Value(v) => match &v.value {
                Value::Number(n, _) => Some(Some(format!("-{n}"))),
                _ => None,
            },
            _ => None,
        },
        Expr::Nested(inner) => literal_text(inner),
        Expr::Cast { expr, .. } => literal_text(expr),
        Expr::TypedString(t) => match &t.value.value {
            Value::SingleQuotedString(s) => Some(Some(s.clone())),
            _ => None,
        },
        _ => None,
    }
}

fn is_numeric(ty: &PaimonType) -> bool {
    matches!(
        ty.kind,
        TypeKind::TinyInt
            | TypeKind::SmallInt
            | TypeKind::Int
            | TypeKind::BigInt
            | TypeKind::Float
            | TypeKind::Double
            | TypeKind::Decimal { .. }
    )
}

/// PostgreSQL's rules for a default expression: no column references, no subqueries.
fn check_expression(expr: &Expr) -> Result<(), SqlError> {
    let mut error = None;
    let _ = visit_expressions(expr, |e| {
        let refused = match e {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                Some("cannot use column reference in DEFAULT expression")
            }
            Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => {
                Some("cannot use subquery in DEFAULT expression")
            }
            _ => None,
        };
        match refused {
            Some(m) => {
                error = Some(m);
                ControlFlow::Break(())
            }
            None => ControlFlow::Continue(()),
        }
    });
    match error {
        Some(m) => Err(SqlError::Unsupported(m.to_owned())),
        None => Ok(()),
    }
}

/// The schema changes that give `column` the default `default` (or none).
pub fn default_changes(column: &str, default: Option<ColumnDefault>) -> Vec<SchemaChange> {
    let option = format!("{DEFAULT_PREFIX}{column}");
    let (literal, expression) = match default {
        Some(ColumnDefault::Literal(l)) => (Some(l), None),
        Some(ColumnDefault::Expression(e)) => (None, Some(e)),
        None => (None, None),
    };
    vec![
        SchemaChange::UpdateColumnDefault {
            name: column.to_owned(),
            default: literal,
        },
        match expression {
            Some(value) => SchemaChange::SetOption { key: option, value },
            None => SchemaChange::RemoveOption { key: option },
        },
    ]
}

/// A table's columns with their defaults, as INSERT fills them.
#[derive(Debug, Clone, Default)]
pub struct TableDefaults {
    columns: Vec<String>,
    /// Each column's default expression (`None`: NULL).
    defaults: Vec<Option<Expr>>,
    /// Whether the column is an identity column `GENERATED ALWAYS`.
    always: Vec<bool>,
    /// Whether the column is an identity column (`ALWAYS` or `BY DEFAULT`).
    identity: Vec<bool>,
}

impl TableDefaults {
    pub fn of(schema: &TableSchema) -> Result<Self, SqlError> {
        let options = schema.core_options();
        let mut out = TableDefaults::default();
        for f in &schema.fields {
            let default = match (options.default_expression(&f.name), &f.default_value) {
                (Some(sql), _) => Some(parse_expression(sql, &f.name)?),
                (None, Some(literal)) => Some(literal_expr(literal, &f.data_type)),
                (None, None) => None,
            };
            out.columns.push(f.name.clone());
            out.defaults.push(default);
            out.always.push(options.identity(&f.name) == Some("always"));
            out.identity.push(options.identity(&f.name).is_some());
        }
        Ok(out)
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    fn value(&self, i: usize) -> Expr {
        self.defaults[i]
            .clone()
            .unwrap_or(Expr::Value(Value::Null.into()))
    }

    /// Whether INSERT needs no filling: no defaults, nothing `GENERATED ALWAYS`.
    fn is_empty(&self) -> bool {
        self.defaults.iter().all(Option::is_none) && !self.always.iter().any(|a| *a)
    }
}

/// `tarn.default.<column>`'s SQL text as an expression.
fn parse_expression(sql: &str, column: &str) -> Result<Expr, SqlError> {
    Parser::new(&TarnDialect::default())
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .map(|mut e| {
            // The rewrites that ran on the statement have not seen the default.
            super::regcast::unwrap_sequence_names(&mut e);
            e
        })
        .map_err(|e| {
            SqlError::InvalidValue(format!(
                "the default of column \"{column}\" ({DEFAULT_PREFIX}{column} = {sql}) does not \
                 parse: {e}; set another with ALTER TABLE ... ALTER COLUMN {column} SET DEFAULT"
            ))
        })
}

/// Paimon's `defaultValue` text as an SQL literal (the planner casts it to the column's type).
fn literal_expr(text: &str, ty: &PaimonType) -> Expr {
    let inner = default_literal(text);
    if is_numeric(ty) && inner.trim().parse::<f64>().is_ok() {
        let t = inner.trim();
        return match t.strip_prefix('-') {
            Some(abs) => Expr::UnaryOp {
                op: UnaryOperator::Minus,
                expr: Box::new(Expr::Value(Value::Number(abs.to_owned(), false).into())),
            },
            None => Expr::Value(Value::Number(t.to_owned(), false).into()),
        };
    }
    Expr::Value(Value::SingleQuotedString(inner.to_owned()).into())
}

/// Whether `expr` is the `DEFAULT` keyword in a VALUES row or a SET.
pub fn is_default_keyword(expr: &Expr) -> bool {
    matches!(expr, Expr::Identifier(id) if id.quote_style.is_none()
        && id.value.eq_ignore_ascii_case("default"))
}

/// 428C9: a value for an identity column `GENERATED ALWAYS`.
fn always_error(column: &str) -> SqlError {
    SqlError::GeneratedAlways(format!(
        "cannot insert a non-DEFAULT value into column \"{column}\": it is an identity column \
         defined as GENERATED ALWAYS; omit the column, write DEFAULT, or use OVERRIDING SYSTEM \
         VALUE to override"
    ))
}

/// Makes `insert` name every column of the table, omitted ones and `DEFAULT` taking their
/// defaults (see the module docs). Statements the planner will refuse anyway (unknown
/// columns, too many values) are left for it to refuse.
pub fn fill_insert(insert: &mut Insert, d: &TableDefaults) -> Result<(), SqlError> {
    // `OVERRIDING SYSTEM VALUE`: no column refuses a value; `USER VALUE`: the values given
    // for identity columns give way to their sequences'.
    let overriding = super::overriding::take(insert);
    let unrestricted;
    let d = if overriding == Some(Overriding::System) {
        unrestricted = TableDefaults {
            always: vec![false; d.always.len()],
            ..d.clone()
        };
        &unrestricted
    } else {
        d
    };
    let user_value = overriding == Some(Overriding::User);
    let Some(named) = named_columns(&insert.columns, d) else {
        return Ok(());
    };
    let Some(source) = insert.source.as_mut() else {
        // DEFAULT VALUES: one row of defaults.
        insert.columns = d
            .columns
            .iter()
            .map(|c| ObjectName::from(vec![Ident::new(c)]))
            .collect();
        let row = (0..d.columns.len()).map(|i| d.value(i)).collect();
        insert.source = Some(Box::new(values_query(vec![row])));
        return Ok(());
    };
    let values = match source.body.as_mut() {
        SetExpr::Values(v) if source.with.is_none() => Some(v),
        _ => None,
    };
    let Some(values) = values else {
        // INSERT … SELECT: the omitted columns' defaults after the query's columns.
        if insert.columns.is_empty() {
            if user_value && d.identity.iter().any(|i| *i) {
                return Err(user_value_unsupported());
            }
            return Ok(());
        }
        for &i in &named {
            if user_value && d.identity[i] {
                return Err(user_value_unsupported());
            }
            if d.always[i] {
                return Err(always_error(&d.columns[i]));
            }
        }
        let omitted: Vec<usize> = (0..d.columns.len())
            .filter(|i| !named.contains(i) && d.defaults[*i].is_some())
            .collect();
        if omitted.is_empty() {
            return Ok(());
        }
        let query = std::mem::replace(source.as_mut(), values_query(Vec::new()));
        let mut projection = vec![SelectItem::Wildcard(Default::default())];
        for &i in &omitted {
            projection.push(SelectItem::UnnamedExpr(d.value(i)));
            insert
                .columns
                .push(ObjectName::from(vec![Ident::new(&d.columns[i])]));
        }
        *source.as_mut() = select_query(projection, query);
        return Ok(());
    };
    fill_rows(&mut insert.columns, named, values, d, user_value)
}

/// `OVERRIDING USER VALUE` with INSERT … SELECT into an identity column.
fn user_value_unsupported() -> SqlError {
    SqlError::Unsupported(
        "OVERRIDING USER VALUE is supported with VALUES only; omit the identity column from \
         the column list instead"
            .to_owned(),
    )
}

/// The positions of the columns an INSERT names (`None` if one is unknown: the planner
/// refuses it).
fn named_columns(columns: &[ObjectName], d: &TableDefaults) -> Option<Vec<usize>> {
    columns
        .iter()
        .map(|c| {
            let last = c.0.last()?.as_ident()?;
            d.position(&super::command::fold_ident(last))
        })
        .collect()
}

/// VALUES rows for the columns `named` (`columns`, empty: the table's first ones) made to
/// name every column: `DEFAULT` and the omitted columns take their defaults, and with
/// `user_value` (`OVERRIDING USER VALUE`) so do the identity columns.
fn fill_rows(
    columns: &mut Vec<ObjectName>,
    named: Vec<usize>,
    values: &mut Values,
    d: &TableDefaults,
    user_value: bool,
) -> Result<(), SqlError> {
    if d.is_empty()
        && !values
            .rows
            .iter()
            .flat_map(|r| &r.content)
            .any(is_default_keyword)
    {
        return Ok(());
    }
    let width = values
        .rows
        .iter()
        .map(|r| r.content.len())
        .max()
        .unwrap_or(0);
    let named: Vec<usize> = if columns.is_empty() {
        if width > d.columns.len() {
            return Ok(());
        }
        (0..width).collect()
    } else {
        named
    };
    if values.rows.iter().any(|r| r.content.len() != named.len()) {
        return Ok(());
    }
    let omitted: Vec<usize> = (0..d.columns.len())
        .filter(|i| !named.contains(i))
        .collect();
    for row in &mut values.rows {
        let row = &mut row.content;
        for (value, &i) in row.iter_mut().zip(&named) {
            if is_default_keyword(value) || (user_value && d.identity[i]) {
                *value = d.value(i);
            } else if d.always[i] {
                return Err(always_error(&d.columns[i]));
            }
        }
        row.extend(omitted.iter().map(|&i| d.value(i)));
    }
    *columns = named
        .iter()
        .chain(&omitted)
        .map(|&i| ObjectName::from(vec![Ident::new(&d.columns[i])]))
        .collect();
    Ok(())
}

/// `MERGE … WHEN NOT MATCHED THEN INSERT`: its VALUES row made to name every column as
/// INSERT's are (omitted columns and `DEFAULT` take their defaults, an identity column
/// `GENERATED ALWAYS` refuses a value); `WHEN MATCHED THEN UPDATE SET c = DEFAULT` as UPDATE's.
pub fn fill_merge(merge: &mut Merge, d: &TableDefaults) -> Result<(), SqlError> {
    for clause in &mut merge.clauses {
        match &mut clause.action {
            MergeAction::Insert(insert) => {
                let Some(named) = named_columns(&insert.columns, d) else {
                    continue;
                };
                if let MergeInsertKind::Values(values) = &mut insert.kind {
                    fill_rows(&mut insert.columns, named, values, d, false)?;
                }
            }
            MergeAction::Update(update) => fill_assignments(&mut update.assignments, d)?,
            _ => {}
        }
    }
    Ok(())
}

/// `UPDATE … SET c = DEFAULT`: the column's default. An identity column `GENERATED ALWAYS`
/// takes no other value (428C9, as in PostgreSQL).
pub fn fill_assignments(assignments: &mut [Assignment], d: &TableDefaults) -> Result<(), SqlError> {
    for a in assignments {
        let AssignmentTarget::ColumnName(name) = &a.target else {
            continue;
        };
        let Some(i) = name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .and_then(|id| d.position(&id.value))
        else {
            continue;
        };
        if is_default_keyword(&a.value) {
            a.value = d.value(i);
        } else if d.always[i] {
            return Err(SqlError::GeneratedAlways(format!(
                "column \"{}\" can only be updated to DEFAULT: it is an identity column defined \
                 as GENERATED ALWAYS",
                d.columns[i]
            )));
        }
    }
    Ok(())
}

fn values_query(rows: Vec<Vec<Expr>>) -> Query {
    ast::query(SetExpr::Values(Values {
        explicit_row: false,
        value_keyword: false,
        rows: rows.into_iter().map(Parens::with_empty_span).collect(),
    }))
}

/// `SELECT projection FROM (from) AS tarn_insert_source`.
fn select_query(projection: Vec<SelectItem>, from: Query) -> Query {
    let relation = TableFactor::Derived {
        lateral: false,
        subquery: Box::new(from),
        alias: Some(TableAlias {
            explicit: true,
            name: Ident::new("tarn_insert_source"),
            columns: Vec::new(),
            at: None,
        }),
        sample: None,
    };
    ast::select(
        projection,
        vec![TableWithJoins {
            relation,
            joins: Vec::new(),
        }],
    )
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::ast::Statement;

    use super::*;
    use crate::storage::spec::options::IDENTITY_PREFIX;
    use crate::storage::spec::types::DataField;

    fn parse_expr(sql: &str) -> Expr {
        Parser::new(&TarnDialect::default())
            .try_with_sql(sql)
            .unwrap()
            .parse_expr()
            .unwrap()
    }

    fn ty(kind: TypeKind) -> PaimonType {
        PaimonType {
            kind,
            nullable: true,
        }
    }

    #[test]
    fn literals_go_to_paimon_and_expressions_to_tarn() {
        let text = ty(TypeKind::VarChar(i32::MAX as u32));
        let int = ty(TypeKind::Int);
        let d = |sql: &str, t: &PaimonType| column_default(&parse_expr(sql), t, "c");
        assert_eq!(
            d("'web'", &text).unwrap(),
            Some(ColumnDefault::Literal("'web'".into()))
        );
        assert_eq!(
            d("'web'::text", &text).unwrap(),
            Some(ColumnDefault::Literal("'web'".into()))
        );
        assert_eq!(
            d("-5", &int).unwrap(),
            Some(ColumnDefault::Literal("-5".into()))
        );
        assert_eq!(d("NULL", &int).unwrap(), None);
        assert_eq!(
            d("2 + (3 * 4)", &int).unwrap(),
            Some(ColumnDefault::Expression("(2 + (3 * 4))".into()))
        );
        assert_eq!(
            d("now()", &ty(TypeKind::Timestamp(6))).unwrap(),
            Some(ColumnDefault::Expression("now()".into()))
        );
        assert!(matches!(d("'abc'", &int), Err(SqlError::InvalidText(_))));
        assert!(matches!(d("a + 1", &int), Err(SqlError::Unsupported(_))));
        assert!(matches!(
            d("(SELECT 1)", &int),
            Err(SqlError::Unsupported(_))
        ));
    }

    fn table() -> TableSchema {
        let mut schema = TableSchema {
            id: 0,
            fields: vec![
                DataField::new(0, "id", ty(TypeKind::BigInt)),
                DataField::new(1, "kind", ty(TypeKind::VarChar(i32::MAX as u32))),
                DataField::new(2, "n", ty(TypeKind::Int)),
            ],
            highest_field_id: 2,
            partition_keys: Vec::new(),
            primary_keys: vec!["id".into()],
            options: Default::default(),
            comment: None,
            time_millis: 0,
        };
        schema.fields[1].default_value = Some("'click'".into());
        schema
            .options
            .insert(format!("{DEFAULT_PREFIX}id"), "nextval('s')".into());
        schema
    }

    fn filled(sql: &str, schema: &TableSchema) -> Result<String, SqlError> {
        let d = TableDefaults::of(schema)?;
        let mut stmt = Parser::parse_sql(&TarnDialect::default(), sql).unwrap();
        let Statement::Insert(mut insert) = stmt.remove(0) else {
            panic!()
        };
        fill_insert(&mut insert, &d)?;
        Ok(Statement::Insert(insert).to_string())
    }

    #[test]
    fn inserts_name_every_column() {
        let t = table();
        assert_eq!(
            filled("INSERT INTO t (n) VALUES (1), (DEFAULT)", &t).unwrap(),
            "INSERT INTO t (n, id, kind) VALUES (1, nextval('s'), 'click'), (NULL, nextval('s'), \
             'click')"
        );
        assert_eq!(
            filled("INSERT INTO t VALUES (7)", &t).unwrap(),
            "INSERT INTO t (id, kind, n) VALUES (7, 'click', NULL)"
        );
        assert_eq!(
            filled("INSERT INTO t DEFAULT VALUES", &t).unwrap(),
            "INSERT INTO t (id, kind, n) VALUES (nextval('s'), 'click', NULL)"
        );
        assert_eq!(
            filled("INSERT INTO t (n) SELECT 1", &t).unwrap(),
            "INSERT INTO t (n, id, kind) SELECT *, nextval('s'), 'click' FROM (SELECT 1) AS \
             tarn_insert_source"
        );
        // An explicit NULL stays NULL.
        assert_eq!(
            filled("INSERT INTO t (id, kind) VALUES (1, NULL)", &t).unwrap(),
            "INSERT INTO t (id, kind, n) VALUES (1, NULL, NULL)"
        );
        let mut always = t.clone();
        always
            .options
            .insert(format!("{IDENTITY_PREFIX}id"), "always".into());
        assert!(matches!(
            filled("INSERT INTO t (id) VALUES (1)", &always),
            Err(SqlError::GeneratedAlways(_))
        ));
        assert!(filled("INSERT INTO t (id) VALUES (DEFAULT)", &always).is_ok());
        // OVERRIDING SYSTEM VALUE takes the value; USER VALUE takes the sequence's.
        assert_eq!(
            filled(
                "INSERT INTO t (id, n) OVERRIDING SYSTEM VALUE VALUES (1, 2)",
                &always
            )
            .unwrap(),
            "INSERT INTO t (id, n, kind) VALUES (1, 2, 'click')"
        );
        assert_eq!(
            filled(
                "INSERT INTO t (id, n) OVERRIDING USER VALUE VALUES (1, 2)",
                &always
            )
            .unwrap(),
            "INSERT INTO t (id, n, kind) VALUES (nextval('s'), 2, 'click')"
        );
        assert!(matches!(
            filled("INSERT INTO t (id) OVERRIDING USER VALUE SELECT 1", &always),
            Err(SqlError::Unsupported(_))
        ));
    }

    #[test]
    fn merge_inserts_name_every_column() {
        let d = TableDefaults::of(&table()).unwrap();
        let mut stmt = Parser::parse_sql(
            &TarnDialect::default(),
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET kind = DEFAULT \
             WHEN NOT MATCHED AND s.n = 1 THEN INSERT (n) VALUES (s.n) \
             WHEN NOT MATCHED THEN INSERT DEFAULT VALUES",
        )
        .unwrap();
        let Statement::Merge(merge) = &mut stmt[0] else {
            panic!()
        };
        fill_merge(merge, &d).unwrap();
        assert_eq!(
            stmt[0].to_string(),
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET kind = 'click' \
             WHEN NOT MATCHED AND s.n = 1 THEN INSERT (n, id, kind) VALUES (s.n, nextval('s'), \
             'click') WHEN NOT MATCHED THEN INSERT (id, kind, n) VALUES (nextval('s'), 'click', \
             NULL)"
        );
    }
}
