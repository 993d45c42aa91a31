//! ops-apiserver: an aggregated API server of the group `ops.example.com`, built from
//! apiserver-kit's public API alone. It serves Regions (cluster-scoped, stored by the server,
//! with a status subresource) and ConfigDigests (namespaced, read-only views of the cluster's
//! ConfigMaps). `--standalone` runs it without a cluster, as kubectl's own API server.

mod config_digest;
mod region;

use apiserver_kit::prelude::*;
use apiserver_kit::server::ServerArgs;
use clap::Parser;

/// An aggregated API server of Regions and ConfigDigests (group ops.example.com).
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    server: ServerArgs,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The server logs through `tracing`: without a subscriber it prints nothing.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    // A line that cannot be written (a closed pipe) is dropped: reporting it would panic the task.
    tracing_subscriber::fmt().with_env_filter(filter).log_internal_errors(false).init();
    let args = Args::parse();
    let digests = MirroredView::new("configmap", config_digest::ConfigDigest::project)
        .without_cluster("ConfigDigests are views of a cluster's ConfigMaps: start the server with --kubeconfig PATH");
    let server =
        ApiServerBuilder::new(Identity::new("ops-apiserver", env!("CARGO_PKG_VERSION")), "ops.example.com", &["v1"])
            .stored(StoredResource::<region::Region>::new())
            .view(digests)
            .options(args.server.options())
            .build()?;
    server.serve(args.server.listener().await?, shutdown_signal()).await?;
    Ok(())
}
