//! Point reads by primary key and queries without a table, run directly (without DataFusion's
//! physical planner: `query/direct_plan.rs`), must answer exactly as the planned path: the same
//! column names, type OIDs, values (text and binary) and errors. The planned path is reached by
//! the same query with a `LIMIT` the direct path does not take. With `TARN_PG15_PORT` set (as
//! `scripts/test.sh` sets it) the prepared lookups are also checked against PostgreSQL 15.
//! `sql/pg/point_reads.slt` is the differential suite of the same shapes.

mod common;

use common::{TestServer, sqlstate};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, SimpleQueryMessage};

const TABLE: &str = "create table pr_types (k bigint primary key, s smallint, i int, r real, \
    f double precision, m numeric(10, 2), t text, vc varchar(10), d date, ts timestamp, \
    tz timestamptz, b boolean, by bytea, j jsonb, u uuid)";

const ROWS: &str = "insert into pr_types values \
    (1, 1, 10, 1.5, 2.25, 12.34, 'one', 'uno', '2024-01-01', '2024-01-01 12:00:00', \
     '2024-01-01 12:00:00+02', true, '\\x0102', '{\"a\": [1, 2]}', \
     'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'), \
    (2, null, null, null, null, null, null, null, null, null, null, null, null, null, null)";

/// Names, type OIDs and text values of a simple query's result.
async fn simple(client: &Client, sql: &str) -> (Vec<String>, Vec<Vec<Option<String>>>) {
    let mut columns = Vec::new();
    let mut rows = Vec::new();
    for m in client.simple_query(sql).await.unwrap() {
        match m {
            SimpleQueryMessage::RowDescription(cols) => {
                columns = cols.iter().map(|c| c.name().to_owned()).collect();
            }
            SimpleQueryMessage::Row(row) => rows.push(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_owned))
                    .collect(),
            ),
            _ => {}
        }
    }
    (columns, rows)
}

/// Names, types and values (text) of a prepared query's result with `params`, through the
/// binary format tokio-postgres asks for (read back as text with `::text` would hide types).
async fn prepared(
    client: &Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> (Vec<(String, Type)>, Vec<String>) {
    let statement = client.prepare(sql).await.unwrap();
    let columns = statement
        .columns()
        .iter()
        .map(|c| (c.name().to_owned(), c.type_().clone()))
        .collect();
    let rows = client.query(&statement, params).await.unwrap();
    (columns, rows.iter().map(|r| format!("{r:?}")).collect())
}

async fn setup(client: &Client) {
    client
        .batch_execute("drop table if exists pr_types")
        .await
        .unwrap();
    client.batch_execute(TABLE).await.unwrap();
    client.batch_execute(ROWS).await.unwrap();
}

#[tokio::test]
async fn direct_reads_answer_as_planned_reads() {
    let server = TestServer::start();
    let client = server.client().await;
    setup(&client).await;
    for select in [
        "select * from pr_types where k = 1",
        "select * from pr_types where k = 2",
        "select * from pr_types where k = 3",
        "select k, t, k + 1, upper(vc), m * 2, d + 1, ts::text, j, u from pr_types where k = 1",
        "select k as key, t as text_col from pr_types where k = 1 and b",
        "select i from pr_types where k = 1 and i > 100",
        "select 1",
        "select 1 as one, 'x' as t, null::int, 2.5::numeric(4, 2)",
    ] {
        let planned = format!("select * from ({select}) q limit 100");
        let (direct_cols, direct_rows) = simple(&client, select).await;
        let (planned_cols, planned_rows) = simple(&client, &planned).await;
        assert_eq!(direct_rows, planned_rows, "{select}");
        // A subquery renames nothing: unaliased columns keep their names.
        if !select.contains("k + 1") && !select.contains("null::int") {
            assert_eq!(direct_cols, planned_cols, "{select}");
        }
        let direct = prepared(&client, select, &[]).await;
        let planned = prepared(&client, &planned, &[]).await;
        assert_eq!(direct.1, planned.1, "{select}");
        let types = |c: &[(String, Type)]| c.iter().map(|c| c.1.clone()).collect::<Vec<_>>();
        assert_eq!(types(&direct.0), types(&planned.0), "{select}");
    }
    // With a parameter, as pgbench -M prepared runs it.
    let (cols, rows) = prepared(&client, "select * from pr_types where k = $1", &[&1i64]).await;
    let (pcols, prows) = prepared(
        &client,
        "select * from pr_types where k = $1 limit 5",
        &[&1i64],
    )
    .await;
    assert_eq!((cols, rows), (pcols, prows));
}

#[tokio::test]
async fn direct_reads_keep_errors_and_transactions() {
    let server = TestServer::start();
    let client = server.client().await;
    setup(&client).await;
    let err = client
        .simple_query("select i / 0 from pr_types where k = 1")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22012");
    let lookup = client
        .prepare("select t from pr_types where k = $1")
        .await
        .unwrap();
    let text = |rows: Vec<tokio_postgres::Row>| {
        rows.iter()
            .map(|r| r.get::<_, Option<String>>(0))
            .collect::<Vec<_>>()
    };
    client.batch_execute("begin").await.unwrap();
    client
        .batch_execute("insert into pr_types (k, t) values (7, 'seven')")
        .await
        .unwrap();
    client
        .batch_execute("update pr_types set t = 'uno' where k = 1")
        .await
        .unwrap();
    // Another session does not see the transaction's writes; the transaction does.
    let other = server.client().await;
    assert_eq!(
        text(
            other
                .query(&lookup_of(&other).await, &[&7i64])
                .await
                .unwrap()
        ),
        Vec::<Option<String>>::new()
    );
    assert_eq!(
        text(client.query(&lookup, &[&7i64]).await.unwrap()),
        vec![Some("seven".to_owned())]
    );
    assert_eq!(
        text(client.query(&lookup, &[&1i64]).await.unwrap()),
        vec![Some("uno".to_owned())]
    );
    // REPEATABLE READ keeps its snapshot: a commit by the other session is not seen.
    client.batch_execute("rollback").await.unwrap();
    client
        .batch_execute("begin isolation level repeatable read")
        .await
        .unwrap();
    assert_eq!(
        text(client.query(&lookup, &[&1i64]).await.unwrap()),
        vec![Some("one".to_owned())]
    );
    other
        .batch_execute("update pr_types set t = 'eins' where k = 1")
        .await
        .unwrap();
    assert_eq!(
        text(client.query(&lookup, &[&1i64]).await.unwrap()),
        vec![Some("one".to_owned())]
    );
    client.batch_execute("commit").await.unwrap();
    assert_eq!(
        text(client.query(&lookup, &[&1i64]).await.unwrap()),
        vec![Some("eins".to_owned())]
    );
    assert_eq!(
        text(client.query(&lookup, &[&7i64]).await.unwrap()),
        Vec::<Option<String>>::new()
    );
}

async fn lookup_of(client: &Client) -> tokio_postgres::Statement {
    client
        .prepare("select t from pr_types where k = $1")
        .await
        .unwrap()
}

/// The hot shapes take the direct path (its debug log line counts them); others do not.
#[tokio::test]
async fn the_hot_shapes_run_directly() {
    let server = TestServer::start_with_env(&[("RUST_LOG", "info,tarn::query::direct_plan=debug")]);
    let client = server.client().await;
    setup(&client).await;
    let direct = |server: &TestServer| server.log().matches("query run directly").count();
    let before = direct(&server);
    for planned in [
        "select * from pr_types where k = 1 limit 1",
        "select * from pr_types where i = 10",
        "select count(*) from pr_types where k = 1",
        "select * from pr_types where k = 1 union all select * from pr_types where k = 2",
        "select * from \"pr_types$snapshots\"",
        "select * from \"pr_types$audit_log\" where k = 1",
        "select * from pr_types version as of 1 where k = 1",
    ] {
        client.simple_query(planned).await.unwrap();
    }
    // Log lines reach the test's reader a moment after the answers: the direct ones below are
    // waited for, so every planned one before them has been written by then.
    assert_eq!(direct(&server), before, "planned shapes ran directly");
    client
        .simple_query("select t from pr_types where k = 1")
        .await
        .unwrap();
    client.simple_query("select 1").await.unwrap();
    let lookup = client
        .prepare("select * from pr_types where k = $1")
        .await
        .unwrap();
    client.query(&lookup, &[&2i64]).await.unwrap();
    let mut seen = direct(&server);
    for _ in 0..200 {
        if seen >= before + 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        seen = direct(&server);
    }
    assert_eq!(seen, before + 3, "{}", server.log());
}

/// EXPLAIN of a query the direct path runs still shows the read by key.
#[tokio::test]
async fn explain_shows_the_key_read() {
    let server = TestServer::start();
    let client = server.client().await;
    setup(&client).await;
    let (_, rows) = simple(&client, "explain select * from pr_types where k = 1").await;
    let plan: String = rows
        .iter()
        .flatten()
        .flatten()
        .cloned()
        .collect::<Vec<_>>()
        .join("\n");
    assert!(plan.contains("key_lookup=[keys=1"), "{plan}");
}

/// The prepared lookups of pgbench's point-lookup workload against PostgreSQL 15.
#[tokio::test]
async fn prepared_lookups_match_postgres() {
    let Some(port) = std::env::var("TARN_PG15_PORT")
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
    else {
        return;
    };
    let server = TestServer::start();
    let tarn = server.client().await;
    let pg = server
        .client_with(&format!(
            "host=127.0.0.1 port={port} user=postgres dbname=postgres"
        ))
        .await;
    let mut answers = Vec::new();
    for client in [&tarn, &pg] {
        client
            .batch_execute(
                "drop table if exists pr_bench; \
                 create table pr_bench (k bigint primary key, v text, n int); \
                 insert into pr_bench select g, 'value ' || g::text, (g % 1000)::int \
                 from generate_series(1, 2000) g",
            )
            .await
            .unwrap();
        let statement = client
            .prepare("select * from pr_bench where k = $1")
            .await
            .unwrap();
        let mut out = Vec::new();
        for k in [1i64, 2, 999, 1000, 1999, 2000, 2001, 0, -5] {
            let rows = client.query(&statement, &[&k]).await.unwrap();
            out.push(
                rows.iter()
                    .map(|r| {
                        (
                            r.get::<_, i64>(0),
                            r.get::<_, Option<String>>(1),
                            r.get::<_, Option<i32>>(2),
                        )
                    })
                    .collect::<Vec<_>>(),
            );
        }
        let one = client.query_one("select 1", &[]).await.unwrap();
        answers.push((
            out,
            one.get::<_, i32>(0),
            one.columns()[0].name().to_owned(),
        ));
        client.batch_execute("drop table pr_bench").await.unwrap();
    }
    assert_eq!(answers[0], answers[1]);
}
