//! Plans made once: what a kept plan (a prepared statement's, or a simple-protocol text's seen
//! before) must still evaluate per execution, and what must make it again.

mod common;

use std::time::Duration;

use common::{TestServer, sqlstate};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, SimpleQueryMessage, Statement};

/// The rows of a simple query, as text.
async fn simple(client: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    client
        .simple_query(sql)
        .await
        .unwrap()
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_owned))
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

/// The column names of a simple query's result.
async fn simple_columns(client: &Client, sql: &str) -> Vec<String> {
    client
        .simple_query(sql)
        .await
        .unwrap()
        .iter()
        .find_map(|m| match m {
            SimpleQueryMessage::RowDescription(columns) => {
                Some(columns.iter().map(|c| c.name().to_owned()).collect())
            }
            _ => None,
        })
        .unwrap_or_default()
}

/// The one row of a prepared statement, as text.
async fn texts(
    client: &Client,
    statement: &Statement,
    params: &[&(dyn ToSql + Sync)],
) -> Vec<String> {
    let row = client.query_one(statement, params).await.unwrap();
    (0..row.len()).map(|i| row.get::<_, String>(i)).collect()
}

#[tokio::test]
async fn now_and_random_are_evaluated_at_every_execution() {
    let server = TestServer::start();
    let client = server.client().await;
    let text = "select now()::text, current_timestamp::text, random()::text";
    let prepared = client.prepare(text).await.unwrap();
    let first = texts(&client, &prepared, &[]).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = texts(&client, &prepared, &[]).await;
    for i in 0..3 {
        assert_ne!(first[i], second[i], "prepared column {i}");
    }
    // The same simple-protocol text, run twice.
    let first = simple(&client, text).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = simple(&client, text).await;
    for i in 0..3 {
        assert_ne!(first[0][i], second[0][i], "simple column {i}");
    }
    // With a parameter bound into the kept plan.
    let with_param = client
        .prepare("select now()::text from (values (1), (2)) as v(x) where x = $1")
        .await
        .unwrap();
    let first = texts(&client, &with_param, &[&2i64]).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = texts(&client, &with_param, &[&2i64]).await;
    assert_ne!(first, second);
}

#[tokio::test]
async fn a_prepared_select_reads_what_was_committed_after_parse() {
    let server = TestServer::start();
    let client = server.client().await;
    let writer = server.client().await;
    client
        .batch_execute("create table later (id int primary key, v text)")
        .await
        .unwrap();
    let count = client
        .prepare("select count(*)::text from later")
        .await
        .unwrap();
    let by_key = client
        .prepare("select v from later where id = $1")
        .await
        .unwrap();
    assert_eq!(texts(&client, &count, &[]).await, ["0"]);
    assert!(client.query(&by_key, &[&2i32]).await.unwrap().is_empty());
    writer
        .batch_execute("insert into later values (1, 'a'), (2, 'b')")
        .await
        .unwrap();
    assert_eq!(texts(&client, &count, &[]).await, ["2"]);
    assert_eq!(texts(&client, &by_key, &[&2i32]).await, ["b"]);
    // The simple protocol's kept text too.
    assert_eq!(
        simple(&client, "select count(*) from later").await[0][0].as_deref(),
        Some("2")
    );
    writer
        .batch_execute("insert into later values (3, 'c')")
        .await
        .unwrap();
    assert_eq!(
        simple(&client, "select count(*) from later").await[0][0].as_deref(),
        Some("3")
    );
    // Inside a block, a kept plan reads through the block's own writes.
    client
        .batch_execute("begin; insert into later values (4, 'd')")
        .await
        .unwrap();
    assert_eq!(texts(&client, &count, &[]).await, ["4"]);
    assert_eq!(texts(&client, &by_key, &[&4i32]).await, ["d"]);
    client.batch_execute("rollback").await.unwrap();
    assert_eq!(texts(&client, &count, &[]).await, ["3"]);
}

#[tokio::test]
async fn for_system_time_as_of_now_in_a_prepared_statement_sees_later_commits() {
    let server = TestServer::start();
    let client = server.client().await;
    client
        .batch_execute("create table travel (id int primary key); insert into travel values (1)")
        .await
        .unwrap();
    let prepared = client
        .prepare("select count(*)::text from travel for system_time as of now()")
        .await
        .unwrap();
    assert_eq!(texts(&client, &prepared, &[]).await, ["1"]);
    client
        .batch_execute("insert into travel values (2)")
        .await
        .unwrap();
    // now() at this execution is after the second commit.
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(texts(&client, &prepared, &[]).await, ["2"]);
    let text = "select count(*) from travel for system_time as of now()";
    assert_eq!(simple(&client, text).await[0][0].as_deref(), Some("2"));
    client
        .batch_execute("insert into travel values (3)")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(simple(&client, text).await[0][0].as_deref(), Some("3"));
}

#[tokio::test]
async fn a_table_dropped_and_created_with_other_columns_is_planned_again() {
    let server = TestServer::start();
    let client = server.client().await;
    let other = server.client().await;
    client
        .batch_execute("create table remade (a int); insert into remade values (1)")
        .await
        .unwrap();
    let text = "select * from remade";
    assert_eq!(simple_columns(&client, text).await, ["a"]);
    let prepared = client.prepare(text).await.unwrap();
    assert_eq!(client.query(&prepared, &[]).await.unwrap().len(), 1);
    // Another session remakes the table.
    other
        .batch_execute(
            "drop table remade; create table remade (x int, y text);              insert into remade values (7, 'seven'), (8, 'eight')",
        )
        .await
        .unwrap();
    assert_eq!(simple_columns(&client, text).await, ["x", "y"]);
    assert_eq!(
        simple(&client, "select * from remade order by x").await,
        [
            [Some("7".to_owned()), Some("seven".to_owned())],
            [Some("8".to_owned()), Some("eight".to_owned())]
        ]
    );
    // The prepared statement's columns changed: PostgreSQL's error.
    let err = client.query(&prepared, &[]).await.unwrap_err();
    assert_eq!(sqlstate(&err), "0A000");
    // Remade with the same columns, a prepared statement simply reads the new table.
    let count = client.prepare("select count(*) from remade").await.unwrap();
    other
        .batch_execute("drop table remade; create table remade (x int, y text)")
        .await
        .unwrap();
    let n: i64 = client.query_one(&count, &[]).await.unwrap().get(0);
    assert_eq!(n, 0);
}

#[tokio::test]
async fn search_path_decides_which_table_a_kept_text_reads() {
    let server = TestServer::start();
    let client = server.client().await;
    client
        .batch_execute(
            "create schema one; create schema two;              create table one.t (v text); insert into one.t values ('from one');              create table two.t (v text); insert into two.t values ('from two')",
        )
        .await
        .unwrap();
    let text = "select v from t";
    client.batch_execute("set search_path = one").await.unwrap();
    assert_eq!(
        simple(&client, text).await[0][0].as_deref(),
        Some("from one")
    );
    let prepared = client.prepare(text).await.unwrap();
    assert_eq!(texts(&client, &prepared, &[]).await, ["from one"]);
    client.batch_execute("set search_path = two").await.unwrap();
    assert_eq!(
        simple(&client, text).await[0][0].as_deref(),
        Some("from two")
    );
    // As in PostgreSQL, a prepared statement is planned again under the new search_path.
    assert_eq!(texts(&client, &prepared, &[]).await, ["from two"]);
    // set_config inside a query changes it as well.
    client
        .simple_query("select set_config('search_path', 'one', false)")
        .await
        .unwrap();
    assert_eq!(
        simple(&client, text).await[0][0].as_deref(),
        Some("from one")
    );
}

#[tokio::test]
async fn time_zone_is_read_at_every_execution() {
    let server = TestServer::start();
    let client = server.client().await;
    let text = "select '2024-06-01 12:00:00+00'::timestamptz::text";
    client.batch_execute("set time zone 'UTC'").await.unwrap();
    let utc = simple(&client, text).await;
    client
        .batch_execute("set time zone 'Asia/Tokyo'")
        .await
        .unwrap();
    let tokyo = simple(&client, text).await;
    assert_eq!(utc[0][0].as_deref(), Some("2024-06-01 12:00:00+00"));
    assert_eq!(tokyo[0][0].as_deref(), Some("2024-06-01 21:00:00+09"));
}
