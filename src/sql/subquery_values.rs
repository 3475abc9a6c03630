//! `EXISTS (…)` and `x [NOT] IN (SELECT …)` used as values in a select list.
//!
//! DataFusion plans these subqueries only as filters (WHERE, HAVING: semi and anti joins); in a
//! select list they fail to execute ("does not support logical expression Exists"). There they
//! become counting scalar subqueries, which DataFusion decorrelates:
//!
//! - `EXISTS (SELECT … FROM f WHERE w)` is `((SELECT count(*) FROM f WHERE w) > 0)`;
//! - `x IN (SELECT y FROM f WHERE w)` keeps PostgreSQL's three values: true when some `y = x`,
//!   NULL when none is but `x` or some `y` is NULL (and there are rows), false otherwise.
//!
//! `x` must not name a column the subquery could claim (an unqualified column, or one qualified
//! by a name of the subquery's FROM), else the expression is left alone.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CaseWhen, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList,
    FunctionArguments, GroupByExpr, Ident, ObjectName, ObjectNamePart, Query, SelectItem, SetExpr,
    Statement, TableAlias, TableAliasColumnDef, TableFactor, TableWithJoins, Value, Visit,
    VisitMut, Visitor, VisitorMut, helpers::attached_token::AttachedToken,
};

/// Rewrites the EXISTS / IN subqueries of every select list in `statement`.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut SelectLists);
}

struct SelectLists;

impl VisitorMut for SelectLists {
    type Break = ();

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        each_projection(&mut query.body);
        ControlFlow::Continue(())
    }
}

fn each_projection(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) => {
            for item in &mut select.projection {
                if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item
                {
                    let _ = VisitMut::visit(e, &mut Values(0));
                }
            }
        }
        SetExpr::SetOperation { left, right, .. } => {
            each_projection(left);
            each_projection(right);
        }
        _ => {}
    }
}

/// Rewrites EXISTS / IN outside nested queries (the depth), which have their own select lists.
struct Values(usize);

impl VisitorMut for Values {
    type Break = ();

    fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.0 += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.0 -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if self.0 > 0 {
            return ControlFlow::Continue(());
        }
        let value = match expr {
            Expr::Exists { subquery, negated } => Some(not(exists(subquery), *negated)),
            Expr::InSubquery {
                expr: x,
                subquery,
                negated,
            } => in_subquery(x, subquery).map(|v| not(v, *negated)),
            _ => None,
        };
        if let Some(value) = value {
            *expr = value;
        }
        ControlFlow::Continue(())
    }
}

fn not(e: Expr, negated: bool) -> Expr {
    if negated {
        Expr::UnaryOp {
            op: datafusion::sql::sqlparser::ast::UnaryOperator::Not,
            expr: Box::new(match e {
                Expr::Nested(_) => e,
                other => Expr::Nested(Box::new(other)),
            }),
        }
    } else {
        e
    }
}

/// The FROM and WHERE of a plain `SELECT item FROM … WHERE …` (no grouping, DISTINCT,
/// ORDER BY, LIMIT or WITH), with its one select item if it has one.
fn plain(query: &Query) -> Option<(&[TableWithJoins], Option<&Expr>, Option<&Expr>)> {
    if query.with.is_some()
        || query.order_by.is_some()
        || query.limit_clause.is_some()
        || query.fetch.is_some()
    {
        return None;
    }
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    if select.having.is_some()
        || select.distinct.is_some()
        || !matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty())
    {
        return None;
    }
    let item = match select.projection.as_slice() {
        [SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }] => Some(e),
        _ => None,
    };
    Some((&select.from, select.selection.as_ref(), item))
}

/// `((SELECT count(*) FROM from WHERE filter) > 0)`.
fn any_row(from: &[TableWithJoins], filter: Option<Expr>) -> Expr {
    let mut query = Query {
        with: None,
        body: Box::new(SetExpr::Select(Box::new(
            datafusion::sql::sqlparser::ast::Select {
                select_token: AttachedToken::empty(),
                optimizer_hints: vec![],
                distinct: None,
                select_modifiers: None,
                top: None,
                top_before_distinct: false,
                projection: vec![SelectItem::UnnamedExpr(count_star())],
                exclude: None,
                into: None,
                from: from.to_vec(),
                lateral_views: vec![],
                prewhere: None,
                selection: filter,
                connect_by: vec![],
                group_by: GroupByExpr::Expressions(vec![], vec![]),
                cluster_by: vec![],
                distribute_by: vec![],
                sort_by: vec![],
                having: None,
                named_window: vec![],
                qualify: None,
                window_before_qualify: false,
                value_table_mode: None,
                flavor: datafusion::sql::sqlparser::ast::SelectFlavor::Standard,
            },
        ))),
        order_by: None,
        limit_clause: None,
        fetch: None,
        locks: vec![],
        for_clause: None,
        settings: None,
        format_clause: None,
        pipe_operators: vec![],
    };
    query.with = None;
    Expr::Nested(Box::new(Expr::BinaryOp {
        left: Box::new(Expr::Subquery(Box::new(query))),
        op: BinaryOperator::Gt,
        right: Box::new(Expr::value(Value::Number("0".into(), false))),
    }))
}

fn count_star() -> Expr {
    Expr::Function(Function {
        name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new("count"))]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: vec![FunctionArg::Unnamed(FunctionArgExpr::Wildcard)],
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

/// `FROM (query) AS __sub(v)`: a subquery of another shape as a table of one column.
fn derived(query: &Query, column: &str) -> Vec<TableWithJoins> {
    vec![TableWithJoins {
        relation: TableFactor::Derived {
            lateral: false,
            subquery: Box::new(query.clone()),
            sample: None,
            alias: Some(TableAlias {
                explicit: true,
                name: Ident::new("__sub"),
                columns: if column.is_empty() {
                    vec![]
                } else {
                    vec![TableAliasColumnDef::from_name(column)]
                },
                at: None,
            }),
        },
        joins: vec![],
    }]
}

fn exists(query: &Query) -> Expr {
    match plain(query) {
        Some((from, filter, _)) => any_row(from, filter.cloned()),
        None => any_row(&derived(query, ""), None),
    }
}

fn in_subquery(x: &Expr, query: &Query) -> Option<Expr> {
    let (from, filter, y) = match plain(query) {
        Some((from, filter, Some(y))) => (from.to_vec(), filter.cloned(), y.clone()),
        _ => (
            derived(query, "v"),
            None,
            Expr::CompoundIdentifier(vec![Ident::new("__sub"), Ident::new("v")]),
        ),
    };
    let inner = super::correlation::inner_names(&from)?;
    if !outside(x, &inner) {
        return None;
    }
    let and = |extra: Expr| {
        Some(match &filter {
            Some(f) => Expr::BinaryOp {
                left: Box::new(Expr::Nested(Box::new(f.clone()))),
                op: BinaryOperator::And,
                right: Box::new(extra),
            },
            None => extra,
        })
    };
    let nested = |e: &Expr| Box::new(Expr::Nested(Box::new(e.clone())));
    let equal = any_row(
        &from,
        and(Expr::BinaryOp {
            left: nested(&y),
            op: BinaryOperator::Eq,
            right: nested(x),
        }),
    );
    let null_y = any_row(&from, and(Expr::IsNull(nested(&y))));
    let rows = any_row(&from, filter.clone());
    let null = Expr::value(Value::Null);
    Some(Expr::Case {
        case_token: AttachedToken::empty(),
        end_token: AttachedToken::empty(),
        operand: None,
        conditions: vec![
            CaseWhen {
                condition: equal,
                result: Expr::value(Value::Boolean(true)),
            },
            CaseWhen {
                condition: Expr::BinaryOp {
                    left: Box::new(Expr::IsNull(nested(x))),
                    op: BinaryOperator::And,
                    right: Box::new(rows),
                },
                result: null.clone(),
            },
            CaseWhen {
                condition: null_y,
                result: null,
            },
        ],
        else_result: Some(Box::new(Expr::value(Value::Boolean(false)))),
    })
}

/// Whether `x` reads only columns the subquery cannot claim, so it may move inside it.
fn outside(x: &Expr, inner: &std::collections::HashSet<String>) -> bool {
    struct Claimable<'a>(bool, &'a std::collections::HashSet<String>);
    impl Visitor for Claimable<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.0 = true;
            ControlFlow::Break(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            match e {
                Expr::Identifier(_) => self.0 = true,
                Expr::CompoundIdentifier(parts)
                    if parts.len() != 2
                        || self.1.contains(&parts[0].value.to_ascii_lowercase()) =>
                {
                    self.0 = true
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let mut finder = Claimable(false, inner);
    let _ = x.visit(&mut finder);
    !finder.0
}

#[cfg(test)]
mod tests {

    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, rewrite)
    }

    #[test]
    fn exists_counts_rows() {
        assert_eq!(
            rewritten("SELECT e.n, EXISTS (SELECT 1 FROM r WHERE r.b = e.id) FROM e"),
            "SELECT e.n, ((SELECT count(*) FROM r WHERE r.b = e.id) > 0) FROM e"
        );
        assert_eq!(
            rewritten("SELECT NOT EXISTS (SELECT x FROM r LIMIT 1)"),
            "SELECT NOT ((SELECT count(*) FROM (SELECT x FROM r LIMIT 1) AS __sub) > 0)"
        );
        // In WHERE, DataFusion plans it as a semi join.
        let filter = "SELECT 1 FROM e WHERE EXISTS (SELECT 1 FROM r WHERE r.b = e.id)";
        assert_eq!(rewritten(filter), filter);
    }

    #[test]
    fn in_keeps_three_values() {
        assert_eq!(
            rewritten("SELECT 1 IN (SELECT r.x FROM r WHERE r.k > 0)"),
            "SELECT CASE \
             WHEN ((SELECT count(*) FROM r WHERE (r.k > 0) AND (r.x) = (1)) > 0) THEN true \
             WHEN (1) IS NULL AND ((SELECT count(*) FROM r WHERE r.k > 0) > 0) THEN NULL \
             WHEN ((SELECT count(*) FROM r WHERE (r.k > 0) AND (r.x) IS NULL) > 0) THEN NULL \
             ELSE false END"
        );
        // `x` could be the subquery's column: left alone.
        let ambiguous = "SELECT k IN (SELECT r.x FROM r) FROM e";
        assert_eq!(rewritten(ambiguous), ambiguous);
    }
}
