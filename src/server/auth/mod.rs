//! Who may connect: the authentication method (`--auth`), the TLS requirement, and the password
//! exchange of one connection's startup.
//!
//! Roles and their SCRAM verifiers live in the warehouse ([`crate::storage::roles`]); every
//! login reads the newest role document, so a role created or a password changed by any server
//! counts at once. What a role may do is not checked yet (every role that logs in may do
//! everything): `GRANT`/`REVOKE` are refused rather than accepted and ignored.

pub mod roles;
pub mod scram;

use std::fmt;
use std::str::FromStr;

use crate::storage::roles::{RoleRecord, RoleStore};

use super::error::PgError;
pub use scram::{ScramExchange, Verifier};

/// How clients prove who they are (`--auth`), as in PostgreSQL's pg_hba.conf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    /// Any user name is accepted without a password.
    Trust,
    /// The password in clear text (send it only over TLS), checked against the verifier.
    Password,
    /// SCRAM-SHA-256: the password never crosses the wire.
    ScramSha256,
}

impl FromStr for AuthMethod {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "trust" => Ok(AuthMethod::Trust),
            "password" => Ok(AuthMethod::Password),
            "scram-sha-256" | "scram" => Ok(AuthMethod::ScramSha256),
            other => Err(format!(
                "unknown authentication method {other:?}: use trust, password or scram-sha-256"
            )),
        }
    }
}

impl fmt::Display for AuthMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AuthMethod::Trust => "trust",
            AuthMethod::Password => "password",
            AuthMethod::ScramSha256 => "scram-sha-256",
        })
    }
}

/// The server's authentication settings and its role store.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    pub method: AuthMethod,
    /// Refuse connections that did not negotiate TLS (`--tls-required`).
    pub tls_required: bool,
    pub roles: RoleStore,
}

/// Where one connection's password exchange stands.
#[derive(Debug, Default)]
pub enum AuthState {
    #[default]
    NotStarted,
    /// AuthenticationCleartextPassword sent.
    AwaitingPassword,
    /// AuthenticationSASL sent, or SCRAM under way.
    Scram(ScramExchange),
}

/// PostgreSQL's answer to a failed login: one message whatever went wrong (unknown role, no
/// password, wrong password), so that a client cannot probe which roles exist.
pub fn login_failed(method: AuthMethod, user: &str) -> PgError {
    let kind = match method {
        AuthMethod::ScramSha256 | AuthMethod::Password => "password",
        AuthMethod::Trust => "trust",
    };
    PgError::new(
        "28P01",
        format!("{kind} authentication failed for user \"{user}\""),
    )
}

/// The refusal of a connection without TLS when `--tls-required` is on.
pub fn tls_needed(user: &str) -> PgError {
    PgError::new(
        "28000",
        format!(
            "connection for user \"{user}\" refused: this server accepts only TLS connections; \
             connect with sslmode=require (or verify-full)"
        ),
    )
}

impl AuthConfig {
    /// The verifier `user` logs in with, if the role exists, may log in and has a password.
    pub async fn verifier(&self, user: &str) -> Result<Option<Verifier>, PgError> {
        let roles = self.roles.load().await.map_err(PgError::from)?;
        Ok(roles
            .get(user)
            .filter(|r: &&RoleRecord| r.login)
            .and_then(|r| r.password.as_deref())
            .and_then(Verifier::parse))
    }
}
