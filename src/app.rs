//! The farm server: the group `farm.example.com` with Llamas (stored, at v1 and the deprecated
//! v1alpha) and FarmPods (views of the cluster's Pods), built with [`ApiServerBuilder`] from the
//! command line's options.

use crate::config::ServeArgs;
use crate::machinery::identity::Identity;
use crate::resources::{GROUP, farmpod, farmpod::FarmPod, llama, llama::Llama};
use crate::server::{
    ApiServer, ApiServerBuilder, AuditOptions, Authentication, CertificateFiles, ClusterConnection, HttpOptions,
    ManagedCertificates, MirroredView, RequestLimits, ServerOptions, ShutdownOptions, StartError, StoredResource,
    TlsOptions, WatchOptions,
};
use std::future::Future;
use std::time::Duration;

/// This program, as `/version`, OpenAPI, its CA, its kubeconfig and its metrics name it.
pub const IDENTITY: Identity = Identity::new("farm-apiserver", env!("CARGO_PKG_VERSION"));

/// The mirror of the cluster's Pods that feeds FarmPods (the `pod cache`).
pub const POD_MIRROR: &str = "pod";

/// What a read of FarmPods answers when the server has no cluster.
pub const FARM_PODS_NEED_A_CLUSTER: &str = "FarmPods are views of a cluster's Pods, and this server was started \
without a cluster: start it with --kubeconfig PATH (standalone too) or run it in the cluster";

/// What the command line sets of the farm's resources.
#[derive(Clone, Debug)]
pub struct FarmResources {
    /// Whether llama writes record managedFields (and apply is served).
    pub managed_fields: bool,
    /// The only namespace whose Pods FarmPods show (all when `None`).
    pub pod_namespace: Option<String>,
    /// The longest wait between the Pod cache's retries.
    pub pod_cache_max_backoff: Duration,
}

impl Default for FarmResources {
    fn default() -> Self {
        Self { managed_fields: true, pod_namespace: None, pod_cache_max_backoff: Duration::from_secs(30) }
    }
}

/// The farm server's group, versions and resources, with the default options: Llamas stored at
/// v1 and served at the deprecated v1alpha too, FarmPods from the Pod mirror, and the Llama
/// conversion webhook.
pub fn builder(resources: FarmResources) -> ApiServerBuilder {
    let llamas =
        StoredResource::<llama::v1::Llama>::new().deprecated_at::<Llama>().managed_fields(resources.managed_fields);
    let farm_pods = MirroredView::new(POD_MIRROR, farmpod::v1::FarmPod::project)
        .deprecated_at::<FarmPod>()
        .in_namespace(resources.pod_namespace)
        .max_backoff(resources.pod_cache_max_backoff)
        .without_cluster(FARM_PODS_NEED_A_CLUSTER);
    ApiServerBuilder::new(IDENTITY, GROUP, &["v1", "v1alpha"])
        .stored(llamas)
        .view(farm_pods)
        .conversion_webhook(llama::conversion::review_object)
}

/// The farm server as the command line configures it.
pub fn server(args: &ServeArgs) -> Result<ApiServer, StartError> {
    let resources = FarmResources {
        managed_fields: args.managed_fields,
        pod_namespace: args.pod_namespace.clone(),
        pod_cache_max_backoff: Duration::from_secs(args.pod_cache_max_backoff_seconds),
    };
    Ok(builder(resources).options(options(args)).build()?)
}

/// Runs the farm server on `listener` until `shutdown` completes, then drains gracefully.
pub async fn run(
    args: ServeArgs,
    listener: std::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    server(&args)?.serve(listener, shutdown).await
}

/// The server's options from the command line.
pub fn options(args: &ServeArgs) -> ServerOptions {
    ServerOptions {
        authentication: match args.standalone {
            true => Authentication::Standalone { write_kubeconfig: args.write_kubeconfig.clone() },
            false => Authentication::Delegated(crate::auth::delegated::DelegationSettings {
                token_ttl: Duration::from_secs(args.authentication_token_cache_ttl_seconds),
                allowed_ttl: Duration::from_secs(args.authorization_allowed_cache_ttl_seconds),
                denied_ttl: Duration::from_secs(args.authorization_denied_cache_ttl_seconds),
                ..Default::default()
            }),
        },
        cluster: ClusterConnection::from_flags(args.kubeconfig.clone(), args.standalone),
        tls: TlsOptions {
            files: CertificateFiles::from_pair(args.tls_cert_file.clone(), args.tls_private_key_file.clone()),
            extra_sans: args.tls_sans.clone(),
            reload_interval: Duration::from_secs(args.tls_reload_interval_seconds),
            managed: managed_certificates(args),
            conversion_webhook_client_ca: args.conversion_webhook_client_ca_file.clone(),
        },
        storage: args.storage.options(),
        watch: WatchOptions {
            history_size: args.watch_history_size,
            buffer_size: args.watch_buffer_size,
            bookmark_interval: Duration::from_secs(args.watch_bookmark_interval_seconds),
            min_request_timeout: Duration::from_secs(args.min_request_timeout_seconds),
        },
        admission_webhooks: args.admission_webhooks,
        admission_policies: args.admission_policies,
        audit: audit_options(args),
        limits: RequestLimits {
            max_inflight: args.max_requests_inflight,
            timeout: Duration::from_secs(args.request_timeout_seconds),
        },
        http: HttpOptions {
            header_read_timeout: Duration::from_secs(args.header_read_timeout_seconds),
            max_header_bytes: args.max_header_bytes,
            max_headers: args.max_headers,
        },
        shutdown: ShutdownOptions {
            delay: Duration::from_secs(args.shutdown_delay_seconds),
            grace: Duration::from_secs(args.shutdown_grace_seconds),
        },
        anonymous_metrics: args.anonymous_metrics,
    }
}

/// The Secret of the serving certificate, when `--certificate-secret` names one.
fn managed_certificates(args: &ServeArgs) -> Option<ManagedCertificates> {
    let secret = args.certificate_secret.as_deref()?;
    let (namespace, name) = match secret.split_once('/') {
        Some((namespace, name)) => (Some(namespace.to_string()), name),
        None => (None, secret),
    };
    Some(ManagedCertificates {
        namespace,
        ca_validity: Duration::from_secs(args.certificate_ca_validity_seconds.max(1)),
        validity: Duration::from_secs(args.certificate_validity_seconds.max(1)),
        ..ManagedCertificates::new(name, args.certificate_service.clone())
    })
}

/// The audit log, when `--audit-policy-file` and `--audit-log-path` ask for one. As on the
/// kube-apiserver, one without the other records nothing (a warning says so).
fn audit_options(args: &ServeArgs) -> Option<AuditOptions> {
    let (policy, path) = match (&args.audit_policy_file, &args.audit_log_path) {
        (None, None) => return None,
        (Some(policy), Some(path)) => (policy, path),
        (Some(_), None) => {
            tracing::warn!("--audit-policy-file without --audit-log-path: no audit events are written");
            return None;
        }
        (None, Some(_)) => {
            tracing::warn!("no --audit-policy-file: no audit events are written to --audit-log-path");
            return None;
        }
    };
    Some(AuditOptions {
        policy_file: policy.clone(),
        log_path: path.clone(),
        rotation: crate::audit::rotate::Limits {
            max_bytes: match args.audit_log_maxsize {
                0 => u64::MAX,
                megabytes => megabytes.saturating_mul(1024 * 1024),
            },
            max_backups: args.audit_log_maxbackup,
            max_age: Duration::from_secs(args.audit_log_maxage.saturating_mul(86_400)),
        },
    })
}
