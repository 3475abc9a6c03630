//! psql, the client people type at: `-c`, `-f`, meta-commands, and what it shows.

mod common;

use std::process::Command;

use common::{TempDir, TestServer};

fn psql(server: &TestServer, args: &[&str]) -> std::process::Output {
    Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-U",
            "ann",
            "-d",
            "shop",
        ])
        .args(["-X", "-v", "ON_ERROR_STOP=1"])
        .args(args)
        .env("PGCONNECT_TIMEOUT", "10")
        .output()
        .expect("psql is installed (apt-get install postgresql-client-15)")
}

fn stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "psql failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn psql_c_select_one() {
    let server = TestServer::start();
    let out = stdout(&psql(&server, &["-c", "select 1"]));
    assert!(out.contains("?column?"), "{out}");
    assert!(out.contains("(1 row)"), "{out}");
    let out = stdout(&psql(
        &server,
        &["-At", "-c", "select current_database(), current_user"],
    ));
    assert_eq!(out.trim(), "shop|ann");
}

#[test]
fn psql_f_runs_a_script_and_stops_at_the_first_error() {
    let server = TestServer::start();
    let dir = TempDir::new("psql");
    let script = dir.path().join("script.sql");
    std::fs::write(
        &script,
        "-- a comment; select 'not run'\n\
         create schema reports;\n\
         set search_path = reports, public;\n\
         select current_schema() as s;\n\
         begin;\n\
         select 2 as two;\n\
         commit;\n",
    )
    .unwrap();
    let out = stdout(&psql(&server, &["-At", "-f", script.to_str().unwrap()]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        ["CREATE SCHEMA", "SET", "reports", "BEGIN", "2", "COMMIT"]
    );
    assert!(server.warehouse.path().join("reports.db").is_dir());

    std::fs::write(&script, "select 1;\nselect * from missing;\nselect 3;\n").unwrap();
    let out = psql(&server, &["-At", "-f", script.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("relation \"missing\" does not exist"),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1");
}

#[test]
fn psql_shows_errors_warnings_and_transaction_state() {
    let server = TestServer::start();
    let out = psql(&server, &["-c", "selec 1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("syntax error"));
    // COMMIT outside a block warns, like PostgreSQL.
    let out = psql(&server, &["-c", "commit"]);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("WARNING:  there is no transaction in progress")
    );
    // psql reads the server version from ParameterStatus and picks its catalog queries by it.
    let out = stdout(&psql(
        &server,
        &[
            "-At",
            "-c",
            "\\echo :SERVER_VERSION_NAME :SERVER_VERSION_NUM",
        ],
    ));
    assert_eq!(out.trim(), "15.0 150000");
}

#[test]
fn psql_meta_commands_list_schemas() {
    let server = TestServer::start();
    stdout(&psql(&server, &["-c", "create schema analytics"]));
    let out = stdout(&psql(&server, &["-c", "\\dn"]));
    assert!(out.contains("analytics") && out.contains("public"), "{out}");
}

/// The session of the Paimon tables issue, typed at psql: create, insert, aggregate, an append
/// table, `\dt`, and the same rows read back.
#[test]
fn psql_orders_session() {
    let server = TestServer::start();
    let dir = TempDir::new("psql-orders");
    let script = dir.path().join("orders.sql");
    std::fs::write(
        &script,
        "CREATE TABLE orders (\n\
           id BIGINT, customer TEXT NOT NULL, amount NUMERIC(12,2), status TEXT,\n\
           placed_at TIMESTAMP, dt DATE NOT NULL, PRIMARY KEY (id, dt)\n\
         ) PARTITIONED BY (dt) WITH (bucket = 4);\n\
         INSERT INTO orders VALUES (1, 'ann', 12.50, 'new', '2026-12-01 10:00', '2026-12-01'),\n\
           (2, 'bob', 3.25, 'paid', '2026-12-01 11:30', '2026-12-01'),\n\
           (3, 'cy', 7, 'new', '2026-12-02 09:00', '2026-12-02');\n\
         INSERT INTO orders SELECT i, 'c' || i, i * 0.5, 'new', timestamp '2026-12-01 12:00', \
           date '2026-12-01' FROM generate_series(10, 19) AS t(i);\n\
         SELECT status, sum(amount) FROM orders WHERE dt = '2026-12-01' GROUP BY status ORDER BY 1;\n\
         CREATE TABLE clicks (ts TIMESTAMPTZ, url TEXT, user_id BIGINT);\n\
         INSERT INTO clicks VALUES ('2026-12-01 10:00:00+00', '/a', 1), ('2026-12-01 10:00:01+00', '/b', 2);\n\
         SELECT * FROM orders WHERE id = 1;\n\
         \\dt\n",
    )
    .unwrap();
    let out = stdout(&psql(&server, &["-f", script.to_str().unwrap()]));
    for expected in [
        "CREATE TABLE",
        "INSERT 0 3",
        "INSERT 0 10",
        " new    | 85.00",
        " paid   |  3.25",
        "INSERT 0 2",
        "  1 | ann      |  12.50 | new    | 2026-12-01 10:00:00 | 2026-12-01",
        " public | clicks | table",
        " public | orders | table",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
    // An existing key is refused with PostgreSQL's error, and nothing changes.
    let out = psql(
        &server,
        &[
            "-c",
            "INSERT INTO orders VALUES (1, 'x', 1, 'x', now(), '2026-12-01')",
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("duplicate key value violates unique constraint \"orders_pkey\"")
            && err.contains("Key (id, dt)=(1, 2026-12-01) already exists."),
        "{err}"
    );
    let out = stdout(&psql(
        &server,
        &["-At", "-c", "SELECT count(*) FROM orders"],
    ));
    assert_eq!(out.trim(), "13");
}
