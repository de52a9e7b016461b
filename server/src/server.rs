//! The server: a data directory's engine behind a TCP listener, each accepted connection
//! served by [`crate::wire`], until SIGTERM or SIGINT.

use crate::db::Engine;
use crate::wire::{Front, WireConfig};
use anyhow::{bail, Context};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::net::TcpListener;

/// What a server runs with (the command line's `serve` options, resolved).
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Address to listen on (port 0: a free port, printed).
    pub listen: SocketAddr,
    /// Data directory (created if missing).
    pub data_dir: PathBuf,
    /// Bytes of table data kept decoded in memory.
    pub cache_bytes: i64,
    /// Bytes of memory all queries together may use.
    pub memory_limit: usize,
    /// The password of role `brook` (SCRAM-SHA-256), or none (trust on loopback).
    pub password: Option<String>,
    /// Most client connections at once.
    pub max_connections: usize,
    /// TLS certificate chain and private key (PEM files).
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Refuse connections that do not use TLS.
    pub require_tls: bool,
    /// Run as a node of this cluster (none: a single server).
    pub cluster: Option<crate::cluster::ClusterOptions>,
}

/// Open the data directory and serve connections until SIGTERM or SIGINT. Prints
/// `brook listening on ADDR` on standard output once it accepts connections.
pub async fn serve(opts: ServerOptions) -> anyhow::Result<()> {
    let engine = Engine::open(&opts.data_dir, opts.cache_bytes, opts.memory_limit)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    match &opts.cluster {
        Some(c) => crate::cluster::join(&engine, c).await?,
        None => {
            if let Some(mark) = &engine.catalog.read().cluster {
                bail!(
                    "the data directory {} is a cluster node's (log {}): start it with --cluster and its --node-id, or use another --data-dir",
                    opts.data_dir.display(),
                    mark.log
                );
            }
        }
    }
    let listener = TcpListener::bind(opts.listen)
        .await
        .with_context(|| format!("binding {}", opts.listen))?;
    let addr = listener.local_addr()?;
    if let Some(link) = engine.cluster.get() {
        link.set_address(addr.to_string());
    }
    let tls = match &opts.tls {
        Some((cert, key)) => Some(tls_acceptor(cert, key)?),
        None => None,
    };
    let front = Arc::new(Front::new(
        engine,
        WireConfig {
            password: opts.password.clone(),
            max_connections: opts.max_connections,
            require_tls: opts.require_tls,
        },
    ));
    tracing::info!(%addr, data_dir = %opts.data_dir.display(), auth = if opts.password.is_some() { "scram-sha-256" } else { "trust" }, tls = tls.is_some(), "brook listening");
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
                tokio::spawn(crate::wire::connection::serve_connection(
                    front.clone(),
                    socket,
                    peer,
                    tls.clone(),
                ));
            }
        }
    }
}

/// The TLS acceptor of `--tls-cert` / `--tls-key` (rustls, TLS 1.2 and 1.3).
pub fn tls_acceptor(cert: &Path, key: &Path) -> anyhow::Result<tokio_rustls::TlsAcceptor> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading TLS certificate {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing TLS certificate {}", cert.display()))?;
    if certs.is_empty() {
        bail!("no certificate in {}", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("reading TLS private key {}", key.display()))?;
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(Arc::new(
        tokio_rustls::rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .context("TLS protocol versions")?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .context("TLS certificate and key do not match")?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}
