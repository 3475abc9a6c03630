//! Issue 18: a transaction block's DDL commits with the block's writes or not at all, also
//! when the server dies in the middle of COMMIT. A migration-shaped block (ALTER TABLE … ADD
//! COLUMN, CREATE TABLE, DROP TABLE and the version table's UPDATE) is committed by a real
//! client while the server aborts at a named crash point (`TARN_CRASH_AT`, see
//! `src/storage/commit/log/crash_points.rs`): after the DDL is written but before the writes
//! commit (`ddl-applied`), and after the writes committed but before the block's decision
//! (`ddl-after-writes`). The restarted server shows the block wholly applied or not at all.

mod common;

use std::time::Duration;

use common::{TempDir, TestServer, sqlstate};

/// Sets up the migration's starting point.
async fn setup(client: &tokio_postgres::Client) {
    client
        .batch_execute(
            "CREATE TABLE alembic_version (version_num text PRIMARY KEY);
             INSERT INTO alembic_version VALUES ('v1');
             CREATE TABLE accounts (id int PRIMARY KEY, name text);
             INSERT INTO accounts VALUES (1, 'a');
             CREATE TABLE legacy (id int PRIMARY KEY);
             INSERT INTO legacy VALUES (1);
             UPDATE alembic_version SET version_num = 'v1';",
        )
        .await
        .unwrap();
}

/// The migration: one block with DDL and a write of the version table.
const MIGRATION: &str = "BEGIN;
    ALTER TABLE accounts ADD COLUMN email text;
    CREATE TABLE audit (id int PRIMARY KEY, what text);
    DROP TABLE legacy;
    UPDATE alembic_version SET version_num = 'v2';
    COMMIT;";

/// What the warehouse shows: (version, accounts has email, audit exists, legacy exists).
async fn state(client: &tokio_postgres::Client) -> (String, bool, bool, bool) {
    let version: String = client
        .query_one("SELECT version_num FROM alembic_version", &[])
        .await
        .unwrap()
        .get(0);
    let email = client.simple_query("SELECT email FROM accounts").await;
    let has_email = match &email {
        Ok(_) => true,
        Err(e) => {
            assert_eq!(sqlstate(e), "42703", "{e}");
            false
        }
    };
    let exists = |name: &'static str| async move {
        match client
            .simple_query(&format!("SELECT count(*) FROM {name}"))
            .await
        {
            Ok(_) => true,
            Err(e) => {
                assert_eq!(sqlstate(&e), "42P01", "{e}");
                false
            }
        }
    };
    (
        version,
        has_email,
        exists("audit").await,
        exists("legacy").await,
    )
}

/// Runs the migration against a server that aborts at `point`, restarts it, and returns
/// what the restarted server shows.
async fn crash_during_migration(point: &str) -> (String, bool, bool, bool) {
    let mut server = TestServer::start_with_env(&[("TARN_CRASH_AT", point)]);
    let client = server.client().await;
    setup(&client).await;
    let e = client
        .batch_execute(MIGRATION)
        .await
        .expect_err("the server dies during COMMIT");
    assert!(e.code().is_none(), "a lost connection, not an error: {e}");
    for _ in 0..500 {
        if !server.is_running() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!server.is_running(), "the server must die at {point}");
    let reached = format!("crash point {point} reached");
    assert!(server.log().contains(&reached), "log:\n{}", server.log());
    let warehouse = std::mem::replace(&mut server.warehouse, TempDir::new("spent"));
    drop(server);
    let server = TestServer::start_on(warehouse, &[]);
    let client = server.client().await;
    let out = state(&client).await;
    // The settled warehouse takes the migration (again) as a fresh one.
    if !out.1 {
        client.batch_execute(MIGRATION).await.unwrap();
        assert_eq!(state(&client).await, ("v2".to_owned(), true, true, false));
    }
    assert!(
        server.log().contains("settled a transaction block's DDL"),
        "log:\n{}",
        server.log()
    );
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_before_the_blocks_writes_commit_leaves_none_of_its_ddl() {
    assert_eq!(
        crash_during_migration("ddl-applied").await,
        ("v1".to_owned(), false, false, true)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_after_the_blocks_writes_commit_leaves_all_of_its_ddl() {
    assert_eq!(
        crash_during_migration("ddl-after-writes").await,
        ("v2".to_owned(), true, true, false)
    );
}

/// Without a crash the block commits whole, and a conflict refuses it whole.
#[tokio::test(flavor = "multi_thread")]
async fn a_conflicting_block_changes_nothing() {
    let server = TestServer::start();
    let client = server.client().await;
    setup(&client).await;
    let other = server.client().await;
    client
        .batch_execute(
            "BEGIN;
             ALTER TABLE accounts ADD COLUMN email text;
             CREATE TABLE audit (id int PRIMARY KEY, what text);
             DROP TABLE legacy;
             UPDATE alembic_version SET version_num = 'v2';",
        )
        .await
        .unwrap();
    other
        .batch_execute("ALTER TABLE accounts ADD COLUMN phone text")
        .await
        .unwrap();
    let e = client.batch_execute("COMMIT").await.unwrap_err();
    assert_eq!(sqlstate(&e), "40001", "{e}");
    assert_eq!(state(&client).await, ("v1".to_owned(), false, false, true));
    client.batch_execute(MIGRATION).await.unwrap();
    assert_eq!(state(&client).await, ("v2".to_owned(), true, true, false));
}
