//! Test harness: starts the real `tarn` binary on a free loopback port over a temporary
//! warehouse, waits until it accepts connections, and stops it when dropped.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// A temporary folder, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let path = std::env::temp_dir().join(format!(
            "tarn-{tag}-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running tarn server.
pub struct TestServer {
    child: Option<Child>,
    pub port: u16,
    pub warehouse: TempDir,
    /// Server log lines (stderr), collected in the background.
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl TestServer {
    pub fn start() -> Self {
        Self::start_with_env(&[])
    }

    pub fn start_with_env(env: &[(&str, &str)]) -> Self {
        let warehouse = TempDir::new("wh");
        Self::start_on(warehouse, env)
    }

    /// Starts a server over an existing warehouse folder.
    pub fn start_on(warehouse: TempDir, env: &[(&str, &str)]) -> Self {
        // TARN_TEST_BIN runs another build of the server (a release binary, a copy).
        let binary = std::env::var("TARN_TEST_BIN")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_tarn").to_owned());
        let mut command = Command::new(binary);
        command
            .arg("--warehouse")
            .arg(warehouse.path())
            .arg("--listen")
            .arg("127.0.0.1:0")
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // The server's default is a commit log in its warehouse folder; TARN_TEST_COMMIT_LOG=off
        // runs every server without one (each commit its own snapshot), to compare.
        if std::env::var("TARN_TEST_COMMIT_LOG").is_ok_and(|v| v == "off") {
            command.env("TARN_COMMIT_LOG", "off");
        }
        for (k, v) in env {
            command.env(k, v);
        }
        let (mut child, log, rx) = spawn_server(command);
        let port = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(port) => port,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "tarn did not become ready; log:\n{}",
                    log.lock().unwrap().join("\n")
                );
            }
        };
        // Wait until it accepts connections.
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        TestServer {
            child: Some(child),
            port,
            warehouse,
            log,
        }
    }

    pub fn conn_str(&self) -> String {
        format!("host=127.0.0.1 port={} user=tester dbname=tarn", self.port)
    }

    /// A connected tokio-postgres client (its connection task runs in the background).
    pub async fn client(&self) -> tokio_postgres::Client {
        self.client_with(&self.conn_str()).await
    }

    pub async fn client_with(&self, conn_str: &str) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(conn_str, tokio_postgres::NoTls)
            .await
            .expect("connect to tarn");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Stops the server (SIGTERM, waiting for a clean exit) and hands back its warehouse, to
    /// start another server on it.
    pub fn stop_and_keep_warehouse(mut self) -> TempDir {
        if self.child.is_some() {
            assert!(self.terminate().success(), "tarn exits 0 on SIGTERM");
        }
        std::mem::replace(&mut self.warehouse, TempDir::new("spent"))
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("server running");
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        for _ in 0..200 {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        panic!("tarn did not exit within 10 s of SIGTERM");
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A query that runs until cancelled (counts a huge generated series).
pub const LONG_QUERY: &str = "select count(*) from generate_series(1, 100000000000)";

/// The single `int4` a query returns.
pub async fn one_int(client: &tokio_postgres::Client, sql: &str) -> i32 {
    client.query_one(sql, &[]).await.unwrap().get::<_, i32>(0)
}

/// SQLSTATE of a tokio-postgres error.
pub fn sqlstate(e: &tokio_postgres::Error) -> String {
    e.code()
        .map(|c| c.code().to_owned())
        .unwrap_or_else(|| format!("no SQLSTATE: {e}"))
}

/// A path inside the clone that runs this test. Cargo sets `CARGO_MANIFEST_DIR`
/// when it runs a test binary; reading it then (not with `env!` at compile time)
/// keeps binaries in a target dir shared between clones (CI's cache) pointed at
/// the clone that runs them.
pub fn repo_path(relative: &str) -> PathBuf {
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("run this test through cargo test");
    Path::new(&root).join(relative)
}

/// A Python that can `import <modules>` (e.g. `"pypaimon, fastavro"`): `TARN_TEST_PYTHON`, or
/// the venv `scripts/test.sh` creates. Panics with what was tried, naming the test (`what`).
/// The server's log lines so far, shared with the thread that reads its stderr.
pub type ServerLog = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// Spawns `command` (a tarn server with its stderr piped): its stderr lines are collected
/// into the returned log by a thread, which sends the listening port once the server says it
/// is ready (nothing, if it ends before).
pub fn spawn_server(mut command: Command) -> (std::process::Child, ServerLog, mpsc::Receiver<u16>) {
    let mut child = command.spawn().expect("start tarn");
    let stderr = child.stderr.take().expect("stderr piped");
    let log: ServerLog = std::sync::Arc::default();
    let (tx, rx) = mpsc::channel();
    let sink = std::sync::Arc::clone(&log);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("tarn is ready")
                && let Some(port) = line
                    .split("addr=127.0.0.1:")
                    .nth(1)
                    .and_then(|rest| rest.split_whitespace().next())
                    .and_then(|p| p.parse::<u16>().ok())
            {
                let _ = tx.send(port);
            }
            sink.lock().unwrap().push(line);
        }
    });
    (child, log, rx)
}

/// Runs the Python `script` with pypaimon (for `what`, named if it is missing) and returns
/// its standard output; a failing script fails the test with its standard error.
#[allow(dead_code)]
pub fn run_pypaimon(script: &str, what: &str) -> String {
    let python = python_with("pypaimon", what);
    let out = Command::new(python)
        .args(["-c", script])
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "pypaimon failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("pypaimon's output is UTF-8")
}

pub fn python_with(modules: &str, what: &str) -> String {
    let mut candidates = Vec::new();
    if let Ok(python) = std::env::var("TARN_TEST_PYTHON") {
        candidates.push(python);
    }
    if let Ok(home) = std::env::var("HOME") {
        candidates.push(format!("{home}/.cache/tarn-venv/bin/python"));
    }
    let mut tried = Vec::new();
    for candidate in candidates {
        match Command::new(&candidate)
            .args(["-c", &format!("import {modules}")])
            .output()
        {
            Ok(out) if out.status.success() => return candidate,
            Ok(out) => tried.push(format!(
                "{candidate}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(err) => tried.push(format!("{candidate}: {err}")),
        }
    }
    panic!(
        "no Python with {modules} for {what}.\n\
         Tried: {tried:#?}\n\
         Set TARN_TEST_PYTHON to one, or run scripts/test.sh (it installs \
         tests/python/requirements.txt into $HOME/.cache/tarn-venv)."
    )
}
