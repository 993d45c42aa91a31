//! A CustomResourceDefinition conversion webhook: `POST /convert` takes an
//! `apiextensions.k8s.io/v1` `ConversionReview` and answers it with each object converted to the
//! desired version by a resource's own conversion, so a user who keeps the resource as a CRD
//! converts it as this server does (`strategy: Webhook` in the CRD's `spec.conversion`).
//!
//! As the kube-apiserver expects of a webhook: the answer echoes the request's `uid`; its result
//! is `Success` with every object converted, in order, or `Failure` with a message and no objects
//! when one object cannot be converted. A body that is not a `ConversionReview` with a request is
//! a 400 `Status`. The kube-apiserver calls webhooks without credentials, so the route is served
//! without authentication: it reads nothing stored and converts only what it is sent.
//!
//! A label or annotation whose value is `null` comes back as an empty string, as from a webhook
//! written in Go, which reads the metadata into `ObjectMeta` (the kube-apiserver refuses a
//! converted object whose labels are not strings).

use crate::machinery::error::{Error, Result};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use http::header;
use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde_json::Value;

/// Converts one object to the `apiVersion` given, or says why it cannot.
pub type Converter = fn(Value, &str) -> std::result::Result<Value, String>;

/// The path the webhook is served at.
pub const PATH: &str = "/convert";

/// The largest review read: the kube-apiserver sends a whole list in one review.
const BODY_LIMIT: usize = 64 << 20;

/// The webhook's route, converting with `converter`.
pub fn routes(converter: Converter) -> Router {
    let method = post(convert).layer(DefaultBodyLimit::max(BODY_LIMIT)).fallback(|| async { Error::MethodNotAllowed });
    Router::new().route(PATH, method).with_state(converter)
}

async fn convert(State(converter): State<Converter>, body: Bytes) -> Result<Response> {
    let review: ConversionReview = serde_json::from_slice(&body)
        .map_err(|e| Error::BadRequest(format!("the body is not a ConversionReview: {e}")))?;
    if review.types.api_version != "apiextensions.k8s.io/v1" || review.types.kind != "ConversionReview" {
        return Err(Error::BadRequest(format!(
            "expected an apiextensions.k8s.io/v1 ConversionReview, got {} {}",
            review.types.api_version, review.types.kind
        )));
    }
    let request = ConversionRequest::from_review(review)
        .map_err(|_| Error::BadRequest("the ConversionReview has no request".into()))?;
    let answer = answer(converter, request).into_review();
    let encoded =
        crate::machinery::json::to_vec(&answer).map_err(|e| Error::Internal(format!("encoding the review: {e}")))?;
    Ok(([(header::CONTENT_TYPE, "application/json")], encoded).into_response())
}

/// The response to `request`: every object converted, or the first failure.
fn answer(converter: Converter, request: ConversionRequest) -> ConversionResponse {
    let desired = request.desired_api_version.clone();
    let objects = request.objects.clone();
    let response = ConversionResponse::for_request(request);
    let mut converted = Vec::with_capacity(objects.len());
    for (i, mut object) in objects.into_iter().enumerate() {
        empty_null_strings(&mut object);
        match converter(object, &desired) {
            Ok(object) => converted.push(object),
            Err(message) => {
                let status = Status::failure(&format!("object {i}: {message}"), "Invalid");
                return response.failure(status);
            }
        }
    }
    response.success(converted)
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

    fn request(objects: Vec<Value>) -> ConversionRequest {
        let review: ConversionReview = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "u-1", "desiredAPIVersion": "test.example.com/v1", "objects": objects}}))
        .unwrap();
        ConversionRequest::from_review(review).unwrap()
    }

    #[test]
    fn every_object_is_converted_in_order_and_the_uid_echoed() {
        let objects = vec![
            json!({"kind": "Widget", "metadata": {"name": "a"}}),
            json!({"kind": "Widget", "metadata": {"name": "b"}}),
        ];
        let review = serde_json::to_value(answer(uppercase, request(objects)).into_review()).unwrap();
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
        let response = answer(uppercase, request(vec![object]));
        assert_eq!(
            response.converted_objects[0]["metadata"],
            json!({"labels": {"a": "", "b": "x"}, "annotations": {"c": ""}})
        );
    }

    #[test]
    fn one_object_that_cannot_be_converted_fails_the_review() {
        let objects = vec![json!({"kind": "Widget"}), json!({"kind": "Alpaca"})];
        let review = serde_json::to_value(answer(uppercase, request(objects)).into_review()).unwrap();
        assert_eq!(review["response"]["uid"], "u-1");
        assert_eq!(review["response"]["result"]["status"], "Failure");
        assert_eq!(review["response"]["result"]["message"], "object 1: not a Widget: \"Alpaca\"");
        assert!(review["response"]["convertedObjects"].as_array().is_none_or(Vec::is_empty));
    }
}
