//! Casts to `varchar(n)` and `char(n)` with PostgreSQL's length semantics.
//!
//! DataFusion plans every character type as text and drops the length, so `'abc'::varchar(2)`
//! stayed `abc` and `65::char` `65`. PostgreSQL's explicit cast cuts the value to n characters
//! (`ab`, `6`: `char` alone is `char(1)`), and `char(n)` (bpchar) pads it with blanks to n —
//! blanks that do not count once the value is used as text: `'abc'::char(5) || '|'` is `abc|`.
//! So a cast to `varchar(n)` becomes `left(CAST(x AS VARCHAR), n)`; a cast to `char(n)` becomes
//! `rpad(left(…, n), n)` where the select list returns it as it is, and `rtrim(left(…, n))`
//! where an operator or function takes it.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    CastKind, CharacterLength, DataType, Expr, Query, SelectItem, SetExpr, Statement, Value,
    VisitMut, VisitorMut,
};

use super::ast::call;

/// Rewrites the length-bearing character casts of `statement`.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut CharCasts);
}

struct CharCasts;

impl VisitorMut for CharCasts {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        // Select items that are a char(n) cast themselves: the padded value is returned.
        if let SetExpr::Select(select) = query.body.as_mut() {
            for item in &mut select.projection {
                if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item
                    && let Some(padded) = char_cast(e, true)
                {
                    *e = padded;
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Some(e) = varchar_cast(expr).or_else(|| char_cast(expr, false)) {
            *expr = e;
        }
        ControlFlow::Continue(())
    }
}

/// The length of a `CharacterLength` in characters.
fn length(l: &Option<CharacterLength>) -> Option<u64> {
    match l {
        Some(CharacterLength::IntegerLength { length, .. }) => Some(*length),
        _ => None,
    }
}

fn number(n: u64) -> Expr {
    Expr::value(Value::Number(n.to_string(), false))
}

/// `expr` cast to `to` (a plain PostgreSQL `::` cast).
fn cast(expr: Expr, to: DataType) -> Expr {
    Expr::Cast {
        kind: CastKind::DoubleColon,
        expr: Box::new(expr),
        data_type: to,
        array: false,
        format: None,
    }
}

/// `x::varchar(n)` → `left(x::varchar, n)`.
fn varchar_cast(expr: &Expr) -> Option<Expr> {
    let Expr::Cast {
        kind: CastKind::Cast | CastKind::DoubleColon,
        expr: inner,
        data_type:
            DataType::Varchar(l)
            | DataType::CharacterVarying(l)
            | DataType::CharVarying(l)
            | DataType::Nvarchar(l),
        format: None,
        ..
    } = expr
    else {
        return None;
    };
    let n = length(l)?;
    Some(call(
        "left",
        vec![cast(*inner.clone(), DataType::Varchar(None)), number(n)],
    ))
}

/// `x::char(n)` → `rpad(left(x::varchar, n), n)` (`padded`) or `rtrim(left(x::varchar, n))`.
fn char_cast(expr: &Expr, padded: bool) -> Option<Expr> {
    let Expr::Cast {
        kind: CastKind::Cast | CastKind::DoubleColon,
        expr: inner,
        data_type: DataType::Char(l) | DataType::Character(l),
        format: None,
        ..
    } = expr
    else {
        return None;
    };
    let n = match l {
        None => 1,
        Some(_) => length(l)?,
    };
    let cut = call(
        "left",
        vec![cast(*inner.clone(), DataType::Varchar(None)), number(n)],
    );
    Some(if padded {
        call("rpad", vec![cut, number(n)])
    } else {
        call("rtrim", vec![cut])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, rewrite)
    }

    #[test]
    fn casts_cut_and_pad() {
        assert_eq!(
            rewritten("select 'abc'::varchar(2), 65::char, 'x'::char(3) || '|', 'y'::varchar"),
            "SELECT left('abc'::VARCHAR, 2), rpad(left(65::VARCHAR, 1), 1), \
             rtrim(left('x'::VARCHAR, 3)) || '|', 'y'::VARCHAR"
        );
        assert_eq!(
            rewritten("select c from t where c = cast('a' as char(2))"),
            "SELECT c FROM t WHERE c = rtrim(left('a'::VARCHAR, 2))"
        );
    }
}
