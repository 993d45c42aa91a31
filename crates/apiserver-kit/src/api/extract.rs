//! Request extractors whose rejections are `Status` bodies, as every other failure is: the path
//! parameters (a segment that is not UTF-8 once percent-decoded, such as `%FF`, is a 400
//! `BadRequest` `Status`, not axum's plain-text rejection), and who asks. The query and the body are read raw
//! and parsed by `crate::api::query` and `crate::api::decode`, which fail with `Status` too.

use crate::machinery::error::Error;
use crate::machinery::user::UserInfo;
use axum::extract::{FromRequestParts, Path};
use http::request::Parts;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// The path parameters of a request on one object: its namespace (empty for a cluster-scoped
/// resource, whose paths have none) and name.
#[derive(Debug, Deserialize)]
pub struct ObjectPath {
    /// The `{namespace}` segment; empty when the path has none.
    #[serde(default)]
    pub namespace: String,
    /// The `{name}` segment.
    pub name: String,
}

/// The path parameters of a request on a collection: the namespace of a namespaced
/// resource's `…/namespaces/{namespace}/<plural>`; `None` on `…/<plural>`, every namespace's
/// objects (or a cluster-scoped resource's).
#[derive(Debug, Deserialize)]
pub struct CollectionPath {
    /// The `{namespace}` segment, when the path has one.
    #[serde(default)]
    pub namespace: Option<String>,
}

/// The path parameters of a route, deserialized into `T`.
#[derive(Debug)]
pub struct PathParams<T>(pub T);

impl<S, T> FromRequestParts<S> for PathParams<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Error> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(params)) => Ok(Self(params)),
            Err(rejection) => Err(Error::BadRequest(rejection.body_text())),
        }
    }
}

/// Who made the request, as authentication recorded it in the request's extensions (nobody in
/// particular when nothing authenticated it).
#[derive(Clone, Debug, Default)]
pub struct Requester(pub Arc<UserInfo>);

impl<S: Send + Sync> FromRequestParts<S> for Requester {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(parts.extensions.get::<Arc<UserInfo>>().cloned().unwrap_or_default()))
    }
}
