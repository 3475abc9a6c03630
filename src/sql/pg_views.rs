//! `pg_catalog` relations tarn adds itself (`pg_stat_progress_copy`, `pg_sequences`), reachable
//! unqualified as in PostgreSQL, where `pg_catalog` is implicitly first on the search path.
//!
//! datafusion-pg-catalog's rewrite qualifies only the relations it knows; this one qualifies
//! tarn's own, on the AST (a table factor named by one identifier, not a table function).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Ident, ObjectName, ObjectNamePart, Statement, TableFactor, VisitMut, VisitorMut,
};

/// Relations tarn adds to `pg_catalog`.
pub const TARN_PG_VIEWS: &[&str] = &["pg_stat_progress_copy", "pg_sequences"];

struct Qualify;

impl VisitorMut for Qualify {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, args, .. } = factor
            && args.is_none()
            && name.0.len() == 1
            && let ObjectNamePart::Identifier(ident) = &name.0[0]
            && ident.quote_style.is_none()
            && TARN_PG_VIEWS
                .iter()
                .any(|v| v.eq_ignore_ascii_case(&ident.value))
        {
            *name = ObjectName(vec![
                ObjectNamePart::Identifier(Ident::new("pg_catalog")),
                ObjectNamePart::Identifier(Ident::new(ident.value.to_ascii_lowercase())),
            ]);
        }
        ControlFlow::Continue(())
    }
}

/// Qualifies unqualified references to tarn's `pg_catalog` relations.
pub fn qualify_pg_views(statement: &mut Statement) {
    let _ = statement.visit(&mut Qualify);
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    #[test]
    fn qualifies_only_tarns_views() {
        let sql = "select * from pg_stat_progress_copy p join t on true \
                   where exists (select 1 from PG_STAT_PROGRESS_COPY)";
        let mut s = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        qualify_pg_views(&mut s);
        let text = s.to_string();
        assert_eq!(
            text.matches("pg_catalog.pg_stat_progress_copy").count(),
            2,
            "{text}"
        );
        assert!(text.contains("JOIN t ON"), "{text}");
    }
}
