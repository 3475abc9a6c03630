//! [`Deferred`]: a connection whose flushes wait for the client's Sync or Flush.
//!
//! PostgreSQL answers an extended-protocol round trip (Parse, Bind, Describe, Execute, Sync)
//! with one write: the backend buffers its messages and flushes at Sync, at Flush, before it
//! waits for COPY data, or when its buffer fills. pgwire's default handlers `send` (write and
//! flush) ParseComplete, BindComplete, RowDescription and CommandComplete one by one: with
//! TCP_NODELAY every one is its own `sendto` and segment, and the client is woken for each.
//! For a point lookup by key that was four system calls and four wake-ups where PostgreSQL
//! makes one, about a fifth of the server's time in issue 17's profile. The handler's
//! Parse, Bind, Describe and Execute write through this wrapper, whose `poll_flush` does
//! nothing; `on_sync` and `on_flush` flush the connection itself. Large results still stream:
//! the codec's `poll_ready` writes out its buffer whenever it grows past its bound.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Sink;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, SessionExtensions};
use pgwire::messages::ProtocolVersion;
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::startup::SecretKey;
use pgwire::tokio::tokio_rustls::rustls::pki_types::CertificateDer;

/// `client` with its flushes left to the end of the client's round trip.
pub(super) struct Deferred<'a, C>(pub(super) &'a mut C);

impl<C, M> Sink<M> for Deferred<'_, C>
where
    C: Sink<M> + Unpin,
{
    type Error = C::Error;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), C::Error>> {
        Pin::new(&mut *self.0).poll_ready(cx)
    }

    fn start_send(mut self: Pin<&mut Self>, item: M) -> Result<(), C::Error> {
        Pin::new(&mut *self.0).start_send(item)
    }

    /// Nothing: the round trip's Sync or Flush writes what was buffered.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), C::Error>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), C::Error>> {
        Pin::new(&mut *self.0).poll_close(cx)
    }
}

impl<C: ClientPortalStore> ClientPortalStore for Deferred<'_, C> {
    type PortalStore = C::PortalStore;

    fn portal_store(&self) -> &Self::PortalStore {
        self.0.portal_store()
    }
}

impl<C: ClientInfo> ClientInfo for Deferred<'_, C> {
    fn socket_addr(&self) -> SocketAddr {
        self.0.socket_addr()
    }

    fn is_secure(&self) -> bool {
        self.0.is_secure()
    }

    fn protocol_version(&self) -> ProtocolVersion {
        self.0.protocol_version()
    }

    fn set_protocol_version(&mut self, version: ProtocolVersion) {
        self.0.set_protocol_version(version)
    }

    fn pid_and_secret_key(&self) -> (i32, SecretKey) {
        self.0.pid_and_secret_key()
    }

    fn set_pid_and_secret_key(&mut self, pid: i32, secret_key: SecretKey) {
        self.0.set_pid_and_secret_key(pid, secret_key)
    }

    fn state(&self) -> PgWireConnectionState {
        self.0.state()
    }

    fn set_state(&mut self, new_state: PgWireConnectionState) {
        self.0.set_state(new_state)
    }

    fn transaction_status(&self) -> TransactionStatus {
        self.0.transaction_status()
    }

    fn set_transaction_status(&mut self, new_status: TransactionStatus) {
        self.0.set_transaction_status(new_status)
    }

    fn metadata(&self) -> &HashMap<String, String> {
        self.0.metadata()
    }

    fn metadata_mut(&mut self) -> &mut HashMap<String, String> {
        self.0.metadata_mut()
    }

    fn session_extensions(&self) -> &SessionExtensions {
        self.0.session_extensions()
    }

    fn sni_server_name(&self) -> Option<&str> {
        self.0.sni_server_name()
    }

    fn client_certificates<'a>(&self) -> Option<&[CertificateDer<'a>]> {
        self.0.client_certificates()
    }
}
