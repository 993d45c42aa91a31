//! Authentication and authorization of requests. Health endpoints are never behind them.
//!
//! - Standalone mode: a random bearer token, generated at start and written into the kubeconfig
//!   the server writes, is the only accepted credential; anything else gets a 401 `Status`.
//! - Aggregated mode: delegated to the cluster ([`delegated`]): front-proxy certificates and
//!   headers, client certificates and TokenReview for authentication, SubjectAccessReview for
//!   authorization.

pub mod attributes;
pub mod cache;
pub mod delegated;
pub mod requestheader;

use crate::api::query::Query;
use crate::machinery::error::Error;
pub use crate::machinery::user::UserInfo;
use crate::metrics::Metrics;
use crate::tls::PeerCertificates;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Where authentication records who made the request, for the request log, and whether the
/// aggregator's front proxy sent it (which answers the client with its own `Audit-Id`).
#[derive(Clone, Debug, Default)]
pub struct RequestUser(Arc<Recorded>);

#[derive(Debug, Default)]
struct Recorded {
    name: OnceLock<Cow<'static, str>>,
    front_proxied: AtomicBool,
}

impl RequestUser {
    /// Records the user's name (the first record wins).
    pub fn set(&self, name: impl Into<Cow<'static, str>>) {
        let _ = self.0.name.set(name.into());
    }

    /// The recorded name, or `-` when nobody was recorded.
    pub fn name(&self) -> &str {
        self.0.name.get().map(|n| n.as_ref()).unwrap_or("-")
    }

    /// Records that the front proxy (a request-header certificate) sent the request.
    pub fn set_front_proxied(&self) {
        self.0.front_proxied.store(true, Ordering::Relaxed);
    }

    /// Whether the front proxy sent the request.
    pub fn front_proxied(&self) -> bool {
        self.0.front_proxied.load(Ordering::Relaxed)
    }
}

/// How requests are authenticated and authorized.
#[derive(Clone)]
pub enum Authenticator {
    /// Standalone: every request must carry `Authorization: Bearer <token>`.
    BearerToken(Arc<str>),
    /// Aggregated: delegated to the cluster.
    Delegated(Arc<delegated::Delegated>),
}

/// A fresh random token: 32 bytes from the OS generator, base64url without padding.
pub fn random_token() -> String {
    use base64::Engine;
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Compares in time independent of where the inputs differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The bearer token of the `Authorization` header, if any.
pub fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// Whether `headers` carry the standalone token.
fn has_token(expected: &str, headers: &http::HeaderMap) -> bool {
    bearer_token(headers).is_some_and(|token| constant_time_eq(token.as_bytes(), expected.as_bytes()))
}

/// The name the request log gives the holder of the standalone token.
pub const STANDALONE_USER: &str = "standalone-token";

/// The holder of the standalone token: an administrator, made once and shared by every request.
fn standalone_user() -> Arc<UserInfo> {
    static USER: OnceLock<Arc<UserInfo>> = OnceLock::new();
    USER.get_or_init(|| {
        Arc::new(UserInfo {
            name: STANDALONE_USER.into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
            ..Default::default()
        })
    })
    .clone()
}

/// Middleware authenticating and authorizing every request it wraps: a 401 without acceptable
/// credentials; else the standalone token may do everything, and in aggregated mode the cluster
/// decides (SubjectAccessReview), a 403 when it denies. The user (an `Arc<UserInfo>`) goes on in
/// the request's extensions; outcomes are counted in `metrics` and the user is recorded for the
/// request log. (With an audit log, `crate::audit::gate` runs the same two steps around it.)
pub async fn require(
    authenticator: Authenticator,
    metrics: Arc<Metrics>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Err(refused) = authenticate(&authenticator, &metrics, &mut request).await {
        return refused;
    }
    match authorize(&authenticator, &metrics, &request).await {
        Ok(_) => next.run(request).await,
        Err((refused, _)) => refused,
    }
}

/// Authenticates `request`, putting its user in its extensions; the 401 to answer otherwise.
pub async fn authenticate(
    authenticator: &Authenticator,
    metrics: &Metrics,
    request: &mut Request,
) -> Result<(), Response> {
    let user = match authenticator {
        Authenticator::BearerToken(expected) => {
            if !has_token(expected, request.headers()) {
                Metrics::count(&metrics.authentication, "failure");
                return Err(Error::Unauthorized.into_response());
            }
            requestheader::strip(&requestheader::HeaderNames::default(), request.headers_mut());
            standalone_user()
        }
        Authenticator::Delegated(delegated) => {
            let peer = request.extensions().get::<PeerCertificates>().cloned();
            match delegated.authenticate(request.headers_mut(), peer.as_ref()).await {
                Ok((user, credential)) => {
                    if credential == delegated::Credential::FrontProxy
                        && let Some(record) = request.extensions().get::<RequestUser>()
                    {
                        record.set_front_proxied();
                    }
                    Arc::new(user)
                }
                Err(e) => {
                    let result = if e.code() == http::StatusCode::UNAUTHORIZED { "failure" } else { "error" };
                    Metrics::count(&metrics.authentication, result);
                    return Err(e.into_response());
                }
            }
        }
    };
    Metrics::count(&metrics.authentication, "success");
    if let Some(record) = request.extensions().get::<RequestUser>() {
        if user.name == STANDALONE_USER {
            record.set(STANDALONE_USER);
        } else {
            record.set(user.name.clone());
        }
    }
    request.extensions_mut().insert(user);
    Ok(())
}

/// Decides whether the authenticated `request` may go on: the authorizer's reason when it may,
/// else the response to refuse it with and the reason. What it needs of the request is taken
/// before anything is awaited, so the future does not hold the request (whose body is not
/// `Sync`).
pub fn authorize(
    authenticator: &Authenticator,
    metrics: &Arc<Metrics>,
    request: &Request,
) -> impl Future<Output = Result<String, (Response, String)>> + Send + 'static {
    let question = match authenticator {
        Authenticator::BearerToken(_) => None,
        Authenticator::Delegated(delegated) => {
            let user = request.extensions().get::<Arc<UserInfo>>().cloned();
            let query = Query::parse(request.uri().query());
            let attributes = attributes::attributes(request.method(), request.uri().path(), &query);
            Some((delegated.clone(), user, attributes))
        }
    };
    let metrics = metrics.clone();
    async move {
        let Some((delegated, user, attributes)) = question else { return Ok(String::new()) };
        let Some(user) = user else { return Err((Error::Unauthorized.into_response(), String::new())) };
        match delegated.authorize(&user, &attributes).await {
            Ok(reason) => {
                Metrics::count(&metrics.authorization, "allowed");
                Ok(reason)
            }
            Err(denied) => {
                let result = if denied.error.code() == http::StatusCode::FORBIDDEN { "denied" } else { "error" };
                Metrics::count(&metrics.authorization, result);
                Err((denied.error.into_response(), denied.reason))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_is_accepted() {
        let mut h = http::HeaderMap::new();
        assert!(!has_token("s3cret", &h));
        h.insert(header::AUTHORIZATION, "Bearer s3cre".parse().unwrap());
        assert!(!has_token("s3cret", &h));
        h.insert(header::AUTHORIZATION, "Bearer s3cret".parse().unwrap());
        assert!(has_token("s3cret", &h));
        h.insert(header::AUTHORIZATION, "Basic s3cret".parse().unwrap());
        assert!(!has_token("s3cret", &h));
    }

    #[test]
    fn tokens_are_random_and_long() {
        let (a, b) = (random_token(), random_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
    }
}
