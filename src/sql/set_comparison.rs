//! `x op ANY/ALL (SELECT … FROM t …)`: the subquery's tables get names of their own.
//!
//! DataFusion plans `x > ALL (subquery)` as EXISTS subqueries filtered by `outer x > inner y`.
//! When the subquery reads the outer query's table under the same name (`FROM emp WHERE salary
//! > ALL (SELECT salary FROM emp …)`), both sides of that filter are `emp.salary`, it compares
//! the inner row with itself, and the answer is wrong. Each table of the subquery's FROM that
//! has no alias is therefore given one (`emp AS __any_emp`), and its qualified columns inside
//! the subquery follow (`emp.salary` → `__any_emp.salary`).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Ident, Query, SetExpr, TableAlias, TableFactor, VisitMut, VisitorMut,
};

/// Prefix of the aliases given.
const PREFIX: &str = "__any_";

/// Aliases the unaliased tables of the ANY/ALL subquery `query`.
pub(super) fn alias_tables(query: &mut Query) {
    let SetExpr::Select(select) = query.body.as_mut() else {
        return;
    };
    let mut renamed: Vec<(Ident, Ident)> = vec![];
    let factors = select.from.iter_mut().flat_map(|t| {
        std::iter::once(&mut t.relation).chain(t.joins.iter_mut().map(|j| &mut j.relation))
    });
    for factor in factors {
        if let TableFactor::Table {
            name,
            alias: alias @ None,
            args: None,
            ..
        } = factor
            && let Some(table) = name.0.last().and_then(|p| p.as_ident())
        {
            let new = Ident::new(format!("{PREFIX}{}", table.value.to_ascii_lowercase()));
            if renamed.iter().any(|(_, n)| n.value == new.value) {
                // The same table twice without aliases: PostgreSQL refuses it anyway.
                return;
            }
            renamed.push((table.clone(), new.clone()));
            *alias = Some(TableAlias {
                explicit: true,
                name: new,
                columns: vec![],
                at: None,
            });
        }
    }
    if !renamed.is_empty() {
        let _ = VisitMut::visit(query, &mut Requalify(&renamed));
    }
}

/// Rewrites `table.column` (and `schema.table.column`) to `alias.column`.
struct Requalify<'a>(&'a [(Ident, Ident)]);

impl VisitorMut for Requalify<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::CompoundIdentifier(parts) = expr
            && parts.len() >= 2
        {
            let table = &parts[parts.len() - 2];
            if let Some((_, alias)) = self.0.iter().find(|(t, _)| {
                if t.quote_style.is_some() || table.quote_style.is_some() {
                    t.value == table.value
                } else {
                    t.value.eq_ignore_ascii_case(&table.value)
                }
            }) {
                let column = parts[parts.len() - 1].clone();
                *parts = vec![alias.clone(), column];
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn aliased(sql: &str) -> String {
        let mut query = Parser::new(&PostgreSqlDialect {})
            .try_with_sql(sql)
            .unwrap()
            .parse_query()
            .unwrap();
        alias_tables(&mut query);
        query.to_string()
    }

    #[test]
    fn unaliased_tables_get_their_own_names() {
        assert_eq!(
            aliased("SELECT salary FROM emp WHERE emp.dept = 2 AND public.emp.x > 1"),
            "SELECT salary FROM emp AS __any_emp WHERE __any_emp.dept = 2 AND __any_emp.x > 1"
        );
        let kept = "SELECT e.salary FROM emp AS e WHERE e.dept = 2";
        assert_eq!(aliased(kept), kept);
    }
}
