//! Metrics outside SQL: `GET /metrics` in Prometheus' text format on `--metrics-listen`
//! (off unless given), for dashboards and alerts that should not need a SQL connection —
//! compaction falling behind (`tarn_write_stalls_total`, `tarn_sorted_runs_max`) above all, and
//! whether the cache budget (`--cache-memory`) is big enough (`tarn_cache_*` by kind: bytes,
//! entries, hits, misses, evictions).
//!
//! A tiny HTTP/1.1 responder on its own listener: one request per connection, no keep-alive,
//! nothing but `/metrics`. The figures are `storage::metrics`' `TableMetrics` and
//! `CacheMetrics` (no I/O per scrape).

use std::fmt::Write as _;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::storage::Warehouse;
use crate::storage::metrics::{CacheMetrics, CacheStats, TableMetrics};

/// Largest request head read before answering.
const MAX_REQUEST: usize = 8 * 1024;

/// Binds `addr` and answers scrapes until the task is dropped.
pub async fn serve_metrics(
    addr: &str,
    warehouse: Warehouse,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let task = tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                continue;
            };
            let warehouse = warehouse.clone();
            tokio::spawn(async move {
                if let Err(e) = answer(socket, &warehouse).await {
                    tracing::debug!("metrics request failed: {e}");
                }
            });
        }
    });
    Ok((local, task))
}

async fn answer(mut socket: TcpStream, warehouse: &Warehouse) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST {
        let n = socket.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, body) = if method == "GET" && (path == "/metrics" || path.starts_with("/metrics?"))
    {
        let mut body = render(&warehouse.table_metrics());
        body.push_str(&render_caches(&warehouse.cache_metrics()));
        if let Some(log) = warehouse.commit_log() {
            body.push_str(&render_commit_log(log, warehouse.clock().now_millis()));
        }
        ("200 OK", body)
    } else {
        (
            "404 Not Found",
            "only GET /metrics is served here\n".to_owned(),
        )
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(response.as_bytes()).await?;
    socket.shutdown().await
}

/// The figures in Prometheus' text exposition format, one family per metric.
pub fn render(tables: &[TableMetrics]) -> String {
    type Get = fn(&TableMetrics) -> Option<f64>;
    let families: [(&str, &str, &str, Get); 13] = [
        (
            "tarn_compactions_total",
            "counter",
            "Compactions committed by this process",
            |t| Some(t.compactions as f64),
        ),
        (
            "tarn_compactions_abandoned_total",
            "counter",
            "Compactions abandoned because their inputs changed",
            |t| Some(t.compactions_abandoned as f64),
        ),
        (
            "tarn_compaction_read_bytes_total",
            "counter",
            "Bytes of data files compaction read",
            |t| Some(t.compaction_bytes_read as f64),
        ),
        (
            "tarn_compaction_written_bytes_total",
            "counter",
            "Bytes of data files compaction wrote",
            |t| Some(t.compaction_bytes_written as f64),
        ),
        (
            "tarn_commit_bytes_total",
            "counter",
            "Bytes of data files user commits of this process added",
            |t| Some(t.commit_bytes as f64),
        ),
        (
            "tarn_write_stalls_total",
            "counter",
            "Commits that waited for compaction at the stop trigger",
            |t| Some(t.write_stalls as f64),
        ),
        (
            "tarn_compaction_running",
            "gauge",
            "Whether a compaction pass runs or is asked for",
            |t| Some(f64::from(u8::from(t.compaction_running))),
        ),
        (
            "tarn_data_files",
            "gauge",
            "Live data files (latest snapshot this process wrote to)",
            |t| t.files.as_ref().map(|f| f.files as f64),
        ),
        (
            "tarn_data_bytes",
            "gauge",
            "Bytes of live data files",
            |t| t.files.as_ref().map(|f| f.bytes as f64),
        ),
        (
            "tarn_level0_files",
            "gauge",
            "Live data files at level 0",
            |t| t.files.as_ref().map(|f| f.level0_files as f64),
        ),
        (
            "tarn_sorted_runs_max",
            "gauge",
            "Most sorted runs of any bucket",
            |t| t.files.as_ref().map(|f| f.max_sorted_runs as f64),
        ),
        (
            "tarn_max_level",
            "gauge",
            "Highest level holding files",
            |t| t.files.as_ref().map(|f| f.max_level as f64),
        ),
        (
            "tarn_buckets",
            "gauge",
            "Buckets with live data files",
            |t| t.files.as_ref().map(|f| f.buckets as f64),
        ),
    ];
    let mut out = String::new();
    for (name, kind, help, get) in families {
        let _ = writeln!(out, "# HELP {name} {help}.");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for t in tables {
            if let Some(v) = get(t) {
                let _ = writeln!(
                    out,
                    "{name}{{database=\"{}\",table=\"{}\"}} {v}",
                    escape(&t.database),
                    escape(&t.table)
                );
            }
        }
    }
    out
}

/// The commit log's figures in the exposition format.
pub fn render_commit_log(log: &crate::storage::LogService, now_millis: i64) -> String {
    let figures = log.figures();
    let (lag_millis, unflushed_bytes) = log.flush_lag(now_millis);
    let families: [(&str, &str, &str, f64); 6] = [
        (
            "tarn_commit_log_records_total",
            "counter",
            "Commit records made durable in the commit log",
            figures.records as f64,
        ),
        (
            "tarn_commit_log_groups_total",
            "counter",
            "Groups of records written and fdatasynced together",
            figures.groups as f64,
        ),
        (
            "tarn_commit_log_fsyncs_total",
            "counter",
            "fsync/fdatasync calls of the commit log (groups, segments, state, truncation)",
            figures.fsyncs as f64,
        ),
        (
            "tarn_commit_log_bytes_total",
            "counter",
            "Bytes of groups written to the commit log",
            figures.bytes as f64,
        ),
        (
            "tarn_commit_log_flush_lag_seconds",
            "gauge",
            "Age of the oldest committed transaction no Paimon snapshot holds yet (0: none)",
            lag_millis as f64 / 1000.0,
        ),
        (
            "tarn_commit_log_unflushed_bytes",
            "gauge",
            "Bytes of committed transactions waiting for their flush",
            unflushed_bytes as f64,
        ),
    ];
    let mut out = String::new();
    for (name, kind, help, value) in families {
        out.push_str(&format!(
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
        ));
    }
    out
}

/// The cache budget's figures in the exposition format: the budget, then one family per
/// figure with a `kind` label.
pub fn render_caches(caches: &CacheMetrics) -> String {
    type Get = fn(&CacheStats) -> u64;
    let families: [(&str, &str, &str, Get); 5] = [
        (
            "tarn_cache_bytes",
            "gauge",
            "Bytes the caches of this kind hold (estimated)",
            |c| c.bytes,
        ),
        (
            "tarn_cache_entries",
            "gauge",
            "Entries the caches of this kind hold",
            |c| c.entries,
        ),
        (
            "tarn_cache_hits_total",
            "counter",
            "Lookups answered from the cache",
            |c| c.hits,
        ),
        (
            "tarn_cache_misses_total",
            "counter",
            "Lookups that had to read and decode a file",
            |c| c.misses,
        ),
        (
            "tarn_cache_evictions_total",
            "counter",
            "Entries dropped to stay within the cache budget",
            |c| c.evictions,
        ),
    ];
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# HELP tarn_cache_budget_bytes Bytes all caches of all tables may hold together \
         (--cache-memory)."
    );
    let _ = writeln!(out, "# TYPE tarn_cache_budget_bytes gauge");
    let _ = writeln!(out, "tarn_cache_budget_bytes {}", caches.budget_bytes);
    for (name, kind, help, get) in families {
        let _ = writeln!(out, "# HELP {name} {help}.");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for c in &caches.kinds {
            let _ = writeln!(out, "{name}{{kind=\"{}\"}} {}", escape(c.kind), get(c));
        }
    }
    out
}

/// A label value as the exposition format quotes it.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::metrics::FileMetrics;

    #[test]
    fn exposition_format() {
        let t = TableMetrics {
            database: "public".into(),
            table: "we\"ird".into(),
            compactions: 3,
            write_stalls: 1,
            files: Some(FileMetrics {
                files: 7,
                max_sorted_runs: 4,
                ..FileMetrics::default()
            }),
            ..TableMetrics::default()
        };
        let text = render(&[t]);
        assert!(text.contains("# TYPE tarn_compactions_total counter\n"));
        assert!(
            text.contains("tarn_compactions_total{database=\"public\",table=\"we\\\"ird\"} 3\n")
        );
        assert!(text.contains("tarn_sorted_runs_max{database=\"public\",table=\"we\\\"ird\"} 4\n"));
        assert!(
            text.contains("tarn_write_stalls_total{database=\"public\",table=\"we\\\"ird\"} 1\n")
        );
        let no_files = render(&[TableMetrics::default()]);
        assert!(!no_files.contains("tarn_data_files{"));
    }

    #[test]
    fn cache_exposition_format() {
        let caches = CacheMetrics {
            budget_bytes: 512 << 20,
            used_bytes: 3000,
            kinds: vec![
                CacheStats {
                    kind: "key_set",
                    bytes: 1000,
                    entries: 2,
                    hits: 7,
                    misses: 2,
                    evictions: 0,
                },
                CacheStats {
                    kind: "manifest",
                    bytes: 2000,
                    entries: 5,
                    hits: 40,
                    misses: 5,
                    evictions: 3,
                },
            ],
        };
        let text = render_caches(&caches);
        assert!(
            text.contains(
                "# TYPE tarn_cache_budget_bytes gauge\ntarn_cache_budget_bytes 536870912\n"
            )
        );
        assert!(text.contains("# TYPE tarn_cache_hits_total counter\n"));
        for line in [
            "tarn_cache_bytes{kind=\"manifest\"} 2000\n",
            "tarn_cache_entries{kind=\"key_set\"} 2\n",
            "tarn_cache_hits_total{kind=\"manifest\"} 40\n",
            "tarn_cache_misses_total{kind=\"key_set\"} 2\n",
            "tarn_cache_evictions_total{kind=\"manifest\"} 3\n",
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
        // Every sample line is `name{labels} value` or `name value`, after its family's TYPE.
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let (name, value) = l.rsplit_once(' ').unwrap();
            assert!(value.parse::<u64>().is_ok(), "{l}");
            let family = name.split('{').next().unwrap();
            assert!(text.contains(&format!("# TYPE {family} ")), "{l}");
        }
    }
}
