//! The connection to etcd: client options (endpoints, TLS, timeouts), the mapping of etcd's
//! errors to API errors, and the health monitor behind the `etcd` readiness check.
//!
//! The client connects lazily and reconnects by itself, so the server starts while etcd is
//! down and recovers when it returns; until then requests fail fast with 503 and a
//! Retry-After, and `/readyz` fails so load balancers send traffic to healthy replicas.

use super::client::EtcdClient;
use super::grpc::etcdserverpb::RangeRequest;
use crate::machinery::error::Error;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

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
    /// An endpoint is not a valid URL, or TLS options came with an `http://` endpoint.
    #[error("etcd endpoint {endpoint}: {reason}")]
    Endpoint {
        /// The endpoint as configured.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
}

fn read(path: &PathBuf) -> Result<Vec<u8>, ConnectError> {
    std::fs::read(path).map_err(|source| ConnectError::Read { path: path.clone(), source })
}

/// A client for `config`. It does not wait for etcd: connections are made (and remade) on use,
/// one per endpoint, used in turn.
pub async fn connect(config: &EtcdConfig) -> Result<EtcdClient, ConnectError> {
    Ok(EtcdClient::new(channels(config, &TlsFiles::read(config)?)?))
}

/// A lazily connected channel per endpoint, with the TLS files' contents `files`.
fn channels(config: &EtcdConfig, files: &TlsFiles) -> Result<Vec<Channel>, ConnectError> {
    let tls = tls_config(config, files);
    let endpoints =
        config.endpoints.iter().map(|url| endpoint(url, tls.as_ref(), config)).collect::<Result<Vec<_>, _>>()?;
    Ok(endpoints.into_iter().map(|e| e.connect_lazy()).collect())
}

/// The contents of the TLS files `config` names.
#[derive(PartialEq, Eq)]
struct TlsFiles {
    ca: Option<Vec<u8>>,
    identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl TlsFiles {
    fn read(config: &EtcdConfig) -> Result<Self, ConnectError> {
        let ca = config.ca_file.as_ref().map(read).transpose()?;
        let identity = match &config.client_cert {
            Some((cert, key)) => Some((read(cert)?, read(key)?)),
            None => None,
        };
        Ok(Self { ca, identity })
    }
}

/// Rereads the TLS files every `interval` until `stopping` is cancelled; when they changed (a
/// renewed client certificate, a CA bundle with a new CA, as a mounted Secret changes), the
/// connections made from then on use them. A file that cannot be read or used keeps the
/// previous settings, with a warning.
pub fn reload_tls(
    client: EtcdClient,
    config: EtcdConfig,
    interval: Duration,
    stopping: tokio_util::sync::CancellationToken,
) {
    if config.ca_file.is_none() && config.client_cert.is_none() {
        return;
    }
    tokio::spawn(async move {
        let mut loaded = TlsFiles::read(&config).ok();
        loop {
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = stopping.cancelled() => return,
            }
            let read = TlsFiles::read(&config);
            if read.as_ref().ok() == loaded.as_ref() {
                continue;
            }
            match read.and_then(|files| Ok((channels(&config, &files)?, files))) {
                Ok((channels, files)) => {
                    client.replace_channels(channels);
                    loaded = Some(files);
                    tracing::info!("reloaded the etcd TLS files: new connections use them");
                }
                Err(error) => tracing::warn!(%error, "the etcd TLS files changed but cannot be used; keeping the last"),
            }
        }
    });
}

/// The TLS settings, when any endpoint is `https://` or a CA or client certificate is given.
fn tls_config(config: &EtcdConfig, files: &TlsFiles) -> Option<ClientTlsConfig> {
    let uses_tls = config.endpoints.iter().any(|e| e.starts_with("https://"));
    if !(uses_tls || files.ca.is_some() || files.identity.is_some()) {
        return None;
    }
    let mut tls = ClientTlsConfig::new();
    if let Some(ca) = &files.ca {
        tls = tls.ca_certificate(Certificate::from_pem(ca));
    }
    if let Some((cert, key)) = &files.identity {
        tls = tls.identity(Identity::from_pem(cert, key));
    }
    Some(tls)
}

/// One endpoint: `https://` with TLS, `http://` without (refused when TLS is configured), and a
/// bare `host:port` as `https://` when TLS is configured, else `http://`.
fn endpoint(url: &str, tls: Option<&ClientTlsConfig>, config: &EtcdConfig) -> Result<Endpoint, ConnectError> {
    let invalid = |reason: String| ConnectError::Endpoint { endpoint: url.to_string(), reason };
    let full = match (url.split_once("://").map(|(scheme, _)| scheme), tls) {
        (Some("http"), Some(_)) => return Err(invalid("TLS options are only supported with https:// URLs".into())),
        (Some(_), _) => url.to_string(),
        (None, Some(_)) => format!("https://{url}"),
        (None, None) => format!("http://{url}"),
    };
    let mut endpoint = Endpoint::from_shared(full.clone())
        .map_err(|e| invalid(e.to_string()))?
        .timeout(config.request_timeout)
        .connect_timeout(config.request_timeout)
        // Notice a dead etcd member on idle connections too (watches can be quiet for long).
        .http2_keep_alive_interval(Duration::from_secs(10))
        .keep_alive_timeout(Duration::from_secs(5))
        .keep_alive_while_idle(true);
    if full.starts_with("https://") {
        endpoint = endpoint.tls_config(tls.cloned().unwrap_or_default()).map_err(|e| invalid(e.to_string()))?;
    }
    Ok(endpoint)
}

const COMPACTED: &str = "required revision has been compacted";
const TOO_LARGE: &str = "request is too large";
/// etcd's `ErrGRPCNoSpace`, once its backend quota is full: only reads and deletes succeed.
pub const NO_SPACE: &str = "database space exceeded";

/// The API error for an etcd failure: unreachable etcd (or no leader) → 503 with Retry-After;
/// a compacted revision → 410; an object etcd refuses for its size → 413.
pub fn api_error(status: tonic::Status) -> Error {
    use tonic::Code;
    match status.code() {
        Code::OutOfRange if status.message().contains(COMPACTED) => {
            Error::Expired(format!("too old resource version: {}", status.message()))
        }
        Code::ResourceExhausted if status.message().contains(NO_SPACE) => {
            Error::InsufficientStorage(status.message().to_string())
        }
        Code::InvalidArgument if status.message().contains(TOO_LARGE) => {
            Error::TooLarge(format!("the object is too large for etcd: {}", status.message()))
        }
        Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled | Code::Aborted | Code::Unknown => {
            Error::Unavailable {
                message: format!("storage is unavailable: {}", with_cause(status.message(), &status)),
                retry_after: 1,
            }
        }
        _ => Error::Internal(format!("storage error: {status}")),
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
    client: EtcdClient,
    key: String,
    interval: Duration,
    stopping: tokio_util::sync::CancellationToken,
) -> Arc<EtcdHealth> {
    let health = Arc::new(EtcdHealth { state: parking_lot::Mutex::new(Err("not probed yet".into())) });
    let shared = health.clone();
    tokio::spawn(async move {
        loop {
            let probe = RangeRequest { key: key.as_bytes().to_vec(), ..Default::default() };
            let result = client.range_once(probe).await.map(|_| ()).map_err(|e| api_error(e).to_string());
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
