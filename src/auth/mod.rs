//! Authentication of requests.
//!
//! Standalone mode: a random bearer token, generated at start and written into the kubeconfig
//! the server writes, is required on every request except the health endpoints; anything else
//! gets a 401 `Status`. Delegated authentication and authorization for aggregated mode (front-proxy
//! client certificates, TokenReview, SubjectAccessReview) are a later issue.

use crate::api::error::Error;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header;
use std::sync::Arc;

/// How requests are authenticated.
#[derive(Clone, Debug)]
pub enum Authenticator {
    /// Every request must carry `Authorization: Bearer <token>`.
    BearerToken(Arc<str>),
    /// No authentication is performed (aggregated mode until delegated authentication lands).
    Disabled,
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

impl Authenticator {
    /// Whether the request's credentials are acceptable.
    pub fn allows(&self, headers: &http::HeaderMap) -> bool {
        match self {
            Self::Disabled => true,
            Self::BearerToken(expected) => headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
                .is_some_and(|token| constant_time_eq(token.trim().as_bytes(), expected.as_bytes())),
        }
    }
}

/// Middleware refusing requests that [`Authenticator::allows`] rejects.
pub async fn require(authenticator: Arc<Authenticator>, request: Request, next: Next) -> Response {
    if authenticator.allows(request.headers()) { next.run(request).await } else { Error::Unauthorized.into_response() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_is_accepted() {
        let auth = Authenticator::BearerToken("s3cret".into());
        let mut h = http::HeaderMap::new();
        assert!(!auth.allows(&h));
        h.insert(header::AUTHORIZATION, "Bearer s3cre".parse().unwrap());
        assert!(!auth.allows(&h));
        h.insert(header::AUTHORIZATION, "Bearer s3cret".parse().unwrap());
        assert!(auth.allows(&h));
        h.insert(header::AUTHORIZATION, "Basic s3cret".parse().unwrap());
        assert!(!auth.allows(&h));
    }

    #[test]
    fn tokens_are_random_and_long() {
        let (a, b) = (random_token(), random_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
    }
}
