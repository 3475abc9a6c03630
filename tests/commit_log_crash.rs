//! Issue 17's named crash windows: the server aborts (`TARN_CRASH_AT`, see
//! `src/storage/commit/log/crash_points.rs`) mid-append, after the log's fsync before the ack,
//! mid-flush, after a flush's snapshot before the log state, and mid-replay — and the next
//! start loses no acknowledged commit, duplicates none, and pypaimon reads every one of them.
//!
//! The workload: writers on their own connections, single-row autocommit statements on two
//! tables — `kv` (a primary-key table: new keys and upserts of a writer's own earlier keys,
//! each with a higher value) and `ins` (new keys only, `write-only` so no compaction folds its
//! files). Each writer remembers what was acknowledged and the one statement in flight when the
//! server died. After the restart: every acknowledged key is there with its last acknowledged
//! value (or the in-flight statement's, which may or may not have made it), nothing else is;
//! and `ins`'s snapshot counts as many rows in its files as it has keys — a record replayed
//! twice would write its key into a second file, which no primary key hides from that count.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use common::{TempDir, TestServer};

const WRITERS: i64 = 4;
/// How many rounds a writer runs at most: the crash ends it long before.
const ROUNDS: i64 = 20_000;
const SIGABRT: i32 = 6;
const SIGKILL: i32 = 9;

/// A server started to die: its exit status is what the test checks.
struct Doomed {
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
    ready: mpsc::Receiver<u16>,
}

impl Doomed {
    /// Starts the server over `warehouse` with its commit log in `log_dir`, flushing after
    /// `flush_ms`, and `TARN_CRASH_AT=crash_at` when given.
    fn start(warehouse: &Path, log_dir: &Path, flush_ms: u64, crash_at: Option<&str>) -> Self {
        let binary = std::env::var("TARN_TEST_BIN")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_tarn").to_owned());
        let mut command = Command::new(binary);
        command
            .arg("--warehouse")
            .arg(warehouse)
            .arg("--listen")
            .arg("127.0.0.1:0")
            .env("RUST_LOG", "info")
            .env("TARN_COMMIT_LOG", log_dir)
            .env("TARN_FLUSH_INTERVAL_MS", flush_ms.to_string())
            .env_remove("TARN_CRASH_AT")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(point) = crash_at {
            command.env("TARN_CRASH_AT", point);
        }
        let (child, log, ready) = common::spawn_server(command);
        Doomed { child, log, ready }
    }

    /// The port once the server is ready; `None` when it ended before (its stderr closed).
    fn port(&self) -> Option<u16> {
        self.ready.recv_timeout(Duration::from_secs(60)).ok()
    }

    /// Waits for the process to end, up to `patience` (then kills it and fails).
    fn exit(&mut self, patience: Duration) -> ExitStatus {
        let mut waited = Duration::ZERO;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if waited >= patience {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "the server did not die at its crash point; log:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
            waited += Duration::from_millis(20);
        }
    }

    /// Asserts the server aborted at `point` (not an exit, not another signal).
    fn assert_crashed_at(&mut self, point: &str) {
        let status = self.exit(Duration::from_secs(30));
        assert_eq!(
            status.signal(),
            Some(SIGABRT),
            "the server must die by its crash point, it ended with {status}; log:\n{}",
            self.log()
        );
        let reached = format!("crash point {point} reached");
        assert!(self.log().contains(&reached), "log:\n{}", self.log());
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

/// `kill -9` of a server started through the harness, waiting until it is gone.
fn kill_9(server: &mut TestServer) {
    let _ = Command::new("kill")
        .args(["-9", &server.pid().to_string()])
        .status();
    while server.is_running() {
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn connect(port: u16) -> tokio_postgres::Client {
    let conn = format!("host=127.0.0.1 port={port} user=tester dbname=tarn");
    let (client, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls)
        .await
        .expect("connect to tarn");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// What one writer (or all of them) got acknowledged, and what was in flight at the crash.
#[derive(Debug, Default)]
struct Acked {
    /// `kv`: key → last acknowledged value.
    kv: BTreeMap<i64, i64>,
    /// `kv`: statements in flight when the server died, `(key, value)`.
    kv_in_flight: Vec<(i64, i64)>,
    /// `ins`: acknowledged keys.
    ins: BTreeSet<i64>,
    ins_in_flight: Vec<i64>,
    /// Why writers stopped (each must be the lost connection, no SQLSTATE).
    errors: Vec<String>,
}

impl Acked {
    fn merge(&mut self, other: Acked) {
        self.kv.extend(other.kv);
        self.kv_in_flight.extend(other.kv_in_flight);
        self.ins.extend(other.ins);
        self.ins_in_flight.extend(other.ins_in_flight);
        self.errors.extend(other.errors);
    }

    fn commits(&self) -> usize {
        self.kv.len() + self.ins.len()
    }
}

/// Creates `kv` and `ins`, each with a first row (a table's first commit makes its first
/// snapshot directly; the later ones go through the log).
async fn create_tables(c: &tokio_postgres::Client) {
    c.batch_execute(
        "create table kv (k bigint primary key, v bigint) with (bucket = '2');
         insert into kv values (-1, 0);
         create table ins (k bigint primary key) with ('write-only' = 'true');
         insert into ins values (-1);",
    )
    .await
    .unwrap();
}

/// One writer until its connection fails: per round a new `ins` key, and a new `kv` key or
/// (every third round) an upsert of one of its earlier `kv` keys with a higher value.
async fn write(c: tokio_postgres::Client, w: i64, progress: Arc<Progress>) -> Acked {
    let mut acked = Acked::default();
    let insert_ins = c.prepare("insert into ins values ($1)").await.unwrap();
    let upsert_kv = c
        .prepare("insert into kv values ($1, $2) on conflict (k) do update set v = excluded.v")
        .await
        .unwrap();
    let mut attempted: BTreeMap<i64, i64> = BTreeMap::new();
    let mut inserted = Vec::new();
    for i in 0..ROUNDS {
        if progress.stop.load(Ordering::Relaxed) {
            break;
        }
        let k = i * WRITERS + w;
        if let Err(e) = c.execute(&insert_ins, &[&k]).await {
            acked.ins_in_flight.push(k);
            acked.errors.push(failure(&e));
            break;
        }
        acked.ins.insert(k);
        let (key, value) = if i % 3 == 2 {
            let key = inserted[(i / 3) as usize % inserted.len()];
            (key, attempted[&key] + 1)
        } else {
            inserted.push(k);
            (k, 0)
        };
        attempted.insert(key, value);
        if let Err(e) = c.execute(&upsert_kv, &[&key, &value]).await {
            acked.kv_in_flight.push((key, value));
            acked.errors.push(failure(&e));
            break;
        }
        acked.kv.insert(key, value);
        progress.commits.fetch_add(2, Ordering::Relaxed);
    }
    acked
}

/// A writer's error: `lost` when the connection went (what a crash does), else its SQLSTATE.
fn failure(e: &tokio_postgres::Error) -> String {
    match e.code() {
        None => "lost".to_owned(),
        Some(code) => format!("{}: {e}", code.code()),
    }
}

/// How far the writers go.
#[derive(Debug, Clone, Copy)]
enum Until {
    /// Until the server dies by itself.
    Crash,
    /// The test kills the server (SIGKILL) once this many commits were acknowledged.
    KillAfter(usize),
    /// The writers stop once this many commits were acknowledged.
    StopAfter(usize),
}

/// The writers' acknowledged commits so far, and the flag that stops them.
#[derive(Debug, Default)]
struct Progress {
    commits: AtomicUsize,
    stop: AtomicBool,
}

/// Runs the writers against `port` (see [`Until`]). Returns what they got acknowledged.
async fn run_writers(server: &mut Doomed, port: u16, until: Until) -> Acked {
    let progress = Arc::new(Progress::default());
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let c = connect(port).await;
        tasks.push(tokio::spawn(write(c, w, Arc::clone(&progress))));
    }
    if let Until::KillAfter(n) | Until::StopAfter(n) = until {
        while progress.commits.load(Ordering::Relaxed) < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        match until {
            Until::KillAfter(_) => server.child.kill().unwrap(),
            _ => progress.stop.store(true, Ordering::Relaxed),
        }
    }
    let mut acked = Acked::default();
    for t in tasks {
        acked.merge(t.await.unwrap());
    }
    acked
}

/// The rows of `public.<table>` (columns `cols`) as pypaimon reads them, sorted.
fn pypaimon_rows(warehouse: &Path, table: &str, cols: &[&str]) -> Vec<Vec<i64>> {
    let script = format!(
        "from pypaimon import CatalogFactory\n\
         t = CatalogFactory.create({{'warehouse': '{}'}}).get_table('public.{table}')\n\
         rb = t.new_read_builder()\n\
         a = rb.new_read().to_arrow(rb.new_scan().plan().splits())\n\
         cols = [a.column(c).to_pylist() for c in {cols:?}]\n\
         for row in sorted(zip(*cols)):\n\
         \x20   print(' '.join(str(x) for x in row))\n",
        warehouse.display()
    );
    common::run_pypaimon(&script, "the commit log crash tests")
        .lines()
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect()
}

async fn rows(c: &tokio_postgres::Client, sql: &str) -> Vec<Vec<i64>> {
    c.query(sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (0..r.len()).map(|i| r.get::<_, i64>(i)).collect())
        .collect()
}

/// Checks `kv` rows (sorted by key, seed row included) against what was acknowledged.
fn check_kv(what: &str, got: &[Vec<i64>], acked: &Acked) {
    let mut keys = BTreeSet::new();
    for row in got {
        let (k, v) = (row[0], row[1]);
        assert!(keys.insert(k), "{what}: kv key {k} twice");
        if k == -1 {
            continue;
        }
        let in_flight = acked.kv_in_flight.contains(&(k, v));
        match acked.kv.get(&k) {
            Some(a) => assert!(
                *a == v || in_flight,
                "{what}: kv key {k} has {v}, its last acknowledged value is {a}"
            ),
            None => assert!(in_flight, "{what}: kv key {k} = {v} was never written"),
        }
    }
    assert!(keys.contains(&-1), "{what}: the seed row of kv is gone");
    let lost: Vec<_> = acked.kv.keys().filter(|k| !keys.contains(k)).collect();
    assert!(
        lost.is_empty(),
        "{what}: kv lost acknowledged keys {lost:?}"
    );
}

/// Checks `ins` keys (sorted, seed included) against what was acknowledged.
fn check_ins(what: &str, got: &[i64], acked: &Acked) {
    let set: BTreeSet<i64> = got.iter().copied().collect();
    assert_eq!(set.len(), got.len(), "{what}: an ins key twice");
    let lost: Vec<_> = acked.ins.iter().filter(|k| !set.contains(k)).collect();
    assert!(
        lost.is_empty(),
        "{what}: ins lost acknowledged keys {lost:?}"
    );
    let extra: Vec<_> = set
        .iter()
        .filter(|k| **k != -1 && !acked.ins.contains(k) && !acked.ins_in_flight.contains(k))
        .collect();
    assert!(extra.is_empty(), "{what}: ins keys never written {extra:?}");
}

/// Restarts cleanly over `warehouse` and checks every acknowledged commit through SQL, after
/// `CALL sys.flush`, and through pypaimon.
async fn check_after_restart(warehouse: TempDir, log_dir: &Path, acked: &Acked) -> TestServer {
    let errors: Vec<_> = acked.errors.iter().filter(|e| *e != "lost").collect();
    assert!(
        errors.is_empty(),
        "writers failed other than by the crash: {errors:?}"
    );
    assert!(
        acked.commits() >= 8,
        "the writers got going before the crash: {} commits",
        acked.commits()
    );
    let server = TestServer::start_on(
        warehouse,
        &[
            ("TARN_COMMIT_LOG", log_dir.to_str().unwrap()),
            ("TARN_FLUSH_INTERVAL_MS", "3600000"),
        ],
    );
    let c = server.client().await;
    let kv = rows(&c, "select k, v from kv order by k").await;
    check_kv("SQL", &kv, acked);
    let ins: Vec<i64> = rows(&c, "select k from ins order by k")
        .await
        .into_iter()
        .map(|r| r[0])
        .collect();
    check_ins("SQL", &ins, acked);
    c.execute("call sys.flush('kv')", &[]).await.unwrap();
    c.execute("call sys.flush('ins')", &[]).await.unwrap();
    // Every row of ins's files is a distinct key: no record went into a snapshot twice.
    let in_files = rows(
        &c,
        "select total_record_count from \"ins$snapshots\" order by snapshot_id desc limit 1",
    )
    .await;
    assert_eq!(
        in_files[0][0],
        ins.len() as i64,
        "ins's files hold more rows than it has keys: a record was flushed twice"
    );
    let wh = server.warehouse.path();
    assert_eq!(pypaimon_rows(wh, "kv", &["k", "v"]), kv, "pypaimon's kv");
    let py_ins: Vec<i64> = pypaimon_rows(wh, "ins", &["k"])
        .into_iter()
        .map(|r| r[0])
        .collect();
    assert_eq!(py_ins, ins, "pypaimon's ins");
    server
}

/// One window: writers until the server aborts at `point`, then the checks. Returns the
/// restarted server, the log's folder and what was acknowledged.
async fn crash_window(point: &str, flush_ms: u64) -> (TestServer, TempDir, Acked) {
    let warehouse = TempDir::new("wh");
    let log = TempDir::new("log");
    let log_dir = log.path().join("log");
    let mut server = Doomed::start(warehouse.path(), &log_dir, flush_ms, Some(point));
    let port = server
        .port()
        .expect("the server starts before its crash point");
    create_tables(&connect(port).await).await;
    let acked = run_writers(&mut server, port, Until::Crash).await;
    let name = point.split(':').next().unwrap();
    server.assert_crashed_at(name);
    eprintln!(
        "{point}: {} commits acknowledged, {} in flight at the crash",
        acked.commits(),
        acked.kv_in_flight.len() + acked.ins_in_flight.len()
    );
    let restarted = check_after_restart(warehouse, &log_dir, &acked).await;
    (restarted, log, acked)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_mid_append_cuts_the_torn_group() {
    // Commits before the 100th group were acknowledged; the torn group's were not.
    let (server, _log, _) = crash_window("log-mid-append:100", 3_600_000).await;
    assert!(
        server.log().contains("torn record"),
        "the restart found the half-written group: {}",
        server.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_the_log_fsync_before_the_ack() {
    let (server, _log, acked) = crash_window("log-after-fsync:100", 3_600_000).await;
    // The crashed group was durable: what it held is back, though nobody was answered.
    let c = server.client().await;
    let kv = rows(&c, "select k, v from kv").await;
    let ins = rows(&c, "select k from ins").await;
    let back = acked
        .kv_in_flight
        .iter()
        .filter(|(k, v)| kv.contains(&vec![*k, *v]))
        .count()
        + acked
            .ins_in_flight
            .iter()
            .filter(|k| ins.contains(&vec![**k]))
            .count();
    assert!(
        back >= 1,
        "no statement of the durable, unanswered group came back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_mid_flush() {
    crash_window("flush-mid:5", 200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_a_background_flush_snapshot_before_the_log_state() {
    crash_window("flush-after-snapshot:5", 200).await;
}

/// The same window where nothing follows the flush in the log: the writers stop, `CALL
/// sys.flush('ins')` aborts after its snapshot, so at the restart every record of `ins` is in
/// that snapshot and the replay flushes nothing of `ins` — the state file still says none of
/// it was flushed. Then a commit that is no flush (a compaction) and a kill -9: the start after
/// must still know what the flush's snapshot held (`ins`'s file rows count every replay).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_the_flush_snapshot_then_a_compaction_and_kill_9() {
    let warehouse = TempDir::new("wh");
    let log = TempDir::new("log");
    let log_dir = log.path().join("log");
    let mut server = Doomed::start(
        warehouse.path(),
        &log_dir,
        3_600_000,
        Some("flush-after-snapshot"),
    );
    let port = server.port().expect("the server starts");
    let c = connect(port).await;
    create_tables(&c).await;
    let acked = run_writers(&mut server, port, Until::StopAfter(200)).await;
    let err = c.execute("call sys.flush('ins')", &[]).await.unwrap_err();
    assert_eq!(failure(&err), "lost", "{err}");
    server.assert_crashed_at("flush-after-snapshot");
    let mut server = check_after_restart(warehouse, &log_dir, &acked).await;

    let c = server.client().await;
    c.execute("call sys.compact('ins')", &[]).await.unwrap();
    c.execute("call sys.compact('kv')", &[]).await.unwrap();
    kill_9(&mut server);
    let warehouse = std::mem::replace(&mut server.warehouse, TempDir::new("spent"));
    check_after_restart(warehouse, &log_dir, &acked).await;
}

/// A kill -9 with everything in the log; a start that aborts mid-replay; one that aborts in
/// its replay flush (files written, no snapshot); one that aborts after the replay flush
/// published the first table's snapshot (before the log state); then a clean start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_mid_replay_then_after_the_replay_flush() {
    let warehouse = TempDir::new("wh");
    let log = TempDir::new("log");
    let log_dir = log.path().join("log");
    let mut server = Doomed::start(warehouse.path(), &log_dir, 3_600_000, None);
    let port = server.port().expect("the server starts");
    create_tables(&connect(port).await).await;
    let acked = run_writers(&mut server, port, Until::KillAfter(300)).await;
    let status = server.exit(Duration::from_secs(30));
    assert_eq!(status.signal(), Some(SIGKILL), "{status}");

    // Starts that die before they are ready: mid-replay (the 100th record re-applied), in the
    // replay flush's first table between its files and its snapshot, and after that snapshot.
    for point in ["replay-mid:100", "flush-mid", "flush-after-snapshot"] {
        let mut starting = Doomed::start(warehouse.path(), &log_dir, 3_600_000, Some(point));
        assert_eq!(
            starting.port(),
            None,
            "{point}: the server aborts before it is ready"
        );
        starting.assert_crashed_at(point.split(':').next().unwrap());
    }

    check_after_restart(warehouse, &log_dir, &acked).await;
}
