//! `CALL sys.<procedure>(...)`: the session reads a CALL's arguments (by position or by name)
//! and resolves its table by search_path like any table reference; `query::procedures` runs it.
//! Procedures run at once, inside a transaction block too, with a WARNING: they are not undone
//! by ROLLBACK.
//!
//! Names and arguments follow Paimon's procedures: `create_tag(table, tag [, snapshot])`,
//! `delete_tag(table, tag)`, `expire_snapshots(table [, retain_max, retain_min, older_than,
//! max_deletes])`, `rollback_to(table, version [, force])`, `restore(table, version)`,
//! `remove_orphan_files(table [, older_than, dry_run])`, `compact(table [, partitions,
//! compact_strategy])` (a full compaction, or with `compact_strategy => 'minor'` what the
//! background compactor would do now; waited for). The table is `'name'` or `'schema.name'`;
//! a version is a snapshot id or a tag name (an integer is an id, a string a tag).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;

use crate::query::procedures::{PROCEDURES, Procedure};
use crate::sql::call::{CallSpec, CallValue};
use crate::storage::{Table, VersionSpec};

use super::super::error::PgError;
use super::{Outcome, Output, Session};

impl Session {
    pub(super) async fn call(&mut self, spec: &CallSpec) -> Result<Outcome, PgError> {
        let (table, procedure) = self.read_call(spec).await?;
        let now = self.engine.catalog().warehouse().clock().now_millis();
        let batch = crate::query::procedures::run(&table, procedure, now).await?;
        let schema = batch.schema();
        let batches = Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&schema),
            futures::stream::iter([Ok(batch)]),
        ));
        Ok(Outcome {
            warnings: self.ddl_warning("CALL"),
            ..Outcome::from(Output::Rows {
                schema,
                batches,
                tag: "CALL",
            })
        })
    }

    /// A CALL's table and its procedure with the arguments read (by position or by name).
    async fn read_call(&mut self, spec: &CallSpec) -> Result<(Table, Procedure), PgError> {
        let args = Args(spec);
        let names: &[&str] = match spec.procedure.as_str() {
            "create_tag" => &["table", "tag", "snapshot"],
            "delete_tag" => &["table", "tag"],
            "expire_snapshots" => &[
                "table",
                "retain_max",
                "retain_min",
                "older_than",
                "max_deletes",
            ],
            "rollback_to" => &["table", "version", "force"],
            "restore" => &["table", "version"],
            "compact" => &["table", "partitions", "compact_strategy"],
            "remove_orphan_files" => &["table", "older_than", "dry_run"],
            "flush" => &["table"],
            "expire_partitions" => &[
                "table",
                "expiration_time",
                "timestamp_formatter",
                "timestamp_pattern",
                "expire_strategy",
                "max_expires",
            ],
            other => {
                return Err(
                    PgError::new("42883", format!("procedure sys.{other} does not exist"))
                        .with_hint(format!("tarn's procedures: {PROCEDURES}.")),
                );
            }
        };
        args.expect(names)?;
        let table = self.procedure_table(&args.text(0, "table")?).await?;
        let procedure = match spec.procedure.as_str() {
            "create_tag" => Procedure::CreateTag {
                tag: args.text(1, "tag")?,
                snapshot: args.integer(2, "snapshot")?,
            },
            "delete_tag" => Procedure::DeleteTag {
                tag: args.text(1, "tag")?,
            },
            "expire_snapshots" => Procedure::ExpireSnapshots {
                retain_max: args.integer(1, "retain_max")?,
                retain_min: args.integer(2, "retain_min")?,
                older_than: self.timestamp_arg(&args, 3, "older_than")?,
                max_deletes: args.integer(4, "max_deletes")?,
            },
            "rollback_to" => Procedure::RollbackTo {
                version: args.version(1, "version")?,
                force: args.boolean(2, "force")?.unwrap_or(false),
            },
            "restore" => Procedure::Restore {
                version: args.version(1, "version")?,
            },
            "compact" => {
                let minor = match args.get(2, "compact_strategy") {
                    Some(CallValue::Text(t)) if t.eq_ignore_ascii_case("minor") => true,
                    Some(CallValue::Text(t)) if t.eq_ignore_ascii_case("full") => false,
                    Some(CallValue::Null) | None => false,
                    Some(_) => {
                        return Err(args.invalid(
                            "argument compact_strategy must be 'full' or 'minor'".into(),
                        ));
                    }
                };
                // Paimon's form: 'k=v,k2=v2;k=w' (partitions separated by ';').
                let partitions: Vec<String> = match args.get(1, "partitions") {
                    Some(CallValue::Text(t)) => t
                        .split(';')
                        .filter(|p| !p.trim().is_empty())
                        .map(str::to_owned)
                        .collect(),
                    Some(CallValue::Null) | None => Vec::new(),
                    Some(_) => {
                        return Err(args.invalid(
                            "argument partitions must be a string like 'dt=2026-12-01'".into(),
                        ));
                    }
                };
                if minor && !partitions.is_empty() {
                    return Err(args.invalid(
                        "compact_strategy 'minor' compacts every bucket: leave out partitions"
                            .into(),
                    ));
                }
                Procedure::Compact { partitions, minor }
            }
            "remove_orphan_files" => Procedure::RemoveOrphanFiles {
                older_than: self.timestamp_arg(&args, 1, "older_than")?,
                dry_run: args.boolean(2, "dry_run")?.unwrap_or(false),
            },
            "flush" => Procedure::Flush,
            "expire_partitions" => {
                use crate::storage::spec::options::partition as keys;
                let mut options = Vec::new();
                for (position, name, key) in [
                    (1, "expiration_time", keys::EXPIRATION_TIME),
                    (2, "timestamp_formatter", keys::TIMESTAMP_FORMATTER),
                    (3, "timestamp_pattern", keys::TIMESTAMP_PATTERN),
                    (4, "expire_strategy", keys::EXPIRATION_STRATEGY),
                ] {
                    match args.get(position, name) {
                        Some(CallValue::Text(t)) => options.push((key.to_owned(), t.clone())),
                        Some(CallValue::Null) | None => {}
                        Some(_) => {
                            return Err(args.invalid(format!("argument {name} must be a string")));
                        }
                    }
                }
                if let Some(n) = args.integer(5, "max_expires")? {
                    options.push((keys::EXPIRATION_MAX_NUM.to_owned(), n.to_string()));
                }
                Procedure::ExpirePartitions { options }
            }
            _ => unreachable!("names were matched above"),
        };
        Ok((table, procedure))
    }

    /// An optional timestamp argument, in milliseconds since the epoch.
    fn timestamp_arg(
        &self,
        args: &Args<'_>,
        position: usize,
        name: &str,
    ) -> Result<Option<i64>, PgError> {
        match args.get(position, name) {
            Some(CallValue::Text(t)) => Ok(Some(self.timestamp_millis(t, name)?)),
            Some(CallValue::Null) | None => Ok(None),
            Some(_) => Err(args.invalid(format!("argument {name} must be a timestamp string"))),
        }
    }

    /// A timestamp argument (`'2026-12-01 10:00:00'`, read in the session's TimeZone).
    fn timestamp_millis(&self, text: &str, what: &str) -> Result<i64, PgError> {
        let value: ArrayRef = Arc::new(StringArray::from(vec![text]));
        let zone = self.settings().time_zone();
        crate::query::time_travel::to_millis(&value, &zone, what)
            .map_err(|e| PgError::new("22007", format!("argument {what}: {e}")))
    }

    /// The table a procedure names (`'t'` or `'schema.t'`).
    async fn procedure_table(&mut self, name: &str) -> Result<Table, PgError> {
        self.refresh_catalog_now().await?;
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
        Ok(self.warehouse_for(&db).open_table(&db, table).await?)
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
            Some(CallValue::Boolean(_)) => {
                Err(self.invalid(format!("argument {name} must be an integer")))
            }
        }
    }

    fn boolean(&self, position: usize, name: &str) -> Result<Option<bool>, PgError> {
        match self.get(position, name) {
            Some(CallValue::Boolean(b)) => Ok(Some(*b)),
            Some(CallValue::Null) | None => Ok(None),
            Some(CallValue::Text(t)) => match t.to_lowercase().as_str() {
                "true" | "t" | "yes" | "on" | "1" => Ok(Some(true)),
                "false" | "f" | "no" | "off" | "0" => Ok(Some(false)),
                _ => Err(self.invalid(format!("argument {name} must be a boolean"))),
            },
            Some(CallValue::Integer(_)) => {
                Err(self.invalid(format!("argument {name} must be a boolean")))
            }
        }
    }

    /// A version: an integer is a snapshot id, a string a tag name.
    fn version(&self, position: usize, name: &str) -> Result<VersionSpec, PgError> {
        match self.get(position, name) {
            Some(CallValue::Integer(i)) => Ok(VersionSpec::SnapshotId(*i)),
            Some(CallValue::Text(t)) => Ok(VersionSpec::Tag(t.clone())),
            _ => Err(self.invalid(format!(
                "needs argument {name}: a snapshot id or a tag name"
            ))),
        }
    }

    fn invalid(&self, what: String) -> PgError {
        PgError::new(
            "42883",
            format!("procedure sys.{} {what}", self.0.procedure),
        )
    }
}
