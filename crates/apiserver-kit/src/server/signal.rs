//! The shutdown signal of a server's process: SIGTERM (what the kubelet sends a Pod's
//! containers) or Ctrl-C, for [`super::ApiServer::serve`]'s `shutdown`.

/// Completes when the process receives SIGTERM or Ctrl-C (SIGINT). A signal that cannot be
/// listened for is logged and never completes, so the other still stops the server.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
