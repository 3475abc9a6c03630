//! `CALL sys.<procedure>(...)`: Paimon's maintenance procedures, run by the session at once
//! (inside a transaction block too, with a WARNING: they are not undone by ROLLBACK).
//!
//! Names and arguments follow Paimon's Spark procedures: `create_tag(table, tag
//! [, snapshot])`, `delete_tag(table, tag)`. The table is `'name'` or `'schema.name'`,
//! resolved by search_path like any table reference.

use crate::sql::call::{CallSpec, CallValue};
use crate::storage::Table;

use super::super::error::PgError;
use super::{Outcome, Session};

impl Session {
    pub(super) async fn call(&mut self, spec: &CallSpec) -> Result<Outcome, PgError> {
        let args = Args(spec);
        match spec.procedure.as_str() {
            "create_tag" => {
                args.expect(&["table", "tag", "snapshot"])?;
                let table = self.procedure_table(&args.text(0, "table")?).await?;
                let tag = args.text(1, "tag")?;
                let snapshot = match args.integer(2, "snapshot")? {
                    Some(id) => table.snapshots().get(id).await?.ok_or_else(|| {
                        PgError::new(
                            "42704",
                            format!(
                                "snapshot {id} of table {} does not exist",
                                table.qualified_name()
                            ),
                        )
                    })?,
                    None => table.snapshots().latest().await?.ok_or_else(|| {
                        PgError::new(
                            "55000",
                            format!(
                                "table {} has no snapshot to tag yet",
                                table.qualified_name()
                            ),
                        )
                    })?,
                };
                let now = self.engine.catalog().warehouse().clock().now_millis();
                table.tags().create(&tag, &snapshot, now).await?;
            }
            "delete_tag" => {
                args.expect(&["table", "tag"])?;
                let table = self.procedure_table(&args.text(0, "table")?).await?;
                let tag = args.text(1, "tag")?;
                if !table.tags().delete(&tag).await? {
                    return Err(PgError::new(
                        "42704",
                        format!(
                            "tag '{tag}' of table {} does not exist",
                            table.qualified_name()
                        ),
                    ));
                }
            }
            other => {
                return Err(
                    PgError::new("42883", format!("procedure sys.{other} does not exist"))
                        .with_hint("tarn's procedures: sys.create_tag, sys.delete_tag."),
                );
            }
        }
        Ok(Outcome {
            warnings: self.ddl_warning("CALL"),
            ..Outcome::done("CALL")
        })
    }

    /// The table a procedure names (`'t'` or `'schema.t'`).
    async fn procedure_table(&mut self, name: &str) -> Result<Table, PgError> {
        self.refresh_catalog().await?;
        let (schema, table) = match name.split_once('.') {
            Some((s, t)) => (Some(s), t),
            None => (None, name),
        };
        let Some(db) = self.find_table(schema, table).await? else {
            return Err(PgError::new(
                "42P01",
                format!("relation \"{name}\" does not exist"),
            ));
        };
        Ok(self
            .engine
            .catalog()
            .warehouse()
            .open_table(&db, table)
            .await?)
    }
}

/// A CALL's arguments, by position or by name.
struct Args<'a>(&'a CallSpec);

impl Args<'_> {
    /// Fails on a name the procedure does not take, or too many arguments.
    fn expect(&self, names: &[&str]) -> Result<(), PgError> {
        if self.0.args.len() > names.len() {
            return Err(self.invalid(format!("takes at most {} arguments", names.len())));
        }
        for a in &self.0.args {
            if let Some(n) = &a.name
                && !names.contains(&n.as_str())
            {
                return Err(self.invalid(format!(
                    "has no argument {n} (its arguments: {})",
                    names.join(", ")
                )));
            }
        }
        Ok(())
    }

    fn get(&self, position: usize, name: &str) -> Option<&CallValue> {
        self.0
            .args
            .iter()
            .find(|a| a.name.as_deref() == Some(name))
            .or_else(|| self.0.args.get(position).filter(|a| a.name.is_none()))
            .map(|a| &a.value)
    }

    fn text(&self, position: usize, name: &str) -> Result<String, PgError> {
        match self.get(position, name) {
            Some(CallValue::Text(s)) => Ok(s.clone()),
            Some(_) => Err(self.invalid(format!("argument {name} must be a string"))),
            None => Err(self.invalid(format!("needs argument {name}"))),
        }
    }

    fn integer(&self, position: usize, name: &str) -> Result<Option<i64>, PgError> {
        match self.get(position, name) {
            Some(CallValue::Integer(i)) => Ok(Some(*i)),
            Some(CallValue::Null) | None => Ok(None),
            Some(CallValue::Text(t)) => t
                .parse()
                .map(Some)
                .map_err(|_| self.invalid(format!("argument {name} must be an integer"))),
        }
    }

    fn invalid(&self, what: String) -> PgError {
        PgError::new(
            "42883",
            format!("procedure sys.{} {what}", self.0.procedure),
        )
    }
}
