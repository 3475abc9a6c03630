//! The slt runner's measuring mode (`TARN_SLT_MEASURE=1`): how much of the differential suite
//! tarn answers as PostgreSQL 15 does.
//!
//! A test run stops a file at its first difference; a measurement needs every record's
//! outcome. So this runs every differential record (those that run on PostgreSQL) of every
//! `sql/pg/` file on each engine and protocol, continuing after failures. A record marked as a
//! known mismatch (`skipif tarn`) is skipped on tarn as in a test run (so later records see the
//! state a test run sees) and counted as a mismatch: the rate "marks as mismatches" is the
//! suite's honest match rate. With `TARN_SLT_MEASURE_RUN_MARKED=1` the marked records run on
//! tarn too and the rate "as run" counts what tarn answered, so a marked record that now
//! matches shows up (its mark can go; records after a marked DML statement may then differ).
//! PostgreSQL runs as well: any PostgreSQL mismatch is a broken expectation and fails the
//! measurement.
//!
//! Output: per-file and total rates on stdout; with `TARN_SLT_MEASURE_OUT=<path>`, a Markdown
//! summary at that path (totals, per file, every tarn mismatch with its cause) and one line per
//! record outcome in `<path>.tsv` (engine, protocol, file, line, outcome, mark, sql, detail).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sqllogictest::{Condition, DefaultColumnType, Record, Runner, TestError, TestErrorKind};

use crate::{Protocol, SqlError, connect};

struct Outcome {
    engine: &'static str,
    protocol: Protocol,
    file: String,
    line: u32,
    /// The record's `# known mismatch: ID`, if it is marked `skipif tarn`.
    mark: Option<String>,
    matched: bool,
    sql: String,
    detail: String,
}

fn one_line(s: &str, max: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() > max {
        format!("{}…", s.chars().take(max).collect::<String>())
    } else {
        s
    }
}

fn error_text(err: &(dyn std::error::Error + Send + Sync + 'static)) -> String {
    match err.downcast_ref::<SqlError>() {
        Some(e) => format!("{}: {}", e.code, one_line(&e.message, 160)),
        None => one_line(&err.to_string(), 160),
    }
}

/// Why a record did not match, on one line.
fn detail(e: &TestError) -> String {
    match e.kind() {
        TestErrorKind::Fail { err, .. } => format!("error {}", error_text(&*err)),
        TestErrorKind::ErrorMismatch {
            err, expected_err, ..
        } => format!(
            "expected error {}, got {}",
            expected_err.trim(),
            error_text(&*err)
        ),
        TestErrorKind::Ok { .. } => "expected an error, but it succeeded".to_owned(),
        TestErrorKind::StatementResultMismatch {
            expected, actual, ..
        } => format!("expected {expected} rows affected, got {actual}"),
        TestErrorKind::QueryResultMismatch {
            expected, actual, ..
        } => format!(
            "expected [{}] got [{}]",
            one_line(&expected.replace('\n', " | "), 150),
            one_line(&actual.replace('\n', " | "), 150)
        ),
        TestErrorKind::QueryResultColumnsMismatch {
            expected, actual, ..
        } => format!("columns: expected {expected}, got {actual}"),
        other => one_line(&other.to_string(), 200),
    }
}

fn skipped_on(conditions: &[Condition], engine: &str) -> bool {
    conditions.iter().any(|c| match c {
        Condition::SkipIf { label } => label == engine,
        Condition::OnlyIf { label } => label != engine,
    })
}

async fn run_file(
    file: &Path,
    name: &str,
    engine: &'static str,
    port: u16,
    user: &'static str,
    protocol: Protocol,
    out: &mut Vec<Outcome>,
) -> Result<(), String> {
    let records = sqllogictest::parse_file::<DefaultColumnType>(file)
        .map_err(|e| format!("{name}: cannot parse: {e}"))?;
    let mut runner = Runner::new(move || connect(port, user, engine, protocol));
    let mut mark: Option<String> = None;
    for record in records {
        let (conditions, loc, sql) = match &record {
            Record::Comment(lines) => {
                mark = lines
                    .iter()
                    .find_map(|l| l.trim().strip_prefix("known mismatch:"))
                    .map(|id| id.trim().to_owned());
                continue;
            }
            Record::Halt { .. } => break,
            Record::Statement {
                conditions,
                loc,
                sql,
                ..
            }
            | Record::Query {
                conditions,
                loc,
                sql,
                ..
            } => (conditions.clone(), loc.clone(), sql.clone()),
            _ => {
                let _ = runner.run_async(record).await;
                continue;
            }
        };
        let record_mark = mark.take();
        if skipped_on(&conditions, "postgres") {
            // Not differential (a tarn-only record): run it for its effects, do not count it.
            let _ = runner.run_async(record).await;
            continue;
        }
        let marked = conditions
            .iter()
            .any(|c| matches!(c, Condition::SkipIf { label } if label == "tarn"));
        if engine == "tarn" && marked && std::env::var_os("TARN_SLT_MEASURE_RUN_MARKED").is_none() {
            // As a test run does: the marked record does not run, so later records see the
            // same state as in a test run. Counted as a (known) mismatch.
            out.push(Outcome {
                engine,
                protocol,
                file: name.to_owned(),
                line: loc.line(),
                mark: record_mark.or_else(|| Some("(unnamed)".to_owned())),
                matched: false,
                sql: one_line(&sql, 200),
                detail: "skipped (marked)".to_owned(),
            });
            continue;
        }
        let record = if engine == "tarn" {
            without_tarn_skips(record)
        } else {
            record
        };
        let result = runner.run_async(record).await;
        out.push(Outcome {
            engine,
            protocol,
            file: name.to_owned(),
            line: loc.line(),
            // On PostgreSQL a mark means nothing: every record must match there.
            mark: if marked && engine == "tarn" {
                record_mark.or_else(|| Some("(unnamed)".to_owned()))
            } else {
                None
            },
            matched: result.is_ok(),
            sql: one_line(&sql, 200),
            detail: result.err().map(|e| detail(&e)).unwrap_or_default(),
        });
    }
    Ok(())
}

fn without_tarn_skips(record: Record<DefaultColumnType>) -> Record<DefaultColumnType> {
    let keep = |c: &Condition| !matches!(c, Condition::SkipIf { label } if label == "tarn");
    match record {
        Record::Statement {
            loc,
            conditions,
            connection,
            sql,
            expected,
            retry,
        } => Record::Statement {
            loc,
            conditions: conditions.into_iter().filter(keep).collect(),
            connection,
            sql,
            expected,
            retry,
        },
        Record::Query {
            loc,
            conditions,
            connection,
            sql,
            expected,
            retry,
        } => Record::Query {
            loc,
            conditions: conditions.into_iter().filter(keep).collect(),
            connection,
            sql,
            expected,
            retry,
        },
        other => other,
    }
}

#[derive(Default, Clone, Copy)]
struct Tally {
    records: usize,
    /// Unmarked records that matched.
    matched: usize,
    /// Records marked as known mismatches (whatever they returned).
    marked: usize,
    /// Marked records that matched when run.
    marked_matching: usize,
}

impl Tally {
    fn add(&mut self, o: &Outcome) {
        self.records += 1;
        match (&o.mark, o.matched) {
            (None, true) => self.matched += 1,
            (None, false) => {}
            (Some(_), m) => {
                self.marked += 1;
                self.marked_matching += usize::from(m);
            }
        }
    }

    fn strict(&self) -> f64 {
        pct(self.matched, self.records)
    }

    fn as_run(&self) -> f64 {
        pct(self.matched + self.marked_matching, self.records)
    }
}

fn pct(n: usize, d: usize) -> f64 {
    if d == 0 {
        100.0
    } else {
        100.0 * n as f64 / d as f64
    }
}

/// Runs the measurement; returns the process exit code.
pub async fn run(
    root: &Path,
    files: &[PathBuf],
    tarn_port: u16,
    pg_port: Option<u16>,
    protocols: &[Protocol],
) -> i32 {
    let mut outcomes = Vec::new();
    let mut engines: Vec<(&'static str, u16, &'static str)> = Vec::new();
    match pg_port {
        Some(port) => engines.push(("postgres", port, "postgres")),
        None => eprintln!("TARN_PG15_PORT is not set: measuring tarn only, expectations unchecked"),
    }
    engines.push(("tarn", tarn_port, "tester"));
    for file in files {
        let name = file.strip_prefix(root).unwrap().display().to_string();
        for &(engine, port, user) in &engines {
            for &protocol in protocols {
                if let Err(e) =
                    run_file(file, &name, engine, port, user, protocol, &mut outcomes).await
                {
                    eprintln!("{e}");
                    return 1;
                }
                eprintln!("measured {name} on {engine} ({})", protocol.name());
            }
        }
    }

    // (engine, protocol) -> total; (file) -> (protocol -> tarn tally).
    let mut totals: BTreeMap<(&str, &str), Tally> = BTreeMap::new();
    let mut per_file: BTreeMap<&str, BTreeMap<&str, Tally>> = BTreeMap::new();
    for o in &outcomes {
        totals
            .entry((o.engine, o.protocol.name()))
            .or_default()
            .add(o);
        if o.engine == "tarn" {
            per_file
                .entry(&o.file)
                .or_default()
                .entry(o.protocol.name())
                .or_default()
                .add(o);
        }
    }

    let mut md = String::new();
    let binary = std::env::var("TARN_TEST_BIN").unwrap_or_else(|_| "the dev build".to_owned());
    writeln!(md, "# Differential suite measurement\n").unwrap();
    writeln!(
        md,
        "tarn binary: `{binary}`; {} files under sql/pg; protocols: {}.\n",
        files.len(),
        protocols
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", ")
    )
    .unwrap();
    writeln!(md, "## Totals\n").unwrap();
    writeln!(md, "| engine | protocol | records | match | mismatch | marked known | marked but matching | rate (marks as mismatches) | rate (as run) |").unwrap();
    writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|").unwrap();
    for ((engine, protocol), t) in &totals {
        writeln!(
            md,
            "| {engine} | {protocol} | {} | {} | {} | {} | {} | {:.1}% | {:.1}% |",
            t.records,
            t.matched,
            t.records - t.matched - t.marked,
            t.marked,
            t.marked_matching,
            t.strict(),
            t.as_run()
        )
        .unwrap();
    }
    writeln!(md, "\n## Per file (tarn)\n").unwrap();
    writeln!(
        md,
        "| file | protocol | records | match | mismatch | marked known | marked but matching | rate (marks as mismatches) | rate (as run) |"
    )
    .unwrap();
    writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|").unwrap();
    for (file, by_protocol) in &per_file {
        for (protocol, t) in by_protocol {
            writeln!(
                md,
                "| {file} | {protocol} | {} | {} | {} | {} | {} | {:.1}% | {:.1}% |",
                t.records,
                t.matched,
                t.records - t.matched - t.marked,
                t.marked,
                t.marked_matching,
                t.strict(),
                t.as_run()
            )
            .unwrap();
        }
    }

    // Each mismatching record once, with the protocols it failed on.
    writeln!(md, "\n## Records tarn does not match\n").unwrap();
    let mut by_record: BTreeMap<(&str, u32), Vec<&Outcome>> = BTreeMap::new();
    for o in outcomes.iter().filter(|o| o.engine == "tarn" && !o.matched) {
        by_record.entry((&o.file, o.line)).or_default().push(o);
    }
    for ((file, line), os) in &by_record {
        let first = os[0];
        let protocols = os
            .iter()
            .map(|o| o.protocol.name())
            .collect::<Vec<_>>()
            .join("+");
        let mark = first
            .mark
            .as_ref()
            .map(|m| format!(" (known: `{m}`)"))
            .unwrap_or_default();
        writeln!(
            md,
            "- {file}:{line} [{protocols}]{mark} `{}` — {}",
            first.sql.replace('`', "'"),
            first.detail
        )
        .unwrap();
        for o in &os[1..] {
            if o.detail != first.detail {
                writeln!(md, "  - {}: {}", o.protocol.name(), o.detail).unwrap();
            }
        }
    }
    let fixed: Vec<_> = outcomes
        .iter()
        .filter(|o| o.engine == "tarn" && o.matched && o.mark.is_some())
        .collect();
    if !fixed.is_empty() {
        writeln!(
            md,
            "\n## Marked known mismatches that now match (remove their marks)\n"
        )
        .unwrap();
        for o in fixed {
            writeln!(
                md,
                "- {}:{} [{}] `{}` ({})",
                o.file,
                o.line,
                o.protocol.name(),
                o.sql.replace('`', "'"),
                o.mark.as_deref().unwrap_or_default()
            )
            .unwrap();
        }
    }
    let pg_failures: Vec<_> = outcomes
        .iter()
        .filter(|o| o.engine == "postgres" && !o.matched)
        .collect();
    if !pg_failures.is_empty() {
        writeln!(
            md,
            "\n## PostgreSQL does not match its own recording (broken expectations)\n"
        )
        .unwrap();
        for o in &pg_failures {
            writeln!(
                md,
                "- {}:{} [{}] `{}` — {}",
                o.file,
                o.line,
                o.protocol.name(),
                o.sql,
                o.detail
            )
            .unwrap();
        }
    }

    println!("{md}");
    if let Ok(path) = std::env::var("TARN_SLT_MEASURE_OUT") {
        std::fs::write(&path, &md).unwrap_or_else(|e| panic!("writing {path}: {e}"));
        let mut tsv = String::from("engine\tprotocol\tfile\tline\toutcome\tmark\tsql\tdetail\n");
        for o in &outcomes {
            writeln!(
                tsv,
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                o.engine,
                o.protocol.name(),
                o.file,
                o.line,
                if o.matched { "match" } else { "mismatch" },
                o.mark.as_deref().unwrap_or(""),
                o.sql.replace('\t', " "),
                o.detail.replace('\t', " ")
            )
            .unwrap();
        }
        let tsv_path = format!("{path}.tsv");
        std::fs::write(&tsv_path, tsv).unwrap_or_else(|e| panic!("writing {tsv_path}: {e}"));
        println!("wrote {path} and {tsv_path}");
    }
    i32::from(!pg_failures.is_empty())
}
