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
