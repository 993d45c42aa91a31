//! An admission webhook server written for the tests: HTTPS on a loopback port with its own CA
//! (for the configurations' `caBundle`), its certificate naming `webhook.farm-system.svc`, the
//! Service name the kube-apiserver and farm-apiserver both verify, and `localhost`, for `url`
//! webhooks. It records every review it
//! receives and answers by path:
//!
//! - `/validate`: refuses llamas heavier than 500 kg; warns about those over 400 kg;
//! - `/mutate`: adds the label `checked: "yes"` with a JSONPatch;
//! - `/protect`: refuses deleting a llama labelled `protected: "true"`;
//! - `/observe`: allows, changing nothing;
//! - `/slow`: never answers (until the server stops), so only the caller's timeout can end the
//!   call: a webhook slower than any timeout, whatever the load on the machine.

use axum::extract::{Path, State};
use axum::routing::post;
use axum::{Json, Router};
use base64::Engine;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// Every review received, with the path it came to.
type Received = Arc<Mutex<Vec<(String, Value)>>>;

/// The running webhook server.
pub struct WebhookServer {
    pub port: u16,
    /// The CA that signed its certificate, base64 for a `caBundle`.
    pub ca_bundle: String,
    pub reviews: Received,
    handle: axum_server::Handle<std::net::SocketAddr>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}

fn answer(request: &Value, allowed: bool, extra: Value) -> Json<Value> {
    let mut response = json!({"uid": request["uid"], "allowed": allowed});
    if let (Some(response), Some(extra)) = (response.as_object_mut(), extra.as_object()) {
        response.extend(extra.clone());
    }
    Json(json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}))
}

async fn review(State(reviews): State<Received>, Path(path): Path<String>, Json(review): Json<Value>) -> Json<Value> {
    reviews.lock().unwrap().push((path.clone(), review.clone()));
    let request = &review["request"];
    match path.as_str() {
        "validate" => {
            let weight = request["object"]["spec"]["weight"].as_f64().unwrap_or_default();
            if weight > 500.0 {
                let status = json!({"code": 403, "message": "llamas over 500 kg are not allowed"});
                return answer(request, false, json!({"status": status}));
            }
            let warnings = if weight > 400.0 {
                json!([format!("a llama of {weight} kg is close to the limit")])
            } else {
                json!([])
            };
            answer(request, true, json!({"warnings": warnings}))
        }
        "mutate" => {
            let patch = if request["object"]["metadata"]["labels"].is_object() {
                json!([{"op": "add", "path": "/metadata/labels/checked", "value": "yes"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"checked": "yes"}}])
            };
            let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
            answer(request, true, json!({"patch": patch, "patchType": "JSONPatch"}))
        }
        "paint" => {
            let patch = json!([{"op": "add", "path": "/spec/color", "value": "grey"}]);
            let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
            answer(request, true, json!({"patch": patch, "patchType": "JSONPatch"}))
        }
        "protect" => {
            if request["oldObject"]["metadata"]["labels"]["protected"] == "true" {
                let status = json!({"code": 403, "message": "protected llamas cannot be deleted"});
                return answer(request, false, json!({"status": status}));
            }
            answer(request, true, json!({}))
        }
        "observe" => answer(request, true, json!({})),
        _ => std::future::pending().await,
    }
}

/// Starts the server on a free loopback port.
pub async fn start() -> WebhookServer {
    let names = ["webhook.farm-system.svc".to_string(), "localhost".to_string()];
    let tls = crate::common::loopback_tls::bind("webhook-ca", &names);
    let reviews = Arc::new(Mutex::new(Vec::new()));
    let app = Router::new().route("/{path}", post(review)).with_state(reviews.clone());
    let handle = axum_server::Handle::new();
    let server = axum_server::from_tcp_rustls(tls.listener, tls.config).unwrap().handle(handle.clone());
    tokio::spawn(server.serve(app.into_make_service()));
    let (port, ca_bundle) = (tls.port, tls.ca_bundle);
    WebhookServer { port, ca_bundle, reviews, handle }
}

impl WebhookServer {
    /// The reviews received on `path` so far.
    pub fn received(&self, path: &str) -> Vec<Value> {
        self.reviews.lock().unwrap().iter().filter(|(p, _)| p == path).map(|(_, r)| r.clone()).collect()
    }

    /// Forgets the reviews received so far.
    pub fn forget(&self) {
        self.reviews.lock().unwrap().clear();
    }
}
