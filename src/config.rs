//! Command line and environment: every flag `--name` can also be set as `TARN_NAME`.

use clap::{Args, Parser, Subcommand};

/// tarn: a PostgreSQL-wire SQL server over Apache Paimon tables.
#[derive(Debug, Parser)]
#[command(name = "tarn", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Commands>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum Commands {
    /// Start the server (the default when no command is given).
    Serve(ServeArgs),
}

/// Options of the server.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Warehouse location: a local folder (created if missing), file:///path, or memory://
    #[arg(long, env = "TARN_WAREHOUSE", default_value = "./warehouse")]
    pub warehouse: String,
    /// Address to listen on (host:port)
    #[arg(long, env = "TARN_LISTEN", default_value = "127.0.0.1:5433")]
    pub listen: String,
    /// Serve Prometheus metrics (`GET /metrics`) on this address (host:port); off unless given
    #[arg(long, env = "TARN_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,
    /// Connections served at once; one more is refused with SQLSTATE 53300, as PostgreSQL's
    /// `max_connections` does (`SHOW max_connections`)
    #[arg(long, env = "TARN_MAX_CONNECTIONS", default_value_t = 100)]
    pub max_connections: usize,
    /// Registers fault-injection functions for tests (`tarn_debug_panic()`); never in production.
    #[arg(long, env = "TARN_DEBUG_FUNCTIONS", hide = true)]
    pub debug_functions: bool,
    /// Adds this many milliseconds to every durable write, standing in for an object store's
    /// round trip in benchmarks on a local disk; never in production.
    #[arg(
        long,
        env = "TARN_SIMULATED_WRITE_LATENCY_MS",
        hide = true,
        default_value_t = 0
    )]
    pub simulated_write_latency_ms: u64,
}

impl Cli {
    /// The server options, whether given before or after `serve`.
    pub fn serve_args(self) -> ServeArgs {
        match self.command {
            Some(Commands::Serve(args)) => args,
            None => self.serve,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_subcommand() {
        let args = Cli::try_parse_from(["tarn"]).unwrap().serve_args();
        assert_eq!(args.listen, "127.0.0.1:5433");
        assert_eq!(args.warehouse, "./warehouse");
        let args = Cli::try_parse_from([
            "tarn",
            "serve",
            "--listen",
            "127.0.0.1:1",
            "--warehouse",
            "memory://",
        ])
        .unwrap()
        .serve_args();
        assert_eq!(args.listen, "127.0.0.1:1");
        assert_eq!(args.warehouse, "memory://");
    }
}
