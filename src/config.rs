//! The command line. Every flag of `serve` can also be set by an environment variable named
//! `FARM_<FLAG_NAME>` (e.g. `FARM_SECURE_PORT`), so the same binary is configured the same way in
//! a Deployment and on a laptop (`scripts/dev.sh` runs a local binary with a Deployment's).

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use std::net::IpAddr;
use std::path::PathBuf;

/// farm-apiserver: a Kubernetes aggregated API server for the `farm.example.com` group.
#[derive(Parser, Debug)]
#[command(name = "farm-apiserver", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the API over HTTPS.
    Serve(Box<ServeArgs>),
    /// Write the OpenAPI documents the server serves into a directory (default `openapi/`).
    Openapi(OpenapiArgs),
    /// Make the CA and serving certificate for the in-cluster Service, and assemble manifests/app.yaml.
    Certs(crate::certs::CertsArgs),
    /// In the cluster, make the Secrets of the etcd of manifests/ha that are missing (its Job).
    EtcdSecrets(crate::etcd_secrets::EtcdSecretsArgs),
}

impl Cli {
    /// The command line of this process, each flag of `serve` that does not name its
    /// environment variable (those the library's flags add) read from `FARM_<FLAG_NAME>` too.
    pub fn parse_with_env() -> Self {
        let matches = Self::with_env(Self::command()).get_matches();
        Self::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }

    /// [`Cli::parse_with_env`] of `args`.
    pub fn try_parse_with_env<I: Into<std::ffi::OsString> + Clone>(
        args: impl IntoIterator<Item = I>,
    ) -> Result<Self, clap::Error> {
        Self::from_arg_matches(&Self::with_env(Self::command()).try_get_matches_from(args)?)
    }

    fn with_env(command: clap::Command) -> clap::Command {
        command.mut_subcommand("serve", |serve| {
            serve.mut_args(|arg| {
                if arg.get_env().is_some() || arg.is_positional() || arg.get_id() == "help" {
                    return arg;
                }
                let name = format!("FARM_{}", arg.get_id().as_str().to_uppercase());
                // Named once per flag at start: a few bytes kept for the process's life.
                arg.env(&*Box::leak(name.into_boxed_str()))
            })
        })
    }
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Options of `serve`.
#[derive(Args, Clone, Debug)]
pub struct ServeArgs {
    /// Run without a cluster: protect the API with a generated bearer token and answer `/api` and
    /// `/version` as a kube-apiserver does, so kubectl can talk to this server directly.
    #[arg(long, env = "FARM_STANDALONE")]
    pub standalone: bool,

    /// Address to listen on.
    #[arg(long, env = "FARM_BIND_ADDRESS", default_value = "0.0.0.0")]
    pub bind_address: IpAddr,

    /// HTTPS port; 0 picks a free one (the written kubeconfig names it).
    #[arg(long, env = "FARM_SECURE_PORT", default_value_t = 8443)]
    pub secure_port: u16,

    /// Standalone mode: write a kubeconfig (server URL, CA, token) for kubectl to this path.
    #[arg(long, env = "FARM_WRITE_KUBECONFIG", requires = "standalone")]
    pub write_kubeconfig: Option<PathBuf>,

    /// kubeconfig of the cluster this server belongs to; in-cluster configuration otherwise.
    #[arg(long, env = "FARM_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,

    /// Only mirror the Pods of this namespace as FarmPods (needs only a namespaced Role); all
    /// namespaces when unset.
    #[arg(long, env = "FARM_POD_NAMESPACE")]
    pub pod_namespace: Option<String>,

    /// Longest wait between retries of the Pod cache after errors (the wait doubles from 200 ms).
    #[arg(long, env = "FARM_POD_CACHE_MAX_BACKOFF_SECONDS", default_value_t = 30)]
    pub pod_cache_max_backoff_seconds: u64,

    /// PEM serving certificate (chain); a self-signed CA and certificate are generated without
    /// it (or kept in a Secret with `--certificate-secret`).
    #[arg(long, env = "FARM_TLS_CERT_FILE", requires = "tls_private_key_file", conflicts_with = "certificate_secret")]
    pub tls_cert_file: Option<PathBuf>,

    /// PEM private key of `--tls-cert-file`.
    #[arg(long, env = "FARM_TLS_PRIVATE_KEY_FILE", requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,

    /// Keep the serving certificate in this Secret (`name`, in the server's namespace, or
    /// `namespace/name`): the server makes its CA and certificate, renews both before they
    /// expire, and writes the CA bundle into its APIServices (aggregated mode).
    #[arg(long, env = "FARM_CERTIFICATE_SECRET", value_name = "[NAMESPACE/]NAME")]
    pub certificate_secret: Option<String>,

    /// The Service in front of the server, in the Secret's namespace: the managed certificate's
    /// names.
    #[arg(long, env = "FARM_CERTIFICATE_SERVICE", default_value = "farm-apiserver")]
    pub certificate_service: String,

    /// Seconds a managed serving certificate is valid (renewed after two thirds).
    #[arg(long, env = "FARM_CERTIFICATE_VALIDITY_SECONDS", default_value_t = 7 * 86_400)]
    pub certificate_validity_seconds: u64,

    /// Seconds a managed CA is valid (a new one is trusted after two thirds, signs after five
    /// sixths).
    #[arg(long, env = "FARM_CERTIFICATE_CA_VALIDITY_SECONDS", default_value_t = 365 * 86_400)]
    pub certificate_ca_validity_seconds: u64,

    /// Serve `/metrics` to callers without credentials (Prometheus's stock `kubernetes-pods`
    /// job presents none); without it, `/metrics` is authorized like any non-resource path (the
    /// ClusterRole farm-apiserver:metrics-reader). What it exposes: docs/observability.md.
    #[arg(long, env = "FARM_ANONYMOUS_METRICS")]
    pub anonymous_metrics: bool,

    /// Extra subject alternative names for the generated certificate (repeatable, or comma-separated).
    #[arg(long = "tls-san", env = "FARM_TLS_SAN", value_delimiter = ',')]
    pub tls_sans: Vec<String>,

    /// Log level or filter (`info`, `debug`, `apiserver_kit=debug` for the generic machinery,
    /// `farm_apiserver=debug` for the farm's own code); `RUST_LOG` wins when set.
    #[arg(long, env = "FARM_LOG_LEVEL", default_value = "info")]
    pub log_level: String,

    /// Log line format.
    #[arg(long, env = "FARM_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Where Llamas are kept: `--storage memory` (this process only, lost on restart) or
    /// `--storage etcd` (durable, shared by every replica pointed at the same etcd and prefix)
    /// and the `--etcd-*` flags: the library's flags, each with its `FARM_` variable too
    /// ([`Cli::parse_with_env`]).
    #[command(flatten)]
    pub storage: apiserver_kit::server::StorageArgs,

    /// Events each resource keeps in memory for watches and paged or exact lists (with etcd, in
    /// its watch cache); older resourceVersions get 410 (with etcd, paged and exact lists older
    /// than the window read etcd's history, up to its last compaction).
    #[arg(long, env = "FARM_WATCH_HISTORY_SIZE", default_value_t = 10_000)]
    pub watch_history_size: usize,

    /// Events a watcher may have waiting; a watcher further behind is dropped (it re-watches).
    #[arg(long, env = "FARM_WATCH_BUFFER_SIZE", default_value_t = 1_000)]
    pub watch_buffer_size: usize,

    /// Seconds between BOOKMARK events on watches that allow them.
    #[arg(long, env = "FARM_WATCH_BOOKMARK_INTERVAL_SECONDS", default_value_t = 60)]
    pub watch_bookmark_interval_seconds: u64,

    /// Watches without timeoutSeconds last this many seconds plus up to 100% jitter.
    #[arg(long, env = "FARM_MIN_REQUEST_TIMEOUT_SECONDS", default_value_t = 1800)]
    pub min_request_timeout_seconds: u64,

    /// Record managedFields on every write and serve server-side apply. `false` is the
    /// kube-apiserver's former `ServerSideApply=false` feature gate: no managedFields (client-set
    /// ones are dropped) and apply patches are 415. `make bench` uses it as the baseline of what
    /// managed fields cost.
    #[arg(long, env = "FARM_MANAGED_FIELDS", default_value_t = true, action = clap::ArgAction::Set)]
    pub managed_fields: bool,

    /// In aggregated mode, call the cluster's admission webhooks (MutatingWebhookConfiguration
    /// and ValidatingWebhookConfiguration) on writes they match, as the kube-apiserver does
    /// (never standalone, even with a kubeconfig).
    /// `false` is the kube-apiserver's `--disable-admission-plugins=MutatingAdmissionWebhook,
    /// ValidatingAdmissionWebhook`.
    #[arg(long, env = "FARM_ADMISSION_WEBHOOKS", default_value_t = true, action = clap::ArgAction::Set)]
    pub admission_webhooks: bool,

    /// In aggregated mode, check writes against the cluster's ValidatingAdmissionPolicies and
    /// their bindings, as the kube-apiserver does for its own resources (never standalone).
    /// `false` is the kube-apiserver's `--disable-admission-plugins=ValidatingAdmissionPolicy`.
    #[arg(long, env = "FARM_ADMISSION_POLICIES", default_value_t = true, action = clap::ArgAction::Set)]
    pub admission_policies: bool,

    /// The audit policy: an `audit.k8s.io/v1` Policy file (YAML or JSON). With
    /// `--audit-log-path`, requests are recorded as the policy says.
    #[arg(long, env = "FARM_AUDIT_POLICY_FILE")]
    pub audit_policy_file: Option<std::path::PathBuf>,

    /// Where audit events are written, one JSON line each; `-` for standard output.
    #[arg(long, env = "FARM_AUDIT_LOG_PATH")]
    pub audit_log_path: Option<String>,

    /// The size, in megabytes, at which the audit log is rotated (`0`: never).
    #[arg(long, env = "FARM_AUDIT_LOG_MAXSIZE", default_value_t = 100)]
    pub audit_log_maxsize: u64,

    /// Rotated audit logs kept (`0`: all).
    #[arg(long, env = "FARM_AUDIT_LOG_MAXBACKUP", default_value_t = 100)]
    pub audit_log_maxbackup: usize,

    /// Days a rotated audit log is kept (`0`: no limit).
    #[arg(long, env = "FARM_AUDIT_LOG_MAXAGE", default_value_t = 366)]
    pub audit_log_maxage: u64,

    /// Seconds a TokenReview answer is reused (aggregated mode).
    #[arg(long, env = "FARM_AUTHENTICATION_TOKEN_CACHE_TTL_SECONDS", default_value_t = 10)]
    pub authentication_token_cache_ttl_seconds: u64,

    /// Seconds an allowed SubjectAccessReview answer is reused (aggregated mode).
    #[arg(long, env = "FARM_AUTHORIZATION_ALLOWED_CACHE_TTL_SECONDS", default_value_t = 10)]
    pub authorization_allowed_cache_ttl_seconds: u64,

    /// Seconds a denied SubjectAccessReview answer is reused (aggregated mode).
    #[arg(long, env = "FARM_AUTHORIZATION_DENIED_CACHE_TTL_SECONDS", default_value_t = 10)]
    pub authorization_denied_cache_ttl_seconds: u64,

    /// Seconds between checks of the serving certificate files; a change is served to new
    /// connections without a restart.
    #[arg(long, env = "FARM_TLS_RELOAD_INTERVAL_SECONDS", default_value_t = 10)]
    pub tls_reload_interval_seconds: u64,

    /// PEM file of the CA whose client certificates may call the conversion webhook (`/convert`):
    /// the CA of the certificate the kube-apiserver's webhook kubeconfig presents. Without it
    /// the webhook takes any caller, as webhooks the kube-apiserver calls without credentials must.
    #[arg(long, env = "FARM_CONVERSION_WEBHOOK_CLIENT_CA_FILE")]
    pub conversion_webhook_client_ca_file: Option<PathBuf>,

    /// Requests (watches excepted) served at once; more get 429 with Retry-After.
    #[arg(long, env = "FARM_MAX_REQUESTS_INFLIGHT", default_value_t = 400)]
    pub max_requests_inflight: usize,

    /// Seconds a request (watches excepted) may take before it is answered 504.
    #[arg(long, env = "FARM_REQUEST_TIMEOUT_SECONDS", default_value_t = 60)]
    pub request_timeout_seconds: u64,

    /// Seconds a client may take to send a request's headers (HTTP/1.1) before the connection closes.
    #[arg(long, env = "FARM_HEADER_READ_TIMEOUT_SECONDS", default_value_t = 30)]
    pub header_read_timeout_seconds: u64,

    /// Largest request head (request line and headers), in bytes.
    #[arg(long, env = "FARM_MAX_HEADER_BYTES", default_value_t = 1024 * 1024)]
    pub max_header_bytes: usize,

    /// Most headers a request may carry.
    #[arg(long, env = "FARM_MAX_HEADERS", default_value_t = 128)]
    pub max_headers: usize,

    /// Seconds to keep serving after SIGTERM with `/readyz` failing, so load balancers and
    /// Service endpoints stop sending new requests before the listener closes (like the
    /// kube-apiserver's `--shutdown-delay-duration`).
    #[arg(long, env = "FARM_SHUTDOWN_DELAY_SECONDS", default_value_t = 0)]
    pub shutdown_delay_seconds: u64,

    /// Seconds, after the listener closes, to let in-flight requests finish and watches end
    /// before the remaining connections are closed.
    #[arg(long, env = "FARM_SHUTDOWN_GRACE_SECONDS", default_value_t = 20)]
    pub shutdown_grace_seconds: u64,
}

/// Options of `openapi`.
#[derive(Args, Clone, Debug)]
pub struct OpenapiArgs {
    /// Directory to write `v2.json`, `v3.json` and `v3-apis-farm.example.com-<version>.json` into.
    #[arg(long, default_value = "openapi")]
    pub out_dir: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;
    use apiserver_kit::server::StorageKind;

    #[test]
    fn standalone_serve_parses() {
        let cli = Cli::try_parse_from([
            "farm-apiserver",
            "serve",
            "--standalone",
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            "0",
            "--write-kubeconfig",
            "/tmp/kc",
            "--tls-san",
            "a.example,b.example",
        ])
        .unwrap();
        let Command::Serve(args) = cli.command else { panic!("not serve") };
        assert!(args.standalone);
        assert_eq!(args.secure_port, 0);
        assert_eq!(args.tls_sans, ["a.example", "b.example"]);
    }

    #[test]
    fn a_kubeconfig_to_write_requires_standalone() {
        assert!(Cli::try_parse_from(["farm-apiserver", "serve", "--write-kubeconfig", "/tmp/kc"]).is_err());
    }

    #[test]
    fn the_library_s_storage_flags_are_read_from_farm_variables_too() {
        let etcd = Cli::try_parse_with_env(["farm-apiserver", "serve", "--storage", "etcd", "--etcd-prefix", "/p"]);
        let Command::Serve(args) = etcd.expect("parses").command else { panic!("not serve") };
        assert_eq!((args.storage.storage, args.storage.etcd_prefix.as_deref()), (StorageKind::Etcd, Some("/p")));
        let command = Cli::with_env(Cli::command());
        let serve = command.find_subcommand("serve").expect("serve");
        let env =
            |id: &str| serve.get_arguments().find(|a| a.get_id() == id).and_then(|a| a.get_env().map(|e| e.to_owned()));
        assert_eq!(env("etcd_endpoints"), Some("FARM_ETCD_ENDPOINTS".into()));
        assert_eq!(env("storage"), Some("FARM_STORAGE".into()));
        assert_eq!(env("secure_port"), Some("FARM_SECURE_PORT".into()), "its own flags keep theirs");
    }

    #[test]
    fn a_certificate_requires_its_key() {
        assert!(Cli::try_parse_from(["farm-apiserver", "serve", "--tls-cert-file", "c.pem"]).is_err());
    }
}
