//! `FROM t, unnest(t.a) AS x` — an UNNEST relation that reads columns of an earlier FROM item
//! (PostgreSQL's implicit LATERAL; also `CROSS JOIN LATERAL unnest(...)`, and the json
//! set-returning functions, which `json.rs` turns into UNNEST relations).
//!
//! DataFusion 55 plans such a relation as a join with outer references and then fails in
//! physical planning (0A000). It does plan `unnest` in a select list, which repeats the row for
//! each element and drops rows whose arrays are NULL or empty — PostgreSQL's rows for a
//! function in FROM. So the earlier item `t` and the UNNEST become one derived table under
//! `t`'s name: `FROM (SELECT *, unnest(t.a) AS x FROM t) AS t`. References to the UNNEST's
//! alias (`x.x`, `x.*`) are renamed to `t`'s; bare names need nothing. Several arrays stay
//! zipped (select-list unnests of one select are zipped alike), and `WITH ORDINALITY` has
//! already become one more array in `from_functions.rs`.
//!
//! The rewrite applies when the arrays read exactly one earlier item (named by qualified
//! columns, or the only earlier item for bare ones) and moving the UNNEST next to it keeps the
//! rows: the item is not the inner side of an outer join, and no RIGHT or FULL join follows
//! it. A `LEFT JOIN LATERAL unnest(...)`, which keeps rows with no elements, is left alone.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Ident, JoinConstraint, JoinOperator, ObjectNamePart, Query, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, Statement, TableAlias, TableFactor, TableWithJoins,
    Value, Visit, VisitMut, Visitor, VisitorMut, WildcardAdditionalOptions,
};

use super::ast::call;

/// Merges every correlated UNNEST relation of `statement` into the item it reads.
pub fn rewrite(statement: &mut Statement) {
    let _ = statement.visit(&mut LateralUnnest);
}

struct LateralUnnest;

impl VisitorMut for LateralUnnest {
    type Break = ();

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        // Each step removes one UNNEST relation, so this ends.
        while merge_one(query) {}
        ControlFlow::Continue(())
    }
}

/// A FROM item's place: `(item, 0)` is `from[item].relation`, `(item, k)` its `joins[k - 1]`.
type Place = (usize, usize);

fn factor(from: &[TableWithJoins], (item, k): Place) -> &TableFactor {
    if k == 0 {
        &from[item].relation
    } else {
        &from[item].joins[k - 1].relation
    }
}

fn factor_mut(from: &mut [TableWithJoins], (item, k): Place) -> &mut TableFactor {
    if k == 0 {
        &mut from[item].relation
    } else {
        &mut from[item].joins[k - 1].relation
    }
}

/// An identifier as the planner compares it: unquoted ones fold to lower case.
fn key(ident: &Ident) -> String {
    match ident.quote_style {
        None => ident.value.to_lowercase(),
        Some(_) => ident.value.clone(),
    }
}

/// The name a FROM item's columns are qualified with.
fn relation_name(factor: &TableFactor) -> Option<Ident> {
    match factor {
        TableFactor::Table {
            alias: Some(alias), ..
        }
        | TableFactor::Derived {
            alias: Some(alias), ..
        }
        | TableFactor::UNNEST {
            alias: Some(alias), ..
        } => Some(alias.name.clone()),
        TableFactor::Table {
            name, alias: None, ..
        } => name.0.last().and_then(ObjectNamePart::as_ident).cloned(),
        _ => None,
    }
}

/// The columns an UNNEST's arrays read: the qualifiers of `q.column` names, and whether bare
/// names occur; `None` for what this rewrite does not follow (subqueries, longer names).
#[derive(Default)]
struct Reads {
    qualifiers: Vec<String>,
    bare: bool,
    unknown: bool,
}

impl Visitor for Reads {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        match e {
            Expr::Identifier(_) => self.bare = true,
            Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                self.qualifiers.push(key(&parts[0]))
            }
            Expr::CompoundIdentifier(_) => self.unknown = true,
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        self.unknown = true;
        ControlFlow::Break(())
    }
}

/// Joins an UNNEST may be taken out of: the cross and inner ones.
fn inner(op: &JoinOperator) -> bool {
    matches!(
        op,
        JoinOperator::CrossJoin(JoinConstraint::On(_) | JoinConstraint::None)
            | JoinOperator::Join(JoinConstraint::On(_) | JoinConstraint::None)
            | JoinOperator::Inner(JoinConstraint::On(_) | JoinConstraint::None)
    )
}

/// Joins after the item the UNNEST moves next to that keep every row of that item's side.
fn keeps_left(op: &JoinOperator) -> bool {
    matches!(
        op,
        JoinOperator::Join(_)
            | JoinOperator::Inner(_)
            | JoinOperator::CrossJoin(_)
            | JoinOperator::Left(_)
            | JoinOperator::LeftOuter(_)
    )
}

/// The UNNEST relation to merge and the earlier item it reads.
fn find(from: &[TableWithJoins]) -> Option<(Place, Place)> {
    let places: Vec<Place> = from
        .iter()
        .enumerate()
        .flat_map(|(i, t)| (0..=t.joins.len()).map(move |k| (i, k)))
        .collect();
    for (n, &(i, k)) in places.iter().enumerate() {
        let TableFactor::UNNEST {
            alias: Some(alias),
            array_exprs,
            with_offset: false,
            with_ordinality: false,
            ..
        } = factor(from, (i, k))
        else {
            continue;
        };
        if alias.columns.len() != array_exprs.len() {
            continue;
        }
        let placed = if k == 0 {
            i > 0 && from[i].joins.is_empty()
        } else {
            inner(&from[i].joins[k - 1].join_operator)
        };
        if !placed {
            continue;
        }
        let mut reads = Reads::default();
        for e in array_exprs {
            let _ = e.visit(&mut reads);
        }
        if reads.unknown || (reads.qualifiers.is_empty() && !reads.bare) {
            continue;
        }
        // A join sees only the items of its own chain; a comma item all earlier ones.
        let earlier: Vec<Place> = places[..n]
            .iter()
            .copied()
            .filter(|&(ti, _)| k == 0 || ti == i)
            .collect();
        let target = if let Some(q) = reads.qualifiers.first() {
            if reads.qualifiers.iter().any(|other| other != q) {
                continue;
            }
            let named: Vec<Place> = earlier
                .iter()
                .copied()
                .filter(|&p| relation_name(factor(from, p)).is_some_and(|name| &key(&name) == q))
                .collect();
            match named.as_slice() {
                [one] => *one,
                _ => continue,
            }
        } else {
            match earlier.as_slice() {
                [one] => *one,
                _ => continue,
            }
        };
        if relation_name(factor(from, target)).is_none() {
            continue;
        }
        let (ti, tk) = target;
        let joins = &from[ti].joins;
        let entered = tk == 0 || inner(&joins[tk - 1].join_operator);
        let until = if ti == i { k - 1 } else { joins.len() };
        let after = joins[tk..until.max(tk)]
            .iter()
            .all(|j| keeps_left(&j.join_operator));
        if entered && after {
            return Some(((i, k), target));
        }
    }
    None
}

/// Renames `alias.column` to `target.column`, and expands `alias.*` into its columns.
struct Rename<'a> {
    alias: String,
    target: &'a Ident,
    columns: &'a [Ident],
}

impl VisitorMut for Rename<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Expr::CompoundIdentifier(parts) = e
            && parts.len() == 2
            && key(&parts[0]) == self.alias
        {
            parts[0] = self.target.clone();
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let SetExpr::Select(select) = query.body.as_mut() {
            let projection = std::mem::take(&mut select.projection);
            for item in projection {
                match item {
                    SelectItem::QualifiedWildcard(
                        SelectItemQualifiedWildcardKind::ObjectName(name),
                        _,
                    ) if name.0.len() == 1
                        && name.0[0].as_ident().is_some_and(|i| key(i) == self.alias) =>
                    {
                        select.projection.extend(self.columns.iter().map(|c| {
                            SelectItem::ExprWithAlias {
                                expr: Expr::CompoundIdentifier(vec![
                                    self.target.clone(),
                                    c.clone(),
                                ]),
                                alias: c.clone(),
                            }
                        }));
                    }
                    other => select.projection.push(other),
                }
            }
        }
        ControlFlow::Continue(())
    }
}

fn and(left: Option<Expr>, right: Expr) -> Expr {
    match left {
        Some(left) => Expr::BinaryOp {
            left: Box::new(Expr::Nested(Box::new(left))),
            op: BinaryOperator::And,
            right: Box::new(Expr::Nested(Box::new(right))),
        },
        None => right,
    }
}

/// Merges one correlated UNNEST of `query`'s select into the item it reads; false if none.
fn merge_one(query: &mut Query) -> bool {
    let SetExpr::Select(select) = query.body.as_mut() else {
        return false;
    };
    let Some(((i, k), target)) = find(&select.from) else {
        return false;
    };
    let relation = if k == 0 {
        select.from.remove(i).relation
    } else {
        let join = select.from[i].joins.remove(k - 1);
        if let JoinOperator::Join(JoinConstraint::On(on))
        | JoinOperator::Inner(JoinConstraint::On(on))
        | JoinOperator::CrossJoin(JoinConstraint::On(on)) = join.join_operator
            && !matches!(&on, Expr::Value(v) if v.value == Value::Boolean(true))
        {
            select.selection = Some(and(select.selection.take(), on));
        }
        join.relation
    };
    let TableFactor::UNNEST {
        alias: Some(alias),
        array_exprs,
        ..
    } = relation
    else {
        unreachable!("find picks UNNEST relations with an alias");
    };
    let slot = factor_mut(&mut select.from, target);
    let name = relation_name(slot).expect("find picks named items");
    let read = std::mem::replace(
        slot,
        TableFactor::Table {
            name: datafusion::sql::sqlparser::ast::ObjectName(vec![]),
            alias: None,
            args: None,
            with_hints: vec![],
            version: None,
            with_ordinality: false,
            partitions: vec![],
            json_path: None,
            sample: None,
            index_hints: vec![],
        },
    );
    let columns: Vec<Ident> = alias.columns.iter().map(|c| c.name.clone()).collect();
    let mut projection = vec![SelectItem::Wildcard(WildcardAdditionalOptions::default())];
    projection.extend(array_exprs.into_iter().zip(&columns).map(|(e, c)| {
        SelectItem::ExprWithAlias {
            expr: call("unnest", vec![e]),
            alias: c.clone(),
        }
    }));
    *slot = TableFactor::Derived {
        lateral: false,
        subquery: Box::new(super::ast::select(
            projection,
            vec![TableWithJoins {
                relation: read,
                joins: vec![],
            }],
        )),
        alias: Some(TableAlias {
            explicit: true,
            name: name.clone(),
            columns: vec![],
            at: None,
        }),
        sample: None,
    };
    let _ = query.visit(&mut Rename {
        alias: key(&alias.name),
        target: &name,
        columns: &columns,
    });
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::sql::ast::rewritten(sql, |s| {
            super::super::from_functions::normalize(s);
            super::super::from_functions::rewrite(s);
            rewrite(s);
        })
    }

    #[test]
    fn an_unnest_of_an_earlier_item_joins_its_rows() {
        assert_eq!(
            rewritten("select tag, count(*) from posts, unnest(tags) as tag group by tag"),
            "SELECT tag, count(*) FROM (SELECT *, unnest(tags) AS tag FROM posts) AS posts \
             GROUP BY tag"
        );
        assert_eq!(
            rewritten(
                "select p.id, s.s from posts p cross join lateral unnest(p.scores) as s \
                 order by p.id, s"
            ),
            "SELECT p.id, p.s FROM (SELECT *, unnest(p.scores) AS s FROM posts p) AS p \
             ORDER BY p.id, s"
        );
        assert_eq!(
            rewritten("select u.* from a, b join c on b.k = c.k, unnest(b.x, b.y) as u(v, w)"),
            "SELECT b.v AS v, b.w AS w FROM a, (SELECT *, unnest(b.x) AS v, unnest(b.y) AS w \
             FROM b) AS b JOIN c ON b.k = c.k"
        );
    }

    #[test]
    fn unsafe_or_unknown_reads_are_left_alone() {
        // Rows without elements are kept by a LEFT JOIN.
        let left = "SELECT * FROM t LEFT JOIN UNNEST(t.a) AS x (x) ON true";
        assert_eq!(rewritten(left), left);
        // A bare name with two earlier items: which one is unknown here.
        let bare = "SELECT * FROM a, b, UNNEST(x) AS x (x)";
        assert_eq!(rewritten(bare), bare);
        // The inner side of an outer join.
        let outer = "SELECT * FROM a LEFT JOIN b ON a.k = b.k CROSS JOIN UNNEST(b.x) AS x (x)";
        assert_eq!(rewritten(outer), outer);
        let constant = "SELECT * FROM t, UNNEST(ARRAY[1, 2]) AS x (x)";
        assert_eq!(rewritten(constant), constant);
    }
}
