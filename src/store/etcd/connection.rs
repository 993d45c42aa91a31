//! The connection to etcd: client options (endpoints, TLS, timeouts), the mapping of etcd's
//! errors to API errors, and the health monitor behind the `etcd` readiness check.
//!
//! The client connects lazily and reconnects by itself, so the server starts while etcd is
//! down and recovers when it returns; until then requests fail fast with 503 and a
//! Retry-After, and `/readyz` fails so load balancers send traffic to healthy replicas.

use crate::api::error::Error;
use etcd_client::{Certificate, Client, ConnectOptions, Identity, TlsOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How to reach etcd.
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// Client URLs (`http://` or `https://`).
    pub endpoints: Vec<String>,
    /// The prefix of every key this server writes.
    pub prefix: String,
    /// CA bundle for etcd's serving certificate.
    pub ca_file: Option<PathBuf>,
    /// Client certificate and key.
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// How long one etcd request may take.
    pub request_timeout: Duration,
}

/// Why the connection could not be set up (bad configuration, not an unreachable etcd).
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// A TLS file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The client refused the options (e.g. a malformed endpoint URL).
    #[error("etcd client: {0}")]
    Client(#[from] etcd_client::Error),
}

fn read(path: &PathBuf) -> Result<Vec<u8>, ConnectError> {
    std::fs::read(path).map_err(|source| ConnectError::Read { path: path.clone(), source })
}

/// A client for `config`. It does not wait for etcd: connections are made (and remade) on use.
pub async fn connect(config: &EtcdConfig) -> Result<Client, ConnectError> {
    let mut options = ConnectOptions::new()
        .with_timeout(config.request_timeout)
        .with_connect_timeout(config.request_timeout)
        // Notice a dead etcd member on idle connections too (watches can be quiet for long).
        .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
        .with_keep_alive_while_idle(true)
        // Refuse to answer from a member cut off from the quorum: its data may be stale.
        .with_require_leader(true);
    let uses_tls = config.endpoints.iter().any(|e| e.starts_with("https://"));
    if uses_tls || config.ca_file.is_some() || config.client_cert.is_some() {
        let mut tls = TlsOptions::new();
        if let Some(ca) = &config.ca_file {
            tls = tls.ca_certificate(Certificate::from_pem(read(ca)?));
        }
        if let Some((cert, key)) = &config.client_cert {
            tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
        }
        options = options.with_tls(tls);
    }
    Ok(Client::connect(&config.endpoints, Some(options)).await?)
}

const COMPACTED: &str = "required revision has been compacted";
const TOO_LARGE: &str = "request is too large";

/// The API error for an etcd failure: unreachable etcd (or no leader) → 503 with Retry-After;
/// a compacted revision → 410; an object etcd refuses for its size → 413.
pub fn api_error(error: etcd_client::Error) -> Error {
    use tonic::Code;
    let unavailable =
        |why: String| Error::Unavailable { message: format!("storage is unavailable: {why}"), retry_after: 1 };
    match error {
        etcd_client::Error::GRpcStatus(status) => match status.code() {
            Code::OutOfRange if status.message().contains(COMPACTED) => {
                Error::Expired(format!("too old resource version: {}", status.message()))
            }
            Code::InvalidArgument if status.message().contains(TOO_LARGE) => {
                Error::TooLarge(format!("the object is too large for etcd: {}", status.message()))
            }
            Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled | Code::Aborted | Code::Unknown => {
                unavailable(with_cause(status.message(), &status))
            }
            _ => Error::Internal(format!("storage error: {status}")),
        },
        etcd_client::Error::TransportError(e) => unavailable(e.to_string()),
        etcd_client::Error::IoError(e) => unavailable(e.to_string()),
        etcd_client::Error::WatchError(e) => unavailable(e),
        other => Error::Internal(format!("storage error: {other}")),
    }
}

/// `message`, followed by the innermost cause of `error` when it says more ("tcp connect error:
/// Connection refused (os error 111)").
fn with_cause(message: &str, error: &(dyn std::error::Error + 'static)) -> String {
    let mut innermost = error;
    while let Some(next) = innermost.source() {
        innermost = next;
    }
    let cause = innermost.to_string();
    if std::ptr::addr_eq(innermost, error) || message.contains(&cause) {
        message.to_string()
    } else {
        format!("{message}: {cause}")
    }
}

/// Whether etcd answered the last probe, for `/readyz`.
#[derive(Debug)]
pub struct EtcdHealth {
    state: parking_lot::Mutex<Result<(), String>>,
}

impl EtcdHealth {
    /// The readiness check: `Err` with the reason while etcd does not answer.
    pub fn check(&self) -> Result<(), String> {
        self.state.lock().clone()
    }
}

/// Probes etcd every `interval` (a linearizable read of one key, so a member without a leader
/// counts as down) until `stopping` is cancelled.
pub fn monitor(
    client: Client,
    key: String,
    interval: Duration,
    stopping: tokio_util::sync::CancellationToken,
) -> Arc<EtcdHealth> {
    let health = Arc::new(EtcdHealth { state: parking_lot::Mutex::new(Err("not probed yet".into())) });
    let shared = health.clone();
    tokio::spawn(async move {
        let mut kv = client.kv_client();
        loop {
            let result = kv.get(key.as_bytes(), None).await.map(|_| ()).map_err(|e| e.to_string());
            tracing::debug!(?result, "etcd probe");
            {
                let mut state = shared.state.lock();
                match (&*state, &result) {
                    (Ok(()), Err(e)) => tracing::warn!(error = %e, "etcd is unreachable: not ready"),
                    (Err(_), Ok(())) => tracing::info!("etcd answers: ready"),
                    _ => {}
                }
                *state = result;
            }
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = stopping.cancelled() => return,
            }
        }
    });
    health
}
