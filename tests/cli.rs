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
