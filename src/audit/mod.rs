//! Audit logging, as k8s.io/apiserver writes it: the policy ([`policy`]) decides, per request,
//! how much is recorded and at which stages; the record becomes `audit.k8s.io/v1` Event lines
//! ([`event`]) handed to a queue ([`sink`]) that one thread writes to a rotated file
//! ([`rotate`]) or standard output.
//!
//! The middleware ([`audit`]) runs after authentication (it knows the user) and around
//! authorization (it records the decision and its reason as annotations). It takes the request's
//! `Audit-ID` (the aggregator sends one) or makes one, and returns it in the response's
//! `Audit-Id` header. A request is recorded at `RequestReceived`, then `ResponseComplete`; a
//! watch also at `ResponseStarted`, and its `ResponseComplete` is written when its stream ends.
//! Bodies are read only when the level needs them: the request's object (for a create or an
//! update also at `Metadata`, to name the object), the response's at `RequestResponse` (never a
//! watch's stream), and an error's `Status`.

pub mod event;
pub mod policy;
pub mod rotate;
pub mod sink;

use crate::api::query::Query;
use crate::auth::Decision;
use crate::auth::attributes::{Attributes, attributes};
use crate::machinery::user::UserInfo;
use crate::metrics::Metrics;
use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use event::{ObjectRef, Record, ResponseStatus};
use http::HeaderValue;
use policy::{Level, Policy, Stage};
use serde_json::Value;
use sink::{Output, Sink};
use std::path::Path;
use std::sync::Arc;

/// The header carrying a request's audit ID, both ways.
const AUDIT_ID: &str = "audit-id";

/// How many event lines may wait for the writer.
const QUEUE: usize = 10_000;

/// The audit policy and where its events go.
pub struct Auditor {
    policy: Policy,
    sink: Sink,
}

impl Auditor {
    /// Reads the policy at `policy_file` and starts writing to `log_path` (`-` for standard
    /// output) within `limits`.
    pub fn start(
        policy_file: &Path,
        log_path: &str,
        limits: rotate::Limits,
        metrics: Arc<Metrics>,
    ) -> Result<Self, String> {
        let text = std::fs::read_to_string(policy_file)
            .map_err(|e| format!("reading the audit policy {}: {e}", policy_file.display()))?;
        let policy = Policy::parse(&text)?;
        let output = if log_path == "-" {
            Output::Stdout
        } else {
            let file = rotate::RotatingFile::open(Path::new(log_path), limits)
                .map_err(|e| format!("opening the audit log {log_path}: {e}"))?;
            Output::File(file)
        };
        let sink = Sink::start(output, QUEUE, metrics).map_err(|e| format!("starting the audit log writer: {e}"))?;
        Ok(Self { policy, sink })
    }

    /// Writes every event queued so far (at shutdown).
    pub async fn stop(&self) {
        self.sink.stop().await;
    }

    fn emit(&self, record: &Record, stage: Stage) {
        if record.config.writes(stage) {
            self.sink.send(record.event_line(stage));
        }
    }
}

/// The request's audit ID, or a new one.
fn audit_id(request: &Request) -> String {
    match request.headers().get(AUDIT_ID).and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty()) {
        Some(id) => id.to_string(),
        None => uuid::Uuid::new_v4().to_string(),
    }
}

/// The object reference of a resource request.
fn object_ref(attributes: &Attributes) -> Option<ObjectRef> {
    let Attributes::Resource { group, version, resource, subresource, namespace, name, .. } = attributes else {
        return None;
    };
    Some(ObjectRef {
        resource: resource.clone(),
        namespace: namespace.clone(),
        name: name.clone(),
        api_group: group.clone(),
        api_version: version.clone(),
        subresource: subresource.clone(),
        ..Default::default()
    })
}

/// The middleware (see the module documentation); without an auditor it only passes the
/// request's `Audit-ID` back.
pub async fn audit(auditor: Option<Arc<Auditor>>, mut request: Request, next: Next) -> Response {
    let Some(auditor) = auditor else {
        let id = request.headers().get(AUDIT_ID).cloned();
        let mut response = next.run(request).await;
        if let Some(id) = id {
            response.headers_mut().insert(AUDIT_ID, id);
        }
        return response;
    };
    let id = audit_id(&request);
    let Some((mut record, decision)) = begin(&auditor, &mut request, id.clone()) else {
        return with_audit_id(next.run(request).await, &id);
    };
    let request = match read_request_object(request, &mut record).await {
        Ok(request) => request,
        Err(response) => return finish(&auditor, record, response, &id).await,
    };
    auditor.emit(&record, Stage::RequestReceived);
    let response = next.run(request).await;
    if let Some((allowed, reason)) = decision.get() {
        record.authorized(allowed, reason);
    }
    finish(&auditor, record, response, &id).await
}

/// The record of `request`, when the policy records it, and the slot authorization fills.
fn begin(auditor: &Auditor, request: &mut Request, audit_id: String) -> Option<(Record, Decision)> {
    let user: Arc<UserInfo> = request.extensions().get::<Arc<UserInfo>>().cloned().unwrap_or_default();
    let attributes = attributes(request.method(), request.uri().path(), &Query::parse(request.uri().query()));
    let config = auditor.policy.evaluate(&user, &attributes);
    if config.level == Level::None {
        return None;
    }
    let decision = Decision::default();
    request.extensions_mut().insert(decision.clone());
    let headers = request.headers();
    let peer = request.extensions().get::<crate::tls::PeerAddress>().map(|a| a.0);
    let verb = match &attributes {
        Attributes::Resource { verb, .. } | Attributes::NonResource { verb, .. } => verb.clone(),
    };
    let record = Record {
        config,
        audit_id,
        request_uri: request.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/").to_string(),
        verb,
        user,
        source_ips: event::source_ips(headers, peer),
        user_agent: event::user_agent(headers),
        object_ref: object_ref(&attributes),
        received: k8s_openapi::jiff::Timestamp::now(),
        response_status: None,
        request_object: None,
        response_object: None,
        annotations: Default::default(),
    };
    Some((record, decision))
}

/// Reads the request's object into `record` when the level asks for it (and, for a create or
/// an update, to name the object), and gives the request back with the same body.
async fn read_request_object(request: Request, record: &mut Record) -> Result<Request, Response> {
    let names_object = matches!(record.verb.as_str(), "create" | "update");
    let wanted = record.config.level >= Level::Request
        && matches!(record.verb.as_str(), "create" | "update" | "patch" | "delete" | "deletecollection");
    if !(names_object || wanted) {
        return Ok(request);
    }
    let (parts, body) = request.into_parts();
    let bytes = crate::api::decode::read_body(body).await.map_err(IntoResponse::into_response)?;
    if let Some(mut object) = parse(&parts.headers, &bytes) {
        if let (Some(reference), Some(meta)) = (record.object_ref.as_mut(), object.get("metadata")) {
            let field = |name: &str| meta.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
            for (slot, name) in [
                (&mut reference.name, "name"),
                (&mut reference.namespace, "namespace"),
                (&mut reference.uid, "uid"),
                (&mut reference.resource_version, "resourceVersion"),
            ] {
                if slot.is_empty() {
                    *slot = field(name);
                }
            }
        }
        if wanted {
            if record.config.omit_managed_fields {
                event::omit_managed_fields(&mut object);
            }
            record.request_object = Some(object);
        }
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// A body as JSON: JSON itself, or YAML by its content type; `None` when it is neither.
fn parse(headers: &http::HeaderMap, bytes: &[u8]) -> Option<Value> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    serde_json::from_slice(bytes).ok().or_else(|| {
        let yaml = crate::api::decode::media_type(headers).contains("yaml");
        yaml.then(|| crate::api::yaml::to_json(bytes, crate::machinery::error::Error::BadRequest).ok()).flatten()
    })
}

/// Records the response and writes the last events; a watch's `ResponseComplete` waits for the
/// end of its stream.
async fn finish(auditor: &Arc<Auditor>, mut record: Record, response: Response, id: &str) -> Response {
    let code = response.status().as_u16();
    let streaming = record.verb == "watch" && code < 400;
    let reads_body = code >= 400 || (record.config.level == Level::RequestResponse && !streaming);
    let response = if reads_body {
        let (parts, body) = response.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
        let parsed = parse(&parts.headers, &bytes);
        record.response_status = Some(match (code >= 400, parsed.as_ref()) {
            (true, Some(status)) => {
                ResponseStatus::failure(code, serde_json::from_value(status.clone()).unwrap_or_default())
            }
            _ => ResponseStatus::code(code),
        });
        if record.config.level == Level::RequestResponse {
            record.response_object = parsed.map(|mut object| {
                if record.config.omit_managed_fields {
                    event::omit_managed_fields(&mut object);
                }
                object
            });
        }
        Response::from_parts(parts, Body::from(bytes))
    } else {
        record.response_status = Some(ResponseStatus::code(code));
        response
    };
    let response = if streaming {
        auditor.emit(&record, Stage::ResponseStarted);
        let done = Completion { auditor: auditor.clone(), record: Some(record) };
        response.map(|body| {
            Body::new(http_body_util::BodyExt::map_frame(body, move |frame| {
                let _ = &done;
                frame
            }))
        })
    } else {
        auditor.emit(&record, Stage::ResponseComplete);
        response
    };
    with_audit_id(response, id)
}

/// Writes a streamed response's `ResponseComplete` when the stream is dropped (ended, or its
/// client gone).
struct Completion {
    auditor: Arc<Auditor>,
    record: Option<Record>,
}

impl Drop for Completion {
    fn drop(&mut self) {
        if let Some(record) = self.record.take() {
            self.auditor.emit(&record, Stage::ResponseComplete);
        }
    }
}

fn with_audit_id(mut response: Response, id: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(id) {
        response.headers_mut().insert(AUDIT_ID, value);
    }
    response
}
