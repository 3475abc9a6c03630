//! `x::uuid`, `CAST(x AS uuid)`, `uuid '...'` in the AST: DataFusion has no uuid type
//! ("Unsupported SQL type UUID"), so the cast becomes `tarn_cast_uuid(x)`
//! (`query/functions/uuids.rs`), whose result is canonical uuid text tagged `uuid`, the form
//! uuid table columns have (Paimon has no uuid type: they are strings with that tag).
//!
//! Runs after `names.rs`, so `'...'::uuid` keeps PostgreSQL's column name `uuid`.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{CastKind, DataType, Expr, Statement, VisitMut, VisitorMut};

use super::ast::call;

/// Rewrites every uuid cast of `statement`.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut UuidCasts);
}

struct UuidCasts;

impl VisitorMut for UuidCasts {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let replacement = match expr {
            Expr::Cast {
                kind: CastKind::Cast | CastKind::DoubleColon,
                expr: inner,
                data_type: DataType::Uuid,
                format: None,
                ..
            } => Some(call("tarn_cast_uuid", vec![inner.as_ref().clone()])),
            Expr::TypedString(ts) if matches!(ts.data_type, DataType::Uuid) => {
                Some(call("tarn_cast_uuid", vec![Expr::Value(ts.value.clone())]))
            }
            _ => None,
        };
        if let Some(r) = replacement {
            *expr = r;
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, super::rewrite)
    }

    #[test]
    fn casts_become_calls() {
        assert_eq!(
            rewritten("select 'a0eebc99'::uuid, cast($1 as uuid), uuid 'x', x::text from t"),
            "SELECT tarn_cast_uuid('a0eebc99'), tarn_cast_uuid($1), tarn_cast_uuid('x'), x::TEXT FROM t"
        );
    }
}
