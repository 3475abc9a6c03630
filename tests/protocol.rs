//! The Postgres protocol through tokio-postgres: simple and extended queries, types, portals,
//! errors, per-connection settings, concurrency, cancellation, bad clients, shutdown.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::{LONG_QUERY, TestServer, one_int, sqlstate};
use tokio_postgres::SimpleQueryMessage;
use tokio_postgres::types::Type;

fn simple_rows(messages: &[SimpleQueryMessage]) -> Vec<Vec<Option<String>>> {
    messages
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

#[tokio::test]
async fn simple_query_runs_each_statement_in_order() {
    let server = TestServer::start();
    let client = server.client().await;
    let messages = client
        .simple_query("select 1 as a; select 'x' as b, NULL as c; set application_name = 'app'; show application_name")
        .await
        .unwrap();
    assert_eq!(
        simple_rows(&messages),
        vec![
            vec![Some("1".to_owned())],
            vec![Some("x".to_owned()), None],
            vec![Some("app".to_owned())],
        ]
    );
    let completions: Vec<u64> = messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::CommandComplete(n) => Some(*n),
            _ => None,
        })
        .collect();
    assert_eq!(completions, vec![1, 1, 0, 1]);
}

#[tokio::test]
async fn an_error_stops_the_rest_of_a_simple_query() {
    let server = TestServer::start();
    let client = server.client().await;
    let err = client
        .simple_query(
            "set application_name = 'before'; select * from nope; set application_name = 'after'",
        )
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "42P01");
    let rows = simple_rows(&client.simple_query("show application_name").await.unwrap());
    assert_eq!(rows, vec![vec![Some("before".to_owned())]]);
}

#[tokio::test]
async fn extended_query_with_typed_parameters_and_binary_results() {
    let server = TestServer::start();
    let client = server.client().await;
    let row = client
        .query_one("select $1::bigint + 1 as n, $2::text as t, $3::double precision * 2 as f, $4::boolean as b", &[&41i64, &"hi", &1.5f64, &true])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>("n"), 42);
    assert_eq!(row.get::<_, &str>("t"), "hi");
    assert_eq!(row.get::<_, f64>("f"), 3.0);
    assert!(row.get::<_, bool>("b"));

    let stmt = client
        .prepare("select $1::int as i, 'x' as s, 1.5::double precision as d, DATE '2026-12-01' as day, true as flag")
        .await
        .unwrap();
    assert_eq!(stmt.params(), &[Type::INT4]);
    let types: Vec<Type> = stmt.columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(types[0], Type::INT4);
    assert_eq!(types[1], Type::TEXT);
    assert_eq!(types[2], Type::FLOAT8);
    assert_eq!(types[3], Type::DATE);
    assert_eq!(types[4], Type::BOOL);
    let row = client.query_one(&stmt, &[&7i32]).await.unwrap();
    assert_eq!(row.get::<_, i32>(0), 7);
    assert_eq!(
        row.get::<_, chrono::NaiveDate>(3),
        chrono::NaiveDate::from_ymd_opt(2026, 12, 1).unwrap()
    );
}

#[tokio::test]
async fn portals_fetch_rows_in_chunks() {
    let server = TestServer::start();
    let mut client = server.client().await;
    let tx = client.transaction().await.unwrap();
    let stmt = tx
        .prepare("select value from generate_series(1, 10) as g(value) order by value")
        .await
        .unwrap();
    let portal = tx.bind(&stmt, &[]).await.unwrap();
    let mut seen = Vec::new();
    loop {
        let rows = tx.query_portal(&portal, 3).await.unwrap();
        seen.push(rows.len());
        if rows.len() < 3 {
            break;
        }
    }
    assert_eq!(seen, vec![3, 3, 3, 1]);
    tx.commit().await.unwrap();
}

#[tokio::test]
async fn errors_carry_sqlstates() {
    let server = TestServer::start();
    let client = server.client().await;
    let cases = [
        ("selec 1", "42601"),
        ("select * from no_such_table", "42P01"),
        ("select no_such_column from (select 1 as a) t", "42703"),
        ("select 1/0", "22012"),
        ("select 'abc'::int", "22P02"),
        ("create table t (a interval)", "0A000"),
        ("set no_such_setting = 1", "42704"),
        ("set timezone = 'Mars/Olympus'", "22023"),
        ("drop schema no_such_schema", "3F000"),
        ("create schema sys", "42939"),
        ("select 1; select 2", "42601"),
        // Server files are out of reach of clients.
        ("copy (select 1) to '/tmp/tarn-copy-test.csv'", "0A000"),
        (
            "create external table e stored as csv location '/etc/passwd'",
            "0A000",
        ),
    ];
    for (sql, code) in cases {
        // The extended protocol (prepare + execute) ...
        let err = client.query(sql, &[]).await.unwrap_err();
        assert_eq!(sqlstate(&err), code, "{sql}: {err:?}");
        // ... and the simple protocol, except multi-statement text which is legal there.
        if sql != "select 1; select 2" {
            let err = client.simple_query(sql).await.unwrap_err();
            assert_eq!(sqlstate(&err), code, "{sql} (simple): {err:?}");
        }
    }
    // The connection is still good.
    assert_eq!(one_int(&client, "select 1::int").await, 1);
}

async fn show(c: &tokio_postgres::Client, what: &str) -> String {
    let q = format!("show {what}");
    simple_rows(&c.simple_query(&q).await.unwrap())[0][0]
        .clone()
        .unwrap()
}

#[tokio::test]
async fn settings_do_not_leak_between_connections() {
    let server = TestServer::start();
    let a = server.client().await;
    let b = server.client().await;
    a.simple_query("set application_name = 'conn-a'; set timezone = 'Asia/Tokyo'")
        .await
        .unwrap();
    assert_eq!(show(&a, "application_name").await, "conn-a");
    assert_eq!(show(&a, "timezone").await, "Asia/Tokyo");
    assert_ne!(show(&b, "application_name").await, "conn-a");
    assert_eq!(show(&b, "timezone").await, "UTC");
    a.simple_query("reset all").await.unwrap();
    assert_eq!(show(&a, "timezone").await, "UTC");
}

#[tokio::test]
async fn time_zone_setting_shapes_timestamptz_output() {
    let server = TestServer::start();
    let client = server.client().await;
    let q = "select TIMESTAMPTZ '2026-12-01 10:00:00+00' as t";
    // PostgreSQL drops a zero fraction; pgwire prints six digits (listed in
    // sql/known-mismatches.md), so compare the parts that carry the zone.
    let shown = |rows: Vec<Vec<Option<String>>>| {
        let t = rows[0][0].clone().unwrap();
        (t[..19].to_owned(), t[t.len() - 3..].to_owned())
    };
    let utc = shown(simple_rows(&client.simple_query(q).await.unwrap()));
    assert_eq!(utc, ("2026-12-01 10:00:00".to_owned(), "+00".to_owned()));
    client
        .simple_query("set time zone 'Asia/Tokyo'")
        .await
        .unwrap();
    let tokyo = shown(simple_rows(&client.simple_query(q).await.unwrap()));
    assert_eq!(tokyo, ("2026-12-01 19:00:00".to_owned(), "+09".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_connections_hundred_queries_each() {
    let server = TestServer::start();
    let mut clients = Vec::new();
    for _ in 0..100 {
        clients.push(server.client().await);
    }
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, client)| {
            tokio::spawn(async move {
                client
                    .simple_query(&format!("set application_name = 'client-{i}'"))
                    .await
                    .unwrap();
                for j in 0..100i64 {
                    let row = client
                        .query_one("select current_setting('application_name') as app, $1::bigint * 2 as twice", &[&j])
                        .await
                        .unwrap();
                    assert_eq!(row.get::<_, &str>(0), format!("client-{i}"));
                    assert_eq!(row.get::<_, i64>(1), j * 2);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_request_stops_a_long_query_and_the_connection_survives() {
    let server = TestServer::start();
    let client = server.client().await;
    let token = client.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        token.cancel_query(tokio_postgres::NoTls).await.unwrap();
    });
    let started = std::time::Instant::now();
    let err = client.simple_query(LONG_QUERY).await.unwrap_err();
    canceller.await.unwrap();
    assert_eq!(sqlstate(&err), "57014", "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(one_int(&client, "select 1::int").await, 1);
}

#[tokio::test]
async fn statement_timeout_cancels() {
    let server = TestServer::start();
    let client = server.client().await;
    client
        .simple_query("set statement_timeout = 300")
        .await
        .unwrap();
    let err = client.query(LONG_QUERY, &[]).await.unwrap_err();
    assert_eq!(sqlstate(&err), "57014");
    assert!(
        err.as_db_error()
            .unwrap()
            .message()
            .contains("statement timeout")
    );
    client
        .simple_query("set statement_timeout = 0")
        .await
        .unwrap();
    client.simple_query("select 1").await.unwrap();
}

#[tokio::test]
async fn a_panic_fails_only_its_statement() {
    let server = TestServer::start_with_env(&[("TARN_DEBUG_FUNCTIONS", "true")]);
    let client = server.client().await;
    let other = server.client().await;
    let err = client
        .simple_query("select tarn_debug_panic()")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "XX000", "{err:?}");
    let err = client
        .query("select tarn_debug_panic()", &[])
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "XX000", "{err:?}");
    client.simple_query("select 1").await.unwrap();
    other.simple_query("select 1").await.unwrap();
}

#[tokio::test]
async fn killed_clients_and_garbage_leave_the_server_serving() {
    let mut server = TestServer::start();
    // A client that disconnects in the middle of a long query.
    {
        let (client, connection) =
            tokio_postgres::connect(&server.conn_str(), tokio_postgres::NoTls)
                .await
                .unwrap();
        let conn = tokio::spawn(connection);
        let query = tokio::spawn(async move {
            let _ = client.simple_query(LONG_QUERY).await;
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        conn.abort();
        query.abort();
    }
    // Malformed messages: a startup packet with an absurd length, then random bytes.
    for payload in [
        vec![0x7f, 0xff, 0xff, 0xff, 0, 3, 0, 0],
        vec![0, 0, 0, 4],
        b"GET / HTTP/1.1\r\n\r\n".to_vec(),
    ] {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = s.write_all(&payload);
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf);
    }
    // A client that sends garbage after a good startup.
    {
        let client = server.client().await;
        client.simple_query("select 1").await.unwrap();
    }
    assert!(server.is_running());
    let client = server.client().await;
    assert_eq!(one_int(&client, "select 2::int").await, 2);
}

#[tokio::test]
async fn schemas_are_paimon_databases() {
    let server = TestServer::start();
    let client = server.client().await;
    client.simple_query("create schema sales").await.unwrap();
    client
        .simple_query("create schema if not exists sales")
        .await
        .unwrap();
    client
        .simple_query("create schema \"MixedCase\"")
        .await
        .unwrap();
    assert!(server.warehouse.path().join("public.db").is_dir());
    assert!(server.warehouse.path().join("sales.db").is_dir());
    assert!(server.warehouse.path().join("MixedCase.db").is_dir());
    let err = client
        .simple_query("create schema Sales")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "42P06");
    let rows = simple_rows(
        &client
            .simple_query("select schema_name from information_schema.schemata where schema_name in ('sales', 'MixedCase', 'public') order by 1")
            .await
            .unwrap(),
    );
    assert_eq!(
        rows,
        vec![
            vec![Some("MixedCase".to_owned())],
            vec![Some("public".to_owned())],
            vec![Some("sales".to_owned())],
        ]
    );
    // A table folder another engine wrote makes the schema non-empty.
    let schema_dir = server.warehouse.path().join("sales.db/orders/schema");
    std::fs::create_dir_all(&schema_dir).unwrap();
    std::fs::write(schema_dir.join("schema-0"), "{}").unwrap();
    let err = client.simple_query("drop schema sales").await.unwrap_err();
    assert_eq!(sqlstate(&err), "2BP01");
    client
        .simple_query("drop schema sales cascade")
        .await
        .unwrap();
    assert!(!server.warehouse.path().join("sales.db").exists());
    client
        .simple_query("drop schema if exists sales")
        .await
        .unwrap();
    client
        .simple_query("set search_path = \"MixedCase\", public")
        .await
        .unwrap();
    let rows = simple_rows(
        &client
            .simple_query("select current_schema()")
            .await
            .unwrap(),
    );
    assert_eq!(rows, vec![vec![Some("MixedCase".to_owned())]]);
}

#[test]
fn sigterm_shuts_down_cleanly() {
    let mut server = TestServer::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = rt.block_on(server.client());
    rt.block_on(client.simple_query("select 1")).unwrap();
    let status = server.terminate();
    assert!(status.success(), "exit status {status:?}\n{}", server.log());
    assert!(server.log().contains("shutdown complete"));
}

#[test]
fn logs_one_line_per_connection_and_failed_statement() {
    let server = TestServer::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = server.client().await;
        let _ = client.simple_query("select * from missing_table").await;
    });
    std::thread::sleep(Duration::from_millis(300));
    let log = server.log();
    assert!(log.contains("connection opened"), "{log}");
    assert!(
        log.contains("statement failed") && log.contains("42P01"),
        "{log}"
    );
    assert!(log.contains("connection closed"), "{log}");
}

#[test]
fn sigterm_cancels_statements_that_outlive_the_grace_period() {
    let mut server = TestServer::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = rt.block_on(server.client());
    let query = rt.spawn(async move { client.simple_query(LONG_QUERY).await.map(|_| ()) });
    std::thread::sleep(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let status = server.terminate();
    let waited = started.elapsed();
    assert!(status.success(), "exit status {status:?}\n{}", server.log());
    // The statement got its grace period (5 s), then was cancelled.
    assert!(
        waited >= Duration::from_secs(4),
        "exited after {waited:?}: no grace period"
    );
    assert!(
        server.log().contains("cancelling running statements"),
        "{}",
        server.log()
    );
    assert!(rt.block_on(query).unwrap().is_err());
}

/// Cursor and portal behaviour checked against tarn and, when `TARN_PG15_PORT` is set (as
/// `scripts/test.sh` sets it), against PostgreSQL 15, which proves the expectations.
async fn cursor_targets(server: &TestServer) -> Vec<(&'static str, tokio_postgres::Client)> {
    let mut out = vec![("tarn", server.client().await)];
    if let Some(port) = std::env::var("TARN_PG15_PORT")
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
    {
        let conn = format!("host=127.0.0.1 port={port} user=postgres dbname=postgres");
        out.push(("pg15", server.client_with(&conn).await));
    }
    out
}

#[tokio::test]
async fn cursors_and_portals_stream_instead_of_materialising() {
    let server = TestServer::start();
    for (target, mut client) in cursor_targets(&server).await {
        // A billion rows: materialising them would not finish within the timeout. (A cross
        // join: PostgreSQL materialises one generate_series, but not the join's output.)
        let huge = "select a.g * b.g as v from generate_series(1, 100000) as a(g) \
                    cross join generate_series(1, 10000) as b(g)";
        let small = "select g::int4 as g from generate_series(1, 20) as t(g) order by g";
        let work = async {
            client.simple_query("begin").await.unwrap();
            client
                .simple_query(&format!("declare big no scroll cursor for {huge}"))
                .await
                .unwrap();
            let rows = simple_rows(&client.simple_query("fetch 3 from big").await.unwrap());
            assert_eq!(rows.len(), 3, "{target}");
            client
                .simple_query(&format!("declare c no scroll cursor for {small}"))
                .await
                .unwrap();
            let rows = simple_rows(&client.simple_query("fetch 3 from c").await.unwrap());
            assert_eq!(
                rows,
                [[Some("1".into())], [Some("2".into())], [Some("3".into())]]
            );
            let moved = client.simple_query("move forward 10 in c").await.unwrap();
            assert!(
                matches!(moved.last(), Some(SimpleQueryMessage::CommandComplete(10))),
                "{target}: {moved:?}"
            );
            let rows = client.query("fetch next from c", &[]).await.unwrap();
            assert_eq!(rows[0].get::<_, i32>(0), 14, "{target}");
            let rows = client.query("fetch all from c", &[]).await.unwrap();
            assert_eq!(rows.len(), 6, "{target}");
            let err = client
                .simple_query("fetch backward 1 from c")
                .await
                .unwrap_err();
            assert_eq!(sqlstate(&err), "55000", "{target}: {err:?}");
            client.simple_query("rollback").await.unwrap();

            // Extended protocol: Execute with a row limit suspends the portal.
            let tx = client.transaction().await.unwrap();
            let stmt = tx.prepare(huge).await.unwrap();
            let portal = tx.bind(&stmt, &[]).await.unwrap();
            let first = tx.query_portal(&portal, 2).await.unwrap();
            let second = tx.query_portal(&portal, 2).await.unwrap();
            assert_eq!((first.len(), second.len()), (2, 2), "{target}");
            tx.rollback().await.unwrap();

            // Cursors without HOLD end with their transaction.
            client.simple_query("begin").await.unwrap();
            client
                .simple_query("declare gone cursor for select 1")
                .await
                .unwrap();
            client.simple_query("commit").await.unwrap();
            let err = client.simple_query("fetch gone").await.unwrap_err();
            assert_eq!(sqlstate(&err), "34000", "{target}: {err:?}");
        };
        tokio::time::timeout(Duration::from_secs(60), work)
            .await
            .unwrap_or_else(|_| panic!("{target}: a cursor or portal materialised its rows"));
    }
}

#[tokio::test]
async fn max_connections_refuses_one_more_with_53300() {
    let server = TestServer::start_with_env(&[("TARN_MAX_CONNECTIONS", "2")]);
    let a = server.client().await;
    let _b = server.client().await;
    assert_eq!(show(&a, "max_connections").await, "2");
    let err = tokio_postgres::connect(&server.conn_str(), tokio_postgres::NoTls)
        .await
        .err()
        .expect("a third connection is refused");
    assert_eq!(sqlstate(&err), "53300", "{err:?}");
    drop(a);
    // The place frees when the connection ends.
    let mut admitted = false;
    for _ in 0..50 {
        if tokio_postgres::connect(&server.conn_str(), tokio_postgres::NoTls)
            .await
            .is_ok()
        {
            admitted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(admitted, "a freed place admits a new connection");
}

/// Messages read from a raw connection until ReadyForQuery: their type bytes.
fn read_until_ready(s: &mut std::net::TcpStream) -> Vec<u8> {
    let mut kinds = Vec::new();
    loop {
        let mut head = [0u8; 5];
        s.read_exact(&mut head).unwrap();
        let len = u32::from_be_bytes(head[1..].try_into().unwrap()) as usize;
        let mut body = vec![0u8; len - 4];
        s.read_exact(&mut body).unwrap();
        kinds.push(head[0]);
        if head[0] == b'Z' {
            return kinds;
        }
    }
}

/// A frontend message: type byte, length, body.
fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind];
    m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// An extended-protocol round trip is answered at its Sync, in one piece, as PostgreSQL's
/// backend answers it: nothing is written before the client's Sync or Flush (pgwire wrote and
/// flushed ParseComplete, BindComplete, RowDescription and CommandComplete one by one, four
/// system calls and four client wake-ups per statement). Run against tarn and PostgreSQL 15
/// (`TARN_PG15_PORT`), which proves the expectation.
#[test]
fn extended_replies_wait_for_sync_or_flush() {
    let server = TestServer::start();
    let mut targets = vec![("tarn", server.port, "tester", "tarn")];
    if let Some(port) = std::env::var("TARN_PG15_PORT")
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
    {
        targets.push(("pg15", port, "postgres", "postgres"));
    }
    for (name, port, user, db) in targets {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut startup = 196608u32.to_be_bytes().to_vec();
        for part in ["user", user, "database", db, ""] {
            startup.extend_from_slice(part.as_bytes());
            startup.push(0);
        }
        let mut packet = (startup.len() as u32 + 4).to_be_bytes().to_vec();
        packet.extend_from_slice(&startup);
        s.write_all(&packet).unwrap();
        read_until_ready(&mut s);
        // Parse, Bind, Describe (portal), Execute: no Sync yet.
        let mut round = message(b'P', b"\0select 1 as one\0\0\0");
        round.extend(message(b'B', b"\0\0\0\0\0\0\0\0"));
        round.extend(message(b'D', b"P\0"));
        round.extend(message(b'E', b"\0\0\0\0\0"));
        s.write_all(&round).unwrap();
        std::thread::sleep(Duration::from_millis(500));
        s.set_nonblocking(true).unwrap();
        let mut byte = [0u8; 1];
        let early = s.peek(&mut byte);
        assert!(
            matches!(&early, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "{name}: replied before Sync: {early:?}"
        );
        s.set_nonblocking(false).unwrap();
        s.write_all(&message(b'S', b"")).unwrap();
        assert_eq!(read_until_ready(&mut s), b"12TDCZ", "{name}");
        // Flush writes what the round trip has so far.
        let mut round = message(b'B', b"\0\0\0\0\0\0\0\0");
        round.extend(message(b'E', b"\0\0\0\0\0"));
        round.extend(message(b'H', b""));
        s.write_all(&round).unwrap();
        let mut head = [0u8; 5];
        s.read_exact(&mut head).unwrap();
        assert_eq!(head[0], b'2', "{name}: BindComplete after Flush");
        s.write_all(&message(b'S', b"")).unwrap();
        let mut rest = vec![head[0]];
        let mut body = vec![0u8; u32::from_be_bytes(head[1..].try_into().unwrap()) as usize - 4];
        s.read_exact(&mut body).unwrap();
        rest.extend(read_until_ready(&mut s));
        assert_eq!(rest, b"2DCZ", "{name}");
    }
}
