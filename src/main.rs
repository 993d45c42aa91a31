//! The `farm-apiserver` binary: parses the command line, sets up logging and runs the library.

use farm_apiserver::config::{Cli, Command, LogFormat};
use std::process::ExitCode;

fn init_tracing(level: &str, format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // A log line that cannot be written is dropped: tracing-subscriber's own report of it
    // (`eprintln!`) panics when stderr is a closed pipe, which killed the task logging (the
    // shutdown's included, so SIGTERM no longer stopped the server).
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).log_internal_errors(false);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn write_openapi(out_dir: &std::path::Path) -> std::io::Result<()> {
    let server = farm_apiserver::app::builder(farm_apiserver::app::FarmResources::default())
        .build()
        .map_err(std::io::Error::other)?;
    let docs = server.openapi();
    std::fs::create_dir_all(out_dir)?;
    std::fs::write(out_dir.join("v2.json"), &docs.v2.body)?;
    std::fs::write(out_dir.join("v3.json"), &docs.v3_index.body)?;
    for (version, document) in &docs.v3_group_versions {
        std::fs::write(out_dir.join(format!("v3-apis-farm.example.com-{version}.json")), &document.body)?;
    }
    Ok(())
}

/// jemalloc: with 100,000 llamas the server's RSS is 140 MB instead of glibc malloc's 161 MB
/// (`BENCH_ONLY=rss make bench`); glibc's arenas fragment between request buffers and stored objects.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse_with_env();
    match cli.command {
        Command::Serve(args) => {
            init_tracing(&args.log_level, args.log_format);
            let addr = std::net::SocketAddr::new(args.bind_address, args.secure_port);
            let listener = match std::net::TcpListener::bind(addr) {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!(%addr, error = %e, "cannot listen");
                    return ExitCode::FAILURE;
                }
            };
            match farm_apiserver::run(*args, listener, farm_apiserver::server::shutdown_signal()).await {
                Ok(()) => {
                    tracing::info!("stopped: every connection is closed");
                    ExitCode::SUCCESS
                }
                Err(farm_apiserver::server::StartError::Cluster(e)) => {
                    let hint = "pass --standalone to run without a cluster, or --kubeconfig PATH";
                    tracing::error!(error = %e, hint, "server failed: no usable cluster configuration");
                    ExitCode::FAILURE
                }
                Err(e) => {
                    tracing::error!(error = %e, "server failed");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Certs(args) => match farm_apiserver::certs::run(&args) {
            Ok(bundle) => {
                println!("{bundle}");
                let etcd = farm_apiserver::certs::etcd_certs_path(&args);
                let written: Vec<String> = [&args.out_dir, &args.app_yaml]
                    .into_iter()
                    .chain(etcd.as_ref())
                    .filter(|p| p.as_os_str() != "-")
                    .map(|p| p.display().to_string())
                    .collect();
                eprintln!("wrote {}", written.join(", "));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("certs: {e}");
                ExitCode::FAILURE
            }
        },
        Command::EtcdSecrets(args) => match farm_apiserver::etcd_secrets::run(&args).await {
            Ok(done) => {
                done.iter().for_each(|line| println!("{line}"));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("etcd-secrets: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Openapi(args) => match write_openapi(&args.out_dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("writing OpenAPI documents to {}: {e}", args.out_dir.display());
                ExitCode::FAILURE
            }
        },
    }
}
