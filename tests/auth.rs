//! Passwords and TLS the way clients use them: roles created over SQL and kept in the warehouse,
//! `--auth scram-sha-256` / `password` logins from psql and psycopg, psql's `\password`, TLS
//! with `sslmode=require` and `verify-full`, `--tls-required`, and the refusal to trust other
//! machines without `--auth`.
//!
//! PostgreSQL 15 from `pg15.sh` is trust-only, so these checks run against tarn alone; what a
//! client accepts (libpq's and psycopg's SCRAM, TLS verification) is the independent side.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{TempDir, TestServer};

fn psql(port: u16, user: &str, password: Option<&str>, extra: &str, sql: &str) -> Output {
    let mut command = Command::new("psql");
    command
        .arg(format!(
            "host=127.0.0.1 port={port} user={user} dbname=tarn {extra}"
        ))
        .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .env_remove("PGPASSWORD")
        .env("PGCONNECT_TIMEOUT", "10");
    if let Some(p) = password {
        command.env("PGPASSWORD", p);
    }
    command.output().expect("run psql")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "psql failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn failed(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "psql should have failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Creates roles over a trusting server, then serves the same warehouse with `env`.
fn warehouse_with_roles() -> TempDir {
    let server = TestServer::start();
    for sql in [
        "CREATE ROLE alice LOGIN PASSWORD 'wonder land'",
        "CREATE USER bob PASSWORD 'builder'",
        "CREATE ROLE carol PASSWORD 'no login'",
        "CREATE ROLE dave LOGIN",
    ] {
        ok(&psql(server.port, "admin", None, "", sql));
    }
    server.stop_and_keep_warehouse()
}

#[test]
fn scram_logins_check_stored_verifiers() {
    let warehouse = warehouse_with_roles();
    // Only verifiers are stored: neither password appears anywhere in the warehouse.
    let mut files = Vec::new();
    collect_files(&warehouse.path().join("_tarn"), &mut files);
    assert!(!files.is_empty(), "roles are kept in the warehouse");
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(!text.contains("wonder land") && !text.contains("builder"));
        assert!(text.contains("SCRAM-SHA-256$4096:"), "{text}");
    }

    let server = TestServer::start_on(warehouse, &[("TARN_AUTH", "scram-sha-256")]);
    let port = server.port;
    assert_eq!(
        ok(&psql(
            port,
            "alice",
            Some("wonder land"),
            "",
            "SELECT current_user"
        )),
        "alice"
    );
    assert_eq!(ok(&psql(port, "bob", Some("builder"), "", "SELECT 1")), "1");
    assert!(
        server
            .log()
            .lines()
            .any(|l| l.contains("user=alice") && l.contains("auth=scram-sha-256")),
        "{}",
        server.log()
    );
    for (user, password) in [
        ("alice", "wrong"),
        ("carol", "no login"),
        ("dave", "no password set"),
        ("nobody", "x"),
    ] {
        let err = failed(&psql(port, user, Some(password), "", "SELECT 1"));
        assert!(
            err.contains(&format!(
                "password authentication failed for user \"{user}\""
            )),
            "{user}: {err}"
        );
    }
    // The server keeps serving after failed logins.
    ok(&psql(port, "bob", Some("builder"), "", "SELECT 1"));

    // Role changes count at the next login, without a restart.
    ok(&psql(
        port,
        "alice",
        Some("wonder land"),
        "",
        "ALTER ROLE bob PASSWORD 'rebuilt'",
    ));
    failed(&psql(port, "bob", Some("builder"), "", "SELECT 1"));
    ok(&psql(port, "bob", Some("rebuilt"), "", "SELECT 1"));
    let err = failed(&psql(
        port,
        "alice",
        Some("wonder land"),
        "",
        "DROP ROLE alice",
    ));
    assert!(err.contains("current user cannot be dropped"), "{err}");
    ok(&psql(
        port,
        "alice",
        Some("wonder land"),
        "",
        "DROP ROLE bob",
    ));
    failed(&psql(port, "bob", Some("rebuilt"), "", "SELECT 1"));
    let err = failed(&psql(
        port,
        "alice",
        Some("wonder land"),
        "",
        "GRANT SELECT ON t TO dave",
    ));
    assert!(err.contains("GRANT and REVOKE are not supported"), "{err}");
}

#[test]
fn cleartext_password_method() {
    let warehouse = warehouse_with_roles();
    let server = TestServer::start_on(warehouse, &[("TARN_AUTH", "password")]);
    ok(&psql(
        server.port,
        "alice",
        Some("wonder land"),
        "",
        "SELECT 1",
    ));
    assert!(server.log().contains("auth=password"), "{}", server.log());
    let err = failed(&psql(server.port, "alice", Some("x"), "", "SELECT 1"));
    assert!(err.contains("password authentication failed"), "{err}");
}

#[test]
fn refuses_to_start_without_a_way_in() {
    // --auth with no role that has a password: nobody could log in.
    let server =
        std::panic::catch_unwind(|| TestServer::start_with_env(&[("TARN_AUTH", "scram-sha-256")]));
    let message = panic_text(server.err().expect("the server must not start"));
    assert!(message.contains("CREATE ROLE"), "{message}");
    assert!(message.contains("TARN_BOOTSTRAP_PASSWORD"), "{message}");
    // A container's first start: the bootstrap role, then only once.
    let server = TestServer::start_with_env(&[
        ("TARN_AUTH", "scram-sha-256"),
        ("TARN_BOOTSTRAP_PASSWORD", "first start"),
    ]);
    ok(&psql(
        server.port,
        "tarn",
        Some("first start"),
        "",
        "ALTER ROLE tarn PASSWORD 'changed'",
    ));
    let warehouse = server.stop_and_keep_warehouse();
    let server = TestServer::start_on(
        warehouse,
        &[
            ("TARN_AUTH", "scram-sha-256"),
            ("TARN_BOOTSTRAP_PASSWORD", "first start"),
        ],
    );
    failed(&psql(
        server.port,
        "tarn",
        Some("first start"),
        "",
        "SELECT 1",
    ));
    ok(&psql(server.port, "tarn", Some("changed"), "", "SELECT 1"));
    // Another machine's address without --auth.
    let out = Command::new(env!("CARGO_BIN_EXE_tarn"))
        .args(["--warehouse", "memory://", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("without --auth"), "{stderr}");
}

fn panic_text(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

fn collect_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// A CA and a server certificate for 127.0.0.1 / localhost, made with openssl.
fn certificates(dir: &Path) {
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run openssl");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=tarn test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ]);
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
        "-out",
        "server.pem",
    ]);
}

#[test]
fn tls_with_verify_full_and_tls_required() {
    let certs = TempDir::new("certs");
    certificates(certs.path());
    let cert = certs.path().join("server.pem");
    let key = certs.path().join("server.key");
    let ca = certs.path().join("ca.pem");
    let warehouse = warehouse_with_roles();
    let server = TestServer::start_on(
        warehouse,
        &[
            ("TARN_AUTH", "scram-sha-256"),
            ("TARN_TLS_CERT", cert.to_str().unwrap()),
            ("TARN_TLS_KEY", key.to_str().unwrap()),
            ("TARN_TLS_REQUIRED", "true"),
        ],
    );
    let port = server.port;
    let verify = format!("sslmode=verify-full sslrootcert={}", ca.display());
    assert_eq!(
        ok(&psql(
            port,
            "alice",
            Some("wonder land"),
            &verify,
            "SELECT current_user"
        )),
        "alice"
    );
    ok(&psql(
        port,
        "alice",
        Some("wonder land"),
        "sslmode=require",
        "SELECT 1",
    ));
    // Without TLS: refused, saying how to connect.
    let err = failed(&psql(
        port,
        "alice",
        Some("wonder land"),
        "sslmode=disable",
        "SELECT 1",
    ));
    assert!(err.contains("sslmode=require"), "{err}");
    // A CA that did not sign the server's certificate: the client refuses the server.
    let other = TempDir::new("other-ca");
    certificates(other.path());
    let err = failed(&psql(
        port,
        "alice",
        Some("wonder land"),
        &format!(
            "sslmode=verify-full sslrootcert={}",
            other.path().join("ca.pem").display()
        ),
        "SELECT 1",
    ));
    assert!(err.contains("certificate verify failed"), "{err}");

    // psycopg over verify-full, and psql's \password (driven through a terminal, as a user
    // types it): the verifier psql computes is stored as given and logs in.
    let python = std::env::var("TARN_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("TARN_TEST_PYTHON is not set: run scripts/test.sh, which creates the venv")
    });
    let out = Command::new(python)
        .arg(common::repo_path("tests/python/auth_clients.py"))
        .env("TARN_PORT", port.to_string())
        .env("TARN_CA", &ca)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "auth_clients.py: {}{}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        server.log()
    );
}
