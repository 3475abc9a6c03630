//! PostgreSQL's advisory locks: `pg_advisory_lock`, `pg_try_advisory_lock`,
//! `pg_advisory_xact_lock`, their `_shared` variants, `pg_advisory_unlock[_shared]` and
//! `pg_advisory_unlock_all`.
//!
//! Migration tools (Alembic, Flyway, Liquibase, golang-migrate) take one to keep other
//! sessions out while they run, and pools send `pg_advisory_unlock_all()` on reset. The lock
//! table is server-wide ([`AdvisoryLocks`], held by the engine); holders are sessions (by
//! backend pid). Session-level locks are counted (taken twice, released twice) and released
//! when the session ends; transaction-level ones when its transaction ends. A blocked
//! `pg_advisory_lock` waits inside the statement, and a cancel request, `lock_timeout` or
//! `statement_timeout` ends the wait with PostgreSQL's error.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;

use super::SessionVars;

/// A lock's key: one bigint, or two ints (a separate key space, as in PostgreSQL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LockKey {
    pub key: i64,
    pub pair: bool,
}

/// What one session holds on one key.
#[derive(Debug, Default, Clone, Copy)]
struct Holds {
    exclusive_session: u32,
    exclusive_xact: u32,
    shared_session: u32,
    shared_xact: u32,
}

impl Holds {
    fn exclusive(&self) -> bool {
        self.exclusive_session + self.exclusive_xact > 0
    }
    fn any(&self) -> bool {
        self.exclusive() || self.shared_session + self.shared_xact > 0
    }
}

/// Why a lock wait ended without the lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitError {
    Canceled,
    LockTimeout,
    StatementTimeout,
}

/// The server's advisory lock table.
#[derive(Debug, Default)]
pub struct AdvisoryLocks {
    table: Mutex<HashMap<LockKey, HashMap<i32, Holds>>>,
    released: Condvar,
}

impl AdvisoryLocks {
    fn table(&self) -> MutexGuard<'_, HashMap<LockKey, HashMap<i32, Holds>>> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the lock if no other session's hold conflicts; false otherwise.
    pub fn try_lock(&self, pid: i32, key: LockKey, shared: bool, xact: bool) -> bool {
        Self::try_in(&mut self.table(), pid, key, shared, xact)
    }

    fn try_in(
        table: &mut HashMap<LockKey, HashMap<i32, Holds>>,
        pid: i32,
        key: LockKey,
        shared: bool,
        xact: bool,
    ) -> bool {
        let holders = table.entry(key).or_default();
        let conflict = holders
            .iter()
            .any(|(p, h)| *p != pid && if shared { h.exclusive() } else { h.any() });
        if conflict {
            if holders.is_empty() {
                table.remove(&key);
            }
            return false;
        }
        let h = holders.entry(pid).or_default();
        match (shared, xact) {
            (false, false) => h.exclusive_session += 1,
            (false, true) => h.exclusive_xact += 1,
            (true, false) => h.shared_session += 1,
            (true, true) => h.shared_xact += 1,
        }
        true
    }

    /// Waits for the lock. `interrupted` is asked between waits (cancel request); `limit`
    /// bounds the wait and says which error its end is (lock or statement timeout).
    pub fn lock(
        &self,
        pid: i32,
        key: LockKey,
        shared: bool,
        xact: bool,
        interrupted: &dyn Fn() -> bool,
        limit: Option<(Duration, WaitError)>,
    ) -> Result<(), WaitError> {
        let start = Instant::now();
        let mut table = self.table();
        loop {
            if Self::try_in(&mut table, pid, key, shared, xact) {
                return Ok(());
            }
            if interrupted() {
                return Err(WaitError::Canceled);
            }
            if let Some((limit, error)) = &limit
                && start.elapsed() >= *limit
            {
                return Err(error.clone());
            }
            // Woken by every release; the timeout lets a cancel request through.
            table = self
                .released
                .wait_timeout(table, Duration::from_millis(20))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Releases one session-level hold; false if the session held none of that mode.
    pub fn unlock(&self, pid: i32, key: LockKey, shared: bool) -> bool {
        let mut table = self.table();
        let Some(holders) = table.get_mut(&key) else {
            return false;
        };
        let Some(h) = holders.get_mut(&pid) else {
            return false;
        };
        let count = if shared {
            &mut h.shared_session
        } else {
            &mut h.exclusive_session
        };
        if *count == 0 {
            return false;
        }
        *count -= 1;
        Self::tidy(&mut table, key, pid);
        drop(table);
        self.released.notify_all();
        true
    }

    fn tidy(table: &mut HashMap<LockKey, HashMap<i32, Holds>>, key: LockKey, pid: i32) {
        if let Some(holders) = table.get_mut(&key) {
            if holders.get(&pid).is_some_and(|h| !h.any()) {
                holders.remove(&pid);
            }
            if holders.is_empty() {
                table.remove(&key);
            }
        }
    }

    fn release(&self, pid: i32, session: bool, xact: bool) {
        let mut table = self.table();
        let mut changed = false;
        table.retain(|_, holders| {
            if let Some(h) = holders.get_mut(&pid) {
                if session && (h.exclusive_session + h.shared_session) > 0 {
                    h.exclusive_session = 0;
                    h.shared_session = 0;
                    changed = true;
                }
                if xact && (h.exclusive_xact + h.shared_xact) > 0 {
                    h.exclusive_xact = 0;
                    h.shared_xact = 0;
                    changed = true;
                }
                if !h.any() {
                    holders.remove(&pid);
                }
            }
            !holders.is_empty()
        });
        drop(table);
        if changed {
            self.released.notify_all();
        }
    }

    /// `pg_advisory_unlock_all()`: the session-level locks.
    pub fn unlock_all(&self, pid: i32) {
        self.release(pid, true, false);
    }

    /// The end of a transaction: its transaction-level locks.
    pub fn release_xact(&self, pid: i32) {
        self.release(pid, false, true);
    }

    /// The end of a session: everything it holds.
    pub fn release_session(&self, pid: i32) {
        self.release(pid, true, true);
    }

    /// Locks held now, as `(key, pair, pid, mode, granted)` rows of `pg_locks` would show them.
    pub fn held(&self) -> Vec<(LockKey, i32, bool)> {
        let table = self.table();
        let mut out = Vec::new();
        for (key, holders) in table.iter() {
            for (pid, h) in holders {
                out.push((*key, *pid, h.exclusive()));
            }
        }
        out
    }
}

/// Which advisory function a UDF is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Lock,
    TryLock,
    Unlock,
    UnlockAll,
}

#[derive(Debug)]
struct AdvisoryFn {
    name: &'static str,
    kind: Kind,
    shared: bool,
    xact: bool,
    signature: Signature,
    locks: Arc<AdvisoryLocks>,
    vars: Arc<dyn SessionVars>,
}

impl PartialEq for AdvisoryFn {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.locks, &other.locks)
    }
}
impl Eq for AdvisoryFn {}
impl std::hash::Hash for AdvisoryFn {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

fn wait_error(e: WaitError) -> DataFusionError {
    let (code, message) = match e {
        WaitError::Canceled => ("57014", "canceling statement due to user request"),
        WaitError::LockTimeout => ("55P03", "canceling statement due to lock timeout"),
        WaitError::StatementTimeout => ("57014", "canceling statement due to statement timeout"),
    };
    DataFusionError::External(Box::new(super::QueryError::Coded {
        code,
        message: message.to_owned(),
    }))
}

impl AdvisoryFn {
    fn key(args: &[ScalarValue]) -> Result<Option<LockKey>> {
        let int = |v: &ScalarValue| -> Result<Option<i64>> {
            Ok(match v.cast_to(&DataType::Int64)? {
                ScalarValue::Int64(v) => v,
                _ => None,
            })
        };
        Ok(match args {
            [k] => int(k)?.map(|key| LockKey { key, pair: false }),
            [a, b] => match (int(a)?, int(b)?) {
                (Some(a), Some(b)) => {
                    let int4 = |v: i64| {
                        i32::try_from(v).map_err(|_| {
                            DataFusionError::External(Box::new(super::QueryError::Coded {
                                code: "22003",
                                message: "integer out of range".to_owned(),
                            }))
                        })
                    };
                    Some(LockKey {
                        key: (i64::from(int4(a)?) << 32) | i64::from(int4(b)? as u32),
                        pair: true,
                    })
                }
                _ => None,
            },
            _ => None,
        })
    }

    fn call(&self, args: &[ScalarValue]) -> Result<ScalarValue> {
        let pid = self.vars.backend_pid();
        if self.kind == Kind::UnlockAll {
            self.locks.unlock_all(pid);
            return Ok(ScalarValue::Null);
        }
        let Some(key) = Self::key(args)? else {
            // Strict functions: NULL in, NULL out.
            return Ok(match self.kind {
                Kind::Lock => ScalarValue::Null,
                _ => ScalarValue::Boolean(None),
            });
        };
        match self.kind {
            Kind::TryLock => Ok(ScalarValue::Boolean(Some(self.locks.try_lock(
                pid,
                key,
                self.shared,
                self.xact,
            )))),
            Kind::Unlock => Ok(ScalarValue::Boolean(Some(self.locks.unlock(
                pid,
                key,
                self.shared,
            )))),
            Kind::Lock => {
                if self.locks.try_lock(pid, key, self.shared, self.xact) {
                    return Ok(ScalarValue::Null);
                }
                // The sooner of lock_timeout and statement_timeout ends the wait.
                let limit = [
                    (self.vars.lock_timeout(), WaitError::LockTimeout),
                    (self.vars.statement_timeout(), WaitError::StatementTimeout),
                ]
                .into_iter()
                .filter_map(|(t, e)| t.map(|t| (t, e)))
                .min_by_key(|(t, _)| *t);
                let wait = || {
                    self.locks.lock(
                        pid,
                        key,
                        self.shared,
                        self.xact,
                        &|| self.vars.interrupted(),
                        limit.clone(),
                    )
                };
                // The wait blocks this thread: on a multi-threaded runtime its other tasks
                // move to another worker first.
                let result = match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor())
                {
                    Ok(tokio::runtime::RuntimeFlavor::MultiThread) => {
                        tokio::task::block_in_place(wait)
                    }
                    _ => wait(),
                };
                result.map_err(wait_error)?;
                Ok(ScalarValue::Null)
            }
            Kind::UnlockAll => unreachable!("handled above"),
        }
    }
}

impl ScalarUDFImpl for AdvisoryFn {
    fn name(&self) -> &str {
        self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::Lock | Kind::UnlockAll => DataType::Null,
            Kind::TryLock | Kind::Unlock => DataType::Boolean,
        })
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.args.iter().find_map(|a| match a {
            ColumnarValue::Array(array) => Some(array.len()),
            ColumnarValue::Scalar(_) => None,
        });
        let row_args = |row: Option<usize>| -> Result<Vec<ScalarValue>> {
            args.args
                .iter()
                .map(|a| match (a, row) {
                    (ColumnarValue::Scalar(s), _) => Ok(s.clone()),
                    (ColumnarValue::Array(array), Some(r)) => ScalarValue::try_from_array(array, r),
                    (ColumnarValue::Array(array), None) => ScalarValue::try_from_array(array, 0),
                })
                .collect()
        };
        match rows {
            None => {
                let value = self.call(&row_args(None)?)?;
                Ok(ColumnarValue::Array(
                    value.to_array_of_size(args.number_rows)?,
                ))
            }
            Some(n) => {
                let values = (0..n)
                    .map(|r| self.call(&row_args(Some(r))?))
                    .collect::<Result<Vec<_>>>()?;
                let return_type = self.return_type(&[])?;
                if values.is_empty() {
                    return Ok(ColumnarValue::Array(
                        datafusion::arrow::array::new_empty_array(&return_type),
                    ));
                }
                Ok(ColumnarValue::Array(ScalarValue::iter_to_array(values)?))
            }
        }
    }
}

/// Registers the advisory lock functions on a session's context.
pub fn register(ctx: &SessionContext, locks: &Arc<AdvisoryLocks>, vars: &Arc<dyn SessionVars>) {
    let keyed = || {
        Signature::one_of(
            vec![
                TypeSignature::Exact(vec![DataType::Int64]),
                // tarn types integer literals int8: two-key calls arrive as (Int64, Int64).
                TypeSignature::Exact(vec![DataType::Int64, DataType::Int64]),
            ],
            Volatility::Volatile,
        )
    };
    let functions: [(&'static str, Kind, bool, bool); 11] = [
        ("pg_advisory_lock", Kind::Lock, false, false),
        ("pg_advisory_lock_shared", Kind::Lock, true, false),
        ("pg_advisory_xact_lock", Kind::Lock, false, true),
        ("pg_advisory_xact_lock_shared", Kind::Lock, true, true),
        ("pg_try_advisory_lock", Kind::TryLock, false, false),
        ("pg_try_advisory_lock_shared", Kind::TryLock, true, false),
        ("pg_try_advisory_xact_lock", Kind::TryLock, false, true),
        (
            "pg_try_advisory_xact_lock_shared",
            Kind::TryLock,
            true,
            true,
        ),
        ("pg_advisory_unlock", Kind::Unlock, false, false),
        ("pg_advisory_unlock_shared", Kind::Unlock, true, false),
        ("pg_advisory_unlock_all", Kind::UnlockAll, false, false),
    ];
    for (name, kind, shared, xact) in functions {
        let signature = if kind == Kind::UnlockAll {
            Signature::nullary(Volatility::Volatile)
        } else {
            keyed()
        };
        ctx.register_udf(ScalarUDF::new_from_impl(AdvisoryFn {
            name,
            kind,
            shared,
            xact,
            signature,
            locks: Arc::clone(locks),
            vars: Arc::clone(vars),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: LockKey = LockKey {
        key: 7,
        pair: false,
    };

    #[test]
    fn exclusive_and_shared_conflicts() {
        let locks = AdvisoryLocks::default();
        assert!(locks.try_lock(1, K, false, false));
        assert!(locks.try_lock(1, K, false, false), "re-entrant");
        assert!(!locks.try_lock(2, K, true, false));
        assert!(locks.unlock(1, K, false));
        assert!(!locks.try_lock(2, K, false, false), "still held once");
        assert!(locks.unlock(1, K, false));
        assert!(!locks.unlock(1, K, false), "not held any more");
        assert!(locks.try_lock(2, K, true, false));
        assert!(locks.try_lock(3, K, true, false), "shared with shared");
        assert!(!locks.try_lock(1, K, false, false));
        let pair = LockKey { key: 7, pair: true };
        assert!(
            locks.try_lock(1, pair, false, false),
            "two-int keys are another space"
        );
    }

    #[test]
    fn release_by_scope() {
        let locks = AdvisoryLocks::default();
        assert!(locks.try_lock(1, K, false, true));
        locks.unlock_all(1);
        assert!(
            !locks.try_lock(2, K, false, false),
            "unlock_all keeps xact locks"
        );
        locks.release_xact(1);
        assert!(locks.try_lock(2, K, false, false));
        locks.release_session(2);
        assert!(locks.held().is_empty());
    }

    #[test]
    fn a_wait_ends_on_release_or_interrupt() {
        let locks = Arc::new(AdvisoryLocks::default());
        assert!(locks.try_lock(1, K, false, false));
        let waiter = {
            let locks = Arc::clone(&locks);
            std::thread::spawn(move || locks.lock(2, K, false, false, &|| false, None))
        };
        std::thread::sleep(Duration::from_millis(50));
        locks.release_session(1);
        assert_eq!(waiter.join().unwrap(), Ok(()));
        assert_eq!(
            locks.lock(1, K, false, false, &|| true, None),
            Err(WaitError::Canceled)
        );
        assert_eq!(
            locks.lock(
                1,
                K,
                false,
                false,
                &|| false,
                Some((Duration::from_millis(30), WaitError::LockTimeout))
            ),
            Err(WaitError::LockTimeout)
        );
    }
}
