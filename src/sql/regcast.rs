//! `x::regtype::text` (`regclass`, `regnamespace`, `regproc`): PostgreSQL prints an OID cast
//! to a reg* type as the object's name — psycopg's `TypeInfo.fetch` reads
//! `oid::regtype::text`, psql and SQLAlchemy `attrelid::regclass::text`. tarn's OIDs are int4
//! and a cast between int4 types leaves no trace in the plan, so the pair of casts becomes
//! `tarn_reg_name(x, 'regtype')` (`query/pg_catalog/functions.rs`) here, in the AST.
//! Name-to-OID casts of literals (`'t'::regclass`) are datafusion-pg-catalog's rewrite, except
//! for `regproc` ([`rewrite_proc_names`]); `'t'::regclass::text` becomes
//! `tarn_reg_name('t'::regclass, 'regclass')` before that rewrite ([`unwrap_sequence_names`]),
//! so it prints the name (tables, views, sequences) as PostgreSQL does.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    DataType, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList,
    FunctionArguments, Ident, ObjectName, ObjectNamePart, Statement, Value, VisitMut, VisitorMut,
};

/// Rewrites every `x::reg*::text` of `statement`.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut RegCast);
}

struct RegCast;

/// `'pg_catalog.array_in'::regproc` becomes the text `'array_in'`. tarn's regproc catalog
/// columns (`pg_type.typinput`, `typoutput`, ...) hold the function's name, regproc's text form
/// (PostgreSQL prints pg_catalog's functions unqualified), so pgjdbc's
/// `typinput = 'pg_catalog.array_in'::regproc` compares names where PostgreSQL compares the
/// OIDs they stand for. Runs before datafusion-pg-catalog's rewrite, which would look the name
/// up as an OID. A number (`'0'::regproc`) stays an OID.
pub fn rewrite_proc_names(statement: &mut Statement) {
    struct ProcNames;
    impl VisitorMut for ProcNames {
        type Break = ();
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            if let Expr::Cast {
                expr: inner,
                data_type,
                ..
            } = expr
                && reg_kind(data_type) == Some("regproc")
                && let Expr::Value(v) = inner.as_ref()
                && let Value::SingleQuotedString(name) = &v.value
                && !name.trim().chars().all(|c| c.is_ascii_digit())
            {
                let unqualified = proc_name(name);
                *expr = Expr::Value(Value::SingleQuotedString(unqualified).into());
            }
            ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut ProcNames);
}

/// The function name of `name` (`pg_catalog.array_in`, `"My Func"`): the last dotted part,
/// unquoted, folded to lower case unless quoted, as PostgreSQL reads an identifier.
fn proc_name(name: &str) -> String {
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = name.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                current.push('"');
            }
            '"' => quoted = !quoted,
            '.' if !quoted => current.clear(),
            c if quoted => current.push(c),
            c => current.push(c.to_ascii_lowercase()),
        }
    }
    current
}

/// The reg* kind a type names (`regtype`, `pg_catalog.regclass`, ...).
/// `nextval('s'::regclass)`, `currval(…)`, `setval(…)`: the sequence's name as text, which
/// `query::sequences` resolves (PostgreSQL writes the cast into every SERIAL default; tarn's
/// sequences have no OIDs the cast could look up). And `pg_get_serial_sequence(…)::regclass`
/// becomes `to_regclass(…)`.
pub fn unwrap_sequence_names<V: VisitMut>(node: &mut V) {
    struct Unwrap;
    impl VisitorMut for Unwrap {
        type Break = ();
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            if let Expr::Function(Function {
                name,
                args: FunctionArguments::List(FunctionArgumentList { args, .. }),
                ..
            }) = expr
                && name.0.last().and_then(|p| p.as_ident()).is_some_and(|f| {
                    ["nextval", "currval", "setval"]
                        .iter()
                        .any(|n| f.value.eq_ignore_ascii_case(n))
                })
                && let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(first))) = args.first_mut()
                && let Expr::Cast {
                    expr: inner,
                    data_type,
                    ..
                } = first
                && reg_kind(data_type) == Some("regclass")
                && matches!(inner.as_ref(), Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_)))
            {
                *first = inner.as_ref().clone();
            }
            // `'name'::regclass::text`: the name as regclass prints it. Made here, before
            // datafusion-pg-catalog's rewrite turns the inner cast into a lookup subquery
            // that [`rewrite`] would no longer know for a reg* value.
            if let Expr::Cast {
                expr: inner,
                data_type,
                ..
            } = expr
                && is_text(data_type)
                && let Expr::Cast {
                    expr: name,
                    data_type: reg,
                    ..
                } = inner.as_ref()
                && let Some(kind) = reg_kind(reg)
                && matches!(name.as_ref(), Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_)))
            {
                *expr = reg_name_call(inner.as_ref().clone(), kind);
                return ControlFlow::Continue(());
            }
            // `pg_get_serial_sequence(…)::regclass` (SQLAlchemy's column reflection): a name
            // computed at run time, looked up as `to_regclass` does (the literal casts are
            // datafusion-pg-catalog's rewrite; a computed one would be cast as a number).
            if let Expr::Cast {
                expr: inner,
                data_type,
                ..
            } = expr
                && reg_kind(data_type) == Some("regclass")
                && matches!(inner.as_ref(), Expr::Function(f)
                    if f.name.0.last().and_then(|p| p.as_ident())
                        .is_some_and(|n| n.value.eq_ignore_ascii_case("pg_get_serial_sequence")))
            {
                *expr = super::ast::call("to_regclass", vec![inner.as_ref().clone()]);
            }
            ControlFlow::Continue(())
        }
    }
    let _ = node.visit(&mut Unwrap);
}

fn reg_kind(t: &DataType) -> Option<&'static str> {
    let name = t.to_string().to_lowercase();
    let name = name.strip_prefix("pg_catalog.").unwrap_or(&name).to_owned();
    ["regtype", "regclass", "regnamespace", "regproc"]
        .into_iter()
        .find(|k| *k == name)
}

fn is_text(t: &DataType) -> bool {
    let name = t.to_string().to_lowercase();
    let name = name.strip_prefix("pg_catalog.").unwrap_or(&name);
    matches!(name, "text" | "varchar" | "character varying" | "name")
}

impl VisitorMut for RegCast {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Cast {
            expr: inner,
            data_type,
            ..
        } = expr
            && is_text(data_type)
            && let Expr::Cast { data_type: reg, .. } = inner.as_ref()
            && let Some(kind) = reg_kind(reg)
        {
            // The reg* cast stays inside (an int4 OID to DataFusion): an ORDER BY item then
            // matches a select item `x::regclass` as in psql's `\d` partition query.
            *expr = reg_name_call(inner.as_ref().clone(), kind);
        }
        ControlFlow::Continue(())
    }
}

/// `tarn_reg_name(value, 'kind')`.
fn reg_name_call(value: Expr, kind: &str) -> Expr {
    let args = vec![
        FunctionArg::Unnamed(FunctionArgExpr::Expr(value)),
        FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(
            Value::SingleQuotedString(kind.to_owned()).into(),
        ))),
    ];
    Expr::Function(Function {
        name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new(
            "tarn_reg_name",
        ))]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args,
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    #[test]
    fn function_names_cast_to_regproc_are_the_name() {
        let mut s = Parser::parse_sql(
            &PostgreSqlDialect {},
            "select typinput = 'pg_catalog.array_in'::regproc, 'Boolin'::pg_catalog.regproc, '\"A\"\"b\"'::regproc, '0'::regproc from t",
        )
        .unwrap()
        .remove(0);
        rewrite_proc_names(&mut s);
        assert_eq!(
            s.to_string(),
            "SELECT typinput = 'array_in', 'boolin', 'A\"b', '0'::regproc FROM t"
        );
    }

    #[test]
    fn reg_casts_to_text_name_the_object() {
        let mut s = Parser::parse_sql(
            &PostgreSqlDialect {},
            "select t.oid::regtype::text, c.oid::pg_catalog.regclass::pg_catalog.text, oid::text from t",
        )
        .unwrap()
        .remove(0);
        rewrite(&mut s);
        assert_eq!(
            s.to_string(),
            "SELECT tarn_reg_name(t.oid::regtype, 'regtype'), tarn_reg_name(c.oid::pg_catalog.regclass, 'regclass'), oid::TEXT FROM t"
        );
    }
}
