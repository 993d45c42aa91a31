//! What a server is configured with besides its resources: who may call it (a standalone token,
//! or delegation to its cluster), which cluster it belongs to, its TLS material, where it stores
//! objects, how watches behave, its audit log, admission, request limits, HTTP limits and
//! shutdown. Every default is the kube-apiserver's where it has one.

use super::storage::StorageOptions;
use crate::auth::delegated::DelegationSettings;
use std::path::PathBuf;
use std::time::Duration;

/// Everything [`ApiServerBuilder`](super::ApiServerBuilder) is configured with besides its
/// group and resources.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Who may call the server.
    pub authentication: Authentication,
    /// The cluster the server belongs to, or reads views from.
    pub cluster: ClusterConnection,
    /// The serving certificate.
    pub tls: TlsOptions,
    /// Where stored resources keep their objects.
    pub storage: StorageOptions,
    /// How watches and the events kept for them behave.
    pub watch: WatchOptions,
    /// Whether writes call the cluster's admission webhooks (with delegated authentication only:
    /// a standalone server is not part of the cluster's API).
    pub admission_webhooks: bool,
    /// Whether writes are checked by the cluster's ValidatingAdmissionPolicies (with delegated
    /// authentication only, as webhooks).
    pub admission_policies: bool,
    /// The audit log, when there is one.
    pub audit: Option<AuditOptions>,
    /// Requests in flight and how long each may take.
    pub limits: RequestLimits,
    /// Limits of the HTTP connections.
    pub http: HttpOptions,
    /// How the server stops.
    pub shutdown: ShutdownOptions,
    /// Whether `/metrics` is served to callers without credentials (scrapers such as
    /// Prometheus's stock `kubernetes-pods` job, which present none), as `/healthz` is; off,
    /// it is authorized like any non-resource path.
    pub anonymous_metrics: bool,
}

impl Default for ServerOptions {
    /// A server of its cluster (delegated authentication, in-cluster configuration) storing in
    /// memory and calling admission webhooks.
    fn default() -> Self {
        Self {
            authentication: Authentication::default(),
            cluster: ClusterConnection::default(),
            tls: TlsOptions::default(),
            storage: StorageOptions::default(),
            watch: WatchOptions::default(),
            admission_webhooks: true,
            admission_policies: true,
            audit: None,
            limits: RequestLimits::default(),
            http: HttpOptions::default(),
            shutdown: ShutdownOptions::default(),
            anonymous_metrics: false,
        }
    }
}

/// Who may call the server.
#[derive(Clone, Debug)]
pub enum Authentication {
    /// A bearer token generated at start, so kubectl talks to the server directly, without a
    /// cluster.
    Standalone {
        /// Where to write a kubeconfig (the server's URL, CA and token) for kubectl.
        write_kubeconfig: Option<PathBuf>,
    },
    /// Delegated to the cluster, as an aggregated API server is: front-proxy certificates and
    /// headers, client certificates, TokenReview and SubjectAccessReview.
    Delegated(DelegationSettings),
}

impl Default for Authentication {
    fn default() -> Self {
        Self::Delegated(DelegationSettings::default())
    }
}

impl Authentication {
    /// Whether the server runs standalone.
    pub fn is_standalone(&self) -> bool {
        matches!(self, Self::Standalone { .. })
    }
}

/// How the server reaches its cluster.
#[derive(Clone, Debug, Default)]
pub enum ClusterConnection {
    /// No cluster: only a standalone server may run so, and views of cluster objects answer
    /// 503 saying what they need.
    None,
    /// The cluster a kubeconfig file names (its current context).
    Kubeconfig(PathBuf),
    /// The cluster the server runs in (its ServiceAccount's token and CA).
    #[default]
    InCluster,
}

impl ClusterConnection {
    /// The connection a command line asks for: the kubeconfig when one is given; otherwise none
    /// for a standalone server, and the cluster the server runs in for any other.
    pub fn from_flags(kubeconfig: Option<PathBuf>, standalone: bool) -> Self {
        match (kubeconfig, standalone) {
            (Some(path), _) => Self::Kubeconfig(path),
            (None, true) => Self::None,
            (None, false) => Self::InCluster,
        }
    }
}

/// The serving certificate.
#[derive(Clone, Debug)]
pub struct TlsOptions {
    /// PEM certificate (chain) and private key files, reloaded when they change; without them a
    /// self-signed CA and certificate are generated at start.
    pub files: Option<CertificateFiles>,
    /// Subject alternative names of a generated certificate besides `localhost` and loopback.
    pub extra_sans: Vec<String>,
    /// How often the files are checked for a change.
    pub reload_interval: Duration,
    /// A serving certificate the server keeps in a Secret of the cluster, renews, and publishes
    /// in its APIServices (instead of `files`); an aggregated server only.
    pub managed: Option<crate::certificates::ManagedCertificates>,
    /// A PEM file of the CA(s) whose client certificates may call the conversion webhook (the
    /// certificate a kube-apiserver presents to webhooks when its webhook kubeconfig gives it
    /// one); without it the webhook, like the kube-apiserver's own default, takes any caller.
    pub conversion_webhook_client_ca: Option<PathBuf>,
}

impl Default for TlsOptions {
    fn default() -> Self {
        Self {
            files: None,
            extra_sans: Vec::new(),
            reload_interval: Duration::from_secs(10),
            managed: None,
            conversion_webhook_client_ca: None,
        }
    }
}

/// A certificate and its key, in PEM files.
#[derive(Clone, Debug)]
pub struct CertificateFiles {
    /// The certificate chain.
    pub certificate: PathBuf,
    /// Its private key.
    pub private_key: PathBuf,
}

impl CertificateFiles {
    /// The certificate and key files a command line names, when it names both (a command line
    /// should require each flag with the other, as `clap`'s `requires` does).
    pub fn from_pair(certificate: Option<PathBuf>, private_key: Option<PathBuf>) -> Option<Self> {
        certificate.zip(private_key).map(|(certificate, private_key)| Self { certificate, private_key })
    }
}

/// How watches, and the events kept for them, behave.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// Events each resource keeps for watches and paged or exact lists.
    pub history_size: usize,
    /// Events a watcher may have waiting; a watcher further behind is dropped (it re-watches).
    pub buffer_size: usize,
    /// Time between BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// Watches without `timeoutSeconds` last this long plus up to 100% jitter.
    pub min_request_timeout: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self {
            history_size: 10_000,
            buffer_size: 1_000,
            bookmark_interval: Duration::from_secs(60),
            min_request_timeout: Duration::from_secs(1800),
        }
    }
}

/// The audit log: an `audit.k8s.io/v1` Policy and where its events are written.
#[derive(Clone, Debug)]
pub struct AuditOptions {
    /// The policy file (YAML or JSON).
    pub policy_file: PathBuf,
    /// Where events are written, one JSON line each; `-` for standard output.
    pub log_path: String,
    /// When the log is rotated and how long rotated logs are kept.
    pub rotation: crate::audit::rotate::Limits,
}

/// Requests in flight and how long each may take.
#[derive(Clone, Debug)]
pub struct RequestLimits {
    /// Requests (watches excepted) served at once; more get 429 with Retry-After.
    pub max_inflight: usize,
    /// How long a request (watches excepted) may take before it is answered 504.
    pub timeout: Duration,
}

impl Default for RequestLimits {
    fn default() -> Self {
        Self { max_inflight: 400, timeout: Duration::from_secs(60) }
    }
}

/// Limits of the HTTP connections.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// How long a client may take to send a request's headers (HTTP/1.1).
    pub header_read_timeout: Duration,
    /// The largest request head, in bytes.
    pub max_header_bytes: usize,
    /// The most headers a request may carry.
    pub max_headers: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self { header_read_timeout: Duration::from_secs(30), max_header_bytes: 1024 * 1024, max_headers: 128 }
    }
}

/// How the server stops once its shutdown future completes.
#[derive(Clone, Debug)]
pub struct ShutdownOptions {
    /// How long to keep serving with `/readyz` failing, so load balancers stop sending requests
    /// first (the kube-apiserver's `--shutdown-delay-duration`).
    pub delay: Duration,
    /// How long in-flight requests may take to finish, and watches to end, once the listener
    /// closes; connections still open then are closed.
    pub grace: Duration,
}

impl Default for ShutdownOptions {
    fn default() -> Self {
        Self { delay: Duration::ZERO, grace: Duration::from_secs(20) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_names_the_cluster_and_the_certificate() {
        let path = PathBuf::from("k.yaml");
        assert!(
            matches!(ClusterConnection::from_flags(Some(path.clone()), true), ClusterConnection::Kubeconfig(p) if p == path)
        );
        assert!(matches!(ClusterConnection::from_flags(None, true), ClusterConnection::None));
        assert!(matches!(ClusterConnection::from_flags(None, false), ClusterConnection::InCluster));
        let files = CertificateFiles::from_pair(Some("c.pem".into()), Some("k.pem".into())).unwrap();
        assert_eq!((files.certificate, files.private_key), ("c.pem".into(), "k.pem".into()));
        assert!(CertificateFiles::from_pair(Some("c.pem".into()), None).is_none());
    }
}
