//! Delegated authentication and authorization of aggregated mode, as the kube-apiserver's
//! extension servers do it.
//!
//! The ConfigMap `kube-system/extension-apiserver-authentication` is watched; each version
//! replaces the trusted CAs and header names at once, so a rotated front-proxy CA applies without
//! a restart. A request is authenticated by, in order:
//! 1. a client certificate chained to the request-header CA, whose CN is in the allowed names
//!    (an empty list allows any): the identity headers name the user;
//! 2. a client certificate chained to the client CA: user = CN, groups = O;
//! 3. a bearer token, through a TokenReview (answers cached briefly, bounded in size).
//!
//! Every authenticated user also gets `system:authenticated`. Identity headers are stripped from
//! every request. Authorization asks a SubjectAccessReview (allowed and denied answers cached
//! with their own TTLs); `system:masters` is allowed without asking.

use super::UserInfo;
use super::attributes::Attributes;
use super::cache::TtlCache;
use super::requestheader::{self, HeaderNames};
use crate::machinery::error::Error;
use crate::metrics::Metrics;
use crate::tls::{ChainVerifier, PeerCertificates};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use parking_lot::RwLock;
use std::sync::Arc;
use std::time::Duration;

/// The ConfigMap the kube-apiserver publishes for extension servers.
pub const CONFIG_MAP: &str = "extension-apiserver-authentication";

/// One version of the authentication configuration.
#[derive(Debug, Default)]
pub struct AuthConfig {
    /// Verifies certificates of clients that authenticate as themselves.
    client_ca: Option<ChainVerifier>,
    /// Verifies the front proxy's certificate.
    request_header_ca: Option<ChainVerifier>,
    /// CNs allowed to assert identities; empty allows any certificate of the request-header CA.
    allowed_names: Vec<String>,
    /// The identity headers.
    headers: HeaderNames,
}

fn json_list(data: &std::collections::BTreeMap<String, String>, key: &str) -> Vec<String> {
    data.get(key).and_then(|v| serde_json::from_str::<Vec<String>>(v).ok()).unwrap_or_default()
}

impl AuthConfig {
    /// Reads the ConfigMap's data; unusable CA bundles are reported and left out.
    pub fn from_config_map(config_map: &ConfigMap) -> Self {
        let data = config_map.data.clone().unwrap_or_default();
        let verifier = |key: &str| match data.get(key).map(|pem| ChainVerifier::new(pem)) {
            Some(Ok(v)) => v,
            Some(Err(e)) => {
                tracing::warn!(key, error = %e, "ignoring an unusable CA bundle in {CONFIG_MAP}");
                None
            }
            None => None,
        };
        let defaults = HeaderNames::default();
        let or_default = |v: Vec<String>, d: Vec<String>| if v.is_empty() { d } else { v };
        Self {
            client_ca: verifier("client-ca-file"),
            request_header_ca: verifier("requestheader-client-ca-file"),
            allowed_names: json_list(&data, "requestheader-allowed-names"),
            headers: HeaderNames {
                username: or_default(json_list(&data, "requestheader-username-headers"), defaults.username),
                group: or_default(json_list(&data, "requestheader-group-headers"), defaults.group),
                extra_prefix: or_default(json_list(&data, "requestheader-extra-headers-prefix"), defaults.extra_prefix),
            },
        }
    }
}

/// Tunables of delegated authentication and authorization.
#[derive(Clone, Debug)]
pub struct DelegationSettings {
    /// How long a TokenReview answer is reused.
    pub token_ttl: Duration,
    /// How long an allowed SubjectAccessReview answer is reused.
    pub allowed_ttl: Duration,
    /// How long a denied SubjectAccessReview answer is reused.
    pub denied_ttl: Duration,
    /// Entries per cache.
    pub cache_size: usize,
}

impl Default for DelegationSettings {
    /// Ten seconds for every answer, as the kube-apiserver's delegating authenticator and
    /// authorizer keep them; 4,096 entries per cache.
    fn default() -> Self {
        let ttl = std::time::Duration::from_secs(10);
        Self { token_ttl: ttl, allowed_ttl: ttl, denied_ttl: ttl, cache_size: 4096 }
    }
}

/// Which credential authenticated a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Credential {
    /// A request-header (front-proxy) certificate with the user in its headers: the aggregator.
    FrontProxy,
    /// A client certificate of the cluster's client CA.
    ClientCertificate,
    /// A bearer token the cluster's TokenReview accepted.
    Token,
}

/// Delegated authentication and authorization against the cluster.
pub struct Delegated {
    client: kube::Client,
    /// The configuration in force; `None` until the ConfigMap has been read.
    config: RwLock<Option<Arc<AuthConfig>>>,
    tokens: TtlCache<Option<UserInfo>>,
    /// Recent decisions: allowed or denied, with the authorizer's reason.
    decisions: TtlCache<Result<String, String>>,
    settings: DelegationSettings,
    /// Cache hits and misses are counted here.
    metrics: Arc<Metrics>,
}

impl Delegated {
    /// Delegation through `client`; call [`Delegated::watch_config`] to load the configuration.
    pub fn new(client: kube::Client, settings: DelegationSettings, metrics: Arc<Metrics>) -> Arc<Self> {
        Arc::new(Self {
            client,
            config: RwLock::new(None),
            tokens: TtlCache::new(settings.cache_size),
            decisions: TtlCache::new(settings.cache_size),
            settings,
            metrics,
        })
    }

    /// Replaces the configuration (each ConfigMap version).
    pub fn set_config(&self, config: AuthConfig) {
        *self.config.write() = Some(Arc::new(config));
    }

    /// Watches the ConfigMap for as long as the server runs, applying every version.
    pub fn watch_config(self: &Arc<Self>) {
        use futures::StreamExt;
        use kube::runtime::{WatchStreamExt, watcher};
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), "kube-system");
        let config = watcher::Config::default().fields(&format!("metadata.name={CONFIG_MAP}"));
        let this = self.clone();
        tokio::spawn(async move {
            let mut stream = watcher(api, config).default_backoff().applied_objects().boxed();
            while let Some(event) = stream.next().await {
                match event {
                    Ok(config_map) => {
                        this.set_config(AuthConfig::from_config_map(&config_map));
                        tracing::info!(
                            version = config_map.metadata.resource_version.as_deref().unwrap_or(""),
                            "loaded {CONFIG_MAP}"
                        );
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot watch kube-system/{CONFIG_MAP}: grant the Role extension-apiserver-authentication-reader (manifests/base/rbac.yaml)")
                    }
                }
            }
        });
    }

    fn current(&self) -> Option<Arc<AuthConfig>> {
        self.config.read().clone()
    }

    /// Authenticates a request from its headers and the connection's client certificates, then
    /// strips the identity headers.
    pub async fn authenticate(
        &self,
        headers: &mut http::HeaderMap,
        peer: Option<&PeerCertificates>,
    ) -> Result<(UserInfo, Credential), Error> {
        let Some(config) = self.current() else {
            return Err(Error::Unavailable {
                message: format!("authentication is not ready: kube-system/{CONFIG_MAP} has not been read yet"),
                retry_after: 1,
            });
        };
        let chain = peer.map(|p| p.0.as_slice()).unwrap_or_default();
        tracing::debug!(
            certificates = chain.len(),
            request_header_ca = config.request_header_ca.is_some(),
            client_ca = config.client_ca.is_some(),
            "authenticating"
        );
        let mut user = None;
        if !chain.is_empty() {
            if let Some(subject) = config.request_header_ca.as_ref().and_then(|v| v.verified_subject(chain)) {
                let cn = subject.as_ref().as_ref().map(|s| s.common_name.as_str()).unwrap_or_default();
                if config.allowed_names.is_empty() || config.allowed_names.iter().any(|name| name == cn) {
                    user = requestheader::user_from_headers(&config.headers, headers)
                        .map(|user| (user, Credential::FrontProxy));
                } else {
                    tracing::debug!(cn, "a request-header certificate whose CN is not allowed");
                }
            }
            if user.is_none() {
                if let Some(subject) = config.client_ca.as_ref().and_then(|v| v.verified_subject(chain)) {
                    user = subject.as_ref().as_ref().map(|subject| {
                        let (name, groups) = (subject.common_name.clone(), subject.organizations.clone());
                        (UserInfo { name, uid: None, groups, extra: Default::default() }, Credential::ClientCertificate)
                    });
                } else {
                    tracing::debug!("a client certificate chained to neither trusted CA");
                }
            }
        }
        let token = super::bearer_token(headers).map(str::to_string);
        requestheader::strip(&config.headers, headers);
        if user.is_none()
            && let Some(token) = token
        {
            user = self.review_token(&token).await?.map(|user| (user, Credential::Token));
        }
        let (mut user, credential) = user.ok_or(Error::Unauthorized)?;
        if !user.groups.iter().any(|g| g == "system:authenticated") {
            user.groups.push("system:authenticated".into());
        }
        Ok((user, credential))
    }

    async fn review_token(&self, token: &str) -> Result<Option<UserInfo>, Error> {
        let key = TtlCache::<Option<UserInfo>>::key(token.as_bytes());
        if let Some(answer) = self.tokens.get(&key) {
            Metrics::count(&self.metrics.token_cache, "hit");
            return Ok(answer);
        }
        Metrics::count(&self.metrics.token_cache, "miss");
        let review = TokenReview {
            spec: TokenReviewSpec { token: token.to_string(), ..Default::default() },
            ..Default::default()
        };
        let api: Api<TokenReview> = Api::all(self.client.clone());
        let answer = api.create(&PostParams::default(), &review).await.map_err(|e| {
            tracing::warn!(error = %e, "TokenReview failed");
            Error::Unauthorized
        })?;
        let status = answer.status.unwrap_or_default();
        let user = status.authenticated.unwrap_or(false).then(|| {
            let u = status.user.unwrap_or_default();
            UserInfo {
                name: u.username.unwrap_or_default(),
                uid: u.uid,
                groups: u.groups.unwrap_or_default(),
                extra: u.extra.unwrap_or_default(),
            }
        });
        self.tokens.insert(key, user.clone(), self.settings.token_ttl);
        Ok(user)
    }

    /// Allows or denies `attributes` for `user`: the authorizer's reason when allowed, 403 with
    /// it when denied. Members of `system:masters` are allowed without asking, as the
    /// kube-apiserver's delegating authorizer allows them (with no reason).
    pub async fn authorize(&self, user: &UserInfo, attributes: &Attributes) -> Result<String, Denied> {
        if user.groups.iter().any(|g| g == "system:masters") {
            return Ok(String::new());
        }
        let mut spec = SubjectAccessReviewSpec {
            user: Some(user.name.clone()),
            uid: user.uid.clone(),
            groups: Some(user.groups.clone()),
            extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
            ..Default::default()
        };
        match attributes {
            Attributes::Resource { verb, group, version, resource, subresource, namespace, name } => {
                spec.resource_attributes = Some(ResourceAttributes {
                    verb: Some(verb.clone()),
                    group: Some(group.clone()),
                    version: Some(version.clone()),
                    resource: Some(resource.clone()),
                    subresource: (!subresource.is_empty()).then(|| subresource.clone()),
                    namespace: (!namespace.is_empty()).then(|| namespace.clone()),
                    name: (!name.is_empty()).then(|| name.clone()),
                    ..Default::default()
                })
            }
            Attributes::NonResource { verb, path } => {
                spec.non_resource_attributes =
                    Some(NonResourceAttributes { verb: Some(verb.clone()), path: Some(path.clone()) })
            }
        }
        let key = TtlCache::<()>::key(&serde_json::to_vec(&spec).unwrap_or_default());
        let cached = self.decisions.get(&key);
        Metrics::count(&self.metrics.authorization_cache, if cached.is_some() { "hit" } else { "miss" });
        let decision = match cached {
            Some(decision) => decision,
            None => {
                let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
                let review = SubjectAccessReview { spec, ..Default::default() };
                let answer = api.create(&PostParams::default(), &review).await.map_err(|e| {
                    tracing::warn!(error = %e, "SubjectAccessReview failed");
                    let reason = format!("authorization failed: {e}");
                    Denied { error: Error::Internal(reason.clone()), reason }
                })?;
                let status = answer.status.unwrap_or_default();
                let reason = status.reason.unwrap_or_default();
                let decision = if status.allowed { Ok(reason) } else { Err(reason) };
                let ttl = if decision.is_ok() { self.settings.allowed_ttl } else { self.settings.denied_ttl };
                self.decisions.insert(key, decision.clone(), ttl);
                decision
            }
        };
        decision
            .map_err(|reason| Denied { error: Error::Forbidden(forbidden_message(user, attributes, &reason)), reason })
    }
}

/// A request authorization did not allow: the error to answer with, and the authorizer's reason.
#[derive(Debug)]
pub struct Denied {
    /// 403, or 500 when the authorizer could not be asked.
    pub error: Error,
    /// The authorizer's reason (for the audit log).
    pub reason: String,
}

/// The kube-apiserver's wording of a denial.
pub fn forbidden_message(user: &UserInfo, attributes: &Attributes, reason: &str) -> String {
    let mut message = match attributes {
        Attributes::Resource { verb, group, resource, subresource, namespace, name, .. } => {
            let target = if group.is_empty() { resource.clone() } else { format!("{resource}.{group}") };
            let object = if name.is_empty() { target.clone() } else { format!("{target} {name:?}") };
            let sub = if subresource.is_empty() { String::new() } else { format!("/{subresource}") };
            let scope = if namespace.is_empty() {
                "at the cluster scope".to_string()
            } else {
                format!("in the namespace {namespace:?}")
            };
            format!(
                "{object} is forbidden: User {:?} cannot {verb} resource \"{resource}{sub}\" in API group {group:?} {scope}",
                user.name
            )
        }
        Attributes::NonResource { verb, path } => {
            format!("forbidden: User {:?} cannot {verb} path {path:?}", user.name)
        }
    };
    if !reason.is_empty() {
        message.push_str(": ");
        message.push_str(reason);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_are_worded_as_by_the_kube_apiserver() {
        let user = UserInfo { name: "bob".into(), ..Default::default() };
        let a = Attributes::Resource {
            verb: "list".into(),
            group: "test.example.com".into(),
            version: "v1alpha".into(),
            resource: "widgets".into(),
            subresource: String::new(),
            namespace: "b".into(),
            name: String::new(),
        };
        assert_eq!(
            forbidden_message(&user, &a, ""),
            "widgets.test.example.com is forbidden: User \"bob\" cannot list resource \"widgets\" in API group \"test.example.com\" in the namespace \"b\""
        );
        let n = Attributes::NonResource { verb: "get".into(), path: "/openapi/v2".into() };
        assert_eq!(forbidden_message(&user, &n, "no"), "forbidden: User \"bob\" cannot get path \"/openapi/v2\": no");
    }

    #[test]
    fn the_config_map_sets_cas_and_header_names() {
        let certs = crate::tls::generate("front-proxy-ca", &[]).unwrap();
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": CONFIG_MAP, "namespace": "kube-system"},
            "data": {
                "requestheader-client-ca-file": certs.ca_pem,
                "requestheader-allowed-names": "[\"front-proxy-client\"]",
                "requestheader-username-headers": "[\"X-Remote-User\"]",
                "requestheader-group-headers": "[\"X-Remote-Group\"]",
                "requestheader-extra-headers-prefix": "[\"X-Remote-Extra-\"]"
            }
        }))
        .unwrap();
        let config = AuthConfig::from_config_map(&cm);
        assert!(config.request_header_ca.is_some());
        assert!(config.client_ca.is_none());
        assert_eq!(config.allowed_names, ["front-proxy-client"]);
        assert_eq!(config.headers, HeaderNames::default());
    }
}
