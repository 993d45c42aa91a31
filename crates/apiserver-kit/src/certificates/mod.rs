//! Serving certificates the server manages itself, as well-known controllers manage their
//! webhooks' (cert-controller, knative's): a Secret of the server's namespace holds a CA and
//! the serving certificate it signs; every replica reads it, any replica renews it before it
//! expires, and the CA bundle is written into the server's own APIServices. A CA is valid for
//! a year by default, a serving certificate for a week; both rotate with an overlap (see
//! [`plan`]), so no client of the APIServices' caBundle ever meets a certificate it does not
//! trust. Replicas coordinate through the Secret's resourceVersion alone.

pub mod controller;
pub mod material;
pub mod plan;
pub mod probe;

use crate::health::Check;
use crate::tls::ReloadingCertificate;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How the server manages its serving certificate in the cluster.
#[derive(Clone, Debug)]
pub struct ManagedCertificates {
    /// The Secret's name.
    pub secret: String,
    /// Its namespace (and the Service's); `None` for the namespace the server runs in (its
    /// kubeconfig context's outside a Pod).
    pub namespace: Option<String>,
    /// The Service in front of the server: the certificate names `<service>.<namespace>.svc`
    /// and its other forms.
    pub service: String,
    /// The APIServices whose caBundle the server writes; `None` for one per version served,
    /// `<version>.<group>`.
    pub apiservices: Option<Vec<String>>,
    /// How long a CA is valid.
    pub ca_validity: Duration,
    /// How long a serving certificate is valid.
    pub validity: Duration,
}

impl ManagedCertificates {
    /// The Secret `secret` for the Service `service`, a one-year CA, week-long certificates.
    pub fn new(secret: impl Into<String>, service: impl Into<String>) -> Self {
        Self {
            secret: secret.into(),
            namespace: None,
            service: service.into(),
            apiservices: None,
            ca_validity: Duration::from_secs(365 * 86_400),
            validity: Duration::from_secs(7 * 86_400),
        }
    }
}

/// What [`start`] needs besides the options.
pub struct Context<'a> {
    /// The cluster.
    pub client: kube::Client,
    /// The namespace of the server's kubeconfig or Pod.
    pub default_namespace: &'a str,
    /// The API group served.
    pub group: &'a str,
    /// The versions served.
    pub versions: Vec<&'a str>,
    /// The program's name: the field manager and the CA's name.
    pub program: &'a str,
    /// The listener's certificate.
    pub certificate: Arc<ReloadingCertificate>,
    /// Ends the manager.
    pub stopping: tokio_util::sync::CancellationToken,
}

/// Starts managing the certificates; the check fails readiness until the Secret's certificate
/// is served.
pub fn start(options: &ManagedCertificates, context: Context<'_>) -> Check {
    let namespace = options.namespace.clone().unwrap_or_else(|| context.default_namespace.to_string());
    let apiservice_names = options
        .apiservices
        .clone()
        .unwrap_or_else(|| context.versions.iter().map(|v| format!("{v}.{}", context.group)).collect());
    let serving = Arc::new(AtomicBool::new(false));
    let policy = plan::Policy {
        ca_name: format!("{}-ca", context.program),
        names: crate::tls::service_names(&options.service, &namespace),
        ca_validity: options.ca_validity,
        leaf_validity: options.validity,
    };
    let manager = controller::Manager {
        secrets: kube::Api::namespaced(context.client.clone(), &namespace),
        apiservices: kube::Api::all_with(context.client, &controller::apiservice_resource()),
        secret: options.secret.clone(),
        apiservice_names,
        policy,
        certificate: context.certificate,
        serving: serving.clone(),
        field_manager: context.program.to_string(),
        resync: (options.validity / 10).clamp(Duration::from_secs(1), Duration::from_secs(60)),
    };
    tracing::info!(secret = %options.secret, %namespace, "managing the serving certificate in a Secret");
    tokio::spawn(manager.run(context.stopping));
    let described = format!("the serving certificate of Secret {namespace}/{} is not served yet", options.secret);
    Arc::new(move || if serving.load(Ordering::SeqCst) { Ok(()) } else { Err(described.clone()) })
}
