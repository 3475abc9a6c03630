//! The `tarn` binary: parse flags, set up logging, serve until SIGINT/SIGTERM.

use std::process::ExitCode;

use clap::Parser;
use tarn::config::Cli;
use tarn::query::{EngineOptions, QueryEngine};
use tarn::server::Server;
use tarn::storage::{Warehouse, WarehouseLocation};
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let args = Cli::parse().serve_args();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tarn: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            tracing::error!("{message}");
            eprintln!("tarn: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: tarn::config::ServeArgs) -> Result<(), String> {
    let location = WarehouseLocation::parse(&args.warehouse).map_err(|e| e.to_string())?;
    let warehouse = Warehouse::open(&location)
        .map_err(|e| e.to_string())?
        .with_write_latency(std::time::Duration::from_millis(
            args.simulated_write_latency_ms,
        ))
        .with_cache_memory(args.cache_memory);
    let warehouse = match args.commit_log_dir(&location) {
        Some(dir) => warehouse
            .with_commit_log(
                dir.clone(),
                tarn::storage::FlushPolicy {
                    interval: std::time::Duration::from_millis(args.flush_interval_ms),
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| {
                format!(
                    "cannot open the commit log in {}: {e} (--commit-log DIR puts it elsewhere; \
                     --commit-log off commits every transaction straight into a snapshot)",
                    dir.display()
                )
            })?,
        None => warehouse,
    };
    // Transaction blocks whose DDL a crash left undecided: finished or undone before any
    // statement runs (`storage/block_ddl.rs`); tried again at the next start if this fails.
    if let Err(e) = warehouse.recover_blocks().await {
        tracing::error!(error = %e, "could not settle the transaction blocks a crash left");
    }
    let log = warehouse.commit_log().cloned();
    let options = EngineOptions {
        debug_functions: args.debug_functions,
    };
    let engine = QueryEngine::open(warehouse, options)
        .await
        .map_err(|e| e.to_string())?;
    if !engine.catalog().has_database("public") {
        engine
            .catalog()
            .warehouse()
            .create_database("public")
            .await
            .map_err(|e| format!("cannot create schema public: {e}"))?;
        engine
            .catalog()
            .refresh()
            .await
            .map_err(|e| e.to_string())?;
    }
    let _metrics = match &args.metrics_listen {
        Some(addr) => {
            let warehouse = engine.catalog().warehouse().clone();
            let (local, task) = tarn::server::metrics::serve_metrics(addr, warehouse)
                .await
                .map_err(|e| format!("cannot listen for metrics on {addr}: {e}"))?;
            tracing::info!(%local, "metrics: curl http://{local}/metrics");
            Some(task)
        }
        None => None,
    };
    let mut server = Server::bind(&args.listen, engine, args.connect_options()?).await?;
    server.set_max_connections(args.max_connections);
    let addr = server.local_addr().map_err(|e| e.to_string())?;
    tracing::info!(
        %addr,
        warehouse = %args.warehouse,
        version = env!("CARGO_PKG_VERSION"),
        "tarn is ready: psql -h {} -p {}",
        addr.ip(),
        addr.port()
    );
    server.serve(shutdown_signal()).await;
    if let Some(log) = log {
        // A graceful shutdown leaves nothing in the log.
        if let Err(e) = log.flush_all().await {
            tracing::error!(error = %e, "flushing the commit log at shutdown failed; it replays at the next start");
        }
        log.close().await;
    }
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => tracing::info!("SIGINT received"),
        _ = term => tracing::info!("SIGTERM received"),
    }
}
