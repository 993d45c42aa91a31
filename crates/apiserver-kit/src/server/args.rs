//! The command line every aggregated API server built with the library takes (feature `clap`),
//! for a server's own `clap` parser to flatten:
//!
//! ```
//! use apiserver_kit::server::ServerArgs;
//! use clap::Parser;
//!
//! /// An aggregated API server of Widgets.
//! #[derive(Parser)]
//! struct Args {
//!     #[command(flatten)]
//!     server: ServerArgs,
//! }
//!
//! let args = Args::parse_from(["widget-apiserver", "--standalone", "--listen", "127.0.0.1:0"]);
//! assert!(args.server.standalone);
//! ```

use super::options::{Authentication, CertificateFiles, ClusterConnection, ServerOptions, TlsOptions};
use super::storage::StorageOptions;
use crate::store::etcd::connection::EtcdConfig;
use std::path::PathBuf;
use std::time::Duration;

/// Flags for a server's `clap` parser (`#[command(flatten)]`): standalone or in a cluster, where
/// to listen, and the serving certificate; [`ServerArgs::options`] makes the [`ServerOptions`]
/// they say and [`ServerArgs::listener`] binds the address.
#[derive(clap::Args, Clone, Debug)]
pub struct ServerArgs {
    /// Serve without a cluster: a token, in the kubeconfig written to --write-kubeconfig, is the
    /// only credential.
    #[arg(long)]
    pub standalone: bool,
    /// Where a standalone server writes the kubeconfig for kubectl.
    #[arg(long, value_name = "PATH")]
    pub write_kubeconfig: Option<PathBuf>,
    /// The cluster's kubeconfig (views of its objects, delegated authentication, namespaces'
    /// lifecycle); in a Pod, its ServiceAccount is used without it.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The address and port to serve HTTPS on (port 0: any free port, which the kubeconfig names).
    #[arg(long, default_value = "127.0.0.1:8444")]
    pub listen: std::net::SocketAddr,
    /// The serving certificate (PEM), as the APIService's caBundle trusts it; without it the
    /// server makes a self-signed one.
    #[arg(long, value_name = "PATH", requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// The serving certificate's private key (PEM).
    #[arg(long, value_name = "PATH", requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// Where the stored resources' objects are kept.
    #[command(flatten)]
    pub storage: StorageArgs,
}

/// Where objects are kept: `--storage memory` (the default) or `--storage etcd` with the etcd
/// flags, the same flags farm-apiserver takes; [`StorageArgs::options`] makes the
/// [`StorageOptions`] they say.
#[derive(clap::Args, Clone, Debug)]
pub struct StorageArgs {
    /// Where objects are kept: `memory` (this process only, lost on restart, one replica) or
    /// `etcd` (durable, shared by every replica pointed at the same etcd and prefix).
    #[arg(long, value_enum, default_value_t = StorageKind::Memory)]
    pub storage: StorageKind,
    /// etcd client URLs (repeatable, or comma-separated), e.g. `https://etcd-0.etcd:2379`.
    #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:2379")]
    pub etcd_endpoints: Vec<String>,
    /// Key prefix of this server's objects in etcd (an object is
    /// `<prefix>/<plural>/[<namespace>/]<name>`); default `/registry/<group>`.
    #[arg(long, value_name = "PREFIX")]
    pub etcd_prefix: Option<String>,
    /// PEM CA bundle that signed etcd's serving certificate (TLS to etcd).
    #[arg(long, value_name = "PATH")]
    pub etcd_cafile: Option<PathBuf>,
    /// PEM client certificate for etcd.
    #[arg(long, value_name = "PATH", requires = "etcd_keyfile")]
    pub etcd_certfile: Option<PathBuf>,
    /// PEM private key of `--etcd-certfile`.
    #[arg(long, value_name = "PATH", requires = "etcd_certfile")]
    pub etcd_keyfile: Option<PathBuf>,
    /// Seconds an etcd request may take before the API request gets 503 (etcd unreachable).
    #[arg(long, default_value_t = 5)]
    pub etcd_request_timeout_seconds: u64,
    /// Seconds between compactions of etcd's history (0: never; leave it to etcd's own
    /// `--auto-compaction-retention`). Replicas coordinate, so one compacts per interval, keeping
    /// at least one interval of history for watches and paged lists, as the kube-apiserver does.
    #[arg(long, default_value_t = 300)]
    pub etcd_compaction_interval_seconds: u64,
}

/// Where objects are kept.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageKind {
    /// In this process's memory.
    Memory,
    /// In etcd (v3 API).
    Etcd,
}

impl StorageArgs {
    /// The storage the flags say (an etcd prefix left out is the builder's
    /// `/registry/<group>`).
    pub fn options(&self) -> StorageOptions {
        match self.storage {
            StorageKind::Memory => StorageOptions::Memory,
            StorageKind::Etcd => StorageOptions::Etcd {
                config: EtcdConfig {
                    endpoints: self.etcd_endpoints.clone(),
                    prefix: self.etcd_prefix.clone().unwrap_or_default(),
                    ca_file: self.etcd_cafile.clone(),
                    client_cert: self.etcd_certfile.clone().zip(self.etcd_keyfile.clone()),
                    request_timeout: Duration::from_secs(self.etcd_request_timeout_seconds.max(1)),
                },
                compaction_interval: (self.etcd_compaction_interval_seconds > 0)
                    .then(|| Duration::from_secs(self.etcd_compaction_interval_seconds)),
            },
        }
    }
}

impl ServerArgs {
    /// The options the flags say, the others at their defaults: standalone authentication or the
    /// cluster's, the cluster of `--kubeconfig` (none standalone, else the one the Pod runs in),
    /// the certificate files, the storage.
    pub fn options(&self) -> ServerOptions {
        ServerOptions {
            authentication: match self.standalone {
                true => Authentication::Standalone { write_kubeconfig: self.write_kubeconfig.clone() },
                false => Authentication::Delegated(Default::default()),
            },
            cluster: ClusterConnection::from_flags(self.kubeconfig.clone(), self.standalone),
            tls: TlsOptions {
                files: CertificateFiles::from_pair(self.tls_cert_file.clone(), self.tls_private_key_file.clone()),
                ..TlsOptions::default()
            },
            storage: self.storage.options(),
            ..ServerOptions::default()
        }
    }

    /// A socket bound to `--listen`.
    pub async fn listener(&self) -> std::io::Result<tokio::net::TcpListener> {
        tokio::net::TcpListener::bind(self.listen).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Args {
        #[command(flatten)]
        server: ServerArgs,
    }

    #[test]
    fn flags_make_the_options_they_say() {
        let standalone = Args::parse_from(["s", "--standalone", "--write-kubeconfig", "k"]).server.options();
        assert!(matches!(standalone.cluster, ClusterConnection::None));
        assert!(matches!(standalone.authentication, Authentication::Standalone { write_kubeconfig: Some(_) }));
        let args = Args::parse_from(["s", "--kubeconfig", "c", "--tls-cert-file", "a", "--tls-private-key-file", "b"]);
        let aggregated = args.server.options();
        assert!(matches!(aggregated.cluster, ClusterConnection::Kubeconfig(_)));
        assert!(matches!(aggregated.authentication, Authentication::Delegated(_)));
        assert!(aggregated.tls.files.is_some());
        assert!(Args::try_parse_from(["s", "--tls-cert-file", "a"]).is_err(), "a certificate needs its key");
        assert!(matches!(Args::parse_from(["s"]).server.options().cluster, ClusterConnection::InCluster));
    }

    #[test]
    fn storage_flags_make_the_storage_they_say() {
        assert!(matches!(Args::parse_from(["s"]).server.options().storage, StorageOptions::Memory));
        let args = [
            "s",
            "--storage",
            "etcd",
            "--etcd-endpoints",
            "https://a:2379,https://b:2379",
            "--etcd-compaction-interval-seconds",
            "0",
        ];
        let StorageOptions::Etcd { config, compaction_interval } = Args::parse_from(args).server.options().storage
        else {
            panic!("etcd storage");
        };
        assert_eq!((config.endpoints.len(), config.prefix.as_str(), compaction_interval), (2, "", None));
        assert_eq!(config.request_timeout, Duration::from_secs(5));
        let prefixed = Args::parse_from(["s", "--storage", "etcd", "--etcd-prefix", "/p"]).server.storage.options();
        assert!(
            matches!(prefixed, StorageOptions::Etcd { config, compaction_interval: Some(_) } if config.prefix == "/p")
        );
        assert!(Args::try_parse_from(["s", "--etcd-certfile", "c"]).is_err(), "a client certificate needs its key");
        assert!(Args::try_parse_from(["s", "--storage", "disk"]).is_err());
    }
}
