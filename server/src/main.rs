//! `brook`: the Brook server binary — its command line; the server itself is
//! [`brook::server`].

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

/// Brook: a streaming SQL database server that speaks the PostgreSQL protocol.
///
/// Connect with any PostgreSQL client, e.g.
///   psql "postgresql://brook@127.0.0.1:5488/brook"
#[derive(Parser, Debug)]
#[command(name = "brook", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the server (the default).
    Serve(Box<ServeArgs>),
    /// Inspect a data directory the server refuses to open; fix it only as the options say
    /// (exit status 1 while problems remain). Run it with the server stopped.
    Repair(RepairArgs),
}

#[derive(clap::Args, Debug, Clone)]
struct RepairArgs {
    /// Data directory to inspect.
    #[arg(long, env = "BROOK_DATA_DIR", default_value = "./brook-data")]
    data_dir: PathBuf,
    /// Rewrite each damaged log keeping every record whose checksum holds (the original is
    /// kept as data.log.damaged beside it).
    #[arg(long)]
    salvage: bool,
    /// Drop from the catalog the relations whose data.log is missing.
    #[arg(long)]
    forget_missing: bool,
    /// Delete relation directories the catalog does not name.
    #[arg(long)]
    remove_orphans: bool,
}

#[derive(clap::Args, Debug, Clone)]
struct ServeArgs {
    /// Address to listen on; port 0 picks a free port (the chosen address is printed).
    #[arg(long, env = "BROOK_LISTEN", default_value = "127.0.0.1:5488")]
    listen: SocketAddr,
    /// Data directory (created if missing).
    #[arg(long, env = "BROOK_DATA_DIR", default_value = "./brook-data")]
    data_dir: PathBuf,
    /// File holding the password of role `brook`; turns on SCRAM-SHA-256 authentication.
    /// The environment variable BROOK_PASSWORD does the same.
    #[arg(long)]
    password_file: Option<PathBuf>,
    /// Bytes of table data kept decoded in memory (the rest is read from disk on scan).
    #[arg(long, env = "BROOK_CACHE_BYTES", default_value_t = 1 << 30)]
    cache_bytes: i64,
    /// Bytes of memory all queries together may use (sorts, joins and aggregates spill to
    /// disk past their share; a query that cannot gets SQLSTATE 53200). Default: half of
    /// the machine's memory.
    #[arg(long, env = "BROOK_MEMORY_LIMIT")]
    memory_limit: Option<usize>,
    /// Most client connections at once; the next is refused (SQLSTATE 53300).
    #[arg(long, env = "BROOK_MAX_CONNECTIONS", default_value_t = 100)]
    max_connections: usize,
    /// PEM file with the server's TLS certificate chain (with --tls-key: clients may use
    /// sslmode=require / verify-full).
    #[arg(long, env = "BROOK_TLS_CERT", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM file with the private key of --tls-cert.
    #[arg(long, env = "BROOK_TLS_KEY", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Refuse connections that do not use TLS (needs --tls-cert and --tls-key).
    #[arg(long, env = "BROOK_REQUIRE_TLS", requires = "tls_cert")]
    require_tls: bool,
    /// Run as a node of a cluster whose log is on these NATS JetStream server(s)
    /// (e.g. nats://127.0.0.1:4222; comma-separated for several). Needs --node-id.
    #[arg(long, env = "BROOK_CLUSTER", requires = "node_id")]
    cluster: Option<String>,
    /// This node's id in the cluster (letters, digits, '-', '_'; unique per node).
    #[arg(long, env = "BROOK_NODE_ID", requires = "cluster")]
    node_id: Option<String>,
    /// The cluster's name: nodes with the same name share one log.
    #[arg(long, env = "BROOK_CLUSTER_NAME", default_value = "brook")]
    cluster_name: String,
    /// Copies JetStream keeps of the cluster's log (3 on a three-server NATS cluster).
    #[arg(long, env = "BROOK_CLUSTER_REPLICAS", default_value_t = 1)]
    cluster_replicas: usize,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("BROOK_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        // Colour codes only for a terminal, not in a log file or a journal.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let args = match cli.command {
        Some(Command::Serve(a)) => *a,
        Some(Command::Repair(r)) => return repair(r),
        None => cli.serve,
    };
    let password = match (&args.password_file, std::env::var("BROOK_PASSWORD")) {
        (Some(f), _) => {
            let p = std::fs::read_to_string(f)
                .with_context(|| format!("reading password file {}", f.display()))?
                .trim_end_matches(['\r', '\n'])
                .to_string();
            if p.is_empty() {
                bail!(
                    "password file {} is empty: refusing an empty password",
                    f.display()
                );
            }
            Some(p)
        }
        (None, Ok(p)) if !p.is_empty() => Some(p),
        _ => None,
    };
    if !args.listen.ip().is_loopback() && password.is_none() {
        bail!(
            "refusing to listen on non-loopback address {} without a password: set BROOK_PASSWORD or --password-file",
            args.listen
        );
    }
    // Connections are served here; statements run on brook::exec::runtime::statements(). Both
    // get stacks deep enough for the deepest expression the parser admits.
    // A panic is logged as one line (tokio keeps the server running; the task that panicked
    // ends, see brook::wire::serve_connection).
    std::panic::set_hook(Box::new(|info| {
        tracing::error!(panic = %info, "a task panicked");
    }));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(brook::exec::runtime::THREAD_STACK_BYTES)
        .build()?;
    let options = brook::server::ServerOptions {
        listen: args.listen,
        data_dir: args.data_dir,
        cache_bytes: args.cache_bytes,
        memory_limit: args.memory_limit.unwrap_or_else(half_of_memory),
        password,
        max_connections: args.max_connections,
        tls: args.tls_cert.zip(args.tls_key),
        require_tls: args.require_tls,
        cluster: args.cluster.zip(args.node_id).map(|(url, node_id)| {
            brook::cluster::ClusterOptions {
                url,
                node_id,
                name: args.cluster_name,
                replicas: args.cluster_replicas,
            }
        }),
    };
    let served = rt.block_on(brook::server::serve(options));
    // Every acknowledged write is on disk already: do not wait for statements still
    // computing (a stuck one would hang the shutdown).
    rt.shutdown_background();
    served
}

/// Half of the machine's memory (`MemTotal` of /proc/meminfo; 4 GiB when unreadable).
fn half_of_memory() -> usize {
    let total_kib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        })
        .unwrap_or(8 << 20);
    total_kib * 1024 / 2
}

fn repair(args: RepairArgs) -> anyhow::Result<()> {
    let opts = brook::repair::RepairOptions {
        salvage: args.salvage,
        forget_missing: args.forget_missing,
        remove_orphans: args.remove_orphans,
    };
    let report = brook::repair::repair(&args.data_dir, opts).map_err(|e| anyhow::anyhow!("{e}"))?;
    print!("{}", report.text);
    if report.unresolved > 0 {
        bail!(
            "{} problem(s) remain in {}",
            report.unresolved,
            args.data_dir.display()
        );
    }
    Ok(())
}
