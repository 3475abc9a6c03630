//! The binary's command line: help, version, flags from the environment.

mod common;

use std::process::Command;

#[test]
fn help_lists_flags_with_their_environment_variables() {
    let out = Command::new(env!("CARGO_BIN_EXE_tarn"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "--warehouse",
        "TARN_WAREHOUSE",
        "--listen",
        "TARN_LISTEN",
        "--cache-memory",
        "TARN_CACHE_MEMORY",
        "serve",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}:\n{help}");
    }
    assert!(
        !help.contains("debug-functions"),
        "test-only flag must stay hidden"
    );
}

#[test]
fn version_prints_the_package_version() {
    let out = Command::new(env!("CARGO_BIN_EXE_tarn"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("tarn {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn environment_sets_the_warehouse_and_serve_subcommand_works() {
    let dir = common::TempDir::new("cli");
    let warehouse = dir.path().join("from-env");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tarn"))
        .arg("serve")
        .env("TARN_WAREHOUSE", &warehouse)
        .env("TARN_LISTEN", "127.0.0.1:0")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let public = warehouse.join("public.db");
    for _ in 0..200 {
        if public.is_dir() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(public.is_dir(), "TARN_WAREHOUSE was not used");
}

#[test]
fn a_bad_warehouse_location_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_tarn"))
        .args(["--warehouse", "s3://bucket/wh", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("s3:// scheme is not supported yet"),
        "{stderr}"
    );
}

/// `--metrics-listen` (here `TARN_METRICS_LISTEN`) serves Prometheus text: a table's
/// compaction counters and file figures appear once the server has written to it, and agree
/// with `"t$compaction"`.
#[tokio::test]
async fn metrics_endpoint_reports_tables() {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let addr = format!("127.0.0.1:{port}");
    let server = common::TestServer::start_with_env(&[("TARN_METRICS_LISTEN", addr.as_str())]);
    let client = server.client().await;
    client
        .batch_execute(
            "create table met (id int primary key, v text) with (bucket = 1);
             insert into met values (1, 'a');
             insert into met values (2, 'b');
             update met set v = 'c' where id = 1;",
        )
        .await
        .unwrap();
    let committed: i64 = client
        .query_one(r#"select bytes_committed from "met$compaction""#, &[])
        .await
        .unwrap()
        .get(0);
    let scrape = |path: &str| {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    };
    let text = scrape("/metrics");
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert!(
        text.contains("# TYPE tarn_write_stalls_total counter"),
        "{text}"
    );
    let line = format!(r#"tarn_commit_bytes_total{{database="public",table="met"}} {committed}"#);
    assert!(text.contains(&line), "{line} missing:\n{text}");
    assert!(
        text.contains(r#"tarn_data_files{database="public",table="met"} "#),
        "{text}"
    );
    assert!(scrape("/other").starts_with("HTTP/1.1 404"));
    assert!(
        text.contains("\ntarn_cache_budget_bytes 536870912\n"),
        "the default budget is 512 MiB:\n{text}"
    );
}

/// A free local port.
fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap().port()
}

/// One `GET` of `path` from the metrics listener at `addr`: the whole response.
fn scrape(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

/// The value of the sample `line` (`name{labels}`) in a scrape, if it is there.
fn sample(text: &str, line: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(line)?.strip_prefix(' '))
        .map(|v| v.parse().unwrap())
}

/// `--cache-memory` (here `TARN_CACHE_MEMORY`) is the budget `/metrics` reports, and the caches
/// the server's statements fill show there by kind — with hits once the same table is read
/// again, and never more bytes than the budget.
#[tokio::test]
async fn metrics_report_the_caches_within_the_cache_memory_budget() {
    let addr = format!("127.0.0.1:{}", free_port());
    let server = common::TestServer::start_with_env(&[
        ("TARN_METRICS_LISTEN", addr.as_str()),
        ("TARN_CACHE_MEMORY", "3MiB"),
    ]);
    let client = server.client().await;
    let values: Vec<String> = (1..=500).map(|i| format!("({i}, 'v{i}')")).collect();
    client
        .batch_execute(&format!(
            "create table cached (id int primary key, v text) with (bucket = 2);
             insert into cached values {};
             insert into cached values (1000, 'a');
             update cached set v = 'b' where id = 1000;",
            values.join(", ")
        ))
        .await
        .unwrap();
    for _ in 0..3 {
        let n: i64 = client
            .query_one("select count(*) from cached", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 501);
    }
    let text = scrape(&addr, "/metrics");
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert_eq!(
        sample(&text, "tarn_cache_budget_bytes"),
        Some(3 << 20),
        "{text}"
    );
    for family in [
        "tarn_cache_bytes",
        "tarn_cache_entries",
        "tarn_cache_hits_total",
        "tarn_cache_misses_total",
        "tarn_cache_evictions_total",
    ] {
        assert!(
            text.contains(&format!("# TYPE {family} ")),
            "{family}:\n{text}"
        );
    }
    for kind in ["manifest", "manifest_list", "schema", "live_files"] {
        let entries = sample(&text, &format!(r#"tarn_cache_entries{{kind="{kind}"}}"#));
        assert!(entries.is_some_and(|n| n > 0), "{kind}:\n{text}");
    }
    let hits = sample(&text, r#"tarn_cache_hits_total{kind="manifest"}"#);
    assert!(hits.is_some_and(|n| n > 0), "reads again hit:\n{text}");
    let held: u64 = text
        .lines()
        .filter_map(|l| l.strip_prefix("tarn_cache_bytes{"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert!(held > 0 && held <= 3 << 20, "{held} bytes held:\n{text}");
}

#[test]
fn a_bad_cache_memory_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_tarn"))
        .args(["--cache-memory", "lots", "--warehouse", "memory://"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a memory size"), "{stderr}");
}
