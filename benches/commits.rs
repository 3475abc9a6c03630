//! Commit throughput through a real client: single-row autocommit INSERTs (each its own
//! transaction, acknowledged only once its snapshot is durable) from one client, then from
//! `TARN_BENCH_CLIENTS` (default 16) concurrent clients. Prints commits/s and how many
//! snapshots the table gained (group commit puts several transactions in one snapshot).
//!
//! `cargo bench --bench commits`; `TARN_BENCH_SECONDS` sets each phase's length (default 10);
//! `TARN_TEST_BIN` runs another server build (e.g. a release binary); `TARN_BENCH_VERB=upsert`
//! sends `UPSERT INTO` (blind writes, no duplicate-key check) instead of `INSERT INTO`;
//! `TARN_SIMULATED_WRITE_LATENCY_MS=20` (read by the server it starts) adds that much to every
//! durable write, as an object store's round trip would — where group commit matters most.

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn snapshots(server: &common::TestServer) -> usize {
    let dir = server.warehouse.path().join("public.db/events/snapshot");
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("snapshot-"))
            })
            .count()
        })
        .unwrap_or(0)
}

async fn phase(server: &common::TestServer, clients: usize, seconds: u64, base: i64) -> (u64, f64) {
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let client = server.client().await;
        let done = Arc::clone(&done);
        tasks.push(tokio::spawn(async move {
            let verb = std::env::var("TARN_BENCH_VERB").unwrap_or_else(|_| "insert".to_owned());
            let insert = client
                .prepare(&format!("{verb} into events values ($1, $2, 'payload')"))
                .await
                .unwrap();
            let mut i: i64 = 0;
            while Instant::now() < deadline {
                let id = base + (c as i64) * 10_000_000 + i;
                client.execute(&insert, &[&id, &(c as i32)]).await.unwrap();
                done.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    (
        done.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64(),
    )
}

fn main() {
    let seconds: u64 = std::env::var("TARN_BENCH_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let many: usize = std::env::var("TARN_BENCH_CLIENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let server = common::TestServer::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = server.client().await;
        c.batch_execute(
            "create table events (id bigint primary key, client int not null, body text) \
             with (bucket = 4)",
        )
        .await
        .unwrap();
        for (clients, base) in [(1usize, 0i64), (many, 1_000_000_000)] {
            let before = snapshots(&server);
            let (commits, secs) = phase(&server, clients, seconds, base).await;
            let after = snapshots(&server);
            println!(
                "{clients:>3} client(s): {commits:>7} single-row INSERT commits in {secs:.1} s = \
                 {:>8.0} commits/s; {} snapshots ({:.1} transactions per snapshot)",
                commits as f64 / secs,
                after - before,
                commits as f64 / (after - before).max(1) as f64
            );
        }
        let n: i64 = c
            .query_one("select count(*) from events", &[])
            .await
            .unwrap()
            .get(0);
        println!("rows in table: {n}");
    });
}
