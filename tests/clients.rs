//! The client suite: the tools people already use, run against tarn and against PostgreSQL 15.
//!
//! Each check drives a real client (psql meta-commands and `\copy`, pgbench custom scripts in
//! the simple, extended and prepared protocol modes, node-postgres and postgres.js from
//! `tests/clients/node`) and decides from what the client prints, or compares tarn's answer
//! with PostgreSQL's. The catalog queries BI tools send when browsing a database (Grafana,
//! Metabase, DBeaver) are replayed from `tests/clients/bi/*.sql`, each file citing the
//! repository, file and commit it was taken from; Superset's browsing goes through SQLAlchemy's
//! inspector as Superset calls it (`tests/clients/superset_browse.py`).
//! Every check must pass against PostgreSQL 15 (`TARN_PG15_PORT`), which proves the check. On
//! tarn, `tests/clients/expected-failures.txt` lists the checks known to fail; the list is
//! strict both ways: an unlisted failure fails the run, and so does a listed check that passes
//! (remove it from the list), so the list only shrinks honestly.
//!
//! `TARN_CLIENTS_FILTER=psql`: only checks whose name contains it.

mod common;

use std::path::Path;
use std::process::Command;

use common::{TempDir, TestServer};

/// One server the checks run against.
struct Target {
    engine: &'static str,
    port: u16,
    user: &'static str,
    /// A scratch folder for files the clients read and write.
    dir: TempDir,
}

/// A check runs one client against one target. `Ok` carries what the client answered when the
/// answer is compared with PostgreSQL's (empty when the check decides by itself).
type Check = fn(&Target) -> Result<String, String>;

fn run(mut command: Command) -> Result<String, String> {
    let shown = format!("{command:?}");
    let out = command
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "{shown} failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(stdout)
}

fn psql_command(t: &Target) -> Command {
    let mut c = Command::new("psql");
    c.args(["-h", "127.0.0.1", "-p", &t.port.to_string(), "-U", t.user])
        .args(["-d", "postgres", "-X", "-v", "ON_ERROR_STOP=1"]);
    c
}

/// Runs psql with `-c` for each command, in one session.
fn psql(t: &Target, commands: &[&str]) -> Result<String, String> {
    let mut c = psql_command(t);
    for command in commands {
        c.args(["-c", command]);
    }
    run(c)
}

fn expect_in(output: &str, wanted: &[&str]) -> Result<String, String> {
    for w in wanted {
        if !output.contains(w) {
            return Err(format!("output lacks {w:?}:\n{output}"));
        }
    }
    Ok(String::new())
}

/// The tables the checks read: created fresh on each target.
fn setup(t: &Target) -> Result<(), String> {
    if t.engine == "postgres" {
        // A view left by an earlier run on the same PostgreSQL would keep its table.
        psql(t, &["drop view if exists cl_big"])?;
    }
    psql(
        t,
        &[
            "drop table if exists cl_orders, cl_orders_copy, cl_orders_js, cl_bench_simple, cl_bench_extended, cl_bench_prepared",
            "create table cl_orders (id int primary key, customer text not null, amount numeric(10,2), placed date)",
            "insert into cl_orders values (1, 'acme', 250.00, '2024-01-05'), (2, 'globex', 99.90, '2024-02-10'), (3, 'initech', null, null)",
            "create table cl_orders_copy (id int primary key, customer text not null, amount numeric(10,2), placed date)",
            "create table cl_orders_js (id int primary key, note text)",
            "create table cl_bench_simple (id bigint primary key, v bigint not null)",
            "create table cl_bench_extended (id bigint primary key, v bigint not null)",
            "create table cl_bench_prepared (id bigint primary key, v bigint not null)",
        ],
    )
    .map(|_| ())
}

fn psql_d_table(t: &Target) -> Result<String, String> {
    let out = psql(t, &[r"\d cl_orders"])?;
    expect_in(
        &out,
        &[
            "cl_orders",
            "customer",
            "numeric(10,2)",
            "not null",
            "cl_orders_pkey",
        ],
    )
}

fn psql_d_plus_table(t: &Target) -> Result<String, String> {
    let out = psql(t, &[r"\d+ cl_orders"])?;
    expect_in(&out, &["cl_orders", "amount", "Storage"])
}

fn psql_dt(t: &Target) -> Result<String, String> {
    let out = psql(t, &[r"\dt"])?;
    expect_in(&out, &["cl_orders", "table"])
}

fn psql_dn(t: &Target) -> Result<String, String> {
    let out = psql(t, &[r"\dn"])?;
    expect_in(&out, &["public"])
}

fn psql_df(t: &Target) -> Result<String, String> {
    // No user functions on either server: the listing must simply work.
    let out = psql(t, &[r"\df"])?;
    expect_in(&out, &["List of functions"])
}

fn psql_dv(t: &Target) -> Result<String, String> {
    let out = psql(
        t,
        &[
            "drop view if exists cl_big",
            "create view cl_big as select id, amount from cl_orders where amount > 100",
            r"\dv",
            "drop view cl_big",
        ],
    )?;
    expect_in(&out, &["cl_big", "view"])
}

fn psql_du(t: &Target) -> Result<String, String> {
    let out = psql(t, &[r"\du"])?;
    expect_in(&out, &["List of roles", t.user])
}

fn psql_di(t: &Target) -> Result<String, String> {
    // The primary key's index.
    let out = psql(t, &[r"\di"])?;
    expect_in(&out, &["cl_orders_pkey", "index"])
}

fn psql_d_types(t: &Target) -> Result<String, String> {
    // No user-defined types on either server: the listing must simply work.
    let out = psql(t, &[r"\dT"])?;
    expect_in(&out, &["List of data types"])
}

fn psql_l(t: &Target) -> Result<String, String> {
    let out = psql(t, &[r"\l"])?;
    expect_in(&out, &["List of databases", "postgres"])
}

fn psql_x(t: &Target) -> Result<String, String> {
    let out = psql(
        t,
        &[
            r"\x on",
            "select id, customer, amount from cl_orders where id = 1",
        ],
    )?;
    expect_in(
        &out,
        &["-[ RECORD 1 ]", "customer | acme", "amount   | 250.00"],
    )
}

fn psql_copy_out(t: &Target) -> Result<String, String> {
    let file = t.dir.path().join("orders-out.csv").display().to_string();
    psql(
        t,
        &[&format!(
            r"\copy cl_orders to '{file}' with (format csv, header)"
        )],
    )?;
    let text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
    if text.lines().count() != 4 || !text.contains("2,globex,99.90,2024-02-10") {
        return Err(format!("unexpected \\copy output:\n{text}"));
    }
    Ok(String::new())
}

fn psql_copy_in(t: &Target) -> Result<String, String> {
    let file = t.dir.path().join("orders-in.csv");
    std::fs::write(
        &file,
        "id,customer,amount,placed\n1,acme,250.00,2024-01-05\n2,globex,99.90,2024-02-10\n3,initech,,\n",
    )
    .map_err(|e| e.to_string())?;
    let file = file.display().to_string();
    psql(
        t,
        &[&format!(
            r"\copy cl_orders_copy from '{file}' with (format csv, header)"
        )],
    )?;
    let out = run({
        let mut c = psql_command(t);
        c.args([
            "-At",
            "-c",
            "select count(*), sum(amount), count(placed) from cl_orders_copy",
        ]);
        c
    })?;
    if out.trim() != "3|349.90|2" {
        return Err(format!("cl_orders_copy after \\copy from: {out}"));
    }
    Ok(String::new())
}

/// pgbench with a custom single-table transaction script in one protocol mode.
fn pgbench(t: &Target, mode: &str) -> Result<String, String> {
    let table = format!("cl_bench_{mode}");
    let script = t.dir.path().join(format!("{mode}.sql"));
    std::fs::write(
        &script,
        format!(
            "\\set id random(1, 1000000000)\n\
             begin;\n\
             insert into {table} (id, v) values (:id, 1);\n\
             select v from {table} where id = :id;\n\
             update {table} set v = v + 1 where id = :id;\n\
             commit;\n"
        ),
    )
    .map_err(|e| e.to_string())?;
    let mut c = Command::new("pgbench");
    c.args(["-h", "127.0.0.1", "-p", &t.port.to_string(), "-U", t.user])
        .args(["-n", "-c", "2", "-t", "10", "-M", mode, "-f"])
        .arg(&script)
        .arg("postgres");
    let out = run(c)?;
    expect_in(
        &out,
        &[
            "number of transactions actually processed: 20/20",
            "number of failed transactions: 0",
        ],
    )?;
    let out = run({
        let mut c = psql_command(t);
        c.args([
            "-At",
            "-c",
            &format!("select count(*), sum(v) from {table}"),
        ]);
        c
    })?;
    if out.trim() != "20|40" {
        return Err(format!("{table} after pgbench: {out}"));
    }
    Ok(String::new())
}

fn pgbench_simple(t: &Target) -> Result<String, String> {
    pgbench(t, "simple")
}

fn pgbench_extended(t: &Target) -> Result<String, String> {
    pgbench(t, "extended")
}

fn pgbench_prepared(t: &Target) -> Result<String, String> {
    pgbench(t, "prepared")
}

/// `tests/clients/node`: node-postgres and postgres.js, installed from its package-lock.json
/// on first use (`npm ci`).
fn node(t: &Target, check: &str) -> Result<String, String> {
    static INSTALL: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let dir = common::repo_path("tests/clients/node");
    INSTALL
        .get_or_init(|| {
            if dir.join("node_modules").exists() {
                return Ok(());
            }
            let mut c = Command::new("npm");
            c.args(["ci", "--no-audit", "--no-fund"]).current_dir(&dir);
            run(c).map(|_| ())
        })
        .clone()?;
    let mut c = Command::new("node");
    c.arg("check.mjs")
        .arg(check)
        .current_dir(&dir)
        .env("PGHOST", "127.0.0.1")
        .env("PGPORT", t.port.to_string())
        .env("PGUSER", t.user)
        .env("PGDATABASE", "postgres");
    run(c)
}

fn node_pg_simple(t: &Target) -> Result<String, String> {
    node(t, "pg-simple")
}

fn node_pg_params(t: &Target) -> Result<String, String> {
    node(t, "pg-params")
}

fn node_pg_prepared(t: &Target) -> Result<String, String> {
    node(t, "pg-prepared")
}

fn node_pg_transaction(t: &Target) -> Result<String, String> {
    node(t, "pg-transaction")
}

fn node_postgres_js_query(t: &Target) -> Result<String, String> {
    node(t, "postgres-js-query")
}

fn node_postgres_js_types(t: &Target) -> Result<String, String> {
    node(t, "postgres-js-types")
}

fn node_postgres_js_transaction(t: &Target) -> Result<String, String> {
    node(t, "postgres-js-transaction")
}

/// What Superset does when it browses a database (`tests/clients/superset_browse.py`, SQLAlchemy
/// 2.1 with psycopg 3).
fn superset_browse(t: &Target) -> Result<String, String> {
    let python = common::python_with("sqlalchemy, psycopg", "the Superset check");
    let mut c = Command::new(python);
    c.arg(common::repo_path("tests/clients/superset_browse.py"))
        .arg(t.port.to_string())
        .arg(t.user);
    run(c)
}

const CHECKS: &[(&str, Check)] = &[
    ("psql-d-table", psql_d_table),
    ("psql-d-plus-table", psql_d_plus_table),
    ("psql-dt", psql_dt),
    ("psql-dn", psql_dn),
    ("psql-df", psql_df),
    ("psql-dv", psql_dv),
    ("psql-l", psql_l),
    ("psql-du", psql_du),
    ("psql-di", psql_di),
    ("psql-dT", psql_d_types),
    ("psql-x", psql_x),
    ("psql-copy-out", psql_copy_out),
    ("psql-copy-in", psql_copy_in),
    ("pgbench-simple", pgbench_simple),
    ("pgbench-extended", pgbench_extended),
    ("pgbench-prepared", pgbench_prepared),
    ("node-pg-simple", node_pg_simple),
    ("node-pg-params", node_pg_params),
    ("node-pg-prepared", node_pg_prepared),
    ("node-pg-transaction", node_pg_transaction),
    ("node-postgres-js-query", node_postgres_js_query),
    ("node-postgres-js-types", node_postgres_js_types),
    ("node-postgres-js-transaction", node_postgres_js_transaction),
    ("superset-browse", superset_browse),
];

/// A catalog query a BI tool sends (`tests/clients/bi/*.sql`, each citing its source), replayed
/// with psql; it must succeed and print every `-- expect:` line's text.
fn bi_query(t: &Target, file: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let mut c = psql_command(t);
    c.arg("-At").arg("-f").arg(file);
    let out = run(c)?;
    let wanted: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("-- expect:"))
        .map(str::trim)
        .collect();
    expect_in(&out, &wanted)
}

/// A check with its name, as the run holds them.
type NamedCheck = (String, Box<dyn Fn(&Target) -> Result<String, String>>);

/// Every check: the fixed ones and one per BI query file.
fn all_checks() -> Vec<NamedCheck> {
    let mut checks: Vec<NamedCheck> = CHECKS
        .iter()
        .map(|&(name, check)| (name.to_owned(), Box::new(check) as _))
        .collect();
    let dir = common::repo_path("tests/clients/bi");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    for file in files {
        let name = format!("bi-{}", file.file_stem().unwrap().to_string_lossy());
        checks.push((name, Box::new(move |t: &Target| bi_query(t, &file))));
    }
    checks
}

/// `tests/clients/expected-failures.txt`: one check name per line, `#` comments.
fn expected_failures(root: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(root.join("tests/clients/expected-failures.txt")).unwrap();
    text.lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn clients_against_tarn_and_postgres() {
    let root = common::repo_path("");
    let expected = expected_failures(&root);
    let checks = all_checks();
    for name in &expected {
        assert!(
            checks.iter().any(|(n, _)| n == name),
            "expected-failures.txt lists {name:?}, which is no check"
        );
    }
    let pg_port: u16 = std::env::var("TARN_PG15_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .expect("TARN_PG15_PORT: the client suite needs PostgreSQL 15 (run scripts/test.sh)");
    let filter = std::env::var("TARN_CLIENTS_FILTER").unwrap_or_default();
    let server = TestServer::start();
    let targets = [
        Target {
            engine: "postgres",
            port: pg_port,
            user: "postgres",
            dir: TempDir::new("clients-pg"),
        },
        Target {
            engine: "tarn",
            port: server.port,
            user: "tester",
            dir: TempDir::new("clients-tarn"),
        },
    ];
    let mut problems = Vec::new();
    for t in &targets {
        if let Err(e) = setup(t) {
            problems.push(format!("setup on {}: {e}", t.engine));
        }
    }
    for (name, check) in checks.iter().filter(|(n, _)| n.contains(&filter)) {
        let mut postgres_answer = None;
        for t in &targets {
            let mut result = check(t);
            match (&result, &postgres_answer) {
                (Ok(answer), None) if t.engine == "postgres" => {
                    postgres_answer = Some(answer.clone())
                }
                (Ok(answer), Some(expected)) if answer != expected => {
                    result = Err(format!(
                        "answered differently from PostgreSQL:\n{answer}\nPostgreSQL:\n{expected}"
                    ))
                }
                _ => {}
            }
            let listed = t.engine == "tarn" && expected.iter().any(|e| e == name);
            let verdict = match (&result, listed) {
                (Ok(_), false) => "ok",
                (Err(_), true) => "expected failure",
                (Ok(_), true) => {
                    problems.push(format!(
                        "{name} passes on tarn but is listed in tests/clients/expected-failures.txt: remove it"
                    ));
                    "PASSES (listed as failing)"
                }
                (Err(e), false) => {
                    problems.push(format!("{name} on {}: {e}", t.engine));
                    "FAILED"
                }
            };
            println!("{verdict:<28} {name} on {}", t.engine);
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n\n"));
}
