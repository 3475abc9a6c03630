//! The commit log (`--commit-log`, issue 17) through a real client: commits acknowledged from
//! the log are visible at once to every session while no snapshot holds them; duplicate keys
//! and conflicts keep their SQLSTATEs; the flusher turns them into snapshots; a graceful
//! shutdown flushes everything; after `kill -9` every acknowledged commit is back, once.

mod common;

use std::time::Duration;

use common::{TempDir, TestServer, sqlstate};

/// A server over `warehouse` with its commit log in `log`, flushing after `flush_ms`.
fn start(warehouse: TempDir, log: &TempDir, flush_ms: u64) -> TestServer {
    let dir = log.path().join("log");
    TestServer::start_on(
        warehouse,
        &[
            ("TARN_COMMIT_LOG", dir.to_str().unwrap()),
            ("TARN_FLUSH_INTERVAL_MS", &flush_ms.to_string()),
        ],
    )
}

/// Kills the server as a crash would, and waits until it is gone.
fn kill_9(server: &mut TestServer) {
    let _ = std::process::Command::new("kill")
        .args(["-9", &server.pid().to_string()])
        .status();
    for _ in 0..100 {
        if !server.is_running() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn count(c: &tokio_postgres::Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).await.unwrap().get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_are_visible_at_once_and_flushed_at_shutdown() {
    let log = TempDir::new("log");
    let server = start(TempDir::new("wh"), &log, 3_600_000);
    let a = server.client().await;
    let b = server.client().await;
    a.batch_execute("create table kv (k bigint primary key, v text) with (bucket = '2')")
        .await
        .unwrap();
    let insert = a.prepare("insert into kv values ($1, $2)").await.unwrap();
    for k in 0..50i64 {
        a.execute(&insert, &[&k, &format!("v{k}")]).await.unwrap();
    }
    // Another session sees every acknowledged commit, though no snapshot holds them yet.
    assert_eq!(count(&b, "select count(*) from kv").await, 50);
    assert_eq!(
        count(&b, "select count(*) from \"kv$snapshots\"").await,
        1,
        "the table's first commit makes its first snapshot; the flusher waits an hour"
    );
    let v: String = b
        .query_one("select v from kv where k = 7", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(v, "v7");
    // A key an unflushed commit holds is taken: 23505, at the statement.
    let err = b
        .execute("insert into kv values (7, 'again')", &[])
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "23505");
    // Updates and deletes read the unflushed rows.
    assert_eq!(
        b.execute("update kv set v = 'changed' where k < 10", &[])
            .await
            .unwrap(),
        10
    );
    assert_eq!(
        b.execute("delete from kv where k >= 40", &[])
            .await
            .unwrap(),
        10
    );
    assert_eq!(count(&a, "select count(*) from kv").await, 40);
    assert_eq!(
        count(&a, "select count(*) from kv where v = 'changed'").await,
        10
    );
    // The audit log shows the unflushed commits too, deletes with their row kind.
    assert_eq!(count(&a, "select count(*) from \"kv$audit_log\"").await, 50);
    assert_eq!(
        count(
            &a,
            "select count(*) from \"kv$audit_log\" where rowkind = '-D' and k >= 40"
        )
        .await,
        10
    );
    // First committer wins across the log: b's transaction read before a's commit.
    b.batch_execute("begin isolation level repeatable read")
        .await
        .unwrap();
    assert_eq!(count(&b, "select count(*) from kv where k = 20").await, 1);
    a.execute("update kv set v = 'a' where k = 20", &[])
        .await
        .unwrap();
    let err = match b.execute("update kv set v = 'b' where k = 20", &[]).await {
        Err(e) => e,
        Ok(_) => b.batch_execute("commit").await.unwrap_err(),
    };
    assert_eq!(sqlstate(&err), "40001", "{err}");
    let _ = b.batch_execute("rollback").await;

    // A graceful stop flushes: a server without the log reads every row.
    drop((a, b));
    let warehouse = server.stop_and_keep_warehouse();
    let plain = TestServer::start_on(warehouse, &[("TARN_COMMIT_LOG", "off")]);
    let c = plain.client().await;
    assert_eq!(count(&c, "select count(*) from kv").await, 40);
    assert_eq!(
        count(&c, "select count(*) from kv where v = 'changed'").await,
        10
    );
    let v: String = c
        .query_one("select v from kv where k = 20", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(v, "a");
    assert_eq!(
        count(&c, "select count(*) from \"kv$snapshots\"").await,
        2,
        "the first commit's snapshot, and one flush of the other 49 and the changes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_flusher_writes_snapshots_while_the_server_runs() {
    let log = TempDir::new("log");
    let server = start(TempDir::new("wh"), &log, 100);
    let c = server.client().await;
    c.batch_execute("create table f (k int primary key, v int)")
        .await
        .unwrap();
    for k in 0..20 {
        c.execute("insert into f values ($1, $1)", &[&k])
            .await
            .unwrap();
    }
    let mut snapshots = 0;
    for _ in 0..100 {
        snapshots = count(&c, "select count(*) from \"f$snapshots\"").await;
        if snapshots > 0 && count(&c, "select count(*) from f").await == 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(snapshots >= 1, "the flusher wrote a snapshot");
    assert!(
        snapshots < 20,
        "commits were folded into fewer snapshots: {snapshots}"
    );
    assert_eq!(count(&c, "select sum(v)::bigint from f").await, 190);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_loses_no_acknowledged_commit_and_duplicates_none() {
    let log = TempDir::new("log");
    let mut server = start(TempDir::new("wh"), &log, 300);
    let setup = server.client().await;
    setup
        .batch_execute("create table acked (k bigint primary key, w int)")
        .await
        .unwrap();
    // Four writers insert until the kill; each remembers what was acknowledged.
    let mut writers = Vec::new();
    for w in 0..4i32 {
        let c = server.client().await;
        writers.push(tokio::spawn(async move {
            let stmt = c
                .prepare("insert into acked values ($1, $2)")
                .await
                .unwrap();
            let mut acked = Vec::new();
            for i in 0..100_000i64 {
                let k = i * 4 + i64::from(w);
                match c.execute(&stmt, &[&k, &w]).await {
                    Ok(_) => acked.push(k),
                    Err(_) => break,
                }
            }
            acked
        }));
    }
    // Long enough for flushes and log truncation to have happened between commits.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    kill_9(&mut server);
    let mut acked = Vec::new();
    for w in writers {
        acked.extend(w.await.unwrap());
    }
    assert!(acked.len() > 20, "the writers got going: {}", acked.len());
    let warehouse = std::mem::replace(&mut server.warehouse, TempDir::new("spent"));
    drop(server);

    // The log replays and is flushed before the server answers.
    let again = start(warehouse, &log, 3_600_000);
    let c = again.client().await;
    let keys: Vec<i64> = c
        .query("select k from acked order by k", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let present: std::collections::HashSet<i64> = keys.iter().copied().collect();
    assert_eq!(present.len(), keys.len(), "no key twice");
    let lost: Vec<&i64> = acked.iter().filter(|k| !present.contains(k)).collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
    // At most one unacknowledged commit per writer was in flight at the kill.
    assert!(keys.len() <= acked.len() + 4);
    drop(c);

    // Replay flushed everything: a server without the log, and pypaimon, read it all.
    let warehouse = again.stop_and_keep_warehouse();
    let plain = TestServer::start_on(warehouse, &[("TARN_COMMIT_LOG", "off")]);
    let c = plain.client().await;
    assert_eq!(
        count(&c, "select count(*) from acked").await,
        keys.len() as i64
    );
}

/// Blocks move money between two tables until a kill -9: after the replay every block is in
/// both tables or in neither (one log record holds both parts), so the total holds, and every
/// acknowledged block is there — for tarn and, after the flush, for pypaimon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_over_two_tables_survives_kill_9_whole() {
    let log = TempDir::new("log");
    let mut server = start(TempDir::new("wh"), &log, 200);
    let setup = server.client().await;
    for t in ["src", "dst"] {
        setup
            .batch_execute(&format!(
                "create table {t} (k bigint primary key, n bigint) with (bucket = 2);
                 insert into {t} select g, 100 from generate_series(1, 10) g;"
            ))
            .await
            .unwrap();
    }
    let mut writers = Vec::new();
    for w in 0..2i64 {
        let c = server.client().await;
        writers.push(tokio::spawn(async move {
            let mut acked = 0i64;
            for i in 0..100_000i64 {
                let (from, to) = (1 + (i + w) % 10, 1 + (i * 7 + w) % 10);
                let block = format!(
                    "begin; update src set n = n - 1 where k = {from}; \
                     update dst set n = n + 1 where k = {to}; commit;"
                );
                match c.batch_execute(&block).await {
                    Ok(()) => acked += 1,
                    Err(e) if e.code().is_some() => {
                        let _ = c.batch_execute("rollback").await;
                    }
                    Err(_) => break,
                }
            }
            acked
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    kill_9(&mut server);
    let mut acked = 0;
    for w in writers {
        acked += w.await.unwrap();
    }
    assert!(acked > 5, "the writers got going: {acked}");
    let warehouse = std::mem::replace(&mut server.warehouse, TempDir::new("spent"));
    drop(server);

    let again = start(warehouse, &log, 3_600_000);
    let c = again.client().await;
    let src = count(&c, "select sum(n)::bigint from src").await;
    let dst = count(&c, "select sum(n)::bigint from dst").await;
    assert_eq!(src + dst, 2000, "a block landed in one table only");
    let moved = 1000 - src;
    // Every acknowledged block, and at most one unacknowledged one per writer.
    assert!(
        moved >= acked && moved <= acked + 2,
        "{moved} moved, {acked} acknowledged"
    );
    // Replay flushed both tables before the server answered: pypaimon agrees.
    let sums = pypaimon_sums(again.warehouse.path(), &["src", "dst"]);
    assert_eq!(sums, vec![src, dst]);
}

/// A pypaimon commit to a table while tarn's commits wait in the log: tarn's flushed writes
/// order after every commit already in the table at flush time (README), so for a key both
/// wrote, tarn's value wins — before the flush (the log's rows lie over every snapshot) and
/// after it, for tarn and for pypaimon alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pypaimon_commit_between_logged_commits_orders_before_their_flush() {
    let log = TempDir::new("log");
    let server = start(TempDir::new("wh"), &log, 3_600_000);
    let c = server.client().await;
    c.batch_execute(
        "create table mixed (k bigint primary key, v text) with (bucket = 1);
         insert into mixed values (1, 'tarn');",
    )
    .await
    .unwrap();
    for k in 2..=4i64 {
        c.execute("insert into mixed values ($1, 'tarn')", &[&k])
            .await
            .unwrap();
    }
    // pypaimon writes key 3 (tarn's, unflushed) and key 9 (new) while tarn's wait in the log.
    let script = format!(
        "import pyarrow as pa\n\
         from pypaimon import CatalogFactory\n\
         t = CatalogFactory.create({{'warehouse': '{}'}}).get_table('public.mixed')\n\
         wb = t.new_batch_write_builder()\n\
         w, c = wb.new_write(), wb.new_commit()\n\
         s = pa.schema([pa.field('k', pa.int64(), nullable=False), pa.field('v', pa.string())])\n\
         w.write_arrow(pa.Table.from_pylist([dict(k=3, v='pypaimon'), dict(k=9, v='pypaimon')], schema=s))\n\
         c.commit(w.prepare_commit())\n\
         w.close(); c.close()\n",
        server.warehouse.path().display()
    );
    common::run_pypaimon(&script, "the commit log test");
    let values = |rows: Vec<tokio_postgres::Row>| -> Vec<(i64, String)> {
        rows.iter().map(|r| (r.get(0), r.get(1))).collect()
    };
    let want: Vec<(i64, String)> = [
        (1, "tarn"),
        (2, "tarn"),
        (3, "tarn"),
        (4, "tarn"),
        (9, "pypaimon"),
    ]
    .iter()
    .map(|(k, v)| (*k, v.to_string()))
    .collect();
    let before = values(
        c.query("select k, v from mixed order by k", &[])
            .await
            .unwrap(),
    );
    assert_eq!(before, want, "before the flush");
    c.execute("call sys.flush('mixed')", &[]).await.unwrap();
    let after = values(
        c.query("select k, v from mixed order by k", &[])
            .await
            .unwrap(),
    );
    assert_eq!(after, want, "after the flush");
    assert_eq!(
        pypaimon_keys(server.warehouse.path(), "mixed"),
        vec![1, 2, 3, 4, 9]
    );
    let v3 = pypaimon_value(server.warehouse.path(), "mixed", 3);
    assert_eq!(
        v3, "tarn",
        "pypaimon reads tarn's flushed value over its own older commit"
    );
}

/// Column `v` of the row with key `k` of `public.<table>`, as pypaimon reads it.
fn pypaimon_value(warehouse: &std::path::Path, table: &str, k: i64) -> String {
    let script = format!(
        "from pypaimon import CatalogFactory\n\
         t = CatalogFactory.create({{'warehouse': '{}'}}).get_table('public.{table}')\n\
         rb = t.new_read_builder()\n\
         a = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()\n\
         print([r['v'] for r in a if r['k'] == {k}][0])\n",
        warehouse.display()
    );
    let stdout = common::run_pypaimon(&script, "the commit log test");
    stdout.trim().to_owned()
}

/// The sums of column `n` of `public.<table>` for each table, as pypaimon reads them.
fn pypaimon_sums(warehouse: &std::path::Path, tables: &[&str]) -> Vec<i64> {
    let script = format!(
        "from pypaimon import CatalogFactory\n\
         c = CatalogFactory.create({{'warehouse': '{}'}})\n\
         for name in {:?}:\n\
         \x20   rb = c.get_table('public.' + name).new_read_builder()\n\
         \x20   a = rb.new_read().to_arrow(rb.new_scan().plan().splits())\n\
         \x20   print(sum(a.column('n').to_pylist()))\n",
        warehouse.display(),
        tables
    );
    common::run_pypaimon(&script, "the commit log test")
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

/// The keys of `public.<table>` as pypaimon reads them (sorted): the flushed snapshots are
/// Paimon's own format.
fn pypaimon_keys(warehouse: &std::path::Path, table: &str) -> Vec<i64> {
    let script = format!(
        "from pypaimon import CatalogFactory\n\
         t = CatalogFactory.create({{'warehouse': '{}'}}).get_table('public.{table}')\n\
         rb = t.new_read_builder()\n\
         a = rb.new_read().to_arrow(rb.new_scan().plan().splits())\n\
         print(' '.join(str(k) for k in sorted(a.column('k').to_pylist())))\n",
        warehouse.display()
    );
    common::run_pypaimon(&script, "the commit log test")
        .split_whitespace()
        .map(|k| k.parse().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pypaimon_reads_every_commit_after_the_flush_and_sees_none_before() {
    let log = TempDir::new("log");
    let server = start(TempDir::new("wh"), &log, 3_600_000);
    let c = server.client().await;
    c.batch_execute(
        "create table pp (k bigint primary key, v text);
         insert into pp values (1, 'first');",
    )
    .await
    .unwrap();
    for k in 2..=30i64 {
        c.execute("insert into pp values ($1, 'x')", &[&k])
            .await
            .unwrap();
    }
    c.execute("delete from pp where k = 2", &[]).await.unwrap();
    // Before the flush another engine sees the table's snapshots only: the first commit.
    assert_eq!(pypaimon_keys(server.warehouse.path(), "pp"), vec![1]);
    c.execute("call sys.flush('pp')", &[]).await.unwrap();
    let want: Vec<i64> = (1..=30).filter(|&k| k != 2).collect();
    assert_eq!(pypaimon_keys(server.warehouse.path(), "pp"), want);
    assert_eq!(count(&c, "select count(*) from pp").await, 29);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_can_wait_for_its_commits_to_be_in_a_snapshot() {
    let log = TempDir::new("log");
    let server = start(TempDir::new("wh"), &log, 3_600_000);
    let a = server.client().await;
    let b = server.client().await;
    a.batch_execute(
        "create table hand (k bigint primary key, v text);
         insert into hand values (1, 'first');",
    )
    .await
    .unwrap();
    for k in 2..=4i64 {
        a.execute("insert into hand values ($1, 'a')", &[&k])
            .await
            .unwrap();
    }
    assert_eq!(pypaimon_keys(server.warehouse.path(), "hand"), vec![1]);
    // A pipeline handing off to another engine: COMMIT returns once its commit (and what was
    // logged before it) is in a snapshot.
    b.batch_execute("set tarn.flush_on_commit = on")
        .await
        .unwrap();
    b.batch_execute(
        "begin; insert into hand values (5, 'b'); delete from hand where k = 2; commit",
    )
    .await
    .unwrap();
    assert_eq!(
        pypaimon_keys(server.warehouse.path(), "hand"),
        vec![1, 3, 4, 5]
    );
    b.execute("insert into hand values (6, 'b')", &[])
        .await
        .unwrap();
    assert_eq!(
        pypaimon_keys(server.warehouse.path(), "hand"),
        vec![1, 3, 4, 5, 6]
    );
    // The other session still commits to the log only.
    a.execute("insert into hand values (7, 'a')", &[])
        .await
        .unwrap();
    assert_eq!(
        pypaimon_keys(server.warehouse.path(), "hand"),
        vec![1, 3, 4, 5, 6]
    );
    assert_eq!(count(&b, "select count(*) from hand").await, 6);
    let shown: String = b
        .query_one("show tarn.flush_on_commit", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(shown, "on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_can_keep_one_snapshot_per_commit() {
    let log = TempDir::new("log");
    let server = start(TempDir::new("wh"), &log, 3_600_000);
    let c = server.client().await;
    c.batch_execute("create table each (k int primary key) with ('tarn.commit-log' = 'false')")
        .await
        .unwrap();
    for k in 0..5 {
        c.execute("insert into each values ($1)", &[&k])
            .await
            .unwrap();
    }
    assert_eq!(
        count(&c, "select count(*) from \"each$snapshots\"").await,
        5
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncate_and_drop_erase_logged_commits_for_good() {
    let log = TempDir::new("log");
    let server = start(TempDir::new("wh"), &log, 3_600_000);
    let c = server.client().await;
    c.batch_execute(
        "create table tr (k int primary key); insert into tr values (0);
         create table dr (k int primary key); insert into dr values (0);",
    )
    .await
    .unwrap();
    for k in 1..10 {
        c.execute("insert into tr values ($1)", &[&k])
            .await
            .unwrap();
        c.execute("insert into dr values ($1)", &[&k])
            .await
            .unwrap();
    }
    c.batch_execute("truncate tr").await.unwrap();
    assert_eq!(count(&c, "select count(*) from tr").await, 0);
    c.execute("insert into tr values (100)", &[]).await.unwrap();
    c.batch_execute("drop table dr; create table dr (k int primary key)")
        .await
        .unwrap();
    assert_eq!(count(&c, "select count(*) from dr").await, 0);
    // A crash: nothing the log holds for the truncated or dropped table comes back.
    let mut server = server;
    let _ = std::process::Command::new("kill")
        .args(["-9", &server.pid().to_string()])
        .status();
    while server.is_running() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let warehouse = std::mem::replace(&mut server.warehouse, TempDir::new("spent"));
    drop(server);
    let again = start(warehouse, &log, 3_600_000);
    let c = again.client().await;
    assert_eq!(count(&c, "select count(*) from tr").await, 1);
    assert_eq!(count(&c, "select max(k)::bigint from tr").await, 100);
    assert_eq!(count(&c, "select count(*) from dr").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_travel_inside_the_unflushed_window_is_exact() {
    let log = TempDir::new("log");
    let server = start(TempDir::new("wh"), &log, 3_600_000);
    let c = server.client().await;
    c.batch_execute("create table tt (k int primary key); insert into tt values (0)")
        .await
        .unwrap();
    let mut marks = Vec::new();
    for k in 1..=3 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        c.execute("insert into tt values ($1)", &[&k])
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let at: String = c.query_one("select now()::text", &[]).await.unwrap().get(0);
        marks.push(at);
    }
    for (i, at) in marks.iter().enumerate() {
        let sql = format!("select count(*) from tt for system_time as of '{at}'::timestamptz");
        assert_eq!(count(&c, &sql).await, i as i64 + 2, "as of {at}");
    }
}
