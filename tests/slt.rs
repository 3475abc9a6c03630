//! sqllogictest over a real pgwire connection.
//!
//! Every `sql/**/*.slt` file runs against the tarn binary. Files under `sql/pg/` are
//! differential: their expected results were recorded from PostgreSQL 15 (never typed by hand)
//! and they run against PostgreSQL 15 as well, so a wrong expectation fails too. Records tarn
//! is known to answer differently are marked `skipif tarn` right after a `# known mismatch: ID`
//! comment, and each ID is explained in `sql/known-mismatches.md`.
//!
//! Differential files run twice on each engine: over the simple protocol (tokio-postgres'
//! `simple_query`) and over the extended protocol (Parse / Bind / Execute with text results,
//! `slt/wire.rs`); a string of several statements cannot be one extended-protocol statement and
//! stays simple. Both render rows the same way, so one expectation serves both.
//!
//! Environment: `TARN_PG15_PORT` — port of a PostgreSQL 15 on 127.0.0.1 (user postgres), as
//! `scripts/test.sh` starts it; `TARN_SLT_RECORD=1` — rewrite the expected results of
//! `sql/pg/` files from PostgreSQL instead of checking them; `TARN_SLT_MEASURE=1` — measure
//! instead of test (`slt/measure.rs`): run every differential record on every engine and
//! protocol without stopping, and report match rates (`TARN_SLT_MEASURE_OUT`: where to write
//! the summary; `TARN_SLT_MEASURE_RUN_MARKED=1`: run known mismatches on tarn too);
//! `TARN_SLT_PROTOCOL=simple|extended` — one protocol only.

mod common;
#[path = "slt/measure.rs"]
mod measure;
#[path = "slt/wire.rs"]
mod wire;

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use sqllogictest::{DBOutput, DefaultColumnType, Runner};
use tokio_postgres::{NoTls, SimpleQueryMessage};

/// An error as slt files match it: the SQLSTATE (the message differs between engines). The
/// message is kept for the measuring mode's report.
#[derive(Debug)]
pub struct SqlError {
    pub code: String,
    pub message: String,
}

impl std::fmt::Display for SqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.code)
    }
}

impl std::error::Error for SqlError {}

/// How a connection sends each record's SQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Simple,
    Extended,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
        }
    }
}

enum Conn {
    Simple(tokio_postgres::Client),
    Extended(wire::WireConn),
}

pub struct Db {
    conn: Conn,
    engine: &'static str,
    port: u16,
    user: String,
    protocol: Protocol,
}

/// How long a record may run before it counts as failed (`TARN_SLT_TIMEOUT`, seconds, default
/// 60): a statement the server never answers (a runaway recursive query) must not hang the suite.
fn statement_timeout() -> std::time::Duration {
    let secs = std::env::var("TARN_SLT_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    std::time::Duration::from_secs(secs)
}

pub async fn connect(
    port: u16,
    user: &str,
    engine: &'static str,
    protocol: Protocol,
) -> Result<Db, SqlError> {
    let conn = match protocol {
        Protocol::Simple => {
            let conn_str = format!("host=127.0.0.1 port={port} user={user} dbname=postgres");
            let (client, connection) =
                tokio_postgres::connect(&conn_str, NoTls)
                    .await
                    .map_err(|e| SqlError {
                        code: format!("08006 (cannot connect: {e})"),
                        message: e.to_string(),
                    })?;
            tokio::spawn(connection);
            Conn::Simple(client)
        }
        Protocol::Extended => Conn::Extended(wire::WireConn::connect(port, user).await.map_err(
            |e| SqlError {
                code: format!("08006 (cannot connect: {} {})", e.code, e.message),
                message: e.message,
            },
        )?),
    };
    Ok(Db {
        conn,
        engine,
        port,
        user: user.to_owned(),
        protocol,
    })
}

/// Whether `sql` holds more than one statement (by PostgreSQL's tokens, so semicolons in
/// strings, comments and dollar quotes do not count). Untokenizable text counts as one.
fn several_statements(sql: &str) -> bool {
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize() else {
        return false;
    };
    let mut statements = 0;
    let mut in_statement = false;
    for token in tokens {
        match token {
            Token::SemiColon => in_statement = false,
            Token::Whitespace(_) | Token::EOF => {}
            _ => {
                if !in_statement {
                    statements += 1;
                    in_statement = true;
                }
            }
        }
    }
    statements > 1
}

fn render(value: Option<&str>) -> String {
    match value {
        None => "NULL".to_owned(),
        Some("") => "(empty)".to_owned(),
        Some(v) => v.to_owned(),
    }
}

#[async_trait]
impl sqllogictest::AsyncDB for Db {
    type Error = SqlError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SqlError> {
        let limit = statement_timeout();
        match tokio::time::timeout(limit, self.run_once(sql)).await {
            Ok(result) => result,
            Err(_) => {
                // The connection still waits for that answer: continue on a new one (session
                // settings are lost; the record fails either way).
                let fresh = connect(self.port, &self.user, self.engine, self.protocol).await?;
                self.conn = fresh.conn;
                Err(SqlError {
                    code: "timeout".to_owned(),
                    message: format!("no answer within {} s", limit.as_secs()),
                })
            }
        }
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        self.engine
    }

    async fn sleep(dur: std::time::Duration) {
        tokio::time::sleep(dur).await;
    }
}

impl Db {
    async fn run_once(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SqlError> {
        let client = match &mut self.conn {
            Conn::Simple(client) => client,
            Conn::Extended(wire) => {
                let result = if several_statements(sql) {
                    wire.simple(sql).await
                } else {
                    wire.extended(sql).await
                };
                return match result {
                    Ok(wire::Output::Rows { columns, rows }) => Ok(DBOutput::Rows {
                        types: vec![DefaultColumnType::Any; columns],
                        rows: rows
                            .iter()
                            .map(|row| row.iter().map(|v| render(v.as_deref())).collect())
                            .collect(),
                    }),
                    Ok(wire::Output::Complete(count)) => Ok(DBOutput::StatementComplete(count)),
                    Err(e) => Err(SqlError {
                        code: e.code,
                        message: e.message,
                    }),
                };
            }
        };
        let messages = client.simple_query(sql).await.map_err(|e| SqlError {
            code: e
                .code()
                .map_or_else(|| format!("no SQLSTATE: {e}"), |c| c.code().to_owned()),
            message: e
                .as_db_error()
                .map_or_else(|| e.to_string(), |d| d.message().to_owned()),
        })?;
        let mut columns = None;
        let mut rows = Vec::new();
        let mut count = 0;
        for m in messages {
            match m {
                SimpleQueryMessage::RowDescription(cols) => columns = Some(cols.len()),
                SimpleQueryMessage::Row(row) => {
                    rows.push((0..row.len()).map(|i| render(row.get(i))).collect())
                }
                SimpleQueryMessage::CommandComplete(n) => count = n,
                _ => {}
            }
        }
        Ok(match columns {
            Some(n) => DBOutput::Rows {
                types: vec![DefaultColumnType::Any; n],
                rows,
            },
            None => DBOutput::StatementComplete(count),
        })
    }
}

fn slt_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            slt_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "slt") {
            out.push(path);
        }
    }
}

/// Every `skipif tarn` must follow a `# known mismatch: ID` whose ID the list explains.
fn check_mismatch_marks(file: &Path, listed: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim() == "skipif tarn" {
            let id = i
                .checked_sub(1)
                .and_then(|j| lines[j].trim().strip_prefix("# known mismatch:"))
                .map(str::trim)
                .ok_or_else(|| {
                    format!(
                        "{}:{}: `skipif tarn` without `# known mismatch: ID` above it",
                        file.display(),
                        i + 1
                    )
                })?;
            if !listed.contains(&format!("`{id}`")) {
                return Err(format!(
                    "{}:{}: mismatch `{id}` is not explained in sql/known-mismatches.md",
                    file.display(),
                    i + 1
                ));
            }
        }
    }
    Ok(())
}

fn protocols() -> Vec<Protocol> {
    match std::env::var("TARN_SLT_PROTOCOL").as_deref() {
        Ok("simple") => vec![Protocol::Simple],
        Ok("extended") => vec![Protocol::Extended],
        _ => vec![Protocol::Simple, Protocol::Extended],
    }
}

fn main() {
    let root_dir = common::repo_path("");
    let root = root_dir.as_path();
    let mut files = Vec::new();
    slt_files(&root.join("sql"), &mut files);
    // `TARN_SLT_FILTER=table_changes`: only files whose path contains it.
    if let Ok(filter) = std::env::var("TARN_SLT_FILTER") {
        files.retain(|f| f.display().to_string().contains(&filter));
    }
    let listed = std::fs::read_to_string(root.join("sql/known-mismatches.md")).unwrap_or_default();
    let pg_port: Option<u16> = std::env::var("TARN_PG15_PORT")
        .ok()
        .and_then(|p| p.parse().ok());
    let record = std::env::var_os("TARN_SLT_RECORD").is_some();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = common::TestServer::start();
    let tarn_port = server.port;

    if std::env::var_os("TARN_SLT_MEASURE").is_some() {
        files.retain(|f| f.starts_with(root.join("sql/pg")));
        let code = rt.block_on(measure::run(root, &files, tarn_port, pg_port, &protocols()));
        drop(server);
        std::process::exit(code);
    }

    let mut passed = 0;
    let mut failed = Vec::new();
    for file in &files {
        let differential = file.starts_with(root.join("sql/pg"));
        let name = file.strip_prefix(root).unwrap().display().to_string();
        let mut targets: Vec<(&'static str, u16, &str, Protocol)> =
            vec![("tarn", tarn_port, "tester", Protocol::Simple)];
        if differential {
            let Some(port) = pg_port else {
                failed.push(format!(
                    "{name}: differential file, but TARN_PG15_PORT is not set (run scripts/test.sh)"
                ));
                continue;
            };
            targets.clear();
            for engine in ["postgres", "tarn"] {
                for protocol in protocols() {
                    targets.push(match engine {
                        "postgres" => ("postgres", port, "postgres", protocol),
                        _ => ("tarn", tarn_port, "tester", protocol),
                    });
                }
            }
            if let Err(e) = check_mismatch_marks(file, &listed) {
                failed.push(e);
                continue;
            }
        }
        if record && differential {
            let port = pg_port.unwrap();
            let mut runner =
                Runner::new(move || connect(port, "postgres", "postgres", Protocol::Simple));
            rt.block_on(runner.update_test_file(
                file,
                " ",
                sqllogictest::default_validator,
                sqllogictest::default_normalizer,
                sqllogictest::default_column_validator,
            ))
            .unwrap_or_else(|e| panic!("recording {name} from PostgreSQL failed: {e}"));
            println!("recorded {name} from PostgreSQL");
        }
        for (engine, port, user, protocol) in targets {
            let mut runner = Runner::new(move || connect(port, user, engine, protocol));
            let how = format!("{engine} ({})", protocol.name());
            match rt.block_on(runner.run_file_async(file)) {
                Ok(()) => {
                    println!("ok     {name} on {how}");
                    passed += 1;
                }
                Err(e) => {
                    println!("FAILED {name} on {how}");
                    failed.push(format!("{name} on {how}:\n{}", e.display(true)));
                }
            }
        }
    }
    drop(server);
    for f in &failed {
        eprintln!("\n{f}");
    }
    println!("\nslt: {passed} passed, {} failed", failed.len());
    if !failed.is_empty() {
        std::process::exit(1);
    }
}
