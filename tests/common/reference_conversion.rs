//! The conversion webhook of the reference CustomResourceDefinition (`tests/conformance/
//! reference-crd.yaml`): Llamas between v1alpha and v1 as docs/versions.md states the mapping,
//! written for the tests apart from the server's own conversion, so that a mistake in that one
//! shows as a difference from the reference instead of being shared by both sides.
//!
//! - v1alpha → v1: `spec.color` becomes `spec.coat.color`; the annotation
//!   `farm.example.com/v1-coat` (a JSON object: the rest of the coat) goes into the coat, the
//!   colour of v1alpha winning, and leaves the annotations (which go too when it was the last);
//!   an annotation that is not a JSON object fails the conversion.
//! - v1 → v1alpha: `spec.coat.color` becomes `spec.color`; what else the coat holds (or an empty
//!   coat, or one without a colour) goes into the annotation, as compact JSON with its keys in
//!   order; a coat that is not an object stays as it is.
//!
//! Metadata is carried over, its labels' and annotations' `null` values as `""`, as a webhook
//! that decodes objects into Go types (controller-runtime's) returns them.
//!
//! HTTPS on a loopback port with a CA of its own, served from a thread of its own so that
//! blocking calls of a test (kubectl) never stall it.

use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Map, Value, json};

/// The annotation that carries, at v1alpha, v1's coat less its colour.
const COAT: &str = "farm.example.com/v1-coat";

/// The running webhook.
pub struct ConversionWebhook {
    /// Its `/convert` URL, for the CRD's `clientConfig.url`.
    pub url: String,
    /// The CA of its certificate, base64, for the CRD's `caBundle`.
    pub ca_bundle: String,
    handle: axum_server::Handle<std::net::SocketAddr>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for ConversionWebhook {
    fn drop(&mut self) {
        self.handle.shutdown();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts the webhook on a free loopback port.
pub fn start() -> ConversionWebhook {
    let tls = super::loopback_tls::bind("reference-conversion-ca", &["localhost".to_string()]);
    let (listener, config, port, ca_bundle) = (tls.listener, tls.config, tls.port, tls.ca_bundle);
    let handle = axum_server::Handle::new();
    let serving = handle.clone();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let app = Router::new().route("/convert", post(review));
            let server = axum_server::from_tcp_rustls(listener, config).unwrap().handle(serving);
            let _ = server.serve(app.into_make_service()).await;
        });
    });
    ConversionWebhook { url: format!("https://localhost:{port}/convert"), ca_bundle, handle, thread: Some(thread) }
}

/// Answers a `ConversionReview`: every object converted, or the first failure.
async fn review(Json(review): Json<Value>) -> Json<Value> {
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let converted: Result<Vec<Value>, String> = objects.into_iter().map(|o| convert(o, desired)).collect();
    let response = match converted {
        Ok(objects) => json!({"uid": request["uid"], "convertedObjects": objects, "result": {"status": "Success"}}),
        Err(message) => json!({"uid": request["uid"], "result": {"status": "Failure", "message": message}}),
    };
    Json(json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response}))
}

/// A Llama at `desired` (`<group>/v1alpha` or `<group>/v1`, its own group).
pub fn convert(mut object: Value, desired: &str) -> Result<Value, String> {
    let from = object["apiVersion"].as_str().unwrap_or_default().to_string();
    let (Some((group, version)), Some((desired_group, desired_version))) =
        (from.split_once('/'), desired.split_once('/'))
    else {
        return Err(format!("cannot convert {from:?} to {desired:?}"));
    };
    if group != desired_group || object["kind"] != "Llama" {
        return Err(format!("cannot convert a {from} {} to {desired}", object["kind"]));
    }
    for texts in ["labels", "annotations"] {
        let values = object.pointer_mut(&format!("/metadata/{texts}")).and_then(Value::as_object_mut);
        for value in values.into_iter().flat_map(|map| map.values_mut()).filter(|v| v.is_null()) {
            *value = Value::String(String::new());
        }
    }
    match (version, desired_version) {
        ("v1alpha", "v1") => to_v1(&mut object)?,
        ("v1", "v1alpha") => to_v1alpha(&mut object),
        (from, to) if from == to => {}
        _ => return Err(format!("cannot convert {from} to {desired}")),
    }
    object["apiVersion"] = Value::String(desired.to_string());
    Ok(object)
}

fn to_v1(object: &mut Value) -> Result<(), String> {
    let annotation = match object.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
        Some(annotations) => {
            let taken = annotations.remove(COAT);
            if annotations.is_empty() {
                object["metadata"].as_object_mut().map(|m| m.remove("annotations"));
            }
            taken
        }
        None => None,
    };
    let mut coat = match annotation {
        Some(Value::String(text)) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(coat)) => Some(coat),
            _ => return Err(format!("the annotation {COAT} is not a JSON object: {text:?}")),
        },
        Some(other) => return Err(format!("the annotation {COAT} is not a string: {other}")),
        None => None,
    };
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
    if let Some(color) = spec.remove("color") {
        coat.get_or_insert_with(Map::new).insert("color".into(), color);
    }
    if let Some(coat) = coat {
        spec.insert("coat".into(), Value::Object(coat));
    }
    Ok(())
}

fn to_v1alpha(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else { return };
    // No coat, or one that is not an object (valid at no version): nothing to move.
    if !spec.get("coat").is_some_and(Value::is_object) {
        return;
    }
    let Some(Value::Object(mut coat)) = spec.remove("coat") else { return };
    let color = coat.remove("color");
    let rest = color.is_none() || !coat.is_empty();
    if let Some(color) = color {
        spec.insert("color".into(), color);
    }
    if rest {
        let metadata = object.as_object_mut().map(|o| o.entry("metadata").or_insert_with(|| json!({})));
        if let Some(Value::Object(metadata)) = metadata {
            let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
            annotations[COAT] = Value::String(Value::Object(coat).to_string());
        }
    }
}
