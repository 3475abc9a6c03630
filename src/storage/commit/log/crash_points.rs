//! Named crash points of the commit log: a test hook for issue 17's kill -9 windows.
//!
//! `TARN_CRASH_AT=<point>` (or `<point>:<n>`, the n-th time the point is reached) makes the
//! process abort there — `std::process::abort()`: no destructors, no buffered writes flushed,
//! nothing answered, as close to `kill -9` at that instant as a process can get by itself.
//! `tests/commit_log_crash.rs` starts the server with it and checks that a restart loses no
//! acknowledged commit and duplicates none.
//!
//! Harmless in production: the variable is read once; when it is unset (or names no point)
//! each crash point costs one load of an initialised `OnceLock` and a branch. The points
//! ([`POINTS`]):
//! - `log-mid-append` — half of a group's bytes written into the segment, no fdatasync
//!   (`log/writer.rs`): replay must cut the torn group;
//! - `log-after-fsync` — the group durable, no waiter answered yet (`log/writer.rs`);
//! - `flush-mid` — a flush's data files written, its snapshot not published (`logged.rs`);
//! - `flush-after-snapshot` — the flush's snapshot published, `log-state.json` not updated,
//!   the log not truncated (`logged.rs`): replay must skip what the snapshot holds;
//! - `replay-mid` — at start, a record re-applied (each one counts), the replay's flush not
//!   done (`logged.rs`): the next start replays again;
//! - `ddl-applied` — COMMIT of a transaction block with DDL: its schema files and renames
//!   written, its writes not committed (`storage/block_ddl.rs`): the next start undoes them;
//! - `ddl-after-writes` — the block's writes committed, its decision not written: the next
//!   start finishes the block's DDL.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable that arms a crash point.
pub const ENV: &str = "TARN_CRASH_AT";

/// Every crash point there is.
pub const POINTS: &[&str] = &[
    "log-mid-append",
    "log-after-fsync",
    "flush-mid",
    "flush-after-snapshot",
    "replay-mid",
    "ddl-applied",
    "ddl-after-writes",
];

/// The armed point: its name, on which hit it fires, and how often it was reached.
#[derive(Debug)]
struct Armed {
    name: &'static str,
    on_hit: u64,
    hits: AtomicU64,
}

static ARMED: OnceLock<Option<Armed>> = OnceLock::new();

/// Reads `point` or `point:n` (n ≥ 1). `Err`: what is wrong with it.
fn parse(value: &str) -> Result<Armed, String> {
    let (name, on_hit) = match value.split_once(':') {
        Some((name, n)) => match n.trim().parse::<u64>() {
            Ok(n) if n >= 1 => (name.trim(), n),
            _ => return Err(format!("{n:?} is not a hit count (1, 2, ...)")),
        },
        None => (value.trim(), 1),
    };
    let name = POINTS
        .iter()
        .find(|p| **p == name)
        .ok_or_else(|| format!("no crash point is called {name:?} (there are {POINTS:?})"))?;
    Ok(Armed {
        name,
        on_hit,
        hits: AtomicU64::new(0),
    })
}

fn armed() -> Option<&'static Armed> {
    ARMED
        .get_or_init(|| {
            let value = std::env::var(ENV).ok()?;
            match parse(&value) {
                Ok(armed) => {
                    eprintln!("tarn: {ENV}={value}: this process aborts at that point");
                    Some(armed)
                }
                Err(e) => {
                    eprintln!("tarn: {ENV}={value} ignored: {e}");
                    None
                }
            }
        })
        .as_ref()
}

/// Aborts the process if `TARN_CRASH_AT` names `name` and this is the hit it names.
pub fn crash_point(name: &'static str) {
    crash_point_after(name, || ());
}

/// [`crash_point`] that runs `before` (e.g. writes part of something) just before it aborts.
pub fn crash_point_after(name: &'static str, before: impl FnOnce()) {
    let Some(armed) = armed() else {
        return;
    };
    if armed.name != name {
        return;
    }
    let hit = armed.hits.fetch_add(1, Ordering::SeqCst) + 1;
    if hit == armed.on_hit {
        before();
        eprintln!("tarn: crash point {name} reached (hit {hit}); aborting");
        std::process::abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_and_hit_counts_parse() {
        let a = parse("flush-mid").unwrap();
        assert_eq!((a.name, a.on_hit), ("flush-mid", 1));
        let a = parse("log-mid-append:3").unwrap();
        assert_eq!((a.name, a.on_hit), ("log-mid-append", 3));
        assert!(parse("flush-middle").is_err());
        assert!(parse("flush-mid:0").is_err());
        assert!(parse("flush-mid:x").is_err());
    }

    #[test]
    fn an_unarmed_point_does_nothing() {
        // This test process has no TARN_CRASH_AT (or the suite would abort elsewhere too).
        if std::env::var(ENV).is_err() {
            crash_point("flush-mid");
            crash_point_after("log-mid-append", || panic!("never runs"));
        }
    }
}
