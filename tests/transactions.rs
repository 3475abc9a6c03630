//! Row-level DML and transaction blocks through a real client (tokio-postgres): subqueries in
//! DELETE/UPDATE, row locks (a second writer of a row waits; READ COMMITTED then works on the
//! committed row, REPEATABLE READ fails with 40001; deadlocks, lock_timeout, release at
//! ROLLBACK and disconnect), first-committer-wins for what takes no lock, writers of different
//! keys never waiting on each other, snapshot isolation, one snapshot per committed block (none
//! for ROLLBACK or a failed block), failed blocks (25P02), savepoints, disconnects, the
//! one-table-per-block rule, refused SERIALIZABLE, and concurrent bank transfers that must
//! conserve money.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::{TestServer, sqlstate};
use tokio_postgres::{Client, SimpleQueryMessage};

/// How long a step that must not wait on another transaction may take.
const NO_WAIT: Duration = Duration::from_secs(10);

/// Snapshots of `public.<table>` committed by statements (COMPACT snapshots left out), once
/// the commit log's commits of the table are flushed: how many commits changed the table (each
/// statement of these tests is one transaction, and a flush after each count holds them all).
async fn snapshot_count(server: &TestServer, table: &str) -> usize {
    server
        .client()
        .await
        .batch_execute(&format!("call sys.flush('{table}')"))
        .await
        .unwrap();
    let dir = server
        .warehouse
        .path()
        .join("public.db")
        .join(table)
        .join("snapshot");
    // Compactions commit snapshots of their own; only commits of statements count here.
    let is_compact = |path: &std::path::Path| {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|v| v["commitKind"] == "COMPACT")
    };
    std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("snapshot-"))
                .filter(|e| !is_compact(&e.path()))
                .count()
        })
        .unwrap_or(0)
}

/// Every data file under `dir`.
fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(parquet_files(&p));
            } else if p.extension().is_some_and(|x| x == "parquet") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn table_dir(server: &TestServer, table: &str) -> PathBuf {
    server.warehouse.path().join("public.db").join(table)
}

/// `(id, v)` of every row of a table with columns `id int` and `v text not null`, by id.
async fn rows(c: &Client, table: &str) -> Vec<(i32, String)> {
    c.query(&format!("select id, v from {table} order by id"), &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

async fn ids(c: &Client, sql: &str) -> Vec<i32> {
    c.query(sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// The text of a one-value result (SHOW, simple protocol).
async fn show(c: &Client, name: &str) -> String {
    c.simple_query(&format!("show {name}"))
        .await
        .unwrap()
        .iter()
        .find_map(|m| match m {
            SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
            _ => None,
        })
        .unwrap()
}

/// Runs `sql` (simple protocol) and expects it to fail with `code`.
async fn fails_with(c: &Client, sql: &str, code: &str) {
    match c.batch_execute(sql).await {
        Ok(()) => panic!("{sql}: succeeded, expected {code}"),
        Err(e) => assert_eq!(sqlstate(&e), code, "{sql}: {e:?}"),
    }
}

/// The number of rows a DML statement reports.
async fn exec(c: &Client, sql: &str) -> u64 {
    c.execute(sql, &[])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
}

fn kv(pairs: &[(i32, &str)]) -> Vec<(i32, String)> {
    pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()
}

/// A table `name (id int primary key, v text not null)` holding ids 1..=n with v = 'v<id>'.
async fn kv_table(c: &Client, name: &str, n: i32, options: &str) {
    c.batch_execute(&format!(
        "create table {name} (id int primary key, v text not null) {options};
         insert into {name} select i, 'v' || i from generate_series(1, {n}) as t(i);"
    ))
    .await
    .unwrap();
}

// ---------------------------------------------------------------------------------------------
// subqueries in DELETE and UPDATE

/// apache/datafusion#24654 handed `delete_from` empty filters when the WHERE held
/// `IN (SELECT ...)`, which deleted every row. Only the selected rows may go.
#[tokio::test]
async fn delete_where_in_subquery_deletes_only_those_rows() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute(
        "create table items (id int primary key, grp int not null, v text not null)
             with (bucket = 2);
         insert into items select i, i % 4, 'v' || i from generate_series(1, 20) as t(i);
         create table picks (id int primary key, why text);
         insert into picks values (3, 'a'), (5, 'b'), (7, 'a'), (99, 'a');",
    )
    .await
    .unwrap();
    let all = |skip: &[i32]| -> Vec<i32> { (1..=20).filter(|i| !skip.contains(i)).collect() };

    // IN (SELECT ...) of another table.
    assert_eq!(
        exec(
            &c,
            "delete from items where id in (select id from picks where why = 'a')"
        )
        .await,
        2
    );
    assert_eq!(
        ids(&c, "select id from items order by id").await,
        all(&[3, 7])
    );

    // Uncorrelated IN with nothing selected: nothing deleted.
    assert_eq!(
        exec(
            &c,
            "delete from items where id in (select id from picks where why = 'none')"
        )
        .await,
        0
    );
    assert_eq!(
        ids(&c, "select id from items order by id").await,
        all(&[3, 7])
    );

    // Correlated EXISTS.
    assert_eq!(
        exec(
            &c,
            "delete from items i where exists (select 1 from picks p where p.id = i.id)"
        )
        .await,
        1
    );
    assert_eq!(
        ids(&c, "select id from items order by id").await,
        all(&[3, 5, 7])
    );

    // Uncorrelated EXISTS that is false: nothing (a lost filter would delete everything).
    assert_eq!(
        exec(
            &c,
            "delete from items where exists (select 1 from picks where id = 12345)"
        )
        .await,
        0
    );
    assert_eq!(
        ids(&c, "select id from items order by id").await,
        all(&[3, 5, 7])
    );

    // NOT IN and a subquery over the target table itself, combined with a value filter.
    assert_eq!(
        exec(
            &c,
            "delete from items where grp = 1 and id not in (select id from items where id < 10)"
        )
        .await,
        2 // grp 1 is 1, 9, 13, 17 (5 is gone); 13 and 17 are not below 10
    );
    assert_eq!(
        ids(&c, "select id from items order by id").await,
        all(&[3, 5, 7, 13, 17])
    );

    // UPDATE ... WHERE id IN (SELECT ...): only those rows change.
    assert_eq!(
        exec(
            &c,
            "update items set v = 'picked' where id in (select id + 1 from picks)"
        )
        .await,
        3 // 4, 6, 8 (100 does not exist)
    );
    assert_eq!(
        ids(&c, "select id from items where v = 'picked' order by id").await,
        vec![4, 6, 8]
    );
    assert_eq!(
        ids(&c, "select count(*)::int from items where v like 'v%'").await,
        vec![15 - 3]
    );

    // UPDATE with a correlated EXISTS and a scalar subquery in SET.
    assert_eq!(
        exec(
            &c,
            "update items i set v = (select max(why) from picks p where p.id = i.id - 10) \
             where exists (select 1 from picks p where p.id = i.id - 10)"
        )
        .await,
        1 // 15 (13 and 17 are gone)
    );
    let row = c
        .query_one("select v from items where id = 15", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, &str>(0), "b");

    // The extended protocol with a parameter inside the subquery.
    let n = c
        .execute(
            "delete from items where id in (select id + 10 from picks where id > $1)",
            &[&4i32],
        )
        .await
        .unwrap();
    assert_eq!(n, 1); // 15 (17 is gone, 109 never existed)
    assert_eq!(
        ids(&c, "select id from items order by id").await,
        all(&[3, 5, 7, 13, 15, 17])
    );

    // Inside a block, then rolled back: the rows are back.
    c.batch_execute("begin").await.unwrap();
    assert_eq!(
        exec(
            &c,
            "delete from items where id in (select id from items where grp = 0)"
        )
        .await,
        5 // 4, 8, 12, 16, 20
    );
    assert_eq!(
        ids(&c, "select count(*)::int from items").await,
        vec![14 - 5]
    );
    c.batch_execute("rollback").await.unwrap();
    assert_eq!(
        ids(&c, "select id from items order by id").await,
        all(&[3, 5, 7, 13, 15, 17])
    );
}

// ---------------------------------------------------------------------------------------------
// concurrency between blocks

/// `n` of row `id` of `counter`.
async fn n_of(c: &Client, id: i32) -> i64 {
    c.query_one("select n from counter where id = $1", &[&id])
        .await
        .unwrap()
        .get(0)
}

/// A table `counter (id int primary key, n bigint not null)` holding ids 1..=3 with n = 0.
async fn counter_table(c: &Client) {
    c.batch_execute(
        "create table counter (id int primary key, n bigint not null) with (bucket = 2);
         insert into counter values (1, 0), (2, 0), (3, 0);",
    )
    .await
    .unwrap();
}

/// How long a step that must wait is watched before it counts as waiting.
const WAITS: Duration = Duration::from_millis(400);

/// Whether `step` is still pending after [`WAITS`] (it keeps its progress: poll it again).
async fn still_waits<F: std::future::Future + Unpin>(step: &mut F) -> bool {
    tokio::time::timeout(WAITS, step).await.is_err()
}

/// PostgreSQL's READ COMMITTED: a second UPDATE of a row waits for the first block's row lock,
/// then works on the row as that block committed it — no error, no lost update. An autocommit
/// UPDATE waits the same way, and a lock ends with its block (COMMIT, ROLLBACK, disconnect).
#[tokio::test]
async fn read_committed_update_waits_for_the_row_lock() {
    let server = TestServer::start();
    let setup = server.client().await;
    counter_table(&setup).await;
    let a = server.client().await;
    let b = server.client().await;

    a.batch_execute("begin").await.unwrap();
    assert_eq!(
        exec(&a, "update counter set n = n + 1 where id = 1").await,
        1
    );
    b.batch_execute("begin").await.unwrap();
    // Another row of the table is not locked.
    tokio::time::timeout(
        NO_WAIT,
        b.execute("update counter set n = n + 5 where id = 2", &[]),
    )
    .await
    .expect("B waited for a row A does not hold")
    .unwrap();
    let mut waiting = Box::pin(b.execute("update counter set n = n + 10 where id = 1", &[]));
    assert!(
        still_waits(&mut waiting).await,
        "B's UPDATE waits for A's row lock"
    );
    a.batch_execute("commit").await.unwrap();
    let n = tokio::time::timeout(NO_WAIT, waiting)
        .await
        .expect("B's UPDATE went on once A committed")
        .unwrap();
    assert_eq!(n, 1);
    // B's UPDATE built on A's committed value; nothing is lost when B commits.
    assert_eq!(n_of(&b, 1).await, 11);
    b.batch_execute("commit").await.unwrap();
    assert_eq!((n_of(&setup, 1).await, n_of(&setup, 2).await), (11, 5));

    // An autocommit UPDATE waits for a block's lock the same way.
    a.batch_execute("begin").await.unwrap();
    exec(&a, "update counter set n = n * 2 where id = 1").await;
    let mut waiting = Box::pin(b.execute("update counter set n = n + 1 where id = 1", &[]));
    assert!(
        still_waits(&mut waiting).await,
        "the autocommit UPDATE waits"
    );
    a.batch_execute("commit").await.unwrap();
    tokio::time::timeout(NO_WAIT, waiting)
        .await
        .expect("woken")
        .unwrap();
    assert_eq!(n_of(&setup, 1).await, 23);

    // A DELETE waits too, and then finds no row to delete when the holder deleted it.
    a.batch_execute("begin").await.unwrap();
    exec(&a, "delete from counter where id = 3").await;
    let mut waiting = Box::pin(b.execute("delete from counter where id = 3", &[]));
    assert!(still_waits(&mut waiting).await, "the DELETE waits");
    a.batch_execute("commit").await.unwrap();
    let n = tokio::time::timeout(NO_WAIT, waiting)
        .await
        .expect("woken")
        .unwrap();
    assert_eq!(n, 0, "the row was gone once B's DELETE could look again");

    // ROLLBACK releases the lock, and the waiter works on the row as it was.
    a.batch_execute("begin").await.unwrap();
    exec(&a, "update counter set n = 1000 where id = 2").await;
    let mut waiting = Box::pin(b.execute("update counter set n = n + 1 where id = 2", &[]));
    assert!(still_waits(&mut waiting).await);
    a.batch_execute("rollback").await.unwrap();
    tokio::time::timeout(NO_WAIT, waiting)
        .await
        .expect("woken")
        .unwrap();
    assert_eq!(n_of(&setup, 2).await, 6);

    // A connection that ends inside its block releases its locks.
    let c = server.client().await;
    c.batch_execute("begin").await.unwrap();
    exec(&c, "update counter set n = -1 where id = 2").await;
    let mut waiting = Box::pin(b.execute("update counter set n = n + 1 where id = 2", &[]));
    assert!(still_waits(&mut waiting).await);
    drop(c);
    tokio::time::timeout(NO_WAIT, waiting)
        .await
        .expect("the disconnect released the lock")
        .unwrap();
    assert_eq!(n_of(&setup, 2).await, 7);
}

/// PostgreSQL's REPEATABLE READ: the second UPDATE waits too, then fails with 40001 if the
/// first block committed (the block has failed: 25P02 until ROLLBACK), or goes on if it
/// rolled back. A row another connection changed after the snapshot fails the UPDATE at once.
#[tokio::test]
async fn repeatable_read_update_fails_once_the_holder_commits() {
    let server = TestServer::start();
    let setup = server.client().await;
    counter_table(&setup).await;
    let a = server.client().await;
    let b = server.client().await;
    let rr = "begin isolation level repeatable read";

    a.batch_execute(rr).await.unwrap();
    b.batch_execute(rr).await.unwrap();
    assert_eq!(n_of(&b, 1).await, 0, "B's snapshot");
    exec(&a, "update counter set n = n + 1 where id = 1").await;
    let mut waiting = Box::pin(b.execute("update counter set n = n + 10 where id = 1", &[]));
    assert!(
        still_waits(&mut waiting).await,
        "B's UPDATE waits for A's row lock"
    );
    a.batch_execute("commit").await.unwrap();
    let err = tokio::time::timeout(NO_WAIT, waiting)
        .await
        .expect("woken")
        .unwrap_err();
    assert_eq!(sqlstate(&err), "40001", "{err:?}");
    fails_with(&b, "select 1", "25P02").await;
    b.batch_execute("rollback").await.unwrap();
    assert_eq!(n_of(&setup, 1).await, 1);

    // The holder rolls back: the waiter's UPDATE goes on and commits.
    a.batch_execute(rr).await.unwrap();
    b.batch_execute(rr).await.unwrap();
    assert_eq!(n_of(&b, 1).await, 1);
    exec(&a, "update counter set n = 100 where id = 1").await;
    let mut waiting = Box::pin(b.execute("update counter set n = n + 10 where id = 1", &[]));
    assert!(still_waits(&mut waiting).await);
    a.batch_execute("rollback").await.unwrap();
    assert_eq!(
        tokio::time::timeout(NO_WAIT, waiting)
            .await
            .expect("woken")
            .unwrap(),
        1
    );
    b.batch_execute("commit").await.unwrap();
    assert_eq!(n_of(&setup, 1).await, 11);

    // No wait at all: the row changed and committed after B's snapshot.
    b.batch_execute(rr).await.unwrap();
    assert_eq!(n_of(&b, 2).await, 0);
    exec(&a, "update counter set n = n + 1 where id = 2").await;
    fails_with(&b, "update counter set n = n + 1 where id = 2", "40001").await;
    b.batch_execute("rollback").await.unwrap();
    assert_eq!(n_of(&setup, 2).await, 1);
}

/// Two blocks that each hold a row the other's next UPDATE wants: the one that closes the
/// cycle fails with 40P01, its block's locks go with the failure, and the other goes on. A
/// `lock_timeout` ends a wait with 55P03.
#[tokio::test]
async fn crossing_updates_deadlock_and_lock_timeout() {
    let server = TestServer::start();
    let setup = server.client().await;
    counter_table(&setup).await;
    let a = server.client().await;
    let b = server.client().await;

    a.batch_execute("begin").await.unwrap();
    b.batch_execute("begin").await.unwrap();
    exec(&a, "update counter set n = n + 1 where id = 1").await;
    exec(&b, "update counter set n = n + 10 where id = 2").await;
    let mut a_waits = Box::pin(a.execute("update counter set n = n + 1 where id = 2", &[]));
    assert!(still_waits(&mut a_waits).await, "A waits for B's row");
    let err = tokio::time::timeout(
        NO_WAIT,
        b.execute("update counter set n = n + 10 where id = 1", &[]),
    )
    .await
    .expect("the deadlock is found, not waited out")
    .unwrap_err();
    assert_eq!(sqlstate(&err), "40P01", "{err:?}");
    // B's block failed and released its rows: A goes on and commits both of its changes.
    assert_eq!(
        tokio::time::timeout(NO_WAIT, a_waits)
            .await
            .expect("A went on after B's failure")
            .unwrap(),
        1
    );
    fails_with(&b, "select 1", "25P02").await;
    b.batch_execute("rollback").await.unwrap();
    a.batch_execute("commit").await.unwrap();
    assert_eq!((n_of(&setup, 1).await, n_of(&setup, 2).await), (1, 1));

    // lock_timeout bounds the wait.
    a.batch_execute("begin").await.unwrap();
    exec(&a, "update counter set n = 0 where id = 3").await;
    b.batch_execute("set lock_timeout = '200ms'").await.unwrap();
    let err = tokio::time::timeout(
        NO_WAIT,
        b.execute("update counter set n = 5 where id = 3", &[]),
    )
    .await
    .expect("lock_timeout ended the wait")
    .unwrap_err();
    assert_eq!(sqlstate(&err), "55P03", "{err:?}");
    a.batch_execute("commit").await.unwrap();
    b.batch_execute("reset lock_timeout").await.unwrap();
    exec(&b, "update counter set n = 5 where id = 3").await;
    assert_eq!(n_of(&setup, 3).await, 5);
}

/// What takes no row lock is still checked at COMMIT (the safety net for writers on other
/// servers or engines): two blocks that insert one new key both run their INSERT (a plain
/// INSERT locks nothing), and the second to commit fails with 23505, keeping nothing of its
/// block. (PostgreSQL would make the second INSERT wait and fail it there.)
#[tokio::test]
async fn unlocked_inserts_of_one_key_first_committer_wins() {
    let server = TestServer::start();
    let setup = server.client().await;
    kv_table(&setup, "acct", 3, "with (bucket = 2)").await;
    let a = server.client().await;
    let b = server.client().await;
    let before = snapshot_count(&server, "acct").await;
    a.batch_execute("begin").await.unwrap();
    b.batch_execute("begin").await.unwrap();
    exec(&a, "insert into acct values (100, 'a')").await;
    exec(&b, "update acct set v = 'b' where id = 3").await;
    tokio::time::timeout(
        NO_WAIT,
        b.execute("insert into acct values (100, 'b')", &[]),
    )
    .await
    .expect("a plain INSERT waits for nothing")
    .unwrap();
    a.batch_execute("commit").await.unwrap();
    fails_with(&b, "commit", "23505").await;
    let all = rows(&setup, "acct").await;
    assert_eq!(
        all,
        kv(&[(1, "v1"), (2, "v2"), (3, "v3"), (100, "a")]),
        "nothing of B's block"
    );
    assert_eq!(snapshot_count(&server, "acct").await, before + 1);
}

#[tokio::test]
async fn different_keys_commit_without_waiting() {
    let server = TestServer::start();
    let setup = server.client().await;
    // One bucket: both keys live in the same bucket (and the same files).
    kv_table(&setup, "pair", 4, "with (bucket = 1)").await;
    let a = server.client().await;
    let b = server.client().await;

    a.batch_execute("begin").await.unwrap();
    exec(&a, "update pair set v = 'from a' where id = 1").await;
    // A stays open. B's whole block, then an autocommit statement, run to the end meanwhile.
    tokio::time::timeout(NO_WAIT, async {
        b.batch_execute("begin").await.unwrap();
        exec(&b, "update pair set v = 'from b' where id = 2").await;
        exec(&b, "insert into pair values (10, 'b new')").await;
        b.batch_execute("commit").await.unwrap();
        exec(&b, "update pair set v = 'b autocommit' where id = 3").await;
    })
    .await
    .expect("B waited on A's open block: a lock is held across A's transaction");
    // A sees B's committed rows (READ COMMITTED) and its own write, and commits too.
    assert_eq!(
        rows(&a, "pair").await,
        kv(&[
            (1, "from a"),
            (2, "from b"),
            (3, "b autocommit"),
            (4, "v4"),
            (10, "b new")
        ])
    );
    exec(&a, "delete from pair where id = 4").await;
    tokio::time::timeout(NO_WAIT, a.batch_execute("commit"))
        .await
        .expect("A's COMMIT waited")
        .unwrap();
    let expected = kv(&[
        (1, "from a"),
        (2, "from b"),
        (3, "b autocommit"),
        (10, "b new"),
    ]);
    assert_eq!(rows(&setup, "pair").await, expected);
    assert_eq!(rows(&b, "pair").await, expected);

    // Both blocks open at once, each writing its own keys; they commit in either order.
    a.batch_execute("begin isolation level repeatable read")
        .await
        .unwrap();
    b.batch_execute("begin isolation level repeatable read")
        .await
        .unwrap();
    exec(&a, "update pair set v = 'a2' where id = 1").await;
    exec(&b, "update pair set v = 'b2' where id = 2").await;
    exec(&a, "insert into pair values (20, 'a2')").await;
    exec(&b, "insert into pair values (21, 'b2')").await;
    tokio::time::timeout(NO_WAIT, b.batch_execute("commit"))
        .await
        .expect("B's COMMIT waited")
        .unwrap();
    tokio::time::timeout(NO_WAIT, a.batch_execute("commit"))
        .await
        .expect("A's COMMIT waited")
        .unwrap();
    assert_eq!(
        rows(&setup, "pair").await,
        kv(&[
            (1, "a2"),
            (2, "b2"),
            (3, "b autocommit"),
            (10, "b new"),
            (20, "a2"),
            (21, "b2")
        ])
    );
}

#[tokio::test]
async fn snapshot_isolation() {
    let server = TestServer::start();
    let b = server.client().await;
    kv_table(&b, "snap", 3, "with (bucket = 2)").await;
    let a = server.client().await;
    let initial = kv(&[(1, "v1"), (2, "v2"), (3, "v3")]);

    // REPEATABLE READ: the block reads the snapshot of its first read.
    a.batch_execute("begin isolation level repeatable read")
        .await
        .unwrap();
    assert_eq!(rows(&a, "snap").await, initial);
    exec(&b, "update snap set v = 'b' where id = 2").await;
    exec(&b, "insert into snap values (4, 'b new')").await;
    exec(&b, "delete from snap where id = 3").await;
    assert_eq!(
        rows(&b, "snap").await,
        kv(&[(1, "v1"), (2, "b"), (4, "b new")])
    );
    assert_eq!(
        rows(&a, "snap").await,
        initial,
        "A still reads its snapshot"
    );
    let count: i64 = a
        .query_one("select count(*) from snap where id > 1", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 2);
    // A's own writes are seen on top of its snapshot.
    exec(&a, "update snap set v = 'a' where id = 1").await;
    exec(&a, "insert into snap values (5, 'a new')").await;
    assert_eq!(
        rows(&a, "snap").await,
        kv(&[(1, "a"), (2, "v2"), (3, "v3"), (5, "a new")])
    );
    // B does not see A's uncommitted writes.
    assert_eq!(
        rows(&b, "snap").await,
        kv(&[(1, "v1"), (2, "b"), (4, "b new")])
    );
    a.batch_execute("commit").await.unwrap();
    let merged = kv(&[(1, "a"), (2, "b"), (4, "b new"), (5, "a new")]);
    assert_eq!(rows(&a, "snap").await, merged);
    assert_eq!(rows(&b, "snap").await, merged);

    // READ COMMITTED (plain BEGIN), as PostgreSQL: each statement sees what committed before
    // it, plus the block's own writes.
    a.batch_execute("begin").await.unwrap();
    assert_eq!(rows(&a, "snap").await, merged);
    exec(&a, "update snap set v = 'a again' where id = 1").await;
    exec(&b, "update snap set v = 'b again' where id = 2").await;
    assert_eq!(
        rows(&a, "snap").await,
        kv(&[(1, "a again"), (2, "b again"), (4, "b new"), (5, "a new")])
    );
    assert_eq!(
        rows(&b, "snap").await,
        kv(&[(1, "a"), (2, "b again"), (4, "b new"), (5, "a new")])
    );
    a.batch_execute("commit").await.unwrap();
    assert_eq!(
        rows(&b, "snap").await,
        kv(&[(1, "a again"), (2, "b again"), (4, "b new"), (5, "a new")])
    );

    // The default level can be REPEATABLE READ too.
    a.batch_execute("set default_transaction_isolation = 'repeatable read'; begin")
        .await
        .unwrap();
    assert_eq!(show(&a, "transaction_isolation").await, "repeatable read");
    let seen = rows(&a, "snap").await;
    exec(&b, "delete from snap where id = 5").await;
    assert_eq!(rows(&a, "snap").await, seen);
    a.batch_execute("commit").await.unwrap();
    assert_eq!(rows(&a, "snap").await.len(), seen.len() - 1);
}

/// PostgreSQL's REPEATABLE READ takes ONE snapshot, at the block's first statement, for every
/// table. tarn pins each table's snapshot at the block's first access to THAT table (Paimon
/// snapshots are per table): listed as `rr-snapshot-per-table` in sql/known-mismatches.md. This
/// test pins tarn's behaviour down: a table first read after another commit shows it, and from
/// then on the block keeps that table's snapshot.
#[tokio::test]
async fn repeatable_read_pins_each_table_at_first_access() {
    let server = TestServer::start();
    let b = server.client().await;
    kv_table(&b, "first_t", 2, "").await;
    kv_table(&b, "second_t", 2, "").await;
    let a = server.client().await;
    a.batch_execute("begin isolation level repeatable read")
        .await
        .unwrap();
    assert_eq!(rows(&a, "first_t").await, kv(&[(1, "v1"), (2, "v2")]));
    exec(&b, "update second_t set v = 'later' where id = 1").await;
    exec(&b, "update first_t set v = 'later' where id = 1").await;
    // first_t was pinned before B's commit; second_t is pinned now, after it.
    assert_eq!(rows(&a, "first_t").await, kv(&[(1, "v1"), (2, "v2")]));
    assert_eq!(rows(&a, "second_t").await, kv(&[(1, "later"), (2, "v2")]));
    exec(&b, "insert into second_t values (3, 'even later')").await;
    assert_eq!(rows(&a, "second_t").await, kv(&[(1, "later"), (2, "v2")]));
    a.batch_execute("commit").await.unwrap();
}

/// `SET TRANSACTION ISOLATION LEVEL ...` as the first statement of a block sets the block's
/// level, as `BEGIN ISOLATION LEVEL ...` does.
#[tokio::test]
async fn set_transaction_isolation_level_in_block_is_honoured() {
    let server = TestServer::start();
    let b = server.client().await;
    kv_table(&b, "stx", 2, "").await;
    let a = server.client().await;
    a.batch_execute("begin; set transaction isolation level repeatable read")
        .await
        .unwrap();
    assert_eq!(show(&a, "transaction_isolation").await, "repeatable read");
    let seen = rows(&a, "stx").await;
    exec(&b, "update stx set v = 'changed' where id = 1").await;
    assert_eq!(rows(&a, "stx").await, seen, "the block reads one snapshot");
    a.batch_execute("commit").await.unwrap();
}

/// Under READ COMMITTED a later statement of a block checks new keys against the snapshot it
/// reads, not the block's first one: a key another transaction deleted meanwhile may be
/// inserted (it was 23505), one it inserted meanwhile fails with 23505 (it overwrote the other
/// transaction's row at COMMIT), and an upsert of a key deleted meanwhile inserts it.
#[tokio::test]
async fn read_committed_statements_check_new_keys_against_what_they_read() {
    let server = TestServer::start();
    let b = server.client().await;
    kv_table(&b, "rck", 3, "with (bucket = 2)").await;
    let a = server.client().await;
    a.batch_execute("begin").await.unwrap();
    exec(&a, "update rck set v = 'a' where id = 1").await;
    exec(&b, "delete from rck where id in (2, 3)").await;
    exec(&b, "insert into rck values (4, 'b4')").await;
    exec(&a, "insert into rck values (2, 'a2')").await;
    exec(
        &a,
        "insert into rck values (3, 'a3') on conflict (id) do update set v = excluded.v",
    )
    .await;
    let err = a
        .execute("insert into rck values (4, 'a4')", &[])
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "23505", "{err:?}");
    a.batch_execute("rollback").await.unwrap();

    a.batch_execute("begin").await.unwrap();
    exec(&a, "update rck set v = 'a' where id = 1").await;
    exec(&b, "delete from rck where id = 4").await;
    exec(&a, "insert into rck values (4, 'a4'), (2, 'a2')").await;
    a.batch_execute("commit").await.unwrap();
    assert_eq!(
        rows(&b, "rck").await,
        vec![
            (1, "a".to_owned()),
            (2, "a2".to_owned()),
            (4, "a4".to_owned())
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// snapshots per transaction

#[tokio::test]
async fn one_snapshot_per_transaction() {
    let server = TestServer::start();
    let c = server.client().await;
    kv_table(&c, "snaps", 10, "with (bucket = 3)").await;
    assert_eq!(snapshot_count(&server, "snaps").await, 1);

    // A block of three statements + COMMIT: one snapshot.
    c.batch_execute("begin").await.unwrap();
    exec(&c, "update snaps set v = 'u' where id <= 5").await;
    exec(&c, "delete from snaps where id = 10").await;
    exec(&c, "insert into snaps values (11, 'new'), (12, 'new')").await;
    assert_eq!(
        snapshot_count(&server, "snaps").await,
        1,
        "nothing committed before COMMIT"
    );
    c.batch_execute("commit").await.unwrap();
    assert_eq!(snapshot_count(&server, "snaps").await, 2);
    let after_commit = rows(&c, "snaps").await;
    assert_eq!(after_commit.len(), 11);

    // A block + ROLLBACK: none.
    c.batch_execute("begin").await.unwrap();
    exec(&c, "update snaps set v = 'gone'").await;
    exec(&c, "delete from snaps where id < 3").await;
    exec(&c, "insert into snaps values (50, 'gone')").await;
    c.batch_execute("rollback").await.unwrap();
    assert_eq!(snapshot_count(&server, "snaps").await, 2);
    assert_eq!(rows(&c, "snaps").await, after_commit);

    // A block that fails, then COMMIT (which rolls back): none.
    c.batch_execute("begin").await.unwrap();
    exec(&c, "update snaps set v = 'doomed' where id = 1").await;
    fails_with(&c, "insert into snaps values (2, 'duplicate')", "23505").await;
    c.batch_execute("commit").await.unwrap();
    assert_eq!(snapshot_count(&server, "snaps").await, 2);
    assert_eq!(rows(&c, "snaps").await, after_commit);

    // An autocommit UPDATE: one.
    assert_eq!(
        exec(&c, "update snaps set v = 'auto' where id = 1").await,
        1
    );
    assert_eq!(snapshot_count(&server, "snaps").await, 3);

    // Statements that change no rows have nothing to commit: PostgreSQL reports UPDATE 0 /
    // DELETE 0 and nothing changes, so no snapshot is made (autocommit or in a block).
    assert_eq!(exec(&c, "update snaps set v = 'x' where id = 999").await, 0);
    assert_eq!(exec(&c, "delete from snaps where v = 'no such'").await, 0);
    assert_eq!(snapshot_count(&server, "snaps").await, 3);
    c.batch_execute("begin").await.unwrap();
    assert_eq!(exec(&c, "update snaps set v = 'x' where id < 0").await, 0);
    assert_eq!(
        exec(
            &c,
            "insert into snaps values (1, 'x') on conflict (id) do nothing"
        )
        .await,
        0
    );
    c.batch_execute("commit").await.unwrap();
    assert_eq!(snapshot_count(&server, "snaps").await, 3);

    // A block that only reads, and an empty block: none.
    c.batch_execute("begin").await.unwrap();
    rows(&c, "snaps").await;
    c.batch_execute("commit; begin; commit").await.unwrap();
    assert_eq!(snapshot_count(&server, "snaps").await, 3);

    // Several statements of every kind in one block: still one.
    c.batch_execute(
        "begin;
         update snaps set v = 'k' where id = 3;
         delete from snaps where id in (select id from snaps where id > 10);
         insert into snaps values (30, 'ins') on conflict (id) do update set v = excluded.v;
         upsert into snaps values (31, 'ups');
         merge into snaps t using (values (4, 'm'), (40, 'm')) as s(id, v) on t.id = s.id
           when matched then update set v = s.v when not matched then insert values (s.id, s.v);
         commit;",
    )
    .await
    .unwrap();
    assert_eq!(snapshot_count(&server, "snaps").await, 4);
    assert_eq!(
        ids(&c, "select id from snaps order by id").await,
        vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 30, 31, 40]
    );
}

// ---------------------------------------------------------------------------------------------
// failures, savepoints, disconnects

#[tokio::test]
async fn error_in_block_then_25p02_then_rollback() {
    let server = TestServer::start();
    let c = server.client().await;
    kv_table(&c, "errs", 3, "").await;
    let before = snapshot_count(&server, "errs").await;

    c.batch_execute("begin").await.unwrap();
    exec(&c, "insert into errs values (10, 'in block')").await;
    exec(&c, "update errs set v = 'in block' where id = 1").await;
    fails_with(&c, "select 1 / 0", "22012").await;
    // Every statement is refused until the block ends, reads and writes alike.
    fails_with(&c, "select * from errs", "25P02").await;
    fails_with(&c, "insert into errs values (11, 'x')", "25P02").await;
    fails_with(&c, "update errs set v = 'x'", "25P02").await;
    fails_with(&c, "savepoint s", "25P02").await;
    c.batch_execute("rollback").await.unwrap();
    assert_eq!(
        rows(&c, "errs").await,
        kv(&[(1, "v1"), (2, "v2"), (3, "v3")])
    );
    assert_eq!(snapshot_count(&server, "errs").await, before);

    // A failing write (NOT NULL) fails the block the same way; COMMIT then rolls back.
    c.batch_execute("begin").await.unwrap();
    exec(&c, "delete from errs where id = 3").await;
    fails_with(&c, "update errs set v = null where id = 1", "23502").await;
    fails_with(&c, "delete from errs", "25P02").await;
    c.batch_execute("commit").await.unwrap();
    assert_eq!(
        rows(&c, "errs").await,
        kv(&[(1, "v1"), (2, "v2"), (3, "v3")])
    );
    assert_eq!(snapshot_count(&server, "errs").await, before);

    // The connection works normally afterwards.
    exec(&c, "update errs set v = 'after' where id = 2").await;
    assert_eq!(snapshot_count(&server, "errs").await, before + 1);
}

#[tokio::test]
async fn savepoint_rollback_keeps_earlier_writes() {
    let server = TestServer::start();
    let c = server.client().await;
    let other = server.client().await;
    kv_table(&c, "sp", 3, "with (bucket = 2)").await;
    let before = snapshot_count(&server, "sp").await;

    c.batch_execute("begin").await.unwrap();
    exec(&c, "insert into sp values (10, 'before savepoint')").await;
    exec(&c, "update sp set v = 'kept' where id = 1").await;
    c.batch_execute("savepoint s1").await.unwrap();
    exec(&c, "insert into sp values (11, 'after s1')").await;
    exec(&c, "update sp set v = 'after s1' where id = 1").await;
    exec(&c, "delete from sp where id = 2").await;
    c.batch_execute("savepoint s2").await.unwrap();
    exec(&c, "update sp set v = 'after s2' where id = 3").await;
    assert_eq!(
        rows(&c, "sp").await,
        kv(&[
            (1, "after s1"),
            (3, "after s2"),
            (10, "before savepoint"),
            (11, "after s1")
        ])
    );
    // Rolling back to s1 drops s2's writes too.
    c.batch_execute("rollback to savepoint s1").await.unwrap();
    assert_eq!(
        rows(&c, "sp").await,
        kv(&[(1, "kept"), (2, "v2"), (3, "v3"), (10, "before savepoint")])
    );
    // s2 went with that rollback; naming it is an error, which fails the block until it
    // is rolled back to a savepoint that exists.
    fails_with(&c, "rollback to savepoint s2", "3B001").await;
    fails_with(&c, "select * from sp", "25P02").await;
    c.batch_execute("rollback to savepoint s1").await.unwrap();
    // The savepoint survives its rollback; an error after it is undone by rolling back to it.
    exec(&c, "insert into sp values (12, 'after rollback to s1')").await;
    fails_with(&c, "insert into sp values (1, 'duplicate')", "23505").await;
    fails_with(&c, "select * from sp", "25P02").await;
    c.batch_execute("rollback to savepoint s1").await.unwrap();
    assert_eq!(
        rows(&c, "sp").await,
        kv(&[(1, "kept"), (2, "v2"), (3, "v3"), (10, "before savepoint")])
    );
    c.batch_execute("savepoint s3; release savepoint s3")
        .await
        .unwrap();
    exec(&c, "insert into sp values (13, 'last')").await;
    assert_eq!(rows(&other, "sp").await.len(), 3, "nothing visible yet");
    assert_eq!(snapshot_count(&server, "sp").await, before);
    c.batch_execute("commit").await.unwrap();

    let expected = kv(&[
        (1, "kept"),
        (2, "v2"),
        (3, "v3"),
        (10, "before savepoint"),
        (13, "last"),
    ]);
    assert_eq!(rows(&c, "sp").await, expected);
    assert_eq!(rows(&other, "sp").await, expected);
    assert_eq!(snapshot_count(&server, "sp").await, before + 1);
}

#[tokio::test]
async fn disconnect_mid_transaction_leaves_no_trace() {
    let server = TestServer::start();
    let c = server.client().await;
    // A small write buffer: the block's rows spill to data files before COMMIT.
    kv_table(
        &c,
        "dis",
        3,
        "with (bucket = 2, 'write-buffer-size' = '64kb')",
    )
    .await;
    let dir = table_dir(&server, "dis");
    let files_before = parquet_files(&dir);
    let snapshots_before = snapshot_count(&server, "dis").await;
    let initial = kv(&[(1, "v1"), (2, "v2"), (3, "v3")]);

    // Closed politely (the client is dropped: Terminate), and cut off (the socket dies).
    for polite in [true, false] {
        let (client, connection) =
            tokio_postgres::connect(&server.conn_str(), tokio_postgres::NoTls)
                .await
                .unwrap();
        let conn_task = tokio::spawn(connection);
        client.batch_execute("begin").await.unwrap();
        client
            .batch_execute(
                "insert into dis select i, 'uncommitted ' || i from generate_series(100, 20099) as t(i);
                 update dis set v = 'uncommitted' where id = 1;
                 delete from dis where id = 2;",
            )
            .await
            .unwrap();
        let n: i64 = client
            .query_one("select count(*) from dis", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 20002);
        if polite {
            drop(client);
            let _ = conn_task.await;
        } else {
            conn_task.abort();
            let _ = conn_task.await;
            drop(client);
        }
        // A new connection sees nothing of it, and can write the same keys at once.
        let fresh = server.client().await;
        assert_eq!(rows(&fresh, "dis").await, initial, "polite={polite}");
        assert_eq!(snapshot_count(&server, "dis").await, snapshots_before);
        tokio::time::timeout(NO_WAIT, async {
            fresh.batch_execute("begin").await.unwrap();
            exec(&fresh, "update dis set v = 'v1' where id = 1").await;
            fresh.batch_execute("rollback").await.unwrap();
        })
        .await
        .expect("a new block waited on the dead connection's");
    }

    // And its spilled files are deleted (the server notices the disconnect).
    let mut left = parquet_files(&dir);
    for _ in 0..50 {
        if left == files_before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = parquet_files(&dir);
    }
    let orphans: Vec<_> = left.iter().filter(|f| !files_before.contains(f)).collect();
    assert!(
        orphans.is_empty(),
        "{} data files of the disconnected blocks are left behind: {orphans:?}",
        orphans.len()
    );
}

// ---------------------------------------------------------------------------------------------
// several tables per block

#[tokio::test]
async fn a_block_writes_several_tables_and_commits_them_together() {
    let server = TestServer::start();
    let c = server.client().await;
    let other = server.client().await;
    kv_table(&c, "one_t", 3, "").await;
    kv_table(&c, "two_t", 3, "with (bucket = 2)").await;
    let initial = kv(&[(1, "v1"), (2, "v2"), (3, "v3")]);
    let (s1, s2) = (
        snapshot_count(&server, "one_t").await,
        snapshot_count(&server, "two_t").await,
    );

    // Both tables' writes show inside the block, to nobody else before COMMIT, to everybody
    // after it.
    c.batch_execute("begin").await.unwrap();
    exec(&c, "update one_t set v = 'block' where id = 1").await;
    exec(&c, "insert into two_t values (10, 'ten')").await;
    exec(&c, "delete from two_t where id = 2").await;
    assert_eq!(
        ids(&c, "select id from two_t order by id").await,
        [1, 3, 10]
    );
    assert_eq!(rows(&other, "one_t").await, initial);
    assert_eq!(rows(&other, "two_t").await, initial);
    c.batch_execute("commit").await.unwrap();
    assert_eq!(
        rows(&other, "one_t").await,
        kv(&[(1, "block"), (2, "v2"), (3, "v3")])
    );
    assert_eq!(
        rows(&other, "two_t").await,
        kv(&[(1, "v1"), (3, "v3"), (10, "ten")])
    );
    assert_eq!(snapshot_count(&server, "one_t").await, s1 + 1);
    assert_eq!(snapshot_count(&server, "two_t").await, s2 + 1);

    // Every kind of write works on a second table; ROLLBACK undoes all of them.
    for second in [
        "update two_t set v = 'x' where id = 1",
        "delete from two_t where id = 1",
        "upsert into two_t values (1, 'x')",
        "insert into two_t values (1, 'x') on conflict (id) do update set v = excluded.v",
        "merge into two_t t using (values (1)) as s(id) on t.id = s.id when matched then delete",
    ] {
        c.batch_execute("begin").await.unwrap();
        exec(&c, "delete from one_t where id = 3").await;
        assert_eq!(exec(&c, second).await, 1, "{second}");
        c.batch_execute("rollback").await.unwrap();
    }
    assert_eq!(
        rows(&c, "two_t").await,
        kv(&[(1, "v1"), (3, "v3"), (10, "ten")])
    );
    assert_eq!(rows(&c, "one_t").await.len(), 3);

    // ROLLBACK TO SAVEPOINT undoes what each table got after it, and only that.
    c.batch_execute("begin").await.unwrap();
    exec(&c, "update one_t set v = 'kept' where id = 1").await;
    c.batch_execute("savepoint s").await.unwrap();
    exec(&c, "update one_t set v = 'undone' where id = 2").await;
    exec(&c, "update two_t set v = 'undone' where id = 1").await;
    c.batch_execute("rollback to savepoint s").await.unwrap();
    exec(&c, "insert into two_t values (4, 'also kept')").await;
    c.batch_execute("commit").await.unwrap();
    assert_eq!(
        rows(&c, "one_t").await,
        kv(&[(1, "kept"), (2, "v2"), (3, "v3")])
    );
    assert_eq!(
        rows(&c, "two_t").await,
        kv(&[(1, "v1"), (3, "v3"), (4, "also kept"), (10, "ten")])
    );

    // A conflict in one table fails the whole block: nothing of it lands in the other.
    let b = server.client().await;
    c.batch_execute("begin").await.unwrap();
    exec(&c, "insert into one_t values (100, 'c')").await;
    exec(&c, "insert into two_t values (100, 'c')").await;
    exec(&b, "insert into two_t values (100, 'b')").await;
    fails_with(&c, "commit", "23505").await;
    assert!(
        ids(&other, "select id from one_t where id = 100")
            .await
            .is_empty()
    );
    assert_eq!(
        rows(&other, "two_t").await.last().unwrap(),
        &(100, "b".to_owned())
    );
}

/// Money moves between two tables in blocks while readers sum both tables in one statement:
/// every sum is the same (a block's two writes are seen together or not at all), and nothing
/// is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_over_two_tables_are_seen_whole() {
    let server = TestServer::start();
    let c = server.client().await;
    for t in ["left_acct", "right_acct"] {
        c.batch_execute(&format!(
            "create table {t} (id int primary key, n bigint) with (bucket = 2);
             insert into {t} select g, 100 from generate_series(1, 10) g;"
        ))
        .await
        .unwrap();
    }
    const TOTAL: i64 = 2000;
    let sum = "select ((select sum(n) from left_acct) + (select sum(n) from right_acct))::bigint";
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..2 {
        let client = server.client().await;
        writers.push(tokio::spawn(async move {
            let mut moved = 0;
            for i in 0..40 {
                let (from, to) = (1 + (i + w) % 10, 1 + (i * 3 + w) % 10);
                let block = format!(
                    "begin;
                     update left_acct set n = n - 1 where id = {from};
                     update right_acct set n = n + 1 where id = {to};
                     commit;"
                );
                match client.batch_execute(&block).await {
                    Ok(()) => moved += 1,
                    Err(e) => {
                        assert_eq!(sqlstate(&e), "40001", "{e}");
                        let _ = client.batch_execute("rollback").await;
                    }
                }
            }
            moved
        }));
    }
    let reader = {
        let client = server.client().await;
        let stop = std::sync::Arc::clone(&stop);
        tokio::spawn(async move {
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let total: i64 = client.query_one(sum, &[]).await.unwrap().get(0);
                assert_eq!(total, TOTAL, "a block was seen in one table only");
                reads += 1;
            }
            reads
        })
    };
    let mut moved = 0;
    for w in writers {
        moved += w.await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader.await.unwrap();
    assert!(moved > 0 && reads > 0, "moved {moved}, reads {reads}");
    let left: i64 = c
        .query_one("select sum(n)::bigint from left_acct", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 1000 - moved);
}

#[tokio::test]
async fn serializable_is_refused() {
    let server = TestServer::start();
    let c = server.client().await;
    let other = server.client().await;
    kv_table(&c, "ser", 1, "").await;

    for begin in [
        "begin isolation level serializable",
        "start transaction isolation level serializable",
        "begin transaction isolation level serializable, read write",
    ] {
        fails_with(&c, begin, "0A000").await;
        // No block was started: the next write commits at once.
        assert_eq!(show(&c, "transaction_isolation").await, "read committed");
        exec(&c, "update ser set v = 'autocommitted' where id = 1").await;
        assert_eq!(rows(&other, "ser").await, kv(&[(1, "autocommitted")]));
        exec(&c, "update ser set v = 'v1' where id = 1").await;
    }
    // tokio-postgres' own transaction builder.
    let mut c2 = server.client().await;
    let err = c2
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::Serializable)
        .start()
        .await
        .err()
        .expect("SERIALIZABLE refused");
    assert_eq!(sqlstate(&err), "0A000");

    fails_with(
        &c,
        "set default_transaction_isolation = 'serializable'",
        "0A000",
    )
    .await;
    assert_eq!(
        show(&c, "default_transaction_isolation").await,
        "read committed"
    );
    fails_with(
        &c,
        "set session characteristics as transaction isolation level serializable",
        "0A000",
    )
    .await;

    // REPEATABLE READ and READ COMMITTED are accepted.
    c.batch_execute("begin isolation level repeatable read")
        .await
        .unwrap();
    assert_eq!(show(&c, "transaction_isolation").await, "repeatable read");
    c.batch_execute("commit").await.unwrap();
    c.batch_execute("begin isolation level read committed; commit")
        .await
        .unwrap();
    c.batch_execute("set default_transaction_isolation = 'repeatable read'")
        .await
        .unwrap();
    assert_eq!(
        show(&c, "default_transaction_isolation").await,
        "repeatable read"
    );
    c.batch_execute("begin").await.unwrap();
    assert_eq!(show(&c, "transaction_isolation").await, "repeatable read");
    c.batch_execute("commit").await.unwrap();
    let tx = c2
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .start()
        .await
        .unwrap();
    tx.execute("update ser set v = 'rr' where id = 1", &[])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(rows(&other, "ser").await, kv(&[(1, "rr")]));
}

// ---------------------------------------------------------------------------------------------
// concurrent workloads

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const ACCOUNTS: i32 = 10;
const TOTAL: i64 = 100 * ACCOUNTS as i64;

async fn balances(c: &Client) -> Vec<(i32, i64)> {
    c.query("select id, bal from accounts order by id", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// One transfer as a block; `Err` only for a serialization failure or a deadlock (the block
/// is gone).
async fn transfer(c: &Client, from: i32, to: i32, amount: i64) -> Result<(), String> {
    let result = async {
        c.batch_execute("begin").await?;
        c.execute(
            "update accounts set bal = bal - $1 where id = $2",
            &[&amount, &from],
        )
        .await?;
        c.execute(
            "update accounts set bal = bal + $1 where id = $2",
            &[&amount, &to],
        )
        .await?;
        c.batch_execute("commit").await
    }
    .await;
    match result {
        Ok(()) => Ok(()),
        Err(e) => {
            let code = sqlstate(&e);
            // A failed COMMIT has ended the block; a failed statement has not.
            let _ = c.batch_execute("rollback").await;
            // 40P01: two transfers between the same accounts in opposite directions.
            assert!(
                code == "40001" || code == "40P01",
                "transfer {from}->{to}: {e:?}"
            );
            Err(code)
        }
    }
}

#[tokio::test]
async fn bank_transfers_conserve_money() {
    const TASKS: u64 = 6;
    const TRANSFERS: usize = 20;
    let server = TestServer::start();
    let setup = server.client().await;
    setup
        .batch_execute(&format!(
            "create table accounts (id int primary key, bal bigint not null) with (bucket = 2);
             insert into accounts select i, 100 from generate_series(1, {ACCOUNTS}) as t(i);"
        ))
        .await
        .unwrap();

    let done = Arc::new(AtomicBool::new(false));
    let checks = Arc::new(AtomicUsize::new(0));
    let checker = {
        let client = server.client().await;
        let done = Arc::clone(&done);
        let checks = Arc::clone(&checks);
        tokio::spawn(async move {
            while !done.load(Ordering::SeqCst) {
                // Autocommit.
                let row = client
                    .query_one("select sum(bal)::bigint, count(*) from accounts", &[])
                    .await
                    .unwrap();
                assert_eq!(
                    (row.get::<_, i64>(0), row.get::<_, i64>(1)),
                    (TOTAL, ACCOUNTS as i64),
                    "autocommit read"
                );
                // Two reads of one REPEATABLE READ block agree, and sum up.
                client
                    .batch_execute("begin isolation level repeatable read")
                    .await
                    .unwrap();
                let first = balances(&client).await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                let row = client
                    .query_one("select sum(bal)::bigint, count(*) from accounts", &[])
                    .await
                    .unwrap();
                let second = balances(&client).await;
                client.batch_execute("commit").await.unwrap();
                assert_eq!(first, second, "two reads of one snapshot");
                assert_eq!(
                    first.iter().map(|(_, b)| b).sum::<i64>(),
                    TOTAL,
                    "{first:?}"
                );
                assert_eq!(row.get::<_, i64>(0), TOTAL);
                // READ COMMITTED block: every statement sees a consistent committed state.
                client.batch_execute("begin").await.unwrap();
                for _ in 0..2 {
                    let b = balances(&client).await;
                    assert_eq!(b.len(), ACCOUNTS as usize);
                    assert_eq!(b.iter().map(|(_, b)| b).sum::<i64>(), TOTAL, "{b:?}");
                }
                client.batch_execute("commit").await.unwrap();
                checks.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };

    let mut workers = Vec::new();
    for task in 0..TASKS {
        let client = server.client().await;
        workers.push(tokio::spawn(async move {
            let mut rng = Rng::new(task + 1);
            let mut committed = Vec::new();
            let mut retries = 0usize;
            for _ in 0..TRANSFERS {
                let from = rng.below(ACCOUNTS as u64) as i32 + 1;
                let to = (from + rng.below(ACCOUNTS as u64 - 1) as i32) % ACCOUNTS + 1;
                assert_ne!(from, to);
                let amount = rng.below(20) as i64 + 1;
                loop {
                    match transfer(&client, from, to, amount).await {
                        Ok(()) => {
                            committed.push((from, to, amount));
                            break;
                        }
                        Err(_) => {
                            retries += 1;
                            assert!(retries < 2000, "task {task}: no progress");
                        }
                    }
                }
            }
            (committed, retries)
        }));
    }
    let run = async {
        let mut all = Vec::new();
        let mut retries = 0;
        for w in workers {
            let (committed, r) = w.await.unwrap();
            all.extend(committed);
            retries += r;
        }
        (all, retries)
    };
    let (committed, retries) = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .expect("transfers did not finish in 300 s");
    done.store(true, Ordering::SeqCst);
    tokio::time::timeout(Duration::from_secs(60), checker)
        .await
        .expect("checker stuck")
        .unwrap();

    let checks = checks.load(Ordering::SeqCst);
    eprintln!(
        "bank: {} transfers committed, {retries} retries after 40001, {checks} checker rounds, \
         {} snapshots",
        committed.len(),
        snapshot_count(&server, "accounts").await
    );
    assert_eq!(committed.len(), TASKS as usize * TRANSFERS);
    assert!(checks > 0, "the checker ran");
    // Every committed transfer, and nothing else, is in the balances.
    let mut expected = vec![100i64; ACCOUNTS as usize];
    for (from, to, amount) in &committed {
        expected[*from as usize - 1] -= amount;
        expected[*to as usize - 1] += amount;
    }
    let expected: Vec<(i32, i64)> = (1..=ACCOUNTS).zip(expected).collect();
    assert_eq!(balances(&setup).await, expected);
    let row = setup
        .query_one("select sum(bal)::bigint, count(*) from accounts", &[])
        .await
        .unwrap();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (TOTAL, 10));
    // Each committed block is in exactly one snapshot (concurrent commits may share one).
    let snapshots = snapshot_count(&server, "accounts").await;
    assert!(
        snapshots > 1 && snapshots <= 1 + committed.len(),
        "{snapshots} snapshots for {} commits",
        committed.len()
    );
}

/// Autocommit statements that lose a write race are re-run on the newer data, as PostgreSQL's
/// READ COMMITTED re-evaluates an UPDATE: concurrent increments of one row all succeed and
/// none is lost.
#[tokio::test]
async fn autocommit_increments_of_one_row_all_succeed() {
    const TASKS: usize = 4;
    const INCREMENTS: usize = 15;
    let server = TestServer::start();
    let setup = server.client().await;
    setup
        .batch_execute(
            "create table counter (id int primary key, n bigint not null);
             insert into counter values (1, 0);",
        )
        .await
        .unwrap();
    let mut workers = Vec::new();
    for _ in 0..TASKS {
        let client = server.client().await;
        workers.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            for _ in 0..INCREMENTS {
                if let Err(e) = client
                    .execute("update counter set n = n + 1 where id = 1", &[])
                    .await
                {
                    failures.push(sqlstate(&e));
                }
            }
            failures
        }));
    }
    let mut failures = Vec::new();
    for w in workers {
        failures.extend(w.await.unwrap());
    }
    let n: i64 = setup
        .query_one("select n from counter where id = 1", &[])
        .await
        .unwrap()
        .get(0);
    let succeeded = (TASKS * INCREMENTS - failures.len()) as i64;
    assert_eq!(n, succeeded, "no increment lost, none applied twice");
    assert!(
        failures.is_empty(),
        "{} of {} autocommit UPDATEs failed: {failures:?}",
        failures.len(),
        TASKS * INCREMENTS
    );
}
