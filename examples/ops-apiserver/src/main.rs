//! ops-apiserver: an aggregated API server of the group `ops.example.com`, built from
//! apiserver-kit's public API alone. It serves Regions (cluster-scoped, stored by the server,
//! with a status subresource) and ConfigDigests (namespaced, read-only views of the cluster's
//! ConfigMaps). `--standalone` runs it without a cluster, as kubectl's own API server.

mod config_digest;
mod region;

use apiserver_kit::machinery::identity::Identity;
use apiserver_kit::server::{self, ApiServerBuilder, Authentication, ClusterConnection, ServerOptions};
use apiserver_kit::server::{MirroredView, StoredResource};
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
    /// The address and port to serve HTTPS on.
    #[arg(long, default_value = "127.0.0.1:8444")]
    listen: std::net::SocketAddr,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::new("info")).init();
    let args = Args::parse();
    let options = ServerOptions {
        authentication: match args.standalone {
            true => Authentication::Standalone { write_kubeconfig: args.write_kubeconfig },
            false => Authentication::Delegated(Default::default()),
        },
        cluster: match (args.kubeconfig, args.standalone) {
            (Some(path), _) => ClusterConnection::Kubeconfig(path),
            (None, true) => ClusterConnection::None,
            (None, false) => ClusterConnection::InCluster,
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
