//! A CustomResourceDefinition conversion webhook: `POST /convert` takes an
//! `apiextensions.k8s.io/v1` `ConversionReview` and answers it with each object converted to the
//! desired version by a resource's own conversion, so a user who keeps the resource as a CRD
//! converts it as this server does (`strategy: Webhook` in the CRD's `spec.conversion`).
//!
//! As the kube-apiserver expects of a webhook: the answer echoes the request's `uid`; its result
//! is `Success` with every object converted, in order, or `Failure` with a message and no objects
//! when one object cannot be converted. A body that is not a `ConversionReview` with a request is
//! a 400 `Status`.
//!
//! The kube-apiserver calls webhooks without credentials unless it is configured to present a
//! client certificate (its webhook kubeconfig), so the route skips authentication and
//! authorization unless [`WebhookAuthentication`] names the CA of that certificate; it reads
//! nothing stored and converts only what it is sent. It is held to the server's in-flight limit
//! and request timeout like every other request, and its memory is bounded by size: a review
//! declares its length, which is taken from a budget of [`BUDGET_BYTES`] before its body is read
//! (a review of unknown length takes [`BODY_LIMIT`]), so the reviews being read and converted at
//! once hold at most that much, each object is read, converted and written out in turn (the answer
//! costs its own size, not a tree of every object), and the work runs off the async workers.
//!
//! A label or annotation whose value is `null` comes back as an empty string, as from a webhook
//! written in Go, which reads the metadata into `ObjectMeta` (the kube-apiserver refuses a
//! converted object whose labels are not strings).

use crate::machinery::error::{Error, Result};
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use http::{HeaderMap, header};
use kube::core::Status;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Converts one object to the `apiVersion` given, or says why it cannot.
pub type Converter = fn(Value, &str) -> std::result::Result<Value, String>;

/// The path the webhook is served at.
pub const PATH: &str = "/convert";

/// The largest review read: the kube-apiserver sends a whole list in one review.
pub const BODY_LIMIT: usize = 64 << 20;

/// The bytes of reviews read and converted at once; a review waits (within the request timeout)
/// for its share.
pub const BUDGET_BYTES: usize = 2 * BODY_LIMIT;

/// The budget is counted in KiB, so that it fits a semaphore's permits on every platform.
const UNIT: usize = 1024;

/// Who may call the webhook.
#[derive(Clone, Debug, Default)]
pub enum WebhookAuthentication {
    /// Anyone: the kube-apiserver's default, which presents no certificate to webhooks.
    #[default]
    Anyone,
    /// Only callers presenting a certificate this verifier accepts (the CA of the client
    /// certificate the kube-apiserver's webhook kubeconfig gives it); others get 401.
    ClientCertificate(Arc<crate::tls::ChainVerifier>),
}

/// What the webhook's handler shares.
#[derive(Clone)]
struct Webhook {
    converter: Converter,
    budget: Arc<Semaphore>,
}

/// The webhook's route, converting with `converter`, callers checked by `authentication`.
pub fn routes(converter: Converter, authentication: WebhookAuthentication) -> Router {
    let method = post(convert).fallback(|| async { Error::MethodNotAllowed });
    let webhook = Webhook { converter, budget: Arc::new(Semaphore::new(BUDGET_BYTES / UNIT)) };
    let router = Router::new().route(PATH, method).with_state(webhook);
    match authentication {
        WebhookAuthentication::Anyone => router,
        WebhookAuthentication::ClientCertificate(verifier) => {
            router.layer(axum::middleware::from_fn(move |request: Request, next: Next| {
                let verifier = verifier.clone();
                async move { require_certificate(&verifier, request, next).await }
            }))
        }
    }
}

/// Lets through a request whose client certificate `verifier` accepts; 401 otherwise.
async fn require_certificate(verifier: &crate::tls::ChainVerifier, request: Request, next: Next) -> Response {
    let chain = request.extensions().get::<crate::tls::PeerCertificates>();
    if chain.is_some_and(|chain| verifier.verifies(&chain.0)) {
        next.run(request).await
    } else {
        Error::Unauthorized.into_response()
    }
}

/// The bytes a review takes from the budget: its declared length, or the most any may have.
fn declared_length(headers: &HeaderMap) -> Result<usize> {
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    match declared {
        Some(length) if length > BODY_LIMIT => {
            Err(Error::TooLarge(format!("Request entity too large: limit is {BODY_LIMIT}")))
        }
        Some(length) => Ok(length),
        None => Ok(BODY_LIMIT),
    }
}

async fn convert(State(webhook): State<Webhook>, headers: HeaderMap, body: Body) -> Result<Response> {
    let length = declared_length(&headers)?;
    let units = u32::try_from(length.div_ceil(UNIT).max(1)).unwrap_or(u32::MAX);
    let share = webhook
        .budget
        .clone()
        .acquire_many_owned(units)
        .await
        .map_err(|_| Error::Internal("the conversion budget is closed".into()))?;
    let body = crate::api::decode::read_body_within(body, length).await?;
    let converter = webhook.converter;
    // The conversion holds its share until it ends, even past a request timeout that gave up on it.
    let encoded = tokio::task::spawn_blocking(move || {
        let _share = share;
        convert_review(converter, &body)
    })
    .await
    .map_err(|e| Error::Internal(format!("the conversion failed: {e}")))??;
    Ok(([(header::CONTENT_TYPE, "application/json")], encoded).into_response())
}

/// A `ConversionReview` as read: its objects left as the bytes they were sent as.
#[derive(Deserialize)]
struct Review<'a> {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    #[serde(borrow, default)]
    request: Option<ReviewRequest<'a>>,
}

#[derive(Deserialize)]
struct ReviewRequest<'a> {
    uid: String,
    #[serde(rename = "desiredAPIVersion")]
    desired_api_version: String,
    #[serde(borrow)]
    objects: Vec<&'a RawValue>,
}

/// The `ConversionReview` answered: each converted object already written out.
#[derive(Serialize)]
struct Answer<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    response: AnswerResponse<'a>,
}

#[derive(Serialize)]
struct AnswerResponse<'a> {
    uid: &'a str,
    result: Status,
    #[serde(rename = "convertedObjects")]
    converted_objects: Vec<Box<RawValue>>,
}

/// The encoded answer to the review in `body`.
fn convert_review(converter: Converter, body: &[u8]) -> Result<Vec<u8>> {
    let review: Review<'_> = serde_json::from_slice(body)
        .map_err(|e| Error::BadRequest(format!("the body is not a ConversionReview: {e}")))?;
    if review.api_version != "apiextensions.k8s.io/v1" || review.kind != "ConversionReview" {
        return Err(Error::BadRequest(format!(
            "expected an apiextensions.k8s.io/v1 ConversionReview, got {} {}",
            review.api_version, review.kind
        )));
    }
    let request = review.request.ok_or_else(|| Error::BadRequest("the ConversionReview has no request".into()))?;
    let response = answer(converter, &request);
    let answer = Answer { api_version: "apiextensions.k8s.io/v1", kind: "ConversionReview", response };
    crate::machinery::json::to_vec(&answer).map_err(|e| Error::Internal(format!("encoding the review: {e}")))
}

/// The response to `request`: every object converted, or the first failure.
fn answer<'a>(converter: Converter, request: &'a ReviewRequest<'_>) -> AnswerResponse<'a> {
    let mut converted = Vec::with_capacity(request.objects.len());
    for (i, raw) in request.objects.iter().enumerate() {
        match convert_one(converter, raw, &request.desired_api_version) {
            Ok(object) => converted.push(object),
            Err(message) => {
                let result = Status::failure(&format!("object {i}: {message}"), "Invalid");
                return AnswerResponse { uid: &request.uid, result, converted_objects: Vec::new() };
            }
        }
    }
    AnswerResponse { uid: &request.uid, result: Status::success(), converted_objects: converted }
}

/// One object read, converted to `desired` and written out.
fn convert_one(converter: Converter, raw: &RawValue, desired: &str) -> std::result::Result<Box<RawValue>, String> {
    let mut object: Value = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
    empty_null_strings(&mut object);
    let converted = converter(object, desired)?;
    serde_json::value::to_raw_value(&converted).map_err(|e| e.to_string())
}

/// `object`'s `null` label and annotation values as empty strings.
fn empty_null_strings(object: &mut Value) {
    for map in ["labels", "annotations"] {
        let Some(values) = object.pointer_mut(&format!("/metadata/{map}")).and_then(Value::as_object_mut) else {
            continue;
        };
        for value in values.values_mut().filter(|v| v.is_null()) {
            *value = Value::String(String::new());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn uppercase(mut object: Value, to: &str) -> std::result::Result<Value, String> {
        if object["kind"] != "Widget" {
            return Err(format!("not a Widget: {}", object["kind"]));
        }
        object["apiVersion"] = json!(to);
        Ok(object)
    }

    /// The answer to a review of `objects`, read back.
    fn reviewed(objects: Vec<Value>) -> Value {
        let body = serde_json::to_vec(&json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "u-1", "desiredAPIVersion": "test.example.com/v1", "objects": objects}}))
        .unwrap();
        serde_json::from_slice(&convert_review(uppercase, &body).unwrap()).unwrap()
    }

    #[test]
    fn every_object_is_converted_in_order_and_the_uid_echoed() {
        let objects = vec![
            json!({"kind": "Widget", "metadata": {"name": "a"}}),
            json!({"kind": "Widget", "metadata": {"name": "b"}}),
        ];
        let review = reviewed(objects);
        assert_eq!(review["kind"], "ConversionReview");
        assert_eq!(review["response"]["uid"], "u-1");
        assert_eq!(review["response"]["result"]["status"], "Success");
        let names: Vec<&Value> =
            review["response"]["convertedObjects"].as_array().unwrap().iter().map(|o| &o["metadata"]["name"]).collect();
        assert_eq!(names, [&json!("a"), &json!("b")]);
        assert_eq!(review["response"]["convertedObjects"][1]["apiVersion"], "test.example.com/v1");
    }

    #[test]
    fn null_label_and_annotation_values_come_back_empty_as_from_go() {
        let object = json!({"apiVersion": "a/v1", "kind": "Widget",
            "metadata": {"labels": {"a": null, "b": "x"}, "annotations": {"c": null}}});
        let review = reviewed(vec![object]);
        assert_eq!(
            review["response"]["convertedObjects"][0]["metadata"],
            json!({"labels": {"a": "", "b": "x"}, "annotations": {"c": ""}})
        );
    }

    #[test]
    fn one_object_that_cannot_be_converted_fails_the_review() {
        let objects = vec![json!({"kind": "Widget"}), json!({"kind": "Alpaca"})];
        let review = reviewed(objects);
        assert_eq!(review["response"]["uid"], "u-1");
        assert_eq!(review["response"]["result"]["status"], "Failure");
        assert_eq!(review["response"]["result"]["message"], "object 1: not a Widget: \"Alpaca\"");
        assert!(review["response"]["convertedObjects"].as_array().is_none_or(Vec::is_empty));
    }

    #[test]
    fn what_is_not_a_review_with_a_request_is_a_bad_request() {
        for body in [
            &b"{"[..],
            br#"{"apiVersion":"v1","kind":"Status"}"#,
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}"#,
        ] {
            assert_eq!(convert_review(uppercase, body).unwrap_err().code(), 400, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn a_declared_length_over_the_limit_is_refused_before_the_body_is_read() {
        let mut headers = HeaderMap::new();
        assert_eq!(declared_length(&headers).unwrap(), BODY_LIMIT);
        headers.insert(header::CONTENT_LENGTH, http::HeaderValue::from(10_u32));
        assert_eq!(declared_length(&headers).unwrap(), 10);
        headers.insert(header::CONTENT_LENGTH, http::HeaderValue::from(BODY_LIMIT + 1));
        assert_eq!(declared_length(&headers).unwrap_err().code(), 413);
    }
}
