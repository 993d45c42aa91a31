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
use std::sync::{Arc, OnceLock};

/// Where authentication records who made the request, for the request log.
#[derive(Clone, Debug, Default)]
pub struct RequestUser(Arc<OnceLock<Cow<'static, str>>>);

impl RequestUser {
    /// Records the user's name (the first record wins).
    pub fn set(&self, name: impl Into<Cow<'static, str>>) {
        let _ = self.0.set(name.into());
    }

    /// The recorded name, or `-` when nobody was recorded.
    pub fn name(&self) -> &str {
        self.0.get().map(|n| n.as_ref()).unwrap_or("-")
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

/// What authorization decided about a request, for the audit log: [`authorize`] records it in
/// the slot an outer layer put in the request's extensions.
#[derive(Clone, Debug, Default)]
pub struct Decision(Arc<OnceLock<(bool, String)>>);

impl Decision {
    /// Records whether the request was allowed, and the authorizer's reason.
    pub fn record(&self, allowed: bool, reason: String) {
        let _ = self.0.set((allowed, reason));
    }

    /// Whether the request was allowed, and why; `None` before authorization (or without it).
    pub fn get(&self) -> Option<(bool, &str)> {
        self.0.get().map(|(allowed, reason)| (*allowed, reason.as_str()))
    }
}

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

/// Middleware authenticating every request it wraps: a 401 without acceptable credentials, else
/// the request goes on with its user (an `Arc<UserInfo>`) in its extensions. Outcomes are counted in `metrics`
/// and the user is recorded for the request log.
pub async fn authenticate(
    authenticator: Authenticator,
    metrics: Arc<Metrics>,
    mut request: Request,
    next: Next,
) -> Response {
    let record = request.extensions().get::<RequestUser>().cloned().unwrap_or_default();
    let user = match authenticator {
        Authenticator::BearerToken(expected) => {
            if !has_token(&expected, request.headers()) {
                Metrics::count(&metrics.authentication, "failure");
                return Error::Unauthorized.into_response();
            }
            requestheader::strip(&requestheader::HeaderNames::default(), request.headers_mut());
            standalone_user()
        }
        Authenticator::Delegated(delegated) => {
            let peer = request.extensions().get::<PeerCertificates>().cloned();
            match delegated.authenticate(request.headers_mut(), peer.as_ref()).await {
                Ok(user) => Arc::new(user),
                Err(e) => {
                    let result = if e.code() == http::StatusCode::UNAUTHORIZED { "failure" } else { "error" };
                    Metrics::count(&metrics.authentication, result);
                    return e.into_response();
                }
            }
        }
    };
    Metrics::count(&metrics.authentication, "success");
    if user.name == STANDALONE_USER {
        record.set(STANDALONE_USER);
    } else {
        record.set(user.name.clone());
    }
    request.extensions_mut().insert(user);
    next.run(request).await
}

/// Middleware authorizing every request it wraps, after [`authenticate`]: the standalone token
/// may do everything; in aggregated mode the cluster decides (SubjectAccessReview). The decision
/// is counted in `metrics` and recorded in the request's [`Decision`] slot, if it has one.
pub async fn authorize(authenticator: Authenticator, metrics: Arc<Metrics>, request: Request, next: Next) -> Response {
    let decision = request.extensions().get::<Decision>().cloned().unwrap_or_default();
    let Authenticator::Delegated(delegated) = authenticator else {
        decision.record(true, String::new());
        return next.run(request).await;
    };
    let Some(user) = request.extensions().get::<Arc<UserInfo>>() else {
        return Error::Unauthorized.into_response();
    };
    let query = Query::parse(request.uri().query());
    let attributes = attributes::attributes(request.method(), request.uri().path(), &query);
    match delegated.authorize(user, &attributes).await {
        Ok(reason) => {
            Metrics::count(&metrics.authorization, "allowed");
            decision.record(true, reason);
            next.run(request).await
        }
        Err(denied) => {
            let result = if denied.error.code() == http::StatusCode::FORBIDDEN { "denied" } else { "error" };
            Metrics::count(&metrics.authorization, result);
            decision.record(false, denied.reason);
            denied.error.into_response()
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
