//! Calling one webhook over HTTPS, as the kube-apiserver calls it: a POST of the review to its
//! `url`, or to `https://<service>.<namespace>.svc:<port><path>` for a `service`, with
//! `?timeout=<n>s` appended, the server's certificate checked against the `caBundle` (the
//! built-in roots without one) and the name in the URL.
//!
//! A service is reached the way the aggregator reaches an APIService's (the kube-apiserver's
//! cluster-IP service resolver): the Service is looked up in the cluster and dialled at its
//! cluster IP, or at its `externalName` for an ExternalName Service, while the TLS name stays
//! `<service>.<namespace>.svc`. Lookups are kept for a few seconds. Client certificates for
//! webhooks (the kube-apiserver's admission configuration file) are not supported.

use k8s_openapi::api::admissionregistration::v1::{ServiceReference, WebhookClientConfig};
use k8s_openapi::api::core::v1::Service;
use kube::api::Api;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How long a Service's address is reused before it is looked up again.
const RESOLVED_FOR: Duration = Duration::from_secs(5);

/// Where and how one webhook is reached; one HTTPS client is kept per target.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Target {
    /// The host of the URL, and the name its certificate must carry.
    host: String,
    /// Where `host` is dialled, for a Service.
    address: Option<SocketAddr>,
    /// PEM certificates trusted for it; empty for the built-in roots.
    ca_bundle: Vec<u8>,
}

/// A Service's port: namespace, name and port.
type ServicePort = (String, String, i32);

/// Calls webhooks, reusing connections and Service lookups.
pub struct Caller {
    client: kube::Client,
    clients: Mutex<HashMap<Target, reqwest::Client>>,
    /// Each Service port's address, and when it was looked up.
    resolved: Mutex<HashMap<ServicePort, (Instant, SocketAddr)>>,
}

impl Caller {
    /// A caller that looks Services up through `client`.
    pub fn new(client: kube::Client) -> Self {
        Self { client, clients: Mutex::default(), resolved: Mutex::default() }
    }

    /// POSTs `body` to the webhook `config` within `timeout`; the answer's body, or why the call
    /// failed in the kube-apiserver's words (`Post "<url>": <reason>`).
    pub async fn call(
        &self,
        config: &WebhookClientConfig,
        timeout: Duration,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, String> {
        let (url, target) = self.target(config).await?;
        let url = format!("{url}?timeout={}s", timeout.as_secs());
        let client = self.client_for(target).map_err(|e| format!("Post {url:?}: {e}"))?;
        let sent = client
            .post(&url)
            .timeout(timeout)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(body)
            .send()
            .await;
        let response = sent.map_err(|e| format!("Post {url:?}: {}", reason(&e)))?;
        let code = response.status();
        let bytes = response.bytes().await.map_err(|e| format!("Post {url:?}: {}", reason(&e)))?;
        if !code.is_success() {
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).into_owned();
            return Err(format!("Post {url:?}: the server responded with {code}: {text}"));
        }
        Ok(bytes.to_vec())
    }

    /// The URL to call (without the timeout) and how to reach it.
    async fn target(&self, config: &WebhookClientConfig) -> Result<(String, Target), String> {
        let ca_bundle = config.ca_bundle.as_ref().map(|b| b.0.clone()).unwrap_or_default();
        if let Some(url) = &config.url {
            let parsed = http::Uri::try_from(url.as_str()).map_err(|e| format!("invalid webhook URL {url:?}: {e}"))?;
            let host = parsed.host().unwrap_or_default().trim_matches(['[', ']']).to_string();
            return Ok((url.clone(), Target { host, address: None, ca_bundle }));
        }
        let Some(service) = &config.service else {
            return Err("the webhook has neither a url nor a service".into());
        };
        let host = format!("{}.{}.svc", service.name, service.namespace);
        let port = service.port.unwrap_or(443);
        let url = format!("https://{host}:{port}{}", service.path.as_deref().unwrap_or_default());
        let address = self.resolve(service, port).await?;
        Ok((url, Target { host, address: Some(address), ca_bundle }))
    }

    /// Where `service`'s `port` is dialled: its cluster IP, or its external name.
    async fn resolve(&self, service: &ServiceReference, port: i32) -> Result<SocketAddr, String> {
        let key = (service.namespace.clone(), service.name.clone(), port);
        if let Some((at, address)) = self.resolved.lock().get(&key)
            && at.elapsed() < RESOLVED_FOR
        {
            return Ok(*address);
        }
        let api: Api<Service> = Api::namespaced(self.client.clone(), &service.namespace);
        let found = api.get_opt(&service.name).await.map_err(|e| format!("looking up the service: {e}"))?;
        let name = format!("{}/{}", service.namespace, service.name);
        let spec = found.ok_or_else(|| format!("service {name:?} not found"))?.spec.unwrap_or_default();
        let port = u16::try_from(port).map_err(|_| format!("invalid port {port}"))?;
        let address = match (spec.type_.as_deref(), spec.external_name.as_deref(), spec.cluster_ip.as_deref()) {
            (Some("ExternalName"), Some(external), _) => tokio::net::lookup_host((external, port))
                .await
                .map_err(|e| format!("resolving {external}: {e}"))?
                .next()
                .ok_or_else(|| format!("{external} has no address"))?,
            (_, _, Some(ip)) if !ip.is_empty() && ip != "None" => {
                SocketAddr::new(ip.parse().map_err(|_| format!("invalid cluster IP {ip:?}"))?, port)
            }
            _ => return Err(format!("cannot route to service {name:?} without a cluster IP")),
        };
        self.resolved.lock().insert(key, (Instant::now(), address));
        Ok(address)
    }

    /// The HTTPS client for `target`, made once.
    fn client_for(&self, target: Target) -> Result<reqwest::Client, reqwest::Error> {
        if let Some(client) = self.clients.lock().get(&target) {
            return Ok(client.clone());
        }
        let mut builder = reqwest::Client::builder().use_rustls_tls().https_only(true);
        if !target.ca_bundle.is_empty() {
            builder = builder.tls_built_in_root_certs(false);
            for certificate in reqwest::Certificate::from_pem_bundle(&target.ca_bundle)? {
                builder = builder.add_root_certificate(certificate);
            }
        }
        if let Some(address) = target.address {
            builder = builder.resolve(&target.host, address);
        }
        let client = builder.build()?;
        self.clients.lock().insert(target, client.clone());
        Ok(client)
    }
}

/// What went wrong with a call, in the words the kube-apiserver uses where they differ from the
/// innermost error's.
fn reason(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "context deadline exceeded".into();
    }
    let mut innermost: &dyn std::error::Error = error;
    while let Some(source) = innermost.source() {
        innermost = source;
    }
    innermost.to_string()
}
