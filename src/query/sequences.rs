//! PostgreSQL's sequence functions: `nextval`, `currval`, `setval` and `lastval`, over the
//! warehouse's sequences (`storage::sequences`).
//!
//! The store hands out values from this server's cached block, so most calls touch no file;
//! when a block runs out the call reserves the next one with one conditional write. The
//! functions are volatile session functions (`functions::session_fn`: VALUES rows and INSERT
//! … SELECT evaluate them once per row, the optimizer never folds them) that wait for that write on the current
//! thread: `block_in_place` hands the worker's other tasks to the runtime meanwhile, as a
//! waiting `pg_advisory_lock` does.
//!
//! `currval` and `lastval` are per session, as in PostgreSQL: what this session's `nextval`
//! (or `setval`) last gave, kept here beside the session's functions.
//!
//! Names: a sequence is named by text (`nextval('orders_id_seq')`, `'public."Odd"'`): unquoted
//! parts fold to lower case, an unqualified name is looked up along the search path. The
//! `'…'::regclass` PostgreSQL writes in defaults is unwrapped to that text by the SQL layer
//! (`sql::regcast::unwrap_sequence_names`): tarn's sequences have no rows of their own in the
//! OID space the cast would look up.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::{Signature, TypeSignature, Volatility};
use datafusion::prelude::SessionContext;

use super::SessionVars;
use super::pg_catalog::split_qualified;
use crate::storage::sequences::{SequenceError, SequenceStore};

/// What one session's sequence functions remember.
#[derive(Debug, Default)]
pub struct SessionSequences {
    /// `currval`: per sequence (`(schema, name)`), the last value this session got.
    current: HashMap<(String, String), i64>,
    /// `lastval`: the sequence this session's last `nextval` used.
    last: Option<(String, String)>,
    /// Resolved names (the text as given → `(schema, name)`).
    names: HashMap<String, (String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Next,
    Current,
    Set,
    Last,
}

/// What a session's sequence functions share.
#[derive(Debug)]
struct SequenceFns {
    store: SequenceStore,
    vars: Arc<dyn SessionVars>,
    state: Mutex<SessionSequences>,
}

/// Registers the functions on a session's context.
pub fn register(ctx: &SessionContext, store: &SequenceStore, vars: &Arc<dyn SessionVars>) {
    let volatile = Volatility::Volatile;
    let functions = [
        (
            "nextval",
            Kind::Next,
            Signature::one_of(vec![TypeSignature::String(1)], volatile),
        ),
        (
            "currval",
            Kind::Current,
            Signature::one_of(vec![TypeSignature::String(1)], volatile),
        ),
        (
            "setval",
            Kind::Set,
            Signature::one_of(vec![TypeSignature::Any(2), TypeSignature::Any(3)], volatile),
        ),
        ("lastval", Kind::Last, Signature::nullary(volatile)),
    ];
    let fns = Arc::new(SequenceFns {
        store: store.clone(),
        vars: Arc::clone(vars),
        state: Mutex::new(SessionSequences::default()),
    });
    for (name, kind, signature) in functions {
        let fns = Arc::clone(&fns);
        // Volatile: `session_fn` calls it once per row (nextval numbers every row).
        super::functions::register(ctx, name, signature, DataType::Int64, move |args| {
            fns.call(kind, args).map(ScalarValue::Int64)
        });
    }
}

fn coded(code: &'static str, message: String) -> DataFusionError {
    DataFusionError::External(Box::new(super::QueryError::Coded { code, message }))
}

fn sequence_error(e: SequenceError) -> DataFusionError {
    match e {
        SequenceError::Storage(e) => DataFusionError::External(Box::new(e)),
        other => coded(other.sqlstate(), other.to_string()),
    }
}

/// Runs `future` to completion from a synchronous function on a runtime worker.
pub(crate) fn wait<T>(future: impl std::future::Future<Output = T>) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| h.block_on(future))
        }
        _ => futures::executor::block_on(future),
    }
}

impl SequenceFns {
    /// The sequence `text` names: `(schema, name)`.
    fn resolve(&self, text: &str) -> Result<(String, String)> {
        if let Some(found) = self.state.lock().expect("sequence state").names.get(text) {
            return Ok(found.clone());
        }
        let parts = split_qualified(text);
        let missing = || coded("42P01", format!("relation \"{text}\" does not exist"));
        let found = match parts.as_slice() {
            [schema, name] | [_, schema, name] => {
                wait(self.store.get(schema, name))
                    .map_err(sequence_error)?
                    .ok_or_else(missing)?;
                (schema.clone(), name.clone())
            }
            [name] => {
                let mut found = None;
                for schema in self.vars.effective_search_path() {
                    if wait(self.store.get(&schema, name))
                        .map_err(sequence_error)?
                        .is_some()
                    {
                        found = Some((schema, name.clone()));
                        break;
                    }
                }
                found.ok_or_else(missing)?
            }
            _ => return Err(missing()),
        };
        self.state
            .lock()
            .expect("sequence state")
            .names
            .insert(text.to_owned(), found.clone());
        Ok(found)
    }

    /// `nextval` of `text`, resolving the name again once when the sequence it resolved to
    /// has gone (dropped and perhaps created again elsewhere).
    fn next(&self, text: &str) -> Result<i64> {
        let (schema, name) = self.resolve(text)?;
        let value = match wait(self.store.nextval(&schema, &name)) {
            Err(SequenceError::NotFound(_)) => {
                self.forget(text);
                let (schema, name) = self.resolve(text)?;
                return self.next_of(schema, name);
            }
            other => other.map_err(sequence_error)?,
        };
        self.remember(schema, name, value);
        Ok(value)
    }

    fn next_of(&self, schema: String, name: String) -> Result<i64> {
        let value = wait(self.store.nextval(&schema, &name)).map_err(sequence_error)?;
        self.remember(schema, name, value);
        Ok(value)
    }

    fn forget(&self, text: &str) {
        self.state
            .lock()
            .expect("sequence state")
            .names
            .remove(text);
    }

    fn remember(&self, schema: String, name: String, value: i64) {
        let mut state = self.state.lock().expect("sequence state");
        state.current.insert((schema.clone(), name.clone()), value);
        state.last = Some((schema, name));
    }

    fn current(&self, text: &str) -> Result<i64> {
        let key = self.resolve(text)?;
        let state = self.state.lock().expect("sequence state");
        state.current.get(&key).copied().ok_or_else(|| {
            coded(
                "55000",
                format!(
                    "currval of sequence \"{}\" is not yet defined in this session",
                    key.1
                ),
            )
        })
    }

    fn last(&self) -> Result<i64> {
        let state = self.state.lock().expect("sequence state");
        state
            .last
            .as_ref()
            .and_then(|k| state.current.get(k))
            .copied()
            .ok_or_else(|| {
                coded(
                    "55000",
                    "lastval is not yet defined in this session".to_owned(),
                )
            })
    }

    fn set(&self, text: &str, value: i64, is_called: bool) -> Result<i64> {
        let (schema, name) = self.resolve(text)?;
        let result =
            wait(self.store.setval(&schema, &name, value, is_called)).map_err(sequence_error)?;
        if is_called {
            // PostgreSQL: setval's value is this session's currval when it counts as used.
            self.remember(schema, name, value);
        }
        Ok(result)
    }

    /// One row's call: `None` for a NULL argument (the functions are strict).
    fn call(&self, kind: Kind, args: &[ScalarValue]) -> Result<Option<i64>> {
        let text = |v: &ScalarValue| -> Option<String> {
            match v {
                ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => {
                    s.clone()
                }
                _ => None,
            }
        };
        let int = |v: &ScalarValue| -> Result<Option<i64>> {
            Ok(match v.cast_to(&DataType::Int64)? {
                ScalarValue::Int64(v) => v,
                _ => None,
            })
        };
        match kind {
            Kind::Last => self.last().map(Some),
            Kind::Next => text(&args[0]).map(|t| self.next(&t)).transpose(),
            Kind::Current => text(&args[0]).map(|t| self.current(&t)).transpose(),
            Kind::Set => {
                let is_called = match args.get(2) {
                    Some(ScalarValue::Boolean(b)) => *b,
                    Some(ScalarValue::Null) => None,
                    Some(other) => {
                        return Err(coded(
                            "42883",
                            format!(
                                "function setval(text, bigint, {}) does not exist",
                                other.data_type()
                            ),
                        ));
                    }
                    None => Some(true),
                };
                let (Some(name), Some(value), Some(is_called)) =
                    (text(&args[0]), int(&args[1])?, is_called)
                else {
                    return Ok(None);
                };
                self.set(&name, value, is_called).map(Some)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fold_like_identifiers() {
        assert_eq!(split_qualified("Orders_Id_Seq"), ["orders_id_seq"]);
        assert_eq!(split_qualified("public.s"), ["public", "s"]);
        assert_eq!(
            split_qualified(r#"public."Odd.Name""#),
            ["public", "Odd.Name"]
        );
        assert_eq!(split_qualified(r#""a""b""#), [r#"a"b"#]);
    }
}
