//! Protocol-level figures: connection setup, round trip of a trivial query (simple and
//! extended), and streaming rate of a large result. Prints figures; asserts nothing.
//!
//! `cargo bench --bench protocol` (release build), or `cargo run`-style in the dev profile with
//! `cargo test --bench protocol -- --bench` is NOT meaningful: measure optimised builds.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

fn per_op(total: Duration, n: u32) -> String {
    format!("{:>9.1} µs/op", total.as_secs_f64() * 1e6 / f64::from(n))
}

fn main() {
    let server = common::TestServer::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let n = 200;
        let started = Instant::now();
        for _ in 0..n {
            let client = server.client().await;
            drop(client);
        }
        println!(
            "connect + startup        {} ({n} connections)",
            per_op(started.elapsed(), n)
        );

        let client = server.client().await;
        let n = 2000;
        let started = Instant::now();
        for _ in 0..n {
            client.simple_query("select 1").await.unwrap();
        }
        println!(
            "simple 'select 1'        {} ({n} queries)",
            per_op(started.elapsed(), n)
        );

        let stmt = client.prepare("select $1::bigint + 1").await.unwrap();
        let started = Instant::now();
        for i in 0..n as i64 {
            client.query_one(&stmt, &[&i]).await.unwrap();
        }
        println!(
            "extended prepared        {} ({n} queries)",
            per_op(started.elapsed(), n)
        );

        let rows: i64 = 2_000_000;
        let started = Instant::now();
        let messages = client
            .simple_query(&format!(
                "select value, value * 2 as twice from generate_series(1, {rows}) as g(value)"
            ))
            .await
            .unwrap();
        let elapsed = started.elapsed();
        let received = messages
            .iter()
            .filter(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(_)))
            .count();
        println!(
            "stream {received} rows     {:>9.0} rows/s ({:.2} s)",
            received as f64 / elapsed.as_secs_f64(),
            elapsed.as_secs_f64()
        );
    });
}
