//! `CREATE TABLE … AS query` (see `sql/create_as.rs` for the columns, key and partitions):
//! the table is created and filled in one transaction, through the transaction block's
//! pending DDL (`block_ddl.rs`) — inside a block with the block, outside one in a block of its
//! own — so a query that fails leaves no table behind and other sessions see the table only
//! with its rows.

use std::sync::Arc;

use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::Statement;

use super::{Outcome, Output, Session, TxState};
use crate::query::quote_ident;
use crate::server::error::PgError;
use crate::sql::Command;
use crate::sql::create_table::CreateTableSpec;

impl Session {
    pub(super) async fn create_table_as(
        &mut self,
        mut spec: CreateTableSpec,
    ) -> Result<Outcome, PgError> {
        let query = spec.query.take().expect("CREATE TABLE ... AS has a query");
        self.refresh_catalog_now().await?;
        let db = self.creation_database(&mut spec).await?;
        if spec.if_not_exists && self.table_exists_here(&db, &spec.name).await? {
            let mut outcome = Outcome::done("CREATE TABLE AS");
            outcome.notices.push((
                "42P07",
                format!("relation \"{}\" already exists, skipping", spec.name),
            ));
            return Ok(outcome);
        }
        // The query's columns as a client would be told them (PostgreSQL's names and types).
        let select = DFStatement::Statement(Box::new(Statement::Query(query.clone())));
        let planned = self.planned_query(&select, None).await?;
        let columns = match &planned.columns {
            Some(c) => Arc::clone(c),
            None => Arc::new(planned.logical.schema().as_arrow().clone()),
        };
        spec.with_query_columns(&columns)?;
        let insert = insert_statement(&db, &spec.name, *query)?;
        let implicit = self.tx == TxState::Idle;
        if implicit {
            self.tx = TxState::InBlock;
            self.block_isolation = Some("read committed".to_owned());
        }
        let result = async {
            self.create_table(spec).await?;
            let dml = self.plan_dml_refreshed(&insert, false).await?;
            self.run_dml(&dml, None).await
        }
        .await;
        let rows = match result {
            Ok(outcome) => match outcome.output {
                Output::Count { rows, .. } => rows,
                _ => 0,
            },
            Err(e) => {
                if implicit {
                    self.rollback_block().await;
                    self.end_block();
                }
                return Err(e);
            }
        };
        if implicit {
            let committed = self.commit_block().await;
            self.end_block();
            committed?;
        }
        Ok(Outcome::from(Output::Count {
            command: "SELECT",
            rows,
        }))
    }
}

/// `INSERT INTO db.name <query>`.
fn insert_statement(
    db: &str,
    name: &str,
    query: datafusion::sql::sqlparser::ast::Query,
) -> Result<DFStatement, PgError> {
    let text = format!(
        "INSERT INTO {}.{} SELECT 1",
        quote_ident(db),
        quote_ident(name)
    );
    let Some(Command::Plan(mut statement)) = crate::sql::parse(&text)?.into_iter().next() else {
        unreachable!("an INSERT parses as a plan");
    };
    if let DFStatement::Statement(s) = &mut statement
        && let Statement::Insert(insert) = s.as_mut()
    {
        insert.source = Some(Box::new(query));
    }
    Ok(statement)
}
