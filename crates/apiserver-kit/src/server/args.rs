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
use std::path::PathBuf;

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
}

impl ServerArgs {
    /// The options the flags say, the others at their defaults: standalone authentication or the
    /// cluster's, the cluster of `--kubeconfig` (none standalone, else the one the Pod runs in),
    /// the certificate files.
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
}
