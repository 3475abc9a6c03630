//! Settings changed by `set_config(name, value, is_local)` while a statement runs.
//!
//! The function runs inside DataFusion (possibly after the statement's response began), so it
//! changes the session's [`Settings`] directly and leaves a note here; the session applies the
//! note (DataFusion's time zone, the search path, ParameterStatus messages) at its next
//! statement, and undoes `is_local` changes when the transaction ends, as `SET LOCAL` would.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};

use super::{Session, Settings};
use crate::sql::SetValue;

#[derive(Debug, Default)]
pub(super) struct ConfigChanges {
    /// Settings changed since the session last applied them.
    dirty: AtomicBool,
    /// ParameterStatus messages not yet sent.
    reported: Mutex<Vec<(String, String)>>,
    /// `is_local` changes: the name and the value to return to at the transaction's end
    /// (`None`: a custom setting that did not exist).
    locals: Mutex<Vec<(String, Option<String>)>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `set_config`: validates and sets like `SET`, returns the value as `SHOW` prints it.
pub(super) fn set_config(
    settings: &RwLock<Settings>,
    changes: &ConfigChanges,
    name: &str,
    value: &str,
    is_local: bool,
) -> Result<String, (&'static str, String)> {
    let mut settings = settings.write().unwrap_or_else(|p| p.into_inner());
    let previous = settings.get(name);
    let reported = settings
        .set(name, &SetValue::List(vec![value.to_owned()]))
        .map_err(|e| (e.code, e.message))?;
    if is_local {
        lock(&changes.locals).push((name.to_owned(), previous));
    }
    if let Some(p) = reported {
        lock(&changes.reported).push(p);
    }
    changes.dirty.store(true, Ordering::SeqCst);
    Ok(settings.get(name).unwrap_or_default())
}

impl Session {
    /// Applies what `set_config` changed since this was last called; returns the
    /// ParameterStatus messages to send.
    pub(super) fn absorb_config_changes(&mut self) -> Vec<(String, String)> {
        if !self.vars.config.dirty.swap(false, Ordering::SeqCst) {
            return Vec::new();
        }
        self.apply_settings();
        lock(&self.vars.config.reported).drain(..).collect()
    }

    /// The end of a transaction (a block, or one statement outside blocks): `is_local`
    /// settings return to their values before it.
    pub(super) fn end_local_config(&mut self) {
        let locals: Vec<(String, Option<String>)> =
            lock(&self.vars.config.locals).drain(..).collect();
        if locals.is_empty() {
            return;
        }
        {
            let mut settings = self.vars.settings.write().expect("settings lock");
            for (name, value) in locals.into_iter().rev() {
                let value = match value {
                    Some(v) => SetValue::List(vec![v]),
                    None => SetValue::Default,
                };
                if let Ok(Some(p)) = settings.set(&name, &value) {
                    lock(&self.vars.config.reported).push(p);
                }
            }
        }
        self.vars.config.dirty.store(true, Ordering::SeqCst);
    }
}

impl Session {
    /// Sets a read-only setting the server decides (`max_connections`).
    pub fn set_server_setting(&mut self, name: &str, value: &str) {
        self.vars
            .settings
            .write()
            .expect("settings lock")
            .set_server_value(name, value);
    }

    /// `DISCARD ALL`: what PostgreSQL does as `CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT;
    /// RESET ALL; DEALLOCATE ALL; UNLISTEN *; SELECT pg_advisory_unlock_all(); DISCARD PLANS;
    /// DISCARD TEMP; DISCARD SEQUENCES` (the handler drops the prepared statements).
    pub(super) fn discard_all(&mut self) -> Result<super::Outcome, super::PgError> {
        if self.tx != super::TxState::Idle {
            return Err(super::PgError::new(
                "25001",
                "DISCARD ALL cannot run inside a transaction block",
            ));
        }
        self.close_all_cursors();
        self.plans.clear_plans();
        self.engine.advisory_locks().unlock_all(self.vars.pid);
        let parameters = self
            .vars
            .settings
            .write()
            .expect("settings lock")
            .reset_all();
        self.apply_settings();
        Ok(super::Outcome {
            parameters,
            ..super::Outcome::done("DISCARD ALL")
        })
    }
}
