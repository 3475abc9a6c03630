//! Which parts of a query's plan may be made once and run many times.
//!
//! The server keeps plans of statements it has seen (prepared statements, and the simple
//! protocol's texts) so that a repeated statement skips parsing and planning. A plan may only be
//! reused if running it later gives what planning it then would have given:
//!
//! - a scan of a Paimon table resolves its snapshot (and the transaction's writes) in
//!   [`scan`](datafusion::datasource::TableProvider::scan), during physical planning: reusable;
//! - a table version (`FOR SYSTEM_TIME AS OF now() - …`, `VERSION AS OF`), a system table
//!   (`t$snapshots`) or a changes table is resolved when the statement is planned: planned again
//!   for every execution ([`Reuse::PerExecution`]);
//! - other providers (`pg_catalog`, `information_schema`, table functions) hold rows computed at
//!   planning: planned once per Parse as before, never cached by text ([`Reuse::AtParse`]).
//!
//! The optimised plan can be reused too, unless the optimizer folded something that must be
//! evaluated per execution: `now()`, `current_date` (their `simplify` reads the statement's start
//! time), every function that is not immutable (`random()`, `current_setting()`), or placeholders
//! whose type the planner did not infer (a bound value would then skip type coercion).

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::{Expr, LogicalPlan, Volatility};

use super::table::PaimonTable;

/// How much of a query's plan may be reused across executions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reuse {
    /// The logical plan may be reused; with `optimized`, the optimised plan too.
    Cached { optimized: bool },
    /// Planned at Parse and run as planned there; never kept by its text.
    AtParse,
    /// Planned again at every execution (table versions resolved at planning).
    PerExecution,
}

/// What of `plan` (as the SQL planner made it) may be reused.
pub fn reuse_of(plan: &LogicalPlan) -> Reuse {
    let mut per_execution = false;
    let mut at_parse = false;
    let mut optimized = true;
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            let provider = source_as_provider(&scan.source).ok();
            match provider
                .as_ref()
                .and_then(|p| p.downcast_ref::<PaimonTable>())
            {
                Some(table) if !table.is_versioned() => {}
                Some(_) => per_execution = true,
                // Versioned, system and changes tables are `name$...`.
                None if scan.table_name.table().contains('$') => per_execution = true,
                None => at_parse = true,
            }
        }
        let _ = node.apply_expressions(|e| {
            e.apply(|e| {
                match e {
                    Expr::ScalarFunction(f)
                        if f.func.signature().volatility != Volatility::Immutable =>
                    {
                        optimized = false
                    }
                    Expr::ScalarVariable(..) => optimized = false,
                    Expr::Placeholder(p) if p.field.is_none() => optimized = false,
                    _ => {}
                }
                Ok(TreeNodeRecursion::Continue)
            })
        });
        Ok(TreeNodeRecursion::Continue)
    });
    if per_execution {
        Reuse::PerExecution
    } else if at_parse {
        Reuse::AtParse
    } else {
        Reuse::Cached { optimized }
    }
}
