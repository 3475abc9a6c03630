//! PostgreSQL operators sqlparser parses but DataFusion cannot plan (or plans differently),
//! rewritten into the calls PostgreSQL itself runs for them:
//!
//! - `s SIMILAR TO p [ESCAPE e]` is `s ~ similar_to_escape(p, e)` (DataFusion's SIMILAR TO
//!   does not anchor the pattern nor translate `%`/`_`); `NOT SIMILAR TO` is `!~`.
//! - `a ^@ b` is `starts_with(a, b)`; `|/ x` is `sqrt(x)`, `||/ x` is `cbrt(x)`, `@ x` is
//!   `abs(x)`, `~ x` is `x # -1` (bitwise not).
//! - `s LIKE p ESCAPE e` with an escape other than backslash (DataFusion knows only
//!   backslash) is `s LIKE like_escape(p, e)`, PostgreSQL's conversion to backslash escapes.
//! - `(s1, e1) OVERLAPS (s2, e2)` is PostgreSQL's `overlaps` over the ordered endpoints.
//! - `make_interval(days => 3)`: named and omitted arguments become the seven positional ones
//!   (omitted ones 0), as PostgreSQL's defaults; DataFusion's named arguments have no defaults.
//! - `array_fill(v, ARRAY[d1, d2, ...])`: one-dimensional `array_fill`s nested, innermost last.
//! - A slice without a bound (`a[:2]`, `a[3:]`), which DataFusion refuses: tarn's arrays start
//!   at 1 and end below the largest int4 subscript, and PostgreSQL clamps a slice's bounds to
//!   the array's, so the omitted bounds are 1 and 2147483647.
//! - The set-returning `regexp_split_to_table(s, p)` and `regexp_matches(s, p)` are
//!   `unnest(regexp_split_to_array(s, p))` and `unnest(pg_regexp_matches(s, p))`.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    AccessExpr, BinaryOperator, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments,
    ObjectNamePart, Statement, Subscript, UnaryOperator, Value, VisitMut, VisitorMut,
};

use super::ast::call;

/// The largest subscript (PostgreSQL's int4 subscripts): the upper bound of `a[n:]`.
const MAX_SUBSCRIPT: &str = "2147483647";

/// `make_interval`'s parameters, in PostgreSQL's order.
const MAKE_INTERVAL_PARAMETERS: [&str; 7] =
    ["years", "months", "weeks", "days", "hours", "mins", "secs"];

/// Rewrites the operators of the module docs everywhere in `statement`.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut Operators);
}

struct Operators;

fn nested(e: Expr) -> Box<Expr> {
    Box::new(Expr::Nested(Box::new(e)))
}

fn binary(left: Expr, op: BinaryOperator, right: Expr) -> Expr {
    Expr::BinaryOp {
        left: nested(left),
        op,
        right: nested(right),
    }
}

/// PostgreSQL's `overlaps(s1, e1, s2, e2)` with each pair ordered first.
fn overlaps(a: Expr, b: Expr, c: Expr, d: Expr) -> Expr {
    let x = call("least", vec![a.clone(), b.clone()]);
    let y = call("greatest", vec![a, b]);
    let u = call("least", vec![c.clone(), d.clone()]);
    let v = call("greatest", vec![c, d]);
    let and = |l, r| binary(l, BinaryOperator::And, r);
    let or = |l, r| binary(l, BinaryOperator::Or, r);
    or(
        or(
            and(
                binary(x.clone(), BinaryOperator::Gt, u.clone()),
                binary(x.clone(), BinaryOperator::Lt, v),
            ),
            and(
                binary(u.clone(), BinaryOperator::Gt, x.clone()),
                binary(u.clone(), BinaryOperator::Lt, y),
            ),
        ),
        binary(x, BinaryOperator::Eq, u),
    )
}

fn function(f: &Function) -> Option<Expr> {
    let [ObjectNamePart::Identifier(name)] = f.name.0.as_slice() else {
        return None;
    };
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    let name = name.value.to_ascii_lowercase();
    let positional = || {
        list.args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
                _ => None,
            })
            .collect::<Option<Vec<Expr>>>()
    };
    match name.as_str() {
        "regexp_split_to_table" => Some(call(
            "unnest",
            vec![call("regexp_split_to_array", positional()?)],
        )),
        "regexp_matches" => Some(call(
            "unnest",
            vec![call("pg_regexp_matches", positional()?)],
        )),
        // `array_fill(v, ARRAY[d1, d2])` is `d1` copies of `array_fill(v, ARRAY[d2])`: tarn's
        // array_fill makes one dimension (its result type follows from its arguments' types).
        "array_fill" => {
            let args = positional()?;
            let split = |e: &Expr| match e {
                Expr::Array(a) if a.elem.len() > 1 => Some(a.clone()),
                _ => None,
            };
            let dims = split(args.get(1)?)?;
            let lower = match args.get(2) {
                Some(l) => Some(split(l).filter(|l| l.elem.len() == dims.elem.len())?),
                None => None,
            };
            let mut value = args[0].clone();
            for i in (0..dims.elem.len()).rev() {
                let one = |a: &datafusion::sql::sqlparser::ast::Array| {
                    Expr::Array(datafusion::sql::sqlparser::ast::Array {
                        elem: vec![a.elem[i].clone()],
                        named: a.named,
                    })
                };
                let mut call_args = vec![value, one(&dims)];
                if let Some(l) = &lower {
                    call_args.push(one(l));
                }
                value = call("array_fill", call_args);
            }
            Some(value)
        }
        "make_interval" => {
            let zero = || Expr::Value(Value::Number("0".into(), false).into());
            let mut args: Vec<Expr> = (0..7).map(|_| zero()).collect();
            for (i, a) in list.args.iter().enumerate() {
                let (slot, e) = match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => (i, e),
                    FunctionArg::Named {
                        name,
                        arg: FunctionArgExpr::Expr(e),
                        ..
                    }
                    | FunctionArg::ExprNamed {
                        name: Expr::Identifier(name),
                        arg: FunctionArgExpr::Expr(e),
                        ..
                    } => (
                        MAKE_INTERVAL_PARAMETERS
                            .iter()
                            .position(|p| p.eq_ignore_ascii_case(&name.value))?,
                        e,
                    ),
                    _ => return None,
                };
                *args.get_mut(slot)? = e.clone();
            }
            if list.args.len() == 7
                && list
                    .args
                    .iter()
                    .all(|a| matches!(a, FunctionArg::Unnamed(_)))
            {
                return None;
            }
            Some(call("make_interval", args))
        }
        _ => None,
    }
}

impl VisitorMut for Operators {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let replacement = match expr {
            Expr::SimilarTo {
                negated,
                expr: subject,
                pattern,
                escape_char,
            } => {
                let mut args = vec![(**pattern).clone()];
                if let Some(e) = escape_char {
                    args.push(Expr::Value(e.clone()));
                }
                let op = if *negated {
                    BinaryOperator::PGRegexNotMatch
                } else {
                    BinaryOperator::PGRegexMatch
                };
                Some(binary(
                    (**subject).clone(),
                    op,
                    call("similar_to_escape", args),
                ))
            }
            Expr::Like {
                pattern,
                escape_char,
                ..
            }
            | Expr::ILike {
                pattern,
                escape_char,
                ..
            } if escape_char
                .as_ref()
                .is_some_and(|e| e.value.clone().into_string().as_deref() != Some("\\")) =>
            {
                let escape = escape_char.take().map(Expr::Value);
                let escaped = call(
                    "like_escape",
                    vec![
                        (**pattern).clone(),
                        escape.unwrap_or(Expr::value(Value::Null)),
                    ],
                );
                **pattern = escaped;
                None
            }
            Expr::BinaryOp {
                left,
                op: BinaryOperator::PGStartsWith,
                right,
            } => Some(call(
                "starts_with",
                vec![(**left).clone(), (**right).clone()],
            )),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Overlaps,
                right,
            } => {
                match (&**left, &**right) {
                    (Expr::Tuple(l), Expr::Tuple(r)) if l.len() == 2 && r.len() == 2 => Some(
                        overlaps(l[0].clone(), l[1].clone(), r[0].clone(), r[1].clone()),
                    ),
                    _ => None,
                }
            }
            Expr::Function(f) => function(f),
            Expr::CompoundFieldAccess { access_chain, .. } => {
                for access in access_chain.iter_mut() {
                    if let AccessExpr::Subscript(Subscript::Slice {
                        lower_bound,
                        upper_bound,
                        ..
                    }) = access
                    {
                        let bound = |n: &str| Expr::Value(Value::Number(n.into(), false).into());
                        lower_bound.get_or_insert_with(|| bound("1"));
                        upper_bound.get_or_insert_with(|| bound(MAX_SUBSCRIPT));
                    }
                }
                None
            }
            Expr::UnaryOp { op, expr: operand } => {
                let operand = (**operand).clone();
                match op {
                    UnaryOperator::PGSquareRoot => Some(call("sqrt", vec![operand])),
                    UnaryOperator::PGCubeRoot => Some(call("cbrt", vec![operand])),
                    UnaryOperator::PGAbs => Some(call("abs", vec![operand])),
                    UnaryOperator::BitwiseNot => Some(binary(
                        operand,
                        BinaryOperator::PGBitwiseXor,
                        Expr::Value(Value::Number("-1".into(), false).into()),
                    )),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(r) = replacement {
            *expr = Expr::Nested(Box::new(r));
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn rewritten(sql: &str) -> String {
        let mut s = Parser::parse_sql(&super::super::dialect::TarnDialect::default(), sql)
            .unwrap()
            .remove(0);
        rewrite(&mut s);
        s.to_string()
    }

    #[test]
    fn rewrites_postgres_operators() {
        assert_eq!(
            rewritten("select 'abc' similar to 'a%' escape '!'"),
            "SELECT (('abc') ~ (similar_to_escape('a%', '!')))"
        );
        assert_eq!(
            rewritten("select |/ 25, 'ab' ^@ 'a'"),
            "SELECT (sqrt(25)), (starts_with('ab', 'a'))"
        );
        assert_eq!(
            rewritten("select a[:2], a[3:], a[2:3]"),
            "SELECT a[1:2], a[3:2147483647], a[2:3]"
        );
        assert_eq!(
            rewritten("select array_fill('x', array[2, 3]), array_fill(1, array[4])"),
            "SELECT (array_fill(array_fill('x', ARRAY[3]), ARRAY[2])), array_fill(1, ARRAY[4])"
        );
    }
}
