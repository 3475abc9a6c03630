//! [`RowLocks`]: the server's row locks — primary keys of tables held by transactions, so that
//! two transactions changing one row take turns instead of both running and one failing at
//! COMMIT.
//!
//! PostgreSQL's READ COMMITTED makes a second UPDATE of a row wait for the first transaction's
//! row lock and then work on the row as that transaction left it. tarn's writes are optimistic
//! (first committer wins at COMMIT, `storage::commit`); this table adds the waiting: a
//! transaction's UPDATE, DELETE, MERGE or ON CONFLICT locks each key it changes until its
//! COMMIT or ROLLBACK (an autocommit statement until its own commit), and a writer that finds
//! a key locked by another open transaction waits — asynchronously, no thread blocked — until
//! that transaction ends. The session then re-checks the row (`session/dml.rs`). The
//! commit-time check stays the safety net for writers that take no locks here (other servers,
//! other engines on the warehouse).
//!
//! Waits form a wait-for graph (each waiter waits for one key, whose holder may itself wait);
//! a wait that would close a cycle fails at once with 40P01, as PostgreSQL's deadlock detector
//! does (PostgreSQL finds the cycle after `deadlock_timeout`; here it is found when the cycle
//! forms, in the transaction that closes it). `lock_timeout` bounds each wait (55P03).
//!
//! The lock table is in-process: keys are the table's name and the key's comparable bytes.
//! Several servers sharing a warehouse (issue 19) need the same three calls — [`RowLocks::lock`],
//! [`RowLocks::release`], and the owner ids — served by a shared lock service instead.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

/// Who holds locks: one transaction (unique for the life of the process).
pub type OwnerId = u64;

/// A fresh owner id.
pub fn next_owner() -> OwnerId {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// One locked row: the table's qualified name and the key's comparable bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RowKey {
    table: Arc<str>,
    key: Box<[u8]>,
}

/// Why a lock was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockError {
    /// Waiting would close a cycle of waits (40P01).
    Deadlock { holder: OwnerId },
    /// `lock_timeout` passed (55P03).
    Timeout,
}

impl LockError {
    /// PostgreSQL's SQLSTATE and message.
    pub fn sqlstate(&self) -> (&'static str, String) {
        match self {
            LockError::Deadlock { .. } => ("40P01", "deadlock detected".to_owned()),
            LockError::Timeout => (
                "55P03",
                "canceling statement due to lock timeout".to_owned(),
            ),
        }
    }
}

/// What one owner holds and waits for.
#[derive(Debug)]
struct Owner {
    keys: Vec<RowKey>,
    /// The key this owner waits for, if it waits.
    waiting: Option<RowKey>,
    /// Dropped when the owner releases its locks: that wakes its waiters.
    released: watch::Sender<()>,
}

impl Owner {
    fn new() -> Self {
        Self {
            keys: Vec::new(),
            waiting: None,
            released: watch::channel(()).0,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    held: HashMap<RowKey, OwnerId>,
    owners: HashMap<OwnerId, Owner>,
}

impl State {
    /// Whether `owner` waiting for `key` (held by `holder`) closes a cycle of waits.
    fn closes_cycle(&self, owner: OwnerId, mut holder: OwnerId) -> bool {
        // Every owner waits for at most one key, so the chain is a path; its length is
        // bounded by the number of owners (a cycle without `owner` cannot form, as the wait
        // closing it would have failed, but the bound keeps the walk finite regardless).
        for _ in 0..=self.owners.len() {
            if holder == owner {
                return true;
            }
            let Some(next) = self
                .owners
                .get(&holder)
                .and_then(|o| o.waiting.as_ref())
                .and_then(|k| self.held.get(k))
            else {
                return false;
            };
            holder = *next;
        }
        false
    }

    fn forget_if_idle(&mut self, owner: OwnerId) {
        if self
            .owners
            .get(&owner)
            .is_some_and(|o| o.keys.is_empty() && o.waiting.is_none())
        {
            self.owners.remove(&owner);
        }
    }
}

/// The server's row locks (held by the engine, shared by every session).
#[derive(Debug, Default)]
pub struct RowLocks {
    state: Mutex<State>,
}

/// Clears an owner's wait however the wait ends (a cancelled statement drops it).
struct Waiting<'a> {
    locks: &'a RowLocks,
    owner: OwnerId,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut state = self.locks.state();
        if let Some(o) = state.owners.get_mut(&self.owner) {
            o.waiting = None;
        }
        state.forget_if_idle(self.owner);
    }
}

impl RowLocks {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Locks `keys` of `table` for `owner`, in order, waiting for each key another owner
    /// holds until that owner releases its locks. Keys taken before a failed wait stay held
    /// (as PostgreSQL keeps the row locks a statement took before it failed, until the
    /// transaction ends). `timeout` bounds each wait.
    pub async fn lock(
        &self,
        owner: OwnerId,
        table: &str,
        keys: impl IntoIterator<Item = Vec<u8>>,
        timeout: Option<Duration>,
    ) -> Result<(), LockError> {
        let table: Arc<str> = Arc::from(table);
        let mut keys = keys.into_iter().map(|k| RowKey {
            table: Arc::clone(&table),
            key: k.into_boxed_slice(),
        });
        let mut next = keys.next();
        while next.is_some() {
            // Take every key that is free, up to the first one held by another owner.
            let blocked = {
                let mut state = self.state();
                let mut blocked = None;
                while let Some(key) = next.take() {
                    match state.held.get(&key) {
                        Some(h) if *h == owner => {}
                        Some(h) => {
                            let holder = *h;
                            if state.closes_cycle(owner, holder) {
                                state.forget_if_idle(owner);
                                return Err(LockError::Deadlock { holder });
                            }
                            let released = state
                                .owners
                                .get(&holder)
                                .expect("a holder is a known owner")
                                .released
                                .subscribe();
                            state.owners.entry(owner).or_insert_with(Owner::new).waiting =
                                Some(key.clone());
                            blocked = Some((key, released));
                            break;
                        }
                        None => {
                            state.held.insert(key.clone(), owner);
                            state
                                .owners
                                .entry(owner)
                                .or_insert_with(Owner::new)
                                .keys
                                .push(key);
                        }
                    }
                    next = keys.next();
                }
                blocked
            };
            let Some((key, mut released)) = blocked else {
                return Ok(());
            };
            let waiting = Waiting { locks: self, owner };
            // The holder's sender is dropped when it releases: `changed` then ends.
            let wait = async { while released.changed().await.is_ok() {} };
            let woke = match timeout {
                Some(t) => tokio::time::timeout(t, wait).await.is_ok(),
                None => {
                    wait.await;
                    true
                }
            };
            drop(waiting);
            if !woke {
                return Err(LockError::Timeout);
            }
            // Try the key again: another waiter may have taken it first.
            next = Some(key);
        }
        Ok(())
    }

    /// Releases every lock `owner` holds and wakes whoever waits for one of them.
    pub fn release(&self, owner: OwnerId) {
        let mut state = self.state();
        let Some(o) = state.owners.remove(&owner) else {
            return;
        };
        for key in &o.keys {
            if state.held.get(key) == Some(&owner) {
                state.held.remove(key);
            }
        }
        // Dropping `o` drops its sender, which wakes its waiters.
        drop(state);
        drop(o);
    }

    /// How many rows `owner` holds locked.
    pub fn held_by(&self, owner: OwnerId) -> usize {
        self.state().owners.get(&owner).map_or(0, |o| o.keys.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(n: u8) -> Vec<u8> {
        vec![n]
    }

    const SOON: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn free_keys_are_taken_and_relocking_is_a_no_op() {
        let locks = RowLocks::default();
        let (a, b) = (next_owner(), next_owner());
        locks.lock(a, "t", [k(1), k(2)], None).await.unwrap();
        locks.lock(a, "t", [k(1)], None).await.unwrap();
        assert_eq!(locks.held_by(a), 2);
        // The same key of another table is another row.
        locks.lock(b, "u", [k(1)], None).await.unwrap();
        locks.release(a);
        locks.release(b);
        assert_eq!(locks.held_by(a), 0);
        assert!(locks.state().held.is_empty() && locks.state().owners.is_empty());
    }

    #[tokio::test]
    async fn a_waiter_gets_the_key_when_the_holder_releases() {
        let locks = Arc::new(RowLocks::default());
        let (a, b) = (next_owner(), next_owner());
        locks.lock(a, "t", [k(1)], None).await.unwrap();
        let waiter = {
            let locks = Arc::clone(&locks);
            tokio::spawn(async move { locks.lock(b, "t", [k(2), k(1)], None).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "b waits for a's key");
        // b took the free key before it waited.
        assert_eq!(locks.held_by(b), 1);
        locks.release(a);
        tokio::time::timeout(SOON, waiter)
            .await
            .expect("woken")
            .unwrap()
            .unwrap();
        assert_eq!(locks.held_by(b), 2);
    }

    #[tokio::test]
    async fn two_waiters_take_turns() {
        let locks = Arc::new(RowLocks::default());
        let (a, b, c) = (next_owner(), next_owner(), next_owner());
        locks.lock(a, "t", [k(1)], None).await.unwrap();
        let spawn = |o| {
            let locks = Arc::clone(&locks);
            tokio::spawn(async move { locks.lock(o, "t", [k(1)], None).await })
        };
        let (wb, wc) = (spawn(b), spawn(c));
        tokio::time::sleep(Duration::from_millis(50)).await;
        locks.release(a);
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Exactly one of them has the key; the other waits for it.
        assert_eq!(wb.is_finished() as u8 + wc.is_finished() as u8, 1);
        let (first, second, wait) = if wb.is_finished() {
            (b, c, wc)
        } else {
            (c, b, wb)
        };
        assert_eq!(locks.held_by(first), 1);
        locks.release(first);
        tokio::time::timeout(SOON, wait)
            .await
            .expect("woken")
            .unwrap()
            .unwrap();
        assert_eq!(locks.held_by(second), 1);
    }

    #[tokio::test]
    async fn a_cycle_of_waits_is_a_deadlock() {
        let locks = Arc::new(RowLocks::default());
        let (a, b) = (next_owner(), next_owner());
        locks.lock(a, "t", [k(1)], None).await.unwrap();
        locks.lock(b, "t", [k(2)], None).await.unwrap();
        let a_waits = {
            let locks = Arc::clone(&locks);
            tokio::spawn(async move { locks.lock(a, "t", [k(2)], None).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        // b waiting for key 1 would close a → b → a: b fails at once.
        assert_eq!(
            locks.lock(b, "t", [k(1)], None).await,
            Err(LockError::Deadlock { holder: a })
        );
        assert_eq!(LockError::Deadlock { holder: a }.sqlstate().0, "40P01");
        // b's transaction ends; a gets its key.
        locks.release(b);
        tokio::time::timeout(SOON, a_waits)
            .await
            .expect("woken")
            .unwrap()
            .unwrap();
        assert_eq!(locks.held_by(a), 2);
    }

    #[tokio::test]
    async fn a_longer_cycle_is_found_too() {
        let locks = Arc::new(RowLocks::default());
        let (a, b, c) = (next_owner(), next_owner(), next_owner());
        for (o, key) in [(a, 1), (b, 2), (c, 3)] {
            locks.lock(o, "t", [k(key)], None).await.unwrap();
        }
        let spawn = |o, key| {
            let locks = Arc::clone(&locks);
            tokio::spawn(async move { locks.lock(o, "t", [k(key)], None).await })
        };
        let _a = spawn(a, 2); // a → b
        let _b = spawn(b, 3); // b → c
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(matches!(
            locks.lock(c, "t", [k(1)], None).await,
            Err(LockError::Deadlock { .. })
        ));
        // A wait that closes no cycle is no deadlock: d waits for c behind the chain.
        let d = next_owner();
        let wd = spawn(d, 3);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!wd.is_finished());
    }

    #[tokio::test]
    async fn lock_timeout_ends_the_wait_and_keeps_no_edge() {
        let locks = RowLocks::default();
        let (a, b) = (next_owner(), next_owner());
        locks.lock(a, "t", [k(1)], None).await.unwrap();
        assert_eq!(
            locks
                .lock(b, "t", [k(1)], Some(Duration::from_millis(30)))
                .await,
            Err(LockError::Timeout)
        );
        assert!(!locks.state().owners.contains_key(&b), "b forgotten");
        // a may now wait for b's keys without a false deadlock.
        locks.lock(b, "t", [k(2)], None).await.unwrap();
        let r = locks.lock(a, "t", [k(2)], Some(Duration::from_millis(30)));
        assert_eq!(r.await, Err(LockError::Timeout));
    }

    #[tokio::test]
    async fn a_dropped_wait_leaves_no_edge() {
        let locks = Arc::new(RowLocks::default());
        let (a, b) = (next_owner(), next_owner());
        locks.lock(a, "t", [k(1)], None).await.unwrap();
        locks.lock(b, "t", [k(2)], None).await.unwrap();
        let wait = {
            let locks = Arc::clone(&locks);
            tokio::spawn(async move { locks.lock(b, "t", [k(1)], None).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        wait.abort();
        let _ = wait.await;
        // b no longer waits for a: a waiting for b is no cycle.
        let r = locks.lock(a, "t", [k(2)], Some(Duration::from_millis(30)));
        assert_eq!(r.await, Err(LockError::Timeout));
    }
}
