//! Soak: steady single-row and batch upserts, deletes and concurrent queries against one
//! primary-key table for `TARN_SOAK_SECONDS` (default 600), with background compaction and
//! snapshot expiration doing what they do in production. Every `TARN_SOAK_SAMPLE_SECONDS`
//! (default 30) it prints one line: commits, rows, live data files and bytes, sorted runs per
//! bucket, data files on disk, metadata (snapshot/ + manifest/) on disk, snapshots, the
//! server's RSS, and point-lookup / aggregate latency percentiles of that interval. At the end
//! it waits for compaction to go idle, prints how flat the counts stayed (first third vs last
//! third of the run) and compaction's figures (`"soak$compaction"`, when the server has it),
//! and checks the table against a model of every acknowledged write: PASS, or FAIL and exit 1.
//! Only correctness is asserted; every other figure is printed.
//!
//! The model is exact: each writer owns a disjoint key range, so the acknowledged writes of
//! one key come from one connection, in order. Writers also read their own keys back now and
//! then (read-your-writes against the model while compaction rewrites files underneath).
//!
//! `TARN_SOAK_SECONDS=600 cargo bench --profile dev --bench soak` (a dev build is enough: this
//! measures behaviour over time, not peak speed). `TARN_SOAK_KEYS` (default 100000),
//! `TARN_SOAK_WRITERS` (single-row writers, default 3), `TARN_SOAK_BATCH` (rows per batch
//! upsert, default 500), `TARN_SOAK_RETAINED_MAX` (the table's `snapshot.num-retained.max`,
//! default 100; 0 keeps tarn's default of 1000, which a dev build takes more than ten minutes
//! of commits to reach); `TARN_TEST_BIN` runs another server build.

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_postgres::{Client, SimpleQueryMessage};

const TABLE: &str = "soak";
/// `num-sorted-run.stop-trigger`'s default.
const STOP_TRIGGER: u64 = 8;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The same numbers every run.
use tarn::storage::bench::SplitMix64 as Rng;

/// id -> (v, n).
type Model = BTreeMap<i64, (String, i64)>;

/// Counters the tasks share with the sampler.
#[derive(Default)]
struct Shared {
    /// Acknowledged write statements (each an autocommit transaction).
    commits: AtomicU64,
    /// Rows those statements reported (upserted or deleted).
    rows: AtomicU64,
    /// Failed statements, and wrong answers seen while running.
    errors: AtomicU64,
    error_texts: Mutex<Vec<String>>,
    /// Latencies (ms) of this interval.
    lookups: Mutex<Vec<f64>>,
    aggregates: Mutex<Vec<f64>>,
    /// Read-your-writes checks done by the writers.
    own_reads: AtomicU64,
}

impl Shared {
    fn problem(&self, text: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut texts = self.error_texts.lock().unwrap();
        if texts.len() < 20 {
            eprintln!("soak: {text}");
            texts.push(text);
        }
    }

    fn failed(&self, what: &str, e: &tokio_postgres::Error) {
        let text = match e.as_db_error() {
            Some(db) => format!("{what}: {} {}", db.code().code(), db.message()),
            None => format!("{what}: {e}"),
        };
        self.problem(text);
    }

    fn committed(&self, rows: u64) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.rows.fetch_add(rows, Ordering::Relaxed);
    }
}

/// What a writer leaves: its part of the model, and keys whose last write failed (the model
/// cannot know whether a failed statement had an effect).
struct WriterOut {
    model: Model,
    uncertain: HashSet<i64>,
}

/// Reads `id` back and compares it with the writer's own model (nobody else writes it).
async fn check_own(client: &Client, shared: &Shared, model: &Model, id: i64) {
    let got = client
        .query("select v, n from soak where id = $1", &[&id])
        .await;
    shared.own_reads.fetch_add(1, Ordering::Relaxed);
    match got {
        Ok(rows) => {
            let got: Vec<(String, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
            let want: Vec<(String, i64)> = model.get(&id).cloned().into_iter().collect();
            if got != want {
                shared.problem(format!(
                    "read-your-writes: id {id} reads {got:?}, the model says {want:?}"
                ));
            }
        }
        Err(e) => shared.failed("read-your-writes lookup", &e),
    }
}

/// Single-row upserts (`n` accumulates through the conflict action, so the merged old row
/// matters) and 1 in 20 deletes, over `range`.
async fn single_writer(
    client: Client,
    shared: Arc<Shared>,
    w: u64,
    range: Range<i64>,
    deadline: Instant,
    mut model: Model,
) -> WriterOut {
    let upsert = client
        .prepare(
            "insert into soak as o (id, v, n) values ($1, $2, $3) \
             on conflict (id) do update set v = excluded.v, n = o.n + excluded.n",
        )
        .await
        .unwrap();
    let delete = client
        .prepare("delete from soak where id = $1")
        .await
        .unwrap();
    let mut rng = Rng(w + 1);
    let len = (range.end - range.start) as u64;
    let mut uncertain = HashSet::new();
    let mut seq = 0u64;
    while Instant::now() < deadline {
        seq += 1;
        let id = range.start + rng.below(len) as i64;
        if rng.below(20) == 0 {
            match client.execute(&delete, &[&id]).await {
                Ok(n) => {
                    let want = u64::from(model.remove(&id).is_some());
                    if n != want {
                        shared.problem(format!(
                            "delete of id {id} reported {n} rows, the model says {want}"
                        ));
                    }
                    uncertain.remove(&id);
                    shared.committed(n);
                }
                Err(e) => {
                    shared.failed("delete", &e);
                    uncertain.insert(id);
                }
            }
        } else {
            let v = format!("s{w}-{seq}");
            let inc = 1 + rng.below(100) as i64;
            match client.execute(&upsert, &[&id, &v, &inc]).await {
                Ok(n) => {
                    let row = model.entry(id).or_insert_with(|| (String::new(), 0));
                    row.0 = v;
                    row.1 += inc;
                    uncertain.remove(&id);
                    shared.committed(n);
                }
                Err(e) => {
                    shared.failed("single-row upsert", &e);
                    uncertain.insert(id);
                }
            }
        }
        if seq.is_multiple_of(10) && !uncertain.contains(&id) {
            check_own(&client, &shared, &model, id).await;
        }
    }
    WriterOut { model, uncertain }
}

/// Batch upserts of `batch` distinct random keys of `range` in one statement, and every tenth
/// round a range delete of 100 consecutive keys.
async fn batch_writer(
    client: Client,
    shared: Arc<Shared>,
    range: Range<i64>,
    batch: usize,
    deadline: Instant,
    mut model: Model,
) -> WriterOut {
    let delete = client
        .prepare("delete from soak where id >= $1 and id < $2")
        .await
        .unwrap();
    let mut rng = Rng(1_000);
    let len = (range.end - range.start) as u64;
    let batch = batch.min(len as usize);
    let mut uncertain = HashSet::new();
    let mut round = 0u64;
    while Instant::now() < deadline {
        round += 1;
        if round.is_multiple_of(10) {
            let start = range.start + rng.below(len.saturating_sub(100).max(1)) as i64;
            let end = (start + 100).min(range.end);
            match client.execute(&delete, &[&start, &end]).await {
                Ok(n) => {
                    let gone: Vec<i64> = model.range(start..end).map(|(k, _)| *k).collect();
                    if n != gone.len() as u64 {
                        shared.problem(format!(
                            "delete of ids {start}..{end} reported {n} rows, the model says {}",
                            gone.len()
                        ));
                    }
                    for k in gone {
                        model.remove(&k);
                    }
                    for k in start..end {
                        uncertain.remove(&k);
                    }
                    shared.committed(n);
                }
                Err(e) => {
                    shared.failed("range delete", &e);
                    uncertain.extend(start..end);
                }
            }
        } else {
            let mut keys = HashSet::with_capacity(batch);
            while keys.len() < batch {
                keys.insert(range.start + rng.below(len) as i64);
            }
            let mut rows: Vec<(i64, String, i64)> = Vec::with_capacity(batch);
            let mut sql = String::from("insert into soak as o (id, v, n) values ");
            for (i, id) in keys.iter().enumerate() {
                let v = format!("b{round}-{i}");
                let n = rng.below(1_000_000) as i64;
                if i > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&format!("({id}, '{v}', {n})"));
                rows.push((*id, v, n));
            }
            sql.push_str(" on conflict (id) do update set v = excluded.v, n = excluded.n");
            match client.execute(sql.as_str(), &[]).await {
                Ok(n) => {
                    if n != rows.len() as u64 {
                        shared.problem(format!("batch upsert of {} rows reported {n}", rows.len()));
                    }
                    for (id, v, n) in rows {
                        uncertain.remove(&id);
                        model.insert(id, (v, n));
                    }
                    shared.committed(n);
                }
                Err(e) => {
                    shared.failed("batch upsert", &e);
                    uncertain.extend(keys);
                }
            }
        }
        if round.is_multiple_of(3) {
            let id = range.start + rng.below(len) as i64;
            if !uncertain.contains(&id) {
                check_own(&client, &shared, &model, id).await;
            }
        }
    }
    WriterOut { model, uncertain }
}

/// Point lookups of random keys (any writer's), timed.
async fn lookup_reader(client: Client, shared: Arc<Shared>, keys: u64, deadline: Instant) {
    let lookup = client
        .prepare("select v, n from soak where id = $1")
        .await
        .unwrap();
    let mut rng = Rng(7_777);
    while Instant::now() < deadline {
        let id = rng.below(keys) as i64;
        let started = Instant::now();
        match client.query(&lookup, &[&id]).await {
            Ok(rows) => {
                let ms = started.elapsed().as_secs_f64() * 1e3;
                shared.lookups.lock().unwrap().push(ms);
                if rows.len() > 1 {
                    shared.problem(format!("lookup of id {id} returned {} rows", rows.len()));
                }
            }
            Err(e) => shared.failed("point lookup", &e),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `count(*), sum(n)` over the whole table, timed, about once a second.
async fn aggregate_reader(client: Client, shared: Arc<Shared>, deadline: Instant) {
    while Instant::now() < deadline {
        let started = Instant::now();
        match client
            .query_one("select count(*), sum(n) from soak", &[])
            .await
        {
            Ok(_) => {
                let ms = started.elapsed().as_secs_f64() * 1e3;
                shared.aggregates.lock().unwrap().push(ms);
            }
            Err(e) => shared.failed("aggregate", &e),
        }
        tokio::time::sleep(Duration::from_millis(1_000)).await;
    }
}

/// Rows of a simple query as text.
async fn text_rows(client: &Client, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    let messages = client.simple_query(sql).await.map_err(|e| e.to_string())?;
    Ok(messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).map(str::to_owned))
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .collect())
}

/// Column names and values of a simple query's rows, as `name=value` texts.
async fn named_rows(client: &Client, sql: &str) -> Result<Vec<Vec<(String, String)>>, String> {
    let messages = client.simple_query(sql).await.map_err(|e| e.to_string())?;
    Ok(messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(
                r.columns()
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (c.name().to_owned(), r.get(i).unwrap_or("null").to_owned()))
                    .collect(),
            ),
            _ => None,
        })
        .collect())
}

fn num(v: &Option<String>) -> f64 {
    v.as_deref().and_then(|s| s.parse().ok()).unwrap_or(0.0)
}

/// (files, bytes) under `dir`, recursively; `name_filter` picks the files counted.
fn dir_usage(dir: &Path, name_filter: &dyn Fn(&str) -> bool) -> (u64, u64) {
    let mut files = 0;
    let mut bytes = 0;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    for e in entries.flatten() {
        let Ok(meta) = e.metadata() else { continue };
        if meta.is_dir() {
            let (f, b) = dir_usage(&e.path(), name_filter);
            files += f;
            bytes += b;
        } else if name_filter(&e.file_name().to_string_lossy()) {
            files += 1;
            bytes += meta.len();
        }
    }
    (files, bytes)
}

/// Data files on disk (every `bucket-N/` folder), whether or not a snapshot references them.
fn data_on_disk(table_dir: &Path) -> (u64, u64) {
    let mut total = (0, 0);
    for e in std::fs::read_dir(table_dir).into_iter().flatten().flatten() {
        if e.file_name().to_string_lossy().starts_with("bucket-") {
            let (f, b) = dir_usage(&e.path(), &|_| true);
            total.0 += f;
            total.1 += b;
        }
    }
    total
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn latencies(samples: &Mutex<Vec<f64>>) -> (f64, f64, usize) {
    let mut v = std::mem::take(&mut *samples.lock().unwrap());
    v.sort_by(f64::total_cmp);
    (percentile(&v, 0.5), percentile(&v, 0.99), v.len())
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// One look at the table.
struct Sample {
    elapsed: f64,
    commits: u64,
    rows: u64,
    live_files: u64,
    live_bytes: u64,
    runs_max: u64,
    runs_mean: f64,
    runs_per_bucket: Vec<u64>,
    disk_files: u64,
    meta_files: u64,
    meta_bytes: u64,
    snapshots: u64,
    latest: i64,
    rss_kib: u64,
}

struct Sampler {
    table_dir: PathBuf,
    pid: u32,
    /// `"soak$buckets"` has a `sorted_runs` column.
    buckets_have_runs: bool,
    /// `"soak$compaction"` exists.
    compaction_table: bool,
    started: Instant,
}

impl Sampler {
    async fn take(&self, c: &Client, shared: &Shared) -> Sample {
        // Sorted runs per bucket: level-0 files are runs of their own, each higher level one.
        let levels = text_rows(
            c,
            "select bucket, level, count(*), sum(file_size_in_bytes) from \"soak$files\" \
             group by bucket, level",
        )
        .await
        .unwrap_or_else(|e| panic!("soak$files: {e}"));
        let mut runs: BTreeMap<i64, u64> = BTreeMap::new();
        let (mut live_files, mut live_bytes) = (0u64, 0u64);
        for r in &levels {
            let (bucket, level, count) = (num(&r[0]) as i64, num(&r[1]) as i64, num(&r[2]) as u64);
            live_files += count;
            live_bytes += num(&r[3]) as u64;
            *runs.entry(bucket).or_default() += if level == 0 { count } else { 1 };
        }
        if self.buckets_have_runs {
            runs = text_rows(c, "select bucket, sorted_runs from \"soak$buckets\"")
                .await
                .unwrap_or_else(|e| panic!("soak$buckets: {e}"))
                .iter()
                .map(|r| (num(&r[0]) as i64, num(&r[1]) as u64))
                .collect();
        }
        let runs_per_bucket: Vec<u64> = runs.values().copied().collect();
        let runs_max = runs_per_bucket.iter().copied().max().unwrap_or(0);
        let runs_mean = if runs_per_bucket.is_empty() {
            0.0
        } else {
            runs_per_bucket.iter().sum::<u64>() as f64 / runs_per_bucket.len() as f64
        };
        let latest = text_rows(c, "select max(snapshot_id) from \"soak$snapshots\"")
            .await
            .map(|r| num(&r[0][0]) as i64)
            .unwrap_or(-1);
        let (snapshots, snap_bytes) = dir_usage(&self.table_dir.join("snapshot"), &|n| {
            n.starts_with("snapshot-")
        });
        let (hint_files, hint_bytes) = dir_usage(&self.table_dir.join("snapshot"), &|n| {
            !n.starts_with("snapshot-")
        });
        let (manifest_files, manifest_bytes) =
            dir_usage(&self.table_dir.join("manifest"), &|_| true);
        Sample {
            elapsed: self.started.elapsed().as_secs_f64(),
            commits: shared.commits.load(Ordering::Relaxed),
            rows: shared.rows.load(Ordering::Relaxed),
            live_files,
            live_bytes,
            runs_max,
            runs_mean,
            runs_per_bucket,
            disk_files: data_on_disk(&self.table_dir).0,
            meta_files: snapshots + hint_files + manifest_files,
            meta_bytes: snap_bytes + hint_bytes + manifest_bytes,
            snapshots,
            latest,
            rss_kib: rss_kib(self.pid),
        }
    }

    async fn compaction(&self, c: &Client) -> Option<Vec<(String, String)>> {
        if !self.compaction_table {
            return None;
        }
        named_rows(c, "select * from \"soak$compaction\"")
            .await
            .ok()
            .and_then(|mut rows| rows.pop())
    }
}

fn print_header() {
    println!(
        "{:>6} {:>8} {:>7} {:>9} {:>6} {:>8} {:>8} {:>6} {:>7} {:>8} {:>6} {:>7} {:>7} \
         {:>17} {:>17}",
        "t(s)",
        "commits",
        "c/s",
        "rows",
        "files",
        "data MB",
        "runs max",
        "mean",
        "on disk",
        "meta MB",
        "snaps",
        "latest",
        "rss MB",
        "lookup p50/p99 ms",
        "agg p50/p99 ms"
    );
}

fn print_sample(s: &Sample, prev: Option<&Sample>, shared: &Shared) {
    let rate = match prev {
        Some(p) if s.elapsed > p.elapsed => {
            (s.commits - p.commits) as f64 / (s.elapsed - p.elapsed)
        }
        _ => 0.0,
    };
    let (l50, l99, ln) = latencies(&shared.lookups);
    let (a50, a99, an) = latencies(&shared.aggregates);
    println!(
        "{:>6.0} {:>8} {:>7.1} {:>9} {:>6} {:>8.2} {:>8} {:>6.1} {:>7} {:>8.2} {:>6} {:>7} {:>7.0} \
         {:>8.1}/{:<8.1} {:>8.0}/{:<8.0} (n={ln}/{an}) runs {:?}",
        s.elapsed,
        s.commits,
        rate,
        s.rows,
        s.live_files,
        mb(s.live_bytes),
        s.runs_max,
        s.runs_mean,
        s.disk_files,
        mb(s.meta_bytes),
        s.snapshots,
        s.latest,
        s.rss_kib as f64 / 1024.0,
        l50,
        l99,
        a50,
        a99,
        s.runs_per_bucket,
    );
}

/// A figure of the flatness summary: its name and how to read it off a sample.
type Figure = (&'static str, fn(&Sample) -> f64);

/// Max of a figure over the first and the last third of the samples.
fn thirds(samples: &[Sample], f: impl Fn(&Sample) -> f64) -> (f64, f64) {
    let n = samples.len();
    let third = (n / 3).max(1);
    let max = |s: &[Sample]| s.iter().map(&f).fold(0.0, f64::max);
    (
        max(&samples[..third.min(n)]),
        max(&samples[n - third.min(n)..]),
    )
}

fn main() {
    let seconds = env_u64("TARN_SOAK_SECONDS", 600);
    let every = env_u64("TARN_SOAK_SAMPLE_SECONDS", 30).max(1);
    let keys = env_u64("TARN_SOAK_KEYS", 100_000).max(1_000);
    let writers = env_u64("TARN_SOAK_WRITERS", 3).max(1);
    let batch = env_u64("TARN_SOAK_BATCH", 500).max(1) as usize;
    let retained = env_u64("TARN_SOAK_RETAINED_MAX", 100);

    let mut server = common::TestServer::start();
    let table_dir = server.warehouse.path().join("public.db").join(TABLE);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ok = rt.block_on(async {
        let c = server.client().await;
        // snapshot.num-retained.max: tarn's default (1000) takes a dev build more than ten minutes
        // of commits to reach, so metadata could not flatten within a run; 0 keeps the default.
        let retention = if retained > 0 {
            format!(", 'snapshot.num-retained.max' = '{retained}'")
        } else {
            String::new()
        };
        c.batch_execute(&format!(
            "create table soak (id bigint primary key, v text, n bigint) \
             with (bucket = 4{retention})"
        ))
        .await
        .unwrap();
        let started = Instant::now();
        let preload = c
            .execute(
                &format!(
                    "insert into soak select i, 'init', 0 from generate_series(0, {}) as t(i)",
                    keys - 1
                ),
                &[],
            )
            .await
            .unwrap();
        assert_eq!(preload, keys);
        println!(
            "soak: {seconds} s, {keys} keys preloaded in {:.1} s, {writers} single-row writers \
             (upsert with n = o.n + excluded.n, 1 in 20 a delete), 1 batch writer ({batch} rows \
             per upsert, every 10th round a 100-key range delete), 1 point-lookup reader, 1 \
             aggregate reader; bucket = 4, snapshot.num-retained.max = {}",
            started.elapsed().as_secs_f64(),
            if retained > 0 {
                retained.to_string()
            } else {
                "1000 (default)".into()
            }
        );

        let buckets_have_runs = c
            .simple_query("select sorted_runs from \"soak$buckets\" limit 1")
            .await
            .is_ok();
        let compaction_table = c
            .simple_query("select * from \"soak$compaction\"")
            .await
            .is_ok();
        println!(
            "sorted runs from {}; \"soak$compaction\" {}",
            if buckets_have_runs {
                "\"soak$buckets\".sorted_runs"
            } else {
                "\"soak$files\" (level-0 files + one per non-zero level)"
            },
            if compaction_table {
                "present"
            } else {
                "absent"
            }
        );
        let sampler = Sampler {
            table_dir: table_dir.clone(),
            pid: server.pid(),
            buckets_have_runs,
            compaction_table,
            started: Instant::now(),
        };

        // Key ranges: one per single-row writer, the last for the batch writer.
        let shared = Arc::new(Shared::default());
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let span = keys as i64 / (writers as i64 + 1);
        let range = |i: i64| {
            let end = if i == writers as i64 {
                keys as i64
            } else {
                (i + 1) * span
            };
            i * span..end
        };
        let initial =
            |r: &Range<i64>| -> Model { r.clone().map(|k| (k, ("init".to_owned(), 0))).collect() };
        let mut writer_tasks = Vec::new();
        for w in 0..writers {
            let r = range(w as i64);
            writer_tasks.push(tokio::spawn(single_writer(
                server.client().await,
                Arc::clone(&shared),
                w,
                r.clone(),
                deadline,
                initial(&r),
            )));
        }
        let r = range(writers as i64);
        writer_tasks.push(tokio::spawn(batch_writer(
            server.client().await,
            Arc::clone(&shared),
            r.clone(),
            batch,
            deadline,
            initial(&r),
        )));
        let readers = vec![
            tokio::spawn(lookup_reader(
                server.client().await,
                Arc::clone(&shared),
                keys,
                deadline,
            )),
            tokio::spawn(aggregate_reader(
                server.client().await,
                Arc::clone(&shared),
                deadline,
            )),
        ];

        print_header();
        let mut samples: Vec<Sample> = Vec::new();
        let first = sampler.take(&c, &shared).await;
        print_sample(&first, None, &shared);
        samples.push(first);
        let mut next = Instant::now() + Duration::from_secs(every);
        while next < deadline {
            tokio::time::sleep_until(next.into()).await;
            let s = sampler.take(&c, &shared).await;
            print_sample(&s, samples.last(), &shared);
            if let Some(row) = sampler.compaction(&c).await {
                println!("       compaction: {}", kv_text(&row));
            }
            samples.push(s);
            next += Duration::from_secs(every);
        }
        let mut model = Model::new();
        let mut uncertain = HashSet::new();
        for t in writer_tasks {
            let out = t.await.unwrap();
            model.extend(out.model);
            uncertain.extend(out.uncertain);
        }
        for t in readers {
            t.await.unwrap();
        }
        let s = sampler.take(&c, &shared).await;
        print_sample(&s, samples.last(), &shared);
        samples.push(s);

        // Idle: no new snapshot (compactions commit snapshots) for 5 s in a row, and no pass
        // running when the server says so.
        let idle_from = Instant::now();
        let mut last = samples.last().unwrap().latest;
        let mut quiet = 0;
        while quiet < 5 && idle_from.elapsed() < Duration::from_secs(300) {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let latest = text_rows(&c, "select max(snapshot_id) from \"soak$snapshots\"")
                .await
                .map(|r| num(&r[0][0]) as i64)
                .unwrap_or(-1);
            let running = sampler
                .compaction(&c)
                .await
                .is_some_and(|row| row.iter().any(|(k, v)| k == "running" && v == "t"));
            quiet = if latest == last && !running {
                quiet + 1
            } else {
                0
            };
            last = latest;
        }
        let idle = sampler.take(&c, &shared).await;
        println!(
            "after writes stopped, compaction idle in {:.1} s{}:",
            idle_from.elapsed().as_secs_f64(),
            if quiet < 5 {
                " (TIMED OUT waiting)"
            } else {
                ""
            }
        );
        print_sample(&idle, None, &shared);

        // Flatness is judged once expiration keeps the snapshot count at its cap (before that
        // metadata grows by design); the whole run when the cap was never reached.
        let during = &samples[1..samples.len() - 1];
        let cap = if retained > 0 { retained } else { 1000 };
        let steady = during.iter().position(|s| s.snapshots >= cap);
        let during = match steady {
            Some(i) if during.len() - i >= 3 => &during[i..],
            _ => during,
        };
        if during.len() >= 3 {
            println!(
                "flatness from t = {:.0} s{} ({} samples while writing; max of the first third \
                 -> max of the last third):",
                during[0].elapsed,
                if steady.is_some() {
                    format!(" (the snapshot count first at its cap of {cap})")
                } else {
                    format!(" (the snapshot count never reached its cap of {cap})")
                },
                during.len()
            );
            let figures: [Figure; 8] = [
                ("live data files", |s: &Sample| s.live_files as f64),
                ("data files on disk", |s: &Sample| s.disk_files as f64),
                ("live data MB", |s: &Sample| mb(s.live_bytes)),
                ("metadata files", |s: &Sample| s.meta_files as f64),
                ("metadata MB", |s: &Sample| mb(s.meta_bytes)),
                ("snapshot files", |s: &Sample| s.snapshots as f64),
                ("sorted runs (max)", |s: &Sample| s.runs_max as f64),
                ("server RSS MB", |s: &Sample| s.rss_kib as f64 / 1024.0),
            ];
            for (name, f) in figures {
                let (a, b) = thirds(during, f);
                println!(
                    "  {name:<20} {a:>10.2} -> {b:>10.2}  ({:.2}x)",
                    b / a.max(1e-9)
                );
            }
        }
        let runs_peak = samples.iter().map(|s| s.runs_max).max().unwrap_or(0);
        println!(
            "sorted runs per bucket: peak {runs_peak} at a sample while writing, {:?} at the end \
             (stop trigger {STOP_TRIGGER}: {})",
            idle.runs_per_bucket,
            if idle.runs_max <= STOP_TRIGGER {
                "within"
            } else {
                "EXCEEDED"
            }
        );
        let elapsed = samples.last().unwrap().elapsed;
        let commits = shared.commits.load(Ordering::Relaxed);
        println!(
            "{commits} write commits ({:.1}/s), {} rows, {} snapshots made (latest id), {} \
             read-your-writes checks",
            commits as f64 / elapsed,
            shared.rows.load(Ordering::Relaxed),
            idle.latest,
            shared.own_reads.load(Ordering::Relaxed),
        );
        match sampler.compaction(&c).await {
            Some(row) => {
                println!("compaction: {}", kv_text(&row));
                if let Some((_, wa)) = row.iter().find(|(k, _)| k == "write_amplification") {
                    println!("write amplification: {wa}");
                }
            }
            None => {
                println!("write amplification: n/a (no \"soak$compaction\" table on this server)")
            }
        }

        // The server's own account: warnings, stalls, abandoned compactions, errors.
        let log = server.log();
        let count = |needle: &str| log.lines().filter(|l| l.contains(needle)).count();
        println!(
            "server log: {} WARN, {} ERROR, {} write stalls, {} compactions abandoned, {} \
             compaction failures, {} expiration runs, {} panics",
            count("WARN"),
            count("ERROR"),
            count("write stall"),
            count("compaction abandoned"),
            count("compaction failed"),
            count("expired snapshots"),
            count("panicked"),
        );
        for line in log
            .lines()
            .filter(|l| (l.contains("WARN") || l.contains("ERROR")) && !l.contains("write stall"))
            .take(5)
        {
            println!("  {line}");
        }

        // The table against the model.
        let rows = c.query("select id, v, n from soak", &[]).await.unwrap();
        let mut table: HashMap<i64, (String, i64)> = HashMap::with_capacity(rows.len());
        let mut duplicates = 0;
        for r in &rows {
            if table.insert(r.get(0), (r.get(1), r.get(2))).is_some() {
                duplicates += 1;
            }
        }
        let mut mismatches = Vec::new();
        for (id, want) in &model {
            if uncertain.contains(id) {
                continue;
            }
            match table.get(id) {
                Some(got) if got == want => {}
                got => mismatches.push(format!("id {id}: table {got:?}, model {want:?}")),
            }
        }
        for (id, got) in &table {
            if !model.contains_key(id) && !uncertain.contains(id) {
                mismatches.push(format!("id {id}: table {got:?}, model: deleted"));
            }
        }
        let errors = shared.errors.load(Ordering::Relaxed);
        println!(
            "verification: {} rows in the table, {} in the model, {} mismatches, {} duplicate \
             keys, {} keys left uncertain by failed writes, {errors} errors/wrong answers while \
             running",
            table.len(),
            model.len(),
            mismatches.len(),
            duplicates,
            uncertain.len()
        );
        for m in mismatches.iter().take(10) {
            println!("  {m}");
        }
        for e in shared.error_texts.lock().unwrap().iter().take(10) {
            println!("  {e}");
        }
        let ok = mismatches.is_empty() && duplicates == 0 && errors == 0;
        println!("{}", if ok { "PASS" } else { "FAIL" });
        ok
    });
    drop(rt);
    assert!(server.is_running(), "the server died:\n{}", server.log());
    drop(server);
    if !ok {
        std::process::exit(1);
    }
}

fn kv_text(row: &[(String, String)]) -> String {
    row.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}
