//! The client suite: the tools and drivers people reach tarn with, each run against tarn AND
//! against PostgreSQL 15.
//!
//! Every client is a script under `tests/clients/` that prints one line per check, `ok NAME` or
//! `FAIL NAME: why`. Against PostgreSQL 15 every check must pass: that proves the check. Against
//! tarn, the failing checks must be exactly those listed in `tests/clients/expected-failures.txt`
//! — an unlisted failure fails the run, and so does a listed check that passes (the list only
//! shrinks, honestly). The summary printed at the end gives per-client results.
//!
//! Environment (as `scripts/test.sh` sets it): `TARN_PG15_PORT` (a PostgreSQL 15 on 127.0.0.1,
//! user postgres) and `TARN_TEST_PYTHON` (the venv with the drivers). Without them the test
//! fails and says so.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use common::TestServer;

/// One client: its name and the script that runs its checks.
struct Client {
    name: &'static str,
    script: &'static str,
    runner: Runner,
}

/// What runs a client's script.
#[derive(Clone, Copy)]
enum Runner {
    /// The venv's Python (`TARN_TEST_PYTHON`).
    Python,
    /// node, with the packages `npm ci` installed in `tests/clients/node`.
    Node,
    /// javac + java with Debian's pgjdbc jar.
    Java,
}

/// pgjdbc as Debian's libpostgresql-jdbc-java installs it.
const PGJDBC_JAR: &str = "/usr/share/java/postgresql.jar";

const CLIENTS: &[Client] = &[
    Client {
        name: "psql",
        script: "tests/clients/python/psql_meta.py",
        runner: Runner::Python,
    },
    Client {
        name: "pgbench",
        script: "tests/clients/python/pgbench_scripts.py",
        runner: Runner::Python,
    },
    Client {
        name: "psycopg",
        script: "tests/clients/python/psycopg_checks.py",
        runner: Runner::Python,
    },
    Client {
        name: "asyncpg",
        script: "tests/clients/python/asyncpg_checks.py",
        runner: Runner::Python,
    },
    Client {
        name: "pg8000",
        script: "tests/clients/python/pg8000_checks.py",
        runner: Runner::Python,
    },
    Client {
        name: "sqlalchemy",
        script: "tests/clients/python/sqlalchemy_checks.py",
        runner: Runner::Python,
    },
    Client {
        name: "alembic",
        script: "tests/clients/python/alembic_checks.py",
        runner: Runner::Python,
    },
    Client {
        name: "bi-catalog-queries",
        script: "tests/clients/python/bi_queries.py",
        runner: Runner::Python,
    },
    Client {
        name: "bi-metabase-dbeaver",
        script: "tests/clients/python/bi_metabase_dbeaver.py",
        runner: Runner::Python,
    },
    Client {
        name: "node-postgres+postgres.js",
        script: "tests/clients/node/checks.mjs",
        runner: Runner::Node,
    },
    Client {
        name: "pgjdbc",
        script: "tests/clients/java/JdbcChecks.java",
        runner: Runner::Java,
    },
];

/// The checks' verdicts: name → failure message (`None` when it passed).
type Verdicts = BTreeMap<String, Option<String>>;

/// The command that runs `client`'s checks (compiling the Java one into `scratch` first).
fn command(python: &str, client: &Client, scratch: &std::path::Path) -> Command {
    let script = common::repo_path(client.script);
    match client.runner {
        Runner::Python => {
            let mut c = Command::new(python);
            c.arg(script);
            c
        }
        Runner::Node => {
            let modules = common::repo_path("tests/clients/node/node_modules");
            assert!(
                modules.is_dir(),
                "{} is missing: run scripts/test.sh (npm ci in tests/clients/node)",
                modules.display()
            );
            let mut c = Command::new("node");
            c.arg(script);
            c
        }
        Runner::Java => {
            if !scratch.join("JdbcChecks.class").exists() {
                let out = Command::new("javac")
                    .args(["-d", scratch.to_str().unwrap(), "-cp", PGJDBC_JAR])
                    .arg(&script)
                    .output()
                    .expect("javac is installed (scripts/test.sh installs the JDK)");
                assert!(
                    out.status.success(),
                    "javac: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let mut c = Command::new("java");
            c.arg("-cp")
                .arg(format!("{}:{PGJDBC_JAR}", scratch.display()))
                .arg("JdbcChecks");
            c
        }
    }
}

fn run_client(
    python: &str,
    scratch: &std::path::Path,
    client: &Client,
    port: u16,
    user: &str,
    target: &str,
) -> Verdicts {
    let out = command(python, client, scratch)
        .env("PGHOST", "127.0.0.1")
        .env("PGPORT", port.to_string())
        .env("PGUSER", user)
        .env(
            "PGDATABASE",
            if target == "pg" { "postgres" } else { "tarn" },
        )
        .env("PGCONNECT_TIMEOUT", "10")
        .env("CLIENT_TARGET", target)
        .env_remove("PGPASSWORD")
        .output()
        .expect("run a client script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{} against {target} crashed outside its checks:\n{stdout}\n{}",
        client.name,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut verdicts = Verdicts::new();
    for line in stdout.lines() {
        if let Some(check) = line.strip_prefix("ok ") {
            verdicts.insert(check.to_owned(), None);
        } else if let Some(rest) = line.strip_prefix("FAIL ") {
            let (check, why) = rest.split_once(": ").unwrap_or((rest, ""));
            verdicts.insert(check.to_owned(), Some(why.to_owned()));
        }
    }
    assert!(
        !verdicts.is_empty(),
        "{} against {target} reported no checks:\n{stdout}",
        client.name
    );
    verdicts
}

/// `client/check` entries of the expected-failures list.
fn expected_failures() -> BTreeSet<String> {
    let path = common::repo_path("tests/clients/expected-failures.txt");
    let text = std::fs::read_to_string(&path).expect("read tests/clients/expected-failures.txt");
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn clients_against_tarn_and_postgres() {
    let python = std::env::var("TARN_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("TARN_TEST_PYTHON is not set: run scripts/test.sh, which creates the venv")
    });
    let pg_port: u16 = std::env::var("TARN_PG15_PORT")
        .unwrap_or_else(|_| {
            panic!("TARN_PG15_PORT is not set: run scripts/test.sh, which starts PostgreSQL 15")
        })
        .parse()
        .expect("TARN_PG15_PORT is a port");
    let server = TestServer::start();
    let scratch = common::TempDir::new("clients");
    let expected = expected_failures();
    let mut problems = Vec::new();
    let mut summary = Vec::new();
    let mut seen = BTreeSet::new();
    for client in CLIENTS {
        let on_pg = run_client(&python, scratch.path(), client, pg_port, "postgres", "pg");
        for (check, failure) in &on_pg {
            if let Some(why) = failure {
                problems.push(format!(
                    "{}/{check} fails against PostgreSQL 15, so the check is wrong: {why}",
                    client.name
                ));
            }
        }
        let on_tarn = run_client(
            &python,
            scratch.path(),
            client,
            server.port,
            "tester",
            "tarn",
        );
        let mut passed = 0;
        for (check, failure) in &on_tarn {
            let id = format!("{}/{check}", client.name);
            seen.insert(id.clone());
            match (failure, expected.contains(&id)) {
                (None, false) => passed += 1,
                (None, true) => problems.push(format!(
                    "{id} passes now: remove it from tests/clients/expected-failures.txt"
                )),
                (Some(_), true) => {}
                (Some(why), false) => problems.push(format!("{id} fails against tarn: {why}")),
            }
        }
        if on_tarn.keys().collect::<Vec<_>>() != on_pg.keys().collect::<Vec<_>>() {
            problems.push(format!(
                "{} ran different checks against tarn and PostgreSQL",
                client.name
            ));
        }
        summary.push(format!(
            "{:<26} {passed:>3}/{:<3} checks pass against tarn (all {} against PostgreSQL 15)",
            client.name,
            on_tarn.len(),
            on_pg.len()
        ));
    }
    for id in expected.difference(&seen) {
        problems.push(format!(
            "{id} is listed in expected-failures.txt but no such check ran"
        ));
    }
    println!("client suite:\n{}", summary.join("\n"));
    assert!(
        problems.is_empty(),
        "client suite:\n{}\n\nproblems:\n{}\n\nserver log:\n{}",
        summary.join("\n"),
        problems.join("\n"),
        server
            .log()
            .lines()
            .filter(|l| l.contains("WARN") || l.contains("ERROR") || l.contains("panick"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
