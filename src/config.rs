//! Command line and environment: every flag `--name` can also be set as `TARN_NAME`.

use clap::{Args, Parser, Subcommand};

use crate::server::ConnectOptions;
use crate::server::auth::AuthMethod;

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
    /// How clients prove who they are: trust, password or scram-sha-256. Without it the server
    /// trusts every connection, and so listens only on a loopback address.
    #[arg(long, env = "TARN_AUTH")]
    pub auth: Option<AuthMethod>,
    /// PEM certificate chain for TLS (with --tls-key): clients may then use sslmode=require.
    #[arg(long, env = "TARN_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<String>,
    /// PEM private key for TLS (with --tls-cert).
    #[arg(long, env = "TARN_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<String>,
    /// When the warehouse has no roles yet: create the superuser role `tarn` with this password
    /// (a container's first start, like POSTGRES_PASSWORD). Ignored once roles exist.
    #[arg(long, env = "TARN_BOOTSTRAP_PASSWORD", hide_env_values = true)]
    pub bootstrap_password: Option<String>,
    /// Refuse connections that do not use TLS.
    #[arg(long, env = "TARN_TLS_REQUIRED")]
    pub tls_required: bool,
    /// Where the durable commit log lives: a local folder, or `off`. COMMIT is acknowledged
    /// once its record is durable in the log (one fdatasync per group of concurrent commits)
    /// and visible to every session at once; a flusher turns the log into Paimon snapshots in
    /// the background. Default: `<warehouse>/.tarn/commit-log` for a local warehouse; an
    /// in-memory warehouse has none. With `off`, every commit is its own Paimon snapshot.
    #[arg(long, env = "TARN_COMMIT_LOG", value_name = "DIR|off")]
    pub commit_log: Option<String>,
    /// How long committed rows may wait in the commit log before a flush writes them into a
    /// Paimon snapshot (milliseconds after the oldest of them committed).
    #[arg(long, env = "TARN_FLUSH_INTERVAL_MS", default_value_t = 1000)]
    pub flush_interval_ms: u64,
    /// Memory all tables' caches may hold together (decoded manifests, schemas, deletion
    /// vectors, file indexes, key sets, ...): bytes, or with a unit as in 512MiB, 2GiB, 64MB
    /// (kB, MB, GB, TB are multiples of 1024, as in PostgreSQL's settings)
    #[arg(long, env = "TARN_CACHE_MEMORY", default_value = "512MiB", value_parser = parse_memory_size)]
    pub cache_memory: usize,
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

impl ServeArgs {
    /// The commit log's folder for a warehouse at `location` (`None`: no log).
    pub fn commit_log_dir(
        &self,
        location: &crate::storage::WarehouseLocation,
    ) -> Option<std::path::PathBuf> {
        match self.commit_log.as_deref() {
            Some(off) if off.eq_ignore_ascii_case("off") => None,
            Some(dir) => Some(std::path::PathBuf::from(dir)),
            None => match location {
                crate::storage::WarehouseLocation::Local(root) => {
                    Some(root.join(".tarn").join("commit-log"))
                }
                crate::storage::WarehouseLocation::Memory => None,
            },
        }
    }

    /// The connection options, refusing an unauthenticated server that others could reach.
    pub fn connect_options(&self) -> Result<ConnectOptions, String> {
        let auth = match self.auth {
            Some(method) => method,
            None if listens_on_loopback_only(&self.listen) => AuthMethod::Trust,
            None => {
                return Err(format!(
                    "--listen {} accepts connections from other machines, and without --auth \
                     every one of them would be trusted: add --auth scram-sha-256 (or --auth \
                     trust to allow that explicitly), or listen on 127.0.0.1",
                    self.listen
                ));
            }
        };
        Ok(ConnectOptions {
            auth,
            tls: self.tls_cert.clone().zip(self.tls_key.clone()),
            tls_required: self.tls_required,
            bootstrap_password: self.bootstrap_password.clone(),
        })
    }
}

/// Whether every address `listen` (host:port) names is a loopback address.
fn listens_on_loopback_only(listen: &str) -> bool {
    let host = listen
        .rsplit_once(':')
        .map_or(listen, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// Bytes of a memory size: a whole number, optionally followed by a unit — B, kB/KiB/K,
/// MB/MiB/M, GB/GiB/G, TB/TiB/T (case-insensitive; all multiples of 1024, as PostgreSQL reads
/// `shared_buffers = 512MB`).
pub fn parse_memory_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let invalid = || {
        format!(
            "{text:?} is not a memory size: give bytes or a number with a unit, as in 512MiB or 2GiB"
        )
    };
    let number: usize = number.parse().map_err(|_| invalid())?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(invalid()),
    };
    number
        .checked_mul(1usize << shift)
        .ok_or_else(|| format!("{text:?} is more memory than this machine can address"))
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

    #[test]
    fn memory_sizes() {
        assert_eq!(parse_memory_size("0"), Ok(0));
        assert_eq!(parse_memory_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_memory_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_memory_size("512MB"), Ok(512 << 20));
        assert_eq!(parse_memory_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_memory_size(" 3 gb "), Ok(3 << 30));
        assert_eq!(parse_memory_size("64k"), Ok(64 << 10));
        assert_eq!(parse_memory_size("10B"), Ok(10));
        for bad in ["", "MiB", "1.5GiB", "-1", "12 parsecs", "5 MiB extra"] {
            let err = parse_memory_size(bad).unwrap_err();
            assert!(err.contains("not a memory size"), "{bad}: {err}");
        }
        assert!(parse_memory_size("99999999999999TiB").is_err());
        let args = Cli::try_parse_from(["tarn"]).unwrap().serve_args();
        assert_eq!(args.cache_memory, crate::storage::DEFAULT_CACHE_MEMORY);
        let args = Cli::try_parse_from(["tarn", "--cache-memory", "1GiB"])
            .unwrap()
            .serve_args();
        assert_eq!(args.cache_memory, 1 << 30);
        assert!(Cli::try_parse_from(["tarn", "--cache-memory", "lots"]).is_err());
    }

    fn options(argv: &[&str]) -> Result<ConnectOptions, String> {
        Cli::try_parse_from(argv)
            .map_err(|e| e.to_string())?
            .serve_args()
            .connect_options()
    }

    #[test]
    fn trust_only_on_loopback_unless_asked() {
        assert_eq!(options(&["tarn"]).unwrap().auth, AuthMethod::Trust);
        for listen in ["127.0.0.1:5433", "[::1]:5433", "localhost:5433"] {
            assert_eq!(
                options(&["tarn", "--listen", listen]).unwrap().auth,
                AuthMethod::Trust
            );
        }
        let refused = options(&["tarn", "--listen", "0.0.0.0:5433"]).unwrap_err();
        assert!(refused.contains("--auth scram-sha-256"), "{refused}");
        assert!(options(&["tarn", "--listen", "10.1.2.3:5433"]).is_err());
        let scram = options(&[
            "tarn",
            "--listen",
            "0.0.0.0:5433",
            "--auth",
            "scram-sha-256",
        ]);
        assert_eq!(scram.unwrap().auth, AuthMethod::ScramSha256);
        let trust = options(&["tarn", "--listen", "0.0.0.0:5433", "--auth", "trust"]);
        assert_eq!(trust.unwrap().auth, AuthMethod::Trust);
        assert!(options(&["tarn", "--auth", "md5"]).is_err());
        assert!(options(&["tarn", "--tls-cert", "c.pem"]).is_err());
    }
}
