//! Server layer: the Postgres wire protocol (pgwire), connections, sessions, shutdown.
//!
//! **Invariant:** every connection runs in its own task with its own [`session::Session`]; a
//! panic or a malformed message ends at most that connection, never the server.

pub mod auth;
mod bind;
mod cancel;
mod copy_input;
mod copy_values;
mod deferred_flush;
mod error;
mod handler;
pub mod metrics;
mod nested_arrays;
mod pg_text;
mod plan_cache;
mod session;
mod settings;
mod startup;
mod stream;
mod tls;

pub use error::PgError;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use pgwire::api::RandomPidSecretKeyGenerator;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::query::QueryEngine;
use crate::storage::roles::RoleStore;
use auth::{AuthConfig, AuthMethod};
use cancel::CancelRegistry;
use handler::{ConnectionHandler, Handlers, Shared};

/// How long shutdown lets running statements finish before cancelling them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long cancelled statements and their connections get to wind down.
const SHUTDOWN_DRAIN: Duration = Duration::from_secs(2);

/// How clients connect: authentication and TLS (see [`auth`]).
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    pub auth: AuthMethod,
    /// PEM certificate chain and private key files; TLS is offered when set.
    pub tls: Option<(String, String)>,
    /// Refuse connections without TLS.
    pub tls_required: bool,
    /// The password of a superuser role `tarn` created when the warehouse has no roles.
    pub bootstrap_password: Option<String>,
}

impl Default for ConnectOptions {
    /// Trust, no TLS: what a server on loopback without flags does.
    fn default() -> Self {
        Self {
            auth: AuthMethod::Trust,
            tls: None,
            tls_required: false,
            bootstrap_password: None,
        }
    }
}

/// A bound server, ready to [`serve`](Server::serve).
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
    tls: Option<pgwire::tokio::TlsAcceptor>,
}

impl Server {
    /// Binds `addr` for serving `engine` to clients connecting as `options` says. Errors
    /// (a port in use, unreadable TLS files) are messages for the operator.
    pub async fn bind(
        addr: &str,
        engine: QueryEngine,
        options: ConnectOptions,
    ) -> Result<Self, String> {
        if options.tls_required && options.tls.is_none() {
            return Err("--tls-required needs --tls-cert and --tls-key".into());
        }
        let tls = match &options.tls {
            Some((cert, key)) => Some(tls::acceptor(cert, key)?),
            None => None,
        };
        let roles = RoleStore::new(engine.catalog().warehouse().io().clone());
        if let Some(password) = &options.bootstrap_password {
            auth::roles::bootstrap(&roles, password)
                .await
                .map_err(|e| format!("cannot create the bootstrap role tarn: {}", e.message))?;
        }
        if options.auth != AuthMethod::Trust {
            let loaded = roles
                .load()
                .await
                .map_err(|e| format!("cannot read the roles of the warehouse: {e}"))?;
            if !loaded.any_password_login() {
                return Err(format!(
                    "--auth {} needs a role that can log in with a password, and the warehouse \
                     has none: set --bootstrap-password (TARN_BOOTSTRAP_PASSWORD) to create the \
                     superuser tarn, or start once with --auth trust on 127.0.0.1 and run \
                     CREATE ROLE name LOGIN PASSWORD '...'",
                    options.auth
                ));
            }
        }
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        Ok(Self {
            listener,
            shared: Arc::new(Shared {
                engine: Arc::new(engine),
                cancels: Arc::new(CancelRegistry::default()),
                keys: RandomPidSecretKeyGenerator::default(),
                auth: AuthConfig {
                    method: options.auth,
                    tls_required: options.tls_required,
                    roles,
                },
                connections: Arc::new(handler::ConnectionCount::new(
                    handler::DEFAULT_MAX_CONNECTIONS,
                )),
            }),
            tls,
        })
    }

    /// How many sessions may be open at once (before [`serve`](Self::serve)).
    pub fn set_max_connections(&mut self, max: usize) {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.connections = Arc::new(handler::ConnectionCount::new(max));
        }
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts connections until `shutdown` resolves, then stops accepting, lets running
    /// statements finish for a grace period, cancels the rest and closes every connection.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) {
        let mut connections = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((socket, peer)) => {
                        let _ = socket.set_nodelay(true);
                        let handler = Arc::new(ConnectionHandler::new(Arc::clone(&self.shared)));
                        let tls = self.tls.clone();
                        connections.spawn(async move {
                            let result = pgwire::tokio::process_socket(socket, tls, Handlers(handler)).await;
                            match result {
                                Ok(()) => tracing::info!(%peer, "connection closed"),
                                Err(e) => tracing::info!(%peer, error = %e, "connection closed with error"),
                            }
                        });
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(joined) = connections.join_next(), if !connections.is_empty() => {
                    if let Err(e) = joined && e.is_panic() {
                        tracing::error!("a connection task panicked; the server keeps serving");
                    }
                }
            }
        }
        drop(self.listener);
        let cancels = &self.shared.cancels;
        tracing::info!(
            connections = connections.len(),
            running = cancels.running(),
            "shutting down: no longer accepting connections"
        );
        let grace = tokio::time::Instant::now() + SHUTDOWN_GRACE;
        while cancels.running() > 0 && tokio::time::Instant::now() < grace {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if cancels.running() > 0 {
            tracing::info!(running = cancels.running(), "cancelling running statements");
            cancels.cancel_all();
            let drain = tokio::time::Instant::now() + SHUTDOWN_DRAIN;
            while cancels.running() > 0 && tokio::time::Instant::now() < drain {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        connections.shutdown().await;
        tracing::info!("shutdown complete");
    }
}
