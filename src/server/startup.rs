//! The startup packet's parameters as settings: the packet's own (`application_name`,
//! `client_encoding`, `DateStyle`, `search_path`, `TimeZone`, ...) and those of its `options`
//! string (`-c name=value`, `--name=value`), split the way PostgreSQL's `pg_split_opts` does:
//! on white space, with a backslash taking the next character literally (`-c
//! search_path=a\ b`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::error::PgError;

/// `max_connections` when no flag says otherwise (PostgreSQL's default).
pub const DEFAULT_MAX_CONNECTIONS: usize = 100;

/// Sessions open now, against `max_connections`.
#[derive(Debug)]
pub struct ConnectionCount {
    open: Arc<AtomicUsize>,
    max: usize,
}

/// One admitted connection; leaving frees its place.
#[derive(Debug)]
pub struct Admission(Arc<AtomicUsize>);

impl Drop for Admission {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ConnectionCount {
    pub fn new(max: usize) -> Self {
        Self {
            open: Arc::default(),
            max,
        }
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// A place for one more connection, or PostgreSQL's 53300.
    pub fn admit(&self) -> Result<Admission, PgError> {
        let admitted = self
            .open
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max).then_some(n + 1)
            })
            .is_ok();
        if admitted {
            Ok(Admission(Arc::clone(&self.open)))
        } else {
            Err(
                PgError::new("53300", "sorry, too many clients already").with_hint(format!(
                    "tarn serves at most {} connections (--max-connections).",
                    self.max
                )),
            )
        }
    }
}

/// Startup parameters that are not settings.
const NOT_SETTINGS: &[&str] = &["user", "database", "options", "replication"];

/// The settings a startup packet asks for, sorted by name.
pub fn startup_settings(metadata: &HashMap<String, String>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = metadata
        .iter()
        .filter(|(k, _)| !NOT_SETTINGS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(options) = metadata.get("options") {
        out.extend(option_settings(options));
    }
    out.sort();
    out
}

/// `name=value` pairs of `-c name=value`, `-cname=value` and `--name=value` (dashes in the
/// name read as underscores, as PostgreSQL's command line does).
fn option_settings(options: &str) -> Vec<(String, String)> {
    let words = split_options(options);
    let mut out = Vec::new();
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let assignment = match word.as_str() {
            "-c" => words.next().map(String::as_str),
            w => w.strip_prefix("-c").or_else(|| w.strip_prefix("--")),
        };
        if let Some((k, v)) = assignment.and_then(|a| a.split_once('=')) {
            out.push((k.replace('-', "_"), v.to_owned()));
        }
    }
    out
}

/// Splits on ASCII white space; `\x` is `x`, even a space or a backslash.
fn split_options(options: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut chars = options.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut word = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_ascii_whitespace() {
                break;
            }
            chars.next();
            if c == '\\' {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            } else {
                word.push(c);
            }
        }
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_beyond_the_limit_are_refused() {
        let count = ConnectionCount::new(2);
        let a = count.admit().unwrap();
        let _b = count.admit().unwrap();
        assert_eq!(count.admit().unwrap_err().code, "53300");
        drop(a);
        assert!(count.admit().is_ok());
    }

    #[test]
    fn options_split_like_postgres() {
        assert_eq!(
            option_settings(
                r"-c search_path=a\ b,public  -cstatement_timeout=5s --lock-timeout=1s -c x\\y.z=1"
            ),
            [
                ("search_path".to_owned(), "a b,public".to_owned()),
                ("statement_timeout".to_owned(), "5s".to_owned()),
                ("lock_timeout".to_owned(), "1s".to_owned()),
                (r"x\y.z".to_owned(), "1".to_owned()),
            ]
        );
        assert!(option_settings("  ").is_empty());
    }

    #[test]
    fn packet_parameters_and_options_together() {
        let metadata: HashMap<String, String> = [
            ("user", "ann"),
            ("database", "db"),
            ("client_encoding", "'utf-8'"),
            ("application_name", "app"),
            ("options", "-c TimeZone=UTC"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(
            startup_settings(&metadata),
            [
                ("TimeZone".to_owned(), "UTC".to_owned()),
                ("application_name".to_owned(), "app".to_owned()),
                ("client_encoding".to_owned(), "'utf-8'".to_owned()),
            ]
        );
    }
}
