//! Python drivers (psycopg 3) against the real binary, through pytest.
//!
//! `TARN_TEST_PYTHON` names a Python with psycopg and pytest installed; `scripts/test.sh`
//! creates that venv. Without it this test fails and says so: it never skips silently.

mod common;

use std::process::Command;

#[test]
fn psycopg_suite() {
    let python = std::env::var("TARN_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("TARN_TEST_PYTHON is not set: run scripts/test.sh, which creates a venv with psycopg and pytest")
    });
    let server = common::TestServer::start();
    let dir = common::repo_path("tests/python");
    let out = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(&dir)
        .env("TARN_PORT", server.port.to_string())
        .env("TARN_WAREHOUSE", server.warehouse.path())
        // These suites hand what tarn commits to pypaimon at once (and count snapshots), as a
        // pipeline handing off to another engine would: COMMIT returns once the commit is in
        // a Paimon snapshot (libpq's PGOPTIONS reaches every psycopg connection).
        .env("PGOPTIONS", "-c tarn.flush_on_commit=on")
        .output()
        .expect("run pytest");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // CI shows the tail of a failure, so pytest's own report comes last and the server log
    // before it keeps only what can explain a failure: warnings, errors and panics.
    assert!(
        out.status.success(),
        "server log (warnings and errors):\n{}\n\npytest failed:\n{text}",
        notable_lines(&server.log())
    );
    println!("{text}");
}

/// The server log's WARN/ERROR lines and panic messages (the INFO lines of a whole suite run
/// would push pytest's report out of the CI excerpt).
fn notable_lines(log: &str) -> String {
    log.lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR ") || l.contains("panicked"))
        .collect::<Vec<_>>()
        .join("\n")
}
