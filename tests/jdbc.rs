//! pgjdbc's DatabaseMetaData (getTables, getColumns with nullability, precision and scale,
//! getPrimaryKeys, getIndexInfo) against the real binary: `tests/clients/java/
//! CatalogMetaData.java`, compiled with the installed JDK against Debian's pgjdbc
//! (`/usr/share/java/postgresql.jar`, `libpostgresql-jdbc-java`), prints what the driver
//! reports; the expected text was recorded from PostgreSQL 15 and is checked against it again
//! when `TARN_PG15_PORT` is set (scripts/test.sh).

mod common;

use std::path::Path;
use std::process::Command;

use common::{TempDir, TestServer, repo_path};

const PGJDBC: &str = "/usr/share/java/postgresql.jar";

/// What pgjdbc 42.5 reports for the two tables of `CatalogMetaData.java` on PostgreSQL 15.
const EXPECTED: &str = "\
table public.jdbc_orders TABLE
column jdbc_orders.id type=4 int4 size=10 digits=0 nullable=0 is_nullable=NO position=1
column jdbc_orders.name type=12 varchar size=20 digits=0 nullable=0 is_nullable=NO position=2
column jdbc_orders.amount type=2 numeric size=6 digits=2 nullable=1 is_nullable=YES position=3
column jdbc_orders.note type=12 text size=2147483647 digits=0 nullable=1 is_nullable=YES position=4
column jdbc_orders.created type=93 timestamp size=29 digits=6 nullable=1 is_nullable=YES position=5
column jdbc_orders.big type=-5 int8 size=19 digits=0 nullable=0 is_nullable=NO position=6
pk jdbc_orders.id seq=1 name=jdbc_orders_pkey
index jdbc_orders.jdbc_orders_pkey non_unique=false position=1 column=id order=A
table public.jdbc_lines TABLE
column jdbc_lines.order_id type=4 int4 size=10 digits=0 nullable=0 is_nullable=NO position=1
column jdbc_lines.line type=4 int4 size=10 digits=0 nullable=0 is_nullable=NO position=2
column jdbc_lines.sku type=1 bpchar size=8 digits=0 nullable=1 is_nullable=YES position=3
column jdbc_lines.qty type=-5 int8 size=19 digits=0 nullable=0 is_nullable=NO position=4
pk jdbc_lines.order_id seq=1 name=jdbc_lines_pkey
pk jdbc_lines.line seq=2 name=jdbc_lines_pkey
index jdbc_lines.jdbc_lines_pkey non_unique=false position=1 column=order_id order=A
index jdbc_lines.jdbc_lines_pkey non_unique=false position=2 column=line order=A
";

fn compile(dir: &Path) {
    assert!(
        Path::new(PGJDBC).exists(),
        "{PGJDBC} is missing: apt-get install libpostgresql-jdbc-java"
    );
    let out = Command::new("javac")
        .arg("-d")
        .arg(dir)
        .arg(repo_path("tests/clients/java/CatalogMetaData.java"))
        .arg("-cp")
        .arg(PGJDBC)
        .output()
        .expect("javac is installed (a JDK 17)");
    assert!(
        out.status.success(),
        "javac failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn run(dir: &Path, port: u16, database: &str, user: &str) -> String {
    let out = Command::new("java")
        .arg("-cp")
        .arg(format!("{PGJDBC}:{}", dir.display()))
        .arg("CatalogMetaData")
        .arg(format!("jdbc:postgresql://127.0.0.1:{port}/{database}"))
        .arg(user)
        .output()
        .expect("java is installed");
    assert!(
        out.status.success(),
        "CatalogMetaData failed on port {port}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn pgjdbc_database_metadata_is_what_postgres_reports() {
    let dir = TempDir::new("jdbc");
    compile(dir.path());
    let server = TestServer::start();
    assert_eq!(
        run(dir.path(), server.port, "shop", "ann"),
        EXPECTED,
        "tarn"
    );
    if let Some(port) = std::env::var("TARN_PG15_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
    {
        assert_eq!(
            run(dir.path(), port, "postgres", "postgres"),
            EXPECTED,
            "postgresql 15"
        );
    }
}
