//! SCRAM-SHA-256 (RFC 5802, RFC 7677) on the server side, against PostgreSQL's stored verifier.
//!
//! PostgreSQL stores `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` (base64 parts)
//! and nothing from which a client proof could be made: StoredKey is `H(ClientKey)`, so the
//! server checks a proof by recovering ClientKey from it and hashing, and proves itself with
//! ServerKey. pgwire's SCRAM wants the salted password, which logs in by itself; tarn does the
//! exchange here instead so that only verifiers are ever stored.
//!
//! The exchange is a pure state machine ([`ScramExchange`]): the handler feeds it the client's
//! messages and sends back what it returns. Channel binding (`-PLUS`) is not offered; a client
//! that supports it says `y,,` and binds nothing, as RFC 5802 allows.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use ring::{digest, hmac, pbkdf2};

/// Iterations for new verifiers: PostgreSQL's default `scram_iterations`.
pub const DEFAULT_ITERATIONS: u32 = 4096;
const KEY_LEN: usize = 32;
const PREFIX: &str = "SCRAM-SHA-256$";
pub const MECHANISM: &str = "SCRAM-SHA-256";

/// Why an exchange failed. `BadProof` is a wrong password; the others are broken messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScramError {
    #[error("malformed SCRAM message: {0}")]
    Malformed(&'static str),
    #[error("password authentication failed")]
    BadProof,
    #[error(
        "SCRAM channel binding is not supported; connect with channel_binding=disable or prefer"
    )]
    ChannelBinding,
}

/// A parsed verifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verifier {
    pub iterations: u32,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

impl Verifier {
    /// Parses PostgreSQL's text form; `None` when `text` is not a SCRAM-SHA-256 verifier.
    pub fn parse(text: &str) -> Option<Verifier> {
        let rest = text.strip_prefix(PREFIX)?;
        let (params, keys) = rest.split_once('$')?;
        let (iterations, salt) = params.split_once(':')?;
        let (stored, server) = keys.split_once(':')?;
        let verifier = Verifier {
            iterations: iterations.parse().ok().filter(|i| *i > 0)?,
            salt: B64.decode(salt).ok()?,
            stored_key: B64.decode(stored).ok()?,
            server_key: B64.decode(server).ok()?,
        };
        (verifier.stored_key.len() == KEY_LEN && verifier.server_key.len() == KEY_LEN)
            .then_some(verifier)
    }

    /// The verifier of `password` with `salt` and `iterations`.
    pub fn from_password(password: &str, salt: &[u8], iterations: u32) -> Verifier {
        let salted = salted_password(password, salt, iterations);
        let client_key = hmac_sha256(&salted, b"Client Key");
        Verifier {
            iterations,
            salt: salt.to_vec(),
            stored_key: sha256(&client_key),
            server_key: hmac_sha256(&salted, b"Server Key"),
        }
    }

    /// The verifier of `password` with a fresh random salt, as `CREATE ROLE ... PASSWORD`
    /// stores it.
    pub fn generate(password: &str) -> Verifier {
        let mut salt = [0u8; 16];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut salt)
            .expect("the system's random source failed");
        Self::from_password(password, &salt, DEFAULT_ITERATIONS)
    }

    /// Whether `password` is the one this verifier was made from (for `--auth password`).
    pub fn matches_password(&self, password: &str) -> bool {
        let other = Self::from_password(password, &self.salt, self.iterations);
        equal_in_constant_time(&other.stored_key, &self.stored_key)
    }

    /// PostgreSQL's text form.
    pub fn to_text(&self) -> String {
        format!(
            "{PREFIX}{}:{}${}:{}",
            self.iterations,
            B64.encode(&self.salt),
            B64.encode(&self.stored_key),
            B64.encode(&self.server_key)
        )
    }
}

/// SASLprep of the password where it applies; like PostgreSQL, the raw bytes otherwise.
fn normalize(password: &str) -> String {
    stringprep::saslprep(password)
        .map(|p| p.into_owned())
        .unwrap_or_else(|_| password.to_owned())
}

fn salted_password(password: &str, salt: &[u8], iterations: u32) -> [u8; KEY_LEN] {
    let mut out = [0u8; KEY_LEN];
    let iterations = std::num::NonZeroU32::new(iterations).unwrap_or(std::num::NonZeroU32::MIN);
    pbkdf2::derive(
        pbkdf2::PBKDF2_HMAC_SHA256,
        iterations,
        salt,
        normalize(password).as_bytes(),
        &mut out,
    );
    out
}

/// Compares secrets without stopping at the first difference (no timing oracle).
fn equal_in_constant_time(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    hmac::sign(&key, message).as_ref().to_vec()
}

fn sha256(data: &[u8]) -> Vec<u8> {
    digest::digest(&digest::SHA256, data).as_ref().to_vec()
}

/// The server's side of one exchange.
#[derive(Debug)]
pub enum ScramExchange {
    /// Waiting for client-first (in SASLInitialResponse).
    Start,
    /// server-first sent; waiting for client-final.
    ServerFirstSent {
        client_first_bare: String,
        server_first: String,
        nonce: String,
        verifier: Option<Verifier>,
    },
    Done,
}

impl ScramExchange {
    /// Takes client-first; returns server-first. `verifier` is `None` for an unknown role or
    /// one without a password: the exchange goes on with made-up values (so a client cannot
    /// tell which roles exist) and fails at the proof.
    pub fn client_first(
        &mut self,
        message: &[u8],
        verifier: Option<Verifier>,
    ) -> Result<String, ScramError> {
        let text = std::str::from_utf8(message).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        // gs2-header: cbind-flag "," [authzid] ","
        let (flag, rest) = text
            .split_once(',')
            .ok_or(ScramError::Malformed("no GS2 header"))?;
        match flag {
            "n" | "y" => {}
            f if f.starts_with("p=") => return Err(ScramError::ChannelBinding),
            _ => return Err(ScramError::Malformed("bad channel-binding flag")),
        }
        let (_authzid, bare) = rest
            .split_once(',')
            .ok_or(ScramError::Malformed("no GS2 header"))?;
        let client_nonce = bare
            .split(',')
            .find_map(|a| a.strip_prefix("r="))
            .filter(|n| !n.is_empty())
            .ok_or(ScramError::Malformed("no client nonce"))?;
        let mut random = [0u8; 18];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut random)
            .map_err(|_| ScramError::Malformed("no randomness"))?;
        let nonce = format!("{client_nonce}{}", B64.encode(random));
        let (salt, iterations) = match &verifier {
            Some(v) => (v.salt.clone(), v.iterations),
            None => (random[..16].to_vec(), DEFAULT_ITERATIONS),
        };
        let server_first = format!("r={nonce},s={},i={iterations}", B64.encode(salt));
        *self = ScramExchange::ServerFirstSent {
            client_first_bare: bare.to_owned(),
            server_first: server_first.clone(),
            nonce,
            verifier,
        };
        Ok(server_first)
    }

    /// Takes client-final; returns server-final (`v=<ServerSignature>`) when the proof holds.
    pub fn client_final(&mut self, message: &[u8]) -> Result<String, ScramError> {
        let ScramExchange::ServerFirstSent {
            client_first_bare,
            server_first,
            nonce,
            verifier,
        } = std::mem::replace(self, ScramExchange::Done)
        else {
            return Err(ScramError::Malformed("unexpected message"));
        };
        let text = std::str::from_utf8(message).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or(ScramError::Malformed("no proof"))?;
        let mut channel = None;
        let mut got_nonce = None;
        for attribute in without_proof.split(',') {
            if let Some(c) = attribute.strip_prefix("c=") {
                channel = Some(c);
            } else if let Some(r) = attribute.strip_prefix("r=") {
                got_nonce = Some(r);
            }
        }
        // "n,," or "y,," base64-encoded: no binding data.
        if !matches!(channel, Some("biws") | Some("eSws")) {
            return Err(ScramError::ChannelBinding);
        }
        if got_nonce != Some(nonce.as_str()) {
            return Err(ScramError::Malformed("nonce mismatch"));
        }
        let proof = B64
            .decode(proof)
            .map_err(|_| ScramError::Malformed("proof is not base64"))?;
        let verifier = verifier.ok_or(ScramError::BadProof)?;
        if proof.len() != KEY_LEN {
            return Err(ScramError::BadProof);
        }
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let signature = hmac_sha256(&verifier.stored_key, auth_message.as_bytes());
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
        if !equal_in_constant_time(&sha256(&client_key), &verifier.stored_key) {
            return Err(ScramError::BadProof);
        }
        let server_signature = hmac_sha256(&verifier.server_key, auth_message.as_bytes());
        Ok(format!("v={}", B64.encode(server_signature)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's example: user "user", password "pencil".
    #[test]
    fn rfc7677_exchange() {
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let verifier = Verifier::from_password("pencil", &salt, 4096);
        let mut exchange = ScramExchange::Start;
        let server_first = exchange
            .client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO", Some(verifier.clone()))
            .unwrap();
        // The server's nonce is random: redo RFC's client side with the nonce we got.
        let nonce = server_first
            .strip_prefix("r=")
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .to_owned();
        assert!(server_first.ends_with(",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"));
        let without_proof = format!("c=biws,r={nonce}");
        let auth = format!("n=user,r=rOprNGfwEbeRWgbNEkqO,{server_first},{without_proof}");
        let salted = salted_password("pencil", &salt, 4096);
        let client_key = hmac_sha256(&salted, b"Client Key");
        let signature = hmac_sha256(&sha256(&client_key), auth.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let final_message = format!("{without_proof},p={}", B64.encode(&proof));
        let server_final = exchange.client_final(final_message.as_bytes()).unwrap();
        let expected = hmac_sha256(&hmac_sha256(&salted, b"Server Key"), auth.as_bytes());
        assert_eq!(server_final, format!("v={}", B64.encode(expected)));

        // The same proof against the wrong password's verifier fails.
        let mut exchange = ScramExchange::Start;
        let other = Verifier::from_password("pencil2", &salt, 4096);
        let first = exchange
            .client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO", Some(other))
            .unwrap();
        let nonce2 = first[2..].split(',').next().unwrap().to_owned();
        let message = format!("c=biws,r={nonce2},p={}", B64.encode(&proof));
        assert_eq!(
            exchange.client_final(message.as_bytes()),
            Err(ScramError::BadProof)
        );
    }

    #[test]
    fn verifier_text_round_trips_and_checks_passwords() {
        // Made by PostgreSQL 15: `CREATE ROLE u LOGIN PASSWORD 'secret'` with
        // password_encryption scram-sha-256, then `SELECT rolpassword FROM pg_authid`.
        let pg = "SCRAM-SHA-256$4096:gklGxMWD6v50UOAXFrYOoA==$1Gj4v+dFE7ZsLUpAfWfYlPNXuxc4S6p9ZUny5b6zNB4=:6gts/UtJnHY+vB2iqBffXjlFC+R+zylU6WY9L4EUG94=";
        let parsed = Verifier::parse(pg).unwrap();
        assert!(parsed.matches_password("secret"));
        assert!(!parsed.matches_password("Secret"));
        assert_eq!(parsed.to_text(), pg);
        assert_eq!(
            Verifier::from_password("secret", &parsed.salt, parsed.iterations),
            parsed
        );
        let fresh = Verifier::generate("secret");
        assert_ne!(fresh.salt, parsed.salt);
        assert_eq!(Verifier::parse(&fresh.to_text()), Some(fresh));
        assert_eq!(Verifier::parse("md5abc"), None);
        assert_eq!(Verifier::parse("SCRAM-SHA-256$x:y$z:w"), None);
    }

    #[test]
    fn unknown_role_fails_at_the_proof() {
        let mut exchange = ScramExchange::Start;
        let first = exchange.client_first(b"n,,n=,r=abc", None).unwrap();
        let nonce = first[2..].split(',').next().unwrap().to_owned();
        let message = format!("c=biws,r={nonce},p={}", B64.encode([0u8; 32]));
        assert_eq!(
            exchange.client_final(message.as_bytes()),
            Err(ScramError::BadProof)
        );
        let mut exchange = ScramExchange::Start;
        assert_eq!(
            exchange.client_first(b"p=tls-server-end-point,,n=,r=abc", None),
            Err(ScramError::ChannelBinding)
        );
    }
}
