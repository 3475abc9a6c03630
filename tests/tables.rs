//! Paimon tables through a real client (tokio-postgres): persistence across restarts, many
//! writers at once, cancelled and failed statements leaving no trace, tables written behind the
//! server's back, data files deleted behind its back, pruning and projection as EXPLAIN shows
//! them, bounded manifests.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{TestServer, sqlstate};

async fn count(client: &tokio_postgres::Client, table: &str) -> i64 {
    client
        .query_one(&format!("select count(*) from {table}"), &[])
        .await
        .unwrap()
        .get::<_, i64>(0)
}

/// Every file under `dir` whose name ends with `suffix`.
fn files_with_suffix(dir: &Path, suffix: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_with_suffix(&p, suffix));
            } else if p.to_string_lossy().ends_with(suffix) {
                out.push(p);
            }
        }
    }
    out
}

/// The `PaimonScanExec` line of an EXPLAIN.
async fn scan_line(client: &tokio_postgres::Client, query: &str) -> String {
    let rows = client
        .simple_query(&format!("explain {query}"))
        .await
        .unwrap();
    rows.iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(1).map(str::to_owned),
            _ => None,
        })
        .flat_map(|plan| plan.lines().map(str::to_owned).collect::<Vec<_>>())
        .find(|l| l.contains("PaimonScanExec"))
        .unwrap_or_else(|| panic!("no PaimonScanExec in the plan of {query}"))
}

fn number_after(line: &str, key: &str) -> usize {
    line.split(key)
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {line}"))
}

#[tokio::test]
async fn data_survives_a_restart_and_sequence_numbers_continue() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute(
        "create table kv (k bigint primary key, v text) with (bucket = 2);
         insert into kv select i, 'v' || i from generate_series(1, 1000) as t(i);",
    )
    .await
    .unwrap();
    drop(c);
    let warehouse = server.stop_and_keep_warehouse();
    let server = TestServer::start_on(warehouse, &[]);
    let c = server.client().await;
    assert_eq!(count(&c, "kv").await, 1000);
    // New keys after the restart; an existing one is still a duplicate.
    c.execute("insert into kv values (1001, 'new')", &[])
        .await
        .unwrap();
    let err = c
        .execute("insert into kv values (5, 'again')", &[])
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "23505");
    assert_eq!(count(&c, "kv").await, 1001);
    let row = c
        .query_one("select v from kv where k = 5", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, &str>(0), "v5");
}

#[tokio::test]
async fn many_connections_insert_at_once() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute("create table hits (id bigint primary key, who int) with (bucket = 3)")
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for w in 0..8i64 {
        let client = server.client().await;
        tasks.push(tokio::spawn(async move {
            for s in 0..10i64 {
                let base = (w * 10 + s) * 100;
                client
                    .execute(
                        &format!(
                            "insert into hits select i, {w} from generate_series({base}, {}) as t(i)",
                            base + 99
                        ),
                        &[],
                    )
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(count(&c, "hits").await, 8000);
    let distinct: i64 = c
        .query_one("select count(distinct id) from hits", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(distinct, 8000);
    let snapshots = std::fs::read_dir(server.warehouse.path().join("public.db/hits/snapshot"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("snapshot-")
        })
        .count();
    // Group commit: concurrent statements may share a snapshot, never need more than one each.
    assert!(
        (1..=80).contains(&snapshots),
        "{snapshots} snapshots for 80 statements"
    );
}

#[tokio::test]
async fn the_same_key_from_two_writers_fails_one_of_them() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute("create table once (id bigint primary key, who int) with (bucket = 1)")
        .await
        .unwrap();
    let a = server.client().await;
    let b = server.client().await;
    for key in 0..20i64 {
        let (qa, qb) = (
            format!("insert into once values ({key}, 1)"),
            format!("insert into once values ({key}, 2)"),
        );
        let (ra, rb) = tokio::join!(a.execute(&qa, &[]), b.execute(&qb, &[]));
        let failures: Vec<String> = [ra, rb]
            .into_iter()
            .filter_map(|r| r.err())
            .map(|e| sqlstate(&e))
            .collect();
        assert_eq!(failures, ["23505"], "key {key}: exactly one writer loses");
    }
    assert_eq!(count(&c, "once").await, 20);
}

#[tokio::test]
async fn a_cancelled_insert_leaves_no_trace() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute("create table big (id bigint primary key, pad text) with (bucket = 2, write-buffer-size = '256kb')")
        .await
        .unwrap();
    let token = c.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        token.cancel_query(tokio_postgres::NoTls).await.unwrap();
    });
    let err = c
        .execute(
            "insert into big select i, repeat('x', 50) from generate_series(1, 200000000) as t(i)",
            &[],
        )
        .await
        .unwrap_err();
    canceller.await.unwrap();
    assert_eq!(sqlstate(&err), "57014");
    assert_eq!(count(&c, "big").await, 0);
    // The runs it had spilled are removed.
    let table = server.warehouse.path().join("public.db/big");
    let mut left = files_with_suffix(&table, ".parquet");
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = files_with_suffix(&table, ".parquet");
    }
    assert!(left.is_empty(), "orphan data files: {left:?}");
    assert!(!table.join("snapshot/snapshot-1").exists());
}

#[tokio::test]
async fn a_failed_insert_leaves_no_trace() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute(
        "create table f (id bigint primary key, v varchar(3)) with (bucket = 2, write-buffer-size = '64kb');
         insert into f values (1, 'a');",
    )
    .await
    .unwrap();
    // Many runs are spilled before the bad row near the end is seen.
    let err = c
        .execute(
            "insert into f select i, case when i = 99999 then 'toolong' else 'ok' end \
             from generate_series(2, 100000) as t(i)",
            &[],
        )
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22001");
    assert_eq!(count(&c, "f").await, 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let files = files_with_suffix(&server.warehouse.path().join("public.db/f"), ".parquet");
    assert_eq!(files.len(), 1, "only the first INSERT's file: {files:?}");
}

/// A data file deleted behind the server's back (by hand, by another tool): the query says
/// which file is missing (58P01, not "corrupt metadata" nor an I/O failure) and what to do, and
/// a version without the file still reads, as the hint says.
#[tokio::test]
async fn a_deleted_data_file_is_reported_as_missing_with_what_to_do() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute("create table m (id bigint, v text); insert into m values (1, 'a');")
        .await
        .unwrap();
    let table = server.warehouse.path().join("public.db/m");
    let before = files_with_suffix(&table, ".parquet");
    c.execute("insert into m values (2, 'b')", &[])
        .await
        .unwrap();
    let added: Vec<_> = files_with_suffix(&table, ".parquet")
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    assert_eq!(added.len(), 1, "{added:?}");
    std::fs::remove_file(&added[0]).unwrap();

    let err = c
        .query("select id, v from m order by id", &[])
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "58P01", "{err:?}");
    let db = err.as_db_error().unwrap();
    let name = added[0].file_name().unwrap().to_string_lossy();
    assert!(db.message().contains(name.as_ref()), "{db:?}");
    assert!(
        db.detail().unwrap_or_default().contains("deleted"),
        "{db:?}"
    );
    assert!(
        db.hint().unwrap_or_default().contains("VERSION AS OF"),
        "{db:?}"
    );

    let rows = c
        .query("select id from m version as of 1", &[])
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, i64>(0), 1);
}

#[tokio::test]
async fn tables_written_by_another_writer_appear_without_restart() {
    let server = TestServer::start();
    let c = server.client().await;
    assert_eq!(
        count(&c, "information_schema.tables where table_name = 'outside'").await,
        0
    );
    // Another Paimon writer (tarn's storage library, as a separate process would) creates and
    // fills a table while the server runs.
    let wh = tarn::storage::Warehouse::open(&tarn::storage::WarehouseLocation::Local(
        server.warehouse.path().to_owned(),
    ))
    .unwrap();
    let schema = tarn::storage::spec::schema::TableSchema::from_json(
        br#"{"version":3,"id":0,"fields":[{"id":0,"name":"k","type":"INT NOT NULL"},
        {"id":1,"name":"v","type":"STRING"}],"highestFieldId":1,"partitionKeys":[],
        "primaryKeys":["k"],"options":{"bucket":"2"},"timeMillis":0}"#,
    )
    .unwrap();
    let table = wh.create_table("public", "outside", schema).await.unwrap();
    let mut write = tarn::storage::TableWrite::new(table.clone(), tarn::storage::WriteMode::Insert)
        .await
        .unwrap();
    let batch = datafusion::arrow::array::RecordBatch::try_from_iter(vec![
        (
            "k",
            std::sync::Arc::new(datafusion::arrow::array::Int32Array::from(vec![1, 2, 3]))
                as datafusion::arrow::array::ArrayRef,
        ),
        (
            "v",
            std::sync::Arc::new(datafusion::arrow::array::StringArray::from(vec![
                "a", "b", "c",
            ])),
        ),
    ])
    .unwrap();
    write.write(batch).await.unwrap();
    tarn::storage::commit_write(write).await.unwrap();
    let rows = c
        .query("select k, v from outside order by k", &[])
        .await
        .unwrap();
    let got: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(
        got,
        [(1, "a".into()), (2, "b".into()), (3, "c".into())],
        "visible at once"
    );
}

#[tokio::test]
async fn explain_shows_pruning_projection_and_bounded_manifests() {
    let server = TestServer::start();
    let c = server.client().await;
    // Each commit in a snapshot of its own (not folded by the commit log's flush): what follows
    // counts files, manifests and snapshots.
    c.batch_execute("set tarn.flush_on_commit = on")
        .await
        .unwrap();
    c.batch_execute(
        "create table orders (
           id bigint, customer text not null, amount numeric(12,2), status text,
           placed_at timestamp, dt date not null, primary key (id, dt)
         ) partitioned by (dt) with (bucket = 4);",
    )
    .await
    .unwrap();
    for day in 1..=5 {
        c.execute(
            &format!(
                "insert into orders select i, 'c' || i, i * 1.25, \
                 case when i % 3 = 0 then 'paid' else 'new' end, \
                 timestamp '2026-12-0{day} 10:00', date '2026-12-0{day}' \
                 from generate_series({}, {}) as t(i)",
                day * 1000,
                day * 1000 + 999
            ),
            &[],
        )
        .await
        .unwrap();
    }
    // Partition pruning: one day of five; only the aggregate's columns are read.
    let line = scan_line(
        &c,
        "select status, sum(amount) from orders where dt = '2026-12-03' group by status",
    )
    .await;
    assert!(line.contains("columns=[amount, status, dt]"), "{line}");
    assert_eq!(number_after(&line, "splits="), 4, "{line}");
    assert_eq!(
        number_after(&line, "files="),
        4,
        "one day's four buckets: {line}"
    );
    assert_eq!(
        number_after(&line, "files_pruned=") + 4 * number_after(&line, "manifests_pruned="),
        16,
        "the other days' files are skipped, by manifest or file statistics: {line}"
    );
    // Key pruning: a point lookup opens only files whose key range holds the key.
    let line = scan_line(&c, "select * from orders where id = 3500").await;
    assert_eq!(number_after(&line, "files="), 1, "{line}");
    let row = c
        .query_one("select customer, status from orders where id = 3500", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, &str>(0), "c3500");

    // Time travel prunes as a read of the latest snapshot does: once snapshot 5 is old, the
    // same queries on VERSION AS OF 5 open the same splits, files and manifests.
    let partition_query = "select status, sum(amount) from orders{v} where dt = '2026-12-03' \
                           group by status";
    let point_query = "select * from orders{v} where id = 3500";
    let mut at_latest = Vec::new();
    for q in [partition_query, point_query] {
        at_latest.push(scan_line(&c, &q.replace("{v}", "")).await);
    }
    c.execute(
        "insert into orders values (6000, 'c6000', 1, 'new', null, date '2026-12-06')",
        &[],
    )
    .await
    .unwrap();
    for (q, latest) in [partition_query, point_query].iter().zip(&at_latest) {
        let old = scan_line(&c, &q.replace("{v}", " version as of 5")).await;
        assert!(
            old.contains("snapshot=5") && latest.contains("snapshot=5"),
            "{old}"
        );
        for key in [
            "splits=",
            "files=",
            "files_pruned=",
            "manifests=",
            "manifests_pruned=",
        ] {
            assert_eq!(
                number_after(&old, key),
                number_after(latest, key),
                "{key} of {q}: {old} vs {latest}"
            );
        }
    }

    // Manifests a scan opens stay bounded as commits pile up.
    c.batch_execute("create table log (id bigint primary key, v int) with (bucket = 1)")
        .await
        .unwrap();
    let mut most = 0;
    for i in 0..80 {
        c.execute(&format!("insert into log values ({i}, {i})"), &[])
            .await
            .unwrap();
        let line = scan_line(&c, "select * from log").await;
        most = most.max(number_after(&line, "manifests="));
    }
    assert!(most <= 31, "a scan opened {most} manifests");
    assert_eq!(count(&c, "log").await, 80);
}

#[tokio::test]
async fn writes_in_a_transaction_block_are_undone_by_rollback() {
    let server = TestServer::start();
    let (client, mut connection) =
        tokio_postgres::connect(&server.conn_str(), tokio_postgres::NoTls)
            .await
            .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut stream = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        use futures::StreamExt;
        while let Some(Ok(msg)) = stream.next().await {
            if let tokio_postgres::AsyncMessage::Notice(n) = msg {
                let _ = tx.send(n.message().to_owned());
            }
        }
    });
    client
        .batch_execute("create table w (id int primary key)")
        .await
        .unwrap();
    client
        .batch_execute("begin; insert into w values (1); rollback;")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let notices: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert!(notices.is_empty(), "{notices:?}");
    assert_eq!(count(&client, "w").await, 0);
    assert!(
        !server
            .warehouse
            .path()
            .join("public.db/w/snapshot/snapshot-1")
            .exists()
    );
}
