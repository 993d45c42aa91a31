//! ops-apiserver: an aggregated API server of the group `ops.example.com`, built from
//! apiserver-kit's public API alone. It serves Regions (cluster-scoped, stored by the server,
//! with a status subresource) and ConfigDigests (namespaced, read-only views of the cluster's
//! ConfigMaps). `--standalone` runs it without a cluster, as kubectl's own API server.

mod config_digest;
mod region;

use apiserver_kit::machinery::identity::Identity;
use apiserver_kit::server::{self, ApiServerBuilder, Authentication, ClusterConnection, ServerOptions};
use apiserver_kit::server::{CertificateFiles, MirroredView, StoredResource, TlsOptions};
use clap::Parser;
use std::path::PathBuf;

/// An aggregated API server of Regions and ConfigDigests (group ops.example.com).
#[derive(Parser)]
struct Args {
    /// Serve without the cluster's authentication: a token, in the kubeconfig written to
    /// --write-kubeconfig, is the only credential.
    #[arg(long)]
    standalone: bool,
    /// Where a standalone server writes the kubeconfig for kubectl.
    #[arg(long)]
    write_kubeconfig: Option<PathBuf>,
    /// The cluster's kubeconfig (ConfigMaps, delegated authentication); in a Pod, its
    /// ServiceAccount is used without it.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The address and port to serve HTTPS on (port 0: any free port, which the kubeconfig names).
    #[arg(long, default_value = "127.0.0.1:8444")]
    listen: std::net::SocketAddr,
    /// The serving certificate and its key (PEM), as the APIService's caBundle trusts them;
    /// without them the server makes a self-signed one.
    #[arg(long, requires = "tls_private_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// The serving certificate's private key (PEM).
    #[arg(long, requires = "tls_cert_file")]
    tls_private_key_file: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).init();
    let args = Args::parse();
    let options = ServerOptions {
        authentication: match args.standalone {
            true => Authentication::Standalone { write_kubeconfig: args.write_kubeconfig },
            false => Authentication::Delegated(Default::default()),
        },
        cluster: ClusterConnection::from_flags(args.kubeconfig, args.standalone),
        tls: TlsOptions {
            files: CertificateFiles::from_pair(args.tls_cert_file, args.tls_private_key_file),
            ..TlsOptions::default()
        },
        ..ServerOptions::default()
    };
    let digests = MirroredView::new("configmap", config_digest::ConfigDigest::project)
        .without_cluster("ConfigDigests are views of a cluster's ConfigMaps: start the server with --kubeconfig PATH");
    let server =
        ApiServerBuilder::new(Identity::new("ops-apiserver", env!("CARGO_PKG_VERSION")), "ops.example.com", &["v1"])
            .stored(StoredResource::<region::Region>::new())
            .view(digests)
            .options(options)
            .build()?;
    server.serve(std::net::TcpListener::bind(args.listen)?, server::shutdown_signal()).await?;
    Ok(())
}
