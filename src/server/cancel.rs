//! Cancelling running statements: cancel requests (by backend key), statement timeouts and
//! server shutdown all end a statement through its [`CancellationToken`].
//!
//! pgwire's own cancel hook only covers planning; tarn's statements do their work while the
//! result streams, so the token is checked by the result stream too ([`super::stream`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

/// The cancel handle of one connection: the token of its current statement.
#[derive(Debug, Default)]
pub struct CancelSlot {
    current: Mutex<CancellationToken>,
}

impl CancelSlot {
    /// A fresh token for a statement that starts now.
    pub fn start_statement(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *self.current.lock().expect("cancel lock poisoned") = token.clone();
        token
    }

    /// Whether the statement running now was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.current
            .lock()
            .expect("cancel lock poisoned")
            .is_cancelled()
    }

    /// Cancels the statement running now, if any.
    pub fn cancel(&self) {
        self.current.lock().expect("cancel lock poisoned").cancel();
    }
}

/// A backend key: (process id, secret) as given to the client at startup.
type BackendKey = (i32, Vec<u8>);

/// Backend key (pid, secret) -> connection, for cancel requests from other connections.
#[derive(Debug, Default)]
pub struct CancelRegistry {
    slots: Mutex<HashMap<BackendKey, Arc<CancelSlot>>>,
    /// Statements running now, across all connections (shutdown waits for them).
    running: Arc<AtomicUsize>,
}

impl CancelRegistry {
    pub fn register(self: &Arc<Self>, pid: i32, secret: Vec<u8>) -> Registration {
        let slot = Arc::new(CancelSlot::default());
        self.slots
            .lock()
            .expect("cancel lock poisoned")
            .insert((pid, secret.clone()), Arc::clone(&slot));
        Registration {
            registry: Arc::clone(self),
            key: (pid, secret),
            slot,
        }
    }

    /// Cancels the statement of the connection with this backend key; false if none matches.
    pub fn cancel(&self, pid: i32, secret: &[u8]) -> bool {
        let slot = self
            .slots
            .lock()
            .expect("cancel lock poisoned")
            .get(&(pid, secret.to_vec()))
            .cloned();
        slot.map(|s| s.cancel()).is_some()
    }

    /// Cancels the running statement of every connection (shutdown).
    pub fn cancel_all(&self) {
        for slot in self.slots.lock().expect("cancel lock poisoned").values() {
            slot.cancel();
        }
    }

    /// Counts a statement as running until the guard drops.
    pub fn running_guard(&self) -> RunningGuard {
        self.running.fetch_add(1, Ordering::SeqCst);
        RunningGuard(Arc::clone(&self.running))
    }

    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }
}

/// A connection's entry in the registry, removed on drop.
#[derive(Debug)]
pub struct Registration {
    registry: Arc<CancelRegistry>,
    key: BackendKey,
    slot: Arc<CancelSlot>,
}

impl Registration {
    pub fn slot(&self) -> &Arc<CancelSlot> {
        &self.slot
    }

    pub fn registry(&self) -> &Arc<CancelRegistry> {
        &self.registry
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Ok(mut slots) = self.registry.slots.lock() {
            slots.remove(&self.key);
        }
    }
}

/// Marks one statement as running.
#[derive(Debug)]
pub struct RunningGuard(Arc<AtomicUsize>);

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_reaches_only_the_matching_connection() {
        let registry = Arc::new(CancelRegistry::default());
        let a = registry.register(1, vec![1]);
        let b = registry.register(2, vec![2]);
        let ta = a.slot().start_statement();
        let tb = b.slot().start_statement();
        assert!(!registry.cancel(1, &[9]), "wrong secret must not cancel");
        assert!(registry.cancel(1, &[1]));
        assert!(ta.is_cancelled());
        assert!(!tb.is_cancelled());
        // A new statement gets a fresh token.
        assert!(!a.slot().start_statement().is_cancelled());
        drop(a);
        assert!(
            !registry.cancel(1, &[1]),
            "closed connections leave the registry"
        );
    }

    #[test]
    fn running_statements_are_counted() {
        let registry = Arc::new(CancelRegistry::default());
        let g = registry.running_guard();
        assert_eq!(registry.running(), 1);
        drop(g);
        assert_eq!(registry.running(), 0);
    }
}
