//! Paimon table figures through a real client: a large `INSERT ... SELECT` (rows/s and the
//! server's peak RSS), then full-scan aggregates, a point lookup and the EXPLAIN of the
//! aggregate. Prints figures; asserts nothing but that the answers are right.
//!
//! `cargo bench --bench tables` (release). `TARN_BENCH_ROWS` sets the row count (default
//! 10,000,000); `TARN_BENCH_BUFFER` the table's `write-buffer-size` (default tarn's).

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

/// Peak and current resident set size of a process, in MiB (Linux `VmHWM` / `VmRSS`).
fn rss_mib(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

fn dir_size(path: &std::path::Path) -> u64 {
    std::fs::read_dir(path)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    let p = e.path();
                    if p.is_dir() {
                        dir_size(&p)
                    } else {
                        e.metadata().map_or(0, |m| m.len())
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

fn main() {
    let rows: i64 = std::env::var("TARN_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let buffer = std::env::var("TARN_BENCH_BUFFER").ok();
    let server = common::TestServer::start();
    let pid = server.pid();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = server.client().await;
        let options = match &buffer {
            Some(b) => format!("bucket = 4, write-buffer-size = '{b}'"),
            None => "bucket = 4".to_owned(),
        };
        c.batch_execute(&format!(
            "create table orders (
               id bigint primary key, customer text not null, amount numeric(12,2),
               status text, placed_at timestamp
             ) with ({options})"
        ))
        .await
        .unwrap();
        let (peak_before, _) = rss_mib(pid);
        let started = Instant::now();
        let inserted = c
            .execute(
                &format!(
                    "insert into orders select i, 'customer ' || (i % 100000), (i % 100000) * 0.01, \
                     case when i % 3 = 0 then 'paid' when i % 3 = 1 then 'new' else 'shipped' end, \
                     to_timestamp_seconds(1796083200 + i % 86400) \
                     from generate_series(1, {rows}) as t(i)"
                ),
                &[],
            )
            .await
            .unwrap();
        let elapsed = started.elapsed();
        let (peak, now) = rss_mib(pid);
        assert_eq!(inserted as i64, rows);
        let table = server.warehouse.path().join("public.db/orders");
        println!(
            "insert {rows} rows        {:>10.0} rows/s ({:.1} s)",
            rows as f64 / elapsed.as_secs_f64(),
            elapsed.as_secs_f64()
        );
        println!(
            "server peak RSS          {peak:>10.0} MiB (before: {peak_before:.0} MiB, after: {now:.0} MiB)"
        );
        println!(
            "table on disk            {:>10.1} MiB",
            dir_size(&table) as f64 / (1024.0 * 1024.0)
        );

        let started = Instant::now();
        let n: i64 = c
            .query_one("select count(*) from orders", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, rows);
        println!("count(*)                 {:>10.2} s", started.elapsed().as_secs_f64());

        let query = "select status, sum(amount) from orders group by status";
        let started = Instant::now();
        let groups = c.query(query, &[]).await.unwrap();
        assert_eq!(groups.len(), 3.min(rows as usize));
        println!(
            "group by status, sum    {:>10.2} s ({:.0} rows/s scanned and merged)",
            started.elapsed().as_secs_f64(),
            rows as f64 / started.elapsed().as_secs_f64()
        );
        let (peak, _) = rss_mib(pid);
        println!("server peak RSS after reads {peak:>7.0} MiB");

        let key = rows / 2;
        let started = Instant::now();
        for k in 0..100 {
            c.query_one(
                &format!("select customer from orders where id = {}", key + k),
                &[],
            )
            .await
            .unwrap();
        }
        println!(
            "point lookup by key      {:>10.2} ms/query (100 queries)",
            started.elapsed().as_secs_f64() * 10.0
        );

        println!("\nEXPLAIN {query}");
        for m in c.simple_query(&format!("explain {query}")).await.unwrap() {
            if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
                println!("{}", r.get(1).unwrap_or(""));
            }
        }
    });
}
