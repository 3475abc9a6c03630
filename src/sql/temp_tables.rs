//! Temporary tables first: an unqualified table name that is one of the session's temporary
//! tables means that table.
//!
//! PostgreSQL searches the session's temporary schema (`pg_temp`) before every schema of
//! `search_path`, so a temporary table hides a permanent table of the same name. DataFusion
//! resolves an unqualified name in its one default schema only; before a statement is planned,
//! each unqualified relation naming a temporary table (and no CTE of the statement) is given
//! the session's temporary schema. Names already qualified are left alone (`public.t` is the
//! permanent table, `pg_temp.t` the temporary one, as in PostgreSQL). Paimon's system tables
//! of a temporary table (`"t$snapshots"`) follow it.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{Ident, ObjectName, ObjectNamePart, VisitMut, VisitorMut};

use super::views::{cte_names, relation_name};

/// Gives every unqualified relation of `statement` that names one of `temporary` (folded
/// names) the schema `schema`.
pub fn qualify(statement: &mut DFStatement, schema: &str, temporary: &HashSet<String>) {
    if temporary.is_empty() {
        return;
    }
    let statement = match statement {
        DFStatement::Statement(s) => s.as_mut(),
        DFStatement::Explain(explain) => return qualify(&mut explain.statement, schema, temporary),
        _ => return,
    };
    let ctes = cte_names(statement);
    let mut qualifier = Qualifier {
        schema,
        temporary,
        ctes,
    };
    let _ = VisitMut::visit(statement, &mut qualifier);
}

/// Whether `statement` reads one of `temporary` (unqualified, or in schema `schema` or
/// `pg_temp`): what a view must not (it would outlive them).
pub fn references(statement: &DFStatement, schema: &str, temporary: &HashSet<String>) -> bool {
    let statement = match statement {
        DFStatement::Statement(s) => s.as_ref(),
        _ => return false,
    };
    let ctes = cte_names(statement);
    let found = datafusion::sql::sqlparser::ast::visit_relations(statement, |relation| {
        let hit = match relation_name(relation) {
            Some((None, name)) => temporary.contains(base(&name)) && !ctes.contains(&name),
            Some((Some(s), _)) => s == schema || s == "pg_temp",
            None => false,
        };
        if hit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    found.is_break()
}

/// The table a relation name reads: `t` of `t$snapshots` (Paimon's system tables) too.
fn base(name: &str) -> &str {
    name.split('$').next().unwrap_or(name)
}

struct Qualifier<'a> {
    schema: &'a str,
    temporary: &'a HashSet<String>,
    ctes: HashSet<String>,
}

impl VisitorMut for Qualifier<'_> {
    type Break = ();

    fn pre_visit_relation(&mut self, relation: &mut ObjectName) -> ControlFlow<()> {
        if let Some((None, name)) = relation_name(relation)
            && self.temporary.contains(base(&name))
            && !self.ctes.contains(&name)
        {
            relation
                .0
                .insert(0, ObjectNamePart::Identifier(Ident::new(self.schema)));
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::{Command, parse};

    fn qualified(sql: &str) -> String {
        let Command::Plan(mut statement) = parse(sql).unwrap().remove(0) else {
            panic!("not a plan: {sql}");
        };
        let temporary = HashSet::from(["tmp".to_owned(), "Mixed".to_owned()]);
        qualify(&mut statement, "pg_temp_7", &temporary);
        statement.to_string()
    }

    #[test]
    fn unqualified_temporary_names_get_the_temporary_schema() {
        assert_eq!(
            qualified("SELECT * FROM tmp JOIN other ON true"),
            "SELECT * FROM pg_temp_7.tmp JOIN other ON true"
        );
        assert_eq!(
            qualified("INSERT INTO tmp VALUES (1)"),
            "INSERT INTO pg_temp_7.tmp VALUES (1)"
        );
        assert_eq!(
            qualified("DELETE FROM TMP WHERE a IN (SELECT a FROM tmp)"),
            "DELETE FROM pg_temp_7.TMP WHERE a IN (SELECT a FROM pg_temp_7.tmp)"
        );
        assert_eq!(
            qualified("SELECT * FROM \"tmp$snapshots\""),
            "SELECT * FROM pg_temp_7.\"tmp$snapshots\""
        );
        assert_eq!(
            qualified("SELECT * FROM \"Mixed\", mixed"),
            "SELECT * FROM pg_temp_7.\"Mixed\", mixed"
        );
    }

    #[test]
    fn references_find_temporary_tables_by_either_name() {
        let temporary = HashSet::from(["tmp".to_owned()]);
        let reads = |sql: &str| {
            let Command::Plan(statement) = parse(sql).unwrap().remove(0) else {
                panic!("not a plan: {sql}");
            };
            references(&statement, "pg_temp_7", &temporary)
        };
        assert!(reads("SELECT * FROM x JOIN tmp ON true"));
        assert!(reads("SELECT * FROM pg_temp.other"));
        assert!(reads("SELECT (SELECT 1 FROM pg_temp_7.t)"));
        assert!(!reads("SELECT * FROM public.tmp"));
        assert!(!reads("WITH tmp AS (SELECT 1) SELECT * FROM tmp"));
    }

    #[test]
    fn qualified_names_and_ctes_are_left_alone() {
        assert_eq!(
            qualified("SELECT * FROM public.tmp"),
            "SELECT * FROM public.tmp"
        );
        assert_eq!(
            qualified("WITH tmp AS (SELECT 1 AS a) SELECT * FROM tmp"),
            "WITH tmp AS (SELECT 1 AS a) SELECT * FROM tmp"
        );
    }
}
