//! `brook`: the Brook server binary.

use anyhow::{bail, Context};
use brook::engine::Engine;
use brook::wire::{Front, WireConfig};
use clap::{Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::net::TcpListener;

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
    Serve(ServeArgs),
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
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("BROOK_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let args = match cli.command {
        Some(Command::Serve(a)) => a,
        None => cli.serve,
    };
    let password = match (&args.password_file, std::env::var("BROOK_PASSWORD")) {
        (Some(f), _) => Some(
            std::fs::read_to_string(f)
                .with_context(|| format!("reading password file {}", f.display()))?
                .trim_end_matches(['\r', '\n'])
                .to_string(),
        ),
        (None, Ok(p)) if !p.is_empty() => Some(p),
        _ => None,
    };
    if !args.listen.ip().is_loopback() && password.is_none() {
        bail!(
            "refusing to listen on non-loopback address {} without a password: set BROOK_PASSWORD or --password-file",
            args.listen
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(serve(args, password))
}

async fn serve(args: ServeArgs, password: Option<String>) -> anyhow::Result<()> {
    let engine =
        Engine::open(&args.data_dir, args.cache_bytes).map_err(|e| anyhow::anyhow!("{e}"))?;
    let listener = TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let addr = listener.local_addr()?;
    let front = Arc::new(Front::new(
        engine,
        WireConfig {
            password: password.clone(),
        },
    ));
    tracing::info!(%addr, data_dir = %args.data_dir.display(), auth = if password.is_some() { "scram-sha-256" } else { "trust" }, "brook listening");
    println!("brook listening on {addr}");
    let shutdown = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {},
            _ = term.recv() => {},
        }
        Ok::<_, std::io::Error>(())
    };
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            r = &mut shutdown => {
                r?;
                tracing::info!("shutting down");
                return Ok(());
            }
            accepted = listener.accept() => {
                let (socket, peer) = match accepted {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        continue;
                    }
                };
                let _ = socket.set_nodelay(true);
                let handlers = front.connection();
                tokio::spawn(async move {
                    if let Err(e) = pgwire::tokio::process_socket(socket, None, handlers).await {
                        tracing::debug!(%peer, error = %e, "connection ended with error");
                    }
                });
            }
        }
    }
}
