//! PostgreSQL's hypothetical-set aggregates: `rank(v) WITHIN GROUP (ORDER BY k)`, `dense_rank`,
//! `percent_rank` and `cume_dist` — where a row with the value `v` would rank among the group's
//! rows sorted by `k`.
//!
//! DataFusion has these only as window functions. Each is a count over the group, so each call
//! becomes plain aggregates over "the rows that sort before `v`" (`before`, lexicographic over
//! the keys, with each key's direction and NULLS FIRST/LAST, NULLs sorting last ascending and
//! first descending as in PostgreSQL) and "the rows equal to it" (`IS NOT DISTINCT FROM`):
//!
//! - `rank` = `1 + count(*) FILTER (WHERE before)`
//! - `dense_rank` = `1 +` the distinct key values before `v` (`count(DISTINCT …)`, plus one when
//!   a NULL key sorts before it)
//! - `percent_rank` = `(rank - 1) / count(*)` as a double, 0 for an empty group
//! - `cume_dist` = `(count(*) FILTER (WHERE before OR peer) + 1) / (count(*) + 1)` as a double
//!
//! An aggregate FILTER on the call narrows every count. Calls with several keys and values
//! (`rank(1, 'a') WITHIN GROUP (ORDER BY x, y)`) are rewritten too; `dense_rank` only with one
//! key.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CaseWhen, CastKind, DataType, DuplicateTreatment, Expr, Function, FunctionArg,
    FunctionArgExpr, FunctionArguments, OrderByExpr, Statement, UnaryOperator, Value, VisitMut,
    VisitorMut,
};

use super::ast::{call, number, plain_args};

/// Rewrites every hypothetical-set aggregate call in `statement`.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut Hypothetical);
}

struct Hypothetical;

impl VisitorMut for Hypothetical {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = expr
            && let Some(replacement) = replace(f)
        {
            *expr = replacement;
        }
        ControlFlow::Continue(())
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
}

fn replace(f: &Function) -> Option<Expr> {
    if f.within_group.is_empty() || f.over.is_some() || f.name.0.len() != 1 {
        return None;
    }
    let name = f.name.0[0].as_ident()?.value.to_ascii_lowercase();
    let kind = match name.as_str() {
        "rank" => Kind::Rank,
        "dense_rank" => Kind::DenseRank,
        "percent_rank" => Kind::PercentRank,
        "cume_dist" => Kind::CumeDist,
        _ => return None,
    };
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
        return None;
    }
    let values = plain_args(&list.args)?;
    let keys = &f.within_group;
    if values.len() != keys.len() || keys.iter().any(|k| k.with_fill.is_some()) {
        return None;
    }
    let filter = f.filter.as_deref().cloned();
    let before = before(keys, &values);
    let count_where = |condition: Option<Expr>| count(None, and(filter.clone(), condition));
    Some(match kind {
        Kind::Rank => plus_one(count_where(Some(before))),
        Kind::DenseRank => {
            let [key] = keys.as_slice() else {
                return None;
            };
            let distinct = count(
                Some(key.expr.clone()),
                and(filter.clone(), Some(before.clone())),
            );
            // count(DISTINCT k) skips NULL: one more when NULL keys sort before the value.
            let null_before = binary(
                Expr::IsNull(Box::new(key.expr.clone())),
                BinaryOperator::And,
                nested(before),
            );
            let nulls = count(None, and(filter, Some(null_before)));
            let any_null = case_when(
                binary(nulls, BinaryOperator::Gt, number("0")),
                number("1"),
                number("0"),
            );
            plus_one(binary(distinct, BinaryOperator::Plus, any_null))
        }
        Kind::PercentRank => {
            let total = count_where(None);
            let earlier = double(count_where(Some(before)));
            let ratio = binary(earlier, BinaryOperator::Divide, double(total.clone()));
            case_when(
                binary(total, BinaryOperator::Eq, number("0")),
                double(number("0")),
                ratio,
            )
        }
        Kind::CumeDist => {
            let peer = peer(keys, &values);
            let upto = binary(nested(before), BinaryOperator::Or, nested(peer));
            let numerator = plus_one(count_where(Some(upto)));
            let denominator = plus_one(count_where(None));
            binary(
                double(numerator),
                BinaryOperator::Divide,
                double(denominator),
            )
        }
    })
}

/// Rows whose keys sort strictly before `values`: lexicographic over the keys.
fn before(keys: &[OrderByExpr], values: &[Expr]) -> Expr {
    let mut out: Option<Expr> = None;
    // From the last key back: before_i = b_i OR (peer_i AND before_{i+1}).
    for (key, value) in keys.iter().zip(values).rev() {
        let here = key_before(key, value);
        out = Some(match out {
            None => here,
            Some(rest) => binary(
                nested(here),
                BinaryOperator::Or,
                nested(binary(
                    not_distinct(&key.expr, value),
                    BinaryOperator::And,
                    nested(rest),
                )),
            ),
        });
    }
    out.unwrap_or_else(|| Expr::value(Value::Boolean(false)))
}

/// Rows whose keys equal `values`, NULLs included.
fn peer(keys: &[OrderByExpr], values: &[Expr]) -> Expr {
    keys.iter()
        .zip(values)
        .map(|(k, v)| not_distinct(&k.expr, v))
        .reduce(|a, b| binary(a, BinaryOperator::And, b))
        .unwrap_or_else(|| Expr::value(Value::Boolean(true)))
}

/// One key sorting before `value`, by its direction and NULLs placement.
fn key_before(key: &OrderByExpr, value: &Expr) -> Expr {
    let descending = key.options.asc == Some(false);
    let nulls_first = key.options.nulls_first.unwrap_or(descending);
    let k = key.expr.clone();
    let v = nested(value.clone());
    let op = if descending {
        BinaryOperator::Gt
    } else {
        BinaryOperator::Lt
    };
    let compared = binary(k.clone(), op, v.clone());
    // NULL keys sort before a non-NULL value when they come first; non-NULL keys before a
    // NULL value when NULLs come last.
    let (null_side, other_side) = if nulls_first { (k, v) } else { (v, k) };
    let nulls = binary(
        Expr::IsNull(Box::new(null_side)),
        BinaryOperator::And,
        Expr::IsNotNull(Box::new(other_side)),
    );
    binary(compared, BinaryOperator::Or, nulls)
}

fn not_distinct(key: &Expr, value: &Expr) -> Expr {
    Expr::IsNotDistinctFrom(Box::new(key.clone()), Box::new(nested(value.clone())))
}

/// `count(*)` (or `count(DISTINCT of)`) with an optional FILTER.
fn count(of: Option<Expr>, filter: Option<Expr>) -> Expr {
    let Expr::Function(mut f) = call("count", vec![]) else {
        unreachable!("call builds a function")
    };
    if let FunctionArguments::List(list) = &mut f.args {
        match of {
            None => list
                .args
                .push(FunctionArg::Unnamed(FunctionArgExpr::Wildcard)),
            Some(expr) => {
                list.duplicate_treatment = Some(DuplicateTreatment::Distinct);
                list.args
                    .push(FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)));
            }
        }
    }
    f.filter = filter.map(Box::new);
    Expr::Function(f)
}

fn and(a: Option<Expr>, b: Option<Expr>) -> Option<Expr> {
    match (a, b) {
        (Some(a), Some(b)) => Some(binary(nested(a), BinaryOperator::And, nested(b))),
        (a, b) => a.or(b),
    }
}

fn plus_one(e: Expr) -> Expr {
    binary(e, BinaryOperator::Plus, number("1"))
}

fn double(e: Expr) -> Expr {
    Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(e),
        data_type: DataType::DoublePrecision,
        array: false,
        format: None,
    }
}

/// `CASE WHEN condition THEN then ELSE otherwise END`.
fn case_when(condition: Expr, then: Expr, otherwise: Expr) -> Expr {
    Expr::Case {
        case_token: AttachedToken::empty(),
        end_token: AttachedToken::empty(),
        operand: None,
        conditions: vec![CaseWhen {
            condition,
            result: then,
        }],
        else_result: Some(Box::new(otherwise)),
    }
}

fn binary(left: Expr, op: BinaryOperator, right: Expr) -> Expr {
    Expr::BinaryOp {
        left: Box::new(left),
        op,
        right: Box::new(right),
    }
}

fn nested(e: Expr) -> Expr {
    match e {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) | Expr::Value(_) | Expr::Nested(_) => e,
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            ref expr,
        } if matches!(**expr, Expr::Value(_)) => e,
        other => Expr::Nested(Box::new(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, rewrite)
    }

    #[test]
    fn rank_counts_the_rows_before() {
        assert_eq!(
            rewritten("SELECT rank(5) WITHIN GROUP (ORDER BY x DESC) FROM t"),
            "SELECT count(*) FILTER (WHERE x > 5 OR x IS NULL AND 5 IS NOT NULL) + 1 FROM t"
        );
        assert_eq!(
            rewritten("SELECT cume_dist(5) WITHIN GROUP (ORDER BY x) FILTER (WHERE y) FROM t"),
            "SELECT CAST(count(*) FILTER (WHERE y AND ((x < 5 OR 5 IS NULL AND x IS NOT NULL) \
             OR (x IS NOT DISTINCT FROM 5))) + 1 AS DOUBLE PRECISION) / \
             CAST(count(*) FILTER (WHERE y) + 1 AS DOUBLE PRECISION) FROM t"
        );
        let window = "SELECT rank() OVER (ORDER BY x) FROM t";
        assert_eq!(rewritten(window), window);
    }

    #[test]
    fn several_keys_sort_lexicographically() {
        assert_eq!(
            rewritten("SELECT rank(1, 2) WITHIN GROUP (ORDER BY a, b NULLS FIRST) FROM t"),
            "SELECT count(*) FILTER (WHERE (a < 1 OR 1 IS NULL AND a IS NOT NULL) OR \
             (a IS NOT DISTINCT FROM 1 AND (b < 2 OR b IS NULL AND 2 IS NOT NULL))) + 1 FROM t"
        );
    }
}
