//! Audit logging, as k8s.io/apiserver writes it: the policy ([`policy`]) decides, per request,
//! how much is recorded and at which stages; the record becomes `audit.k8s.io/v1` Event lines
//! ([`event`]) handed to a queue ([`sink`]) that one thread writes to a rotated file
//! ([`rotate`]) or standard output.
//!
//! Two middlewares, placed as the kube-apiserver places its filters: [`audit_init`], before
//! authentication, takes the request's `Audit-ID` (the aggregator sends one) or makes one,
//! returns it in the response's `Audit-Id` header, and records a request authentication refused
//! (one `ResponseStarted` event, no user); [`audit`], after authentication (it knows the user)
//! and around authorization (it records the decision and its reason as annotations), records
//! the rest. A request is recorded at `RequestReceived`, then `ResponseComplete`; a watch also
//! at `ResponseStarted`, and its `ResponseComplete` is written when its stream ends. Bodies are
//! read only when the level needs them: the request's object (for a create or an update also at
//! `Metadata`, to name the object), the response's at `RequestResponse` (never a watch's
//! stream), and an error's `Status`.

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
use std::sync::atomic::{AtomicBool, Ordering};

/// The header carrying a request's audit ID, both ways.
const AUDIT_ID: &str = "audit-id";

/// How many event lines may wait for the writer.
const QUEUE: usize = 10_000;

/// The audit policy and where its events go.
pub struct Auditor {
    policy: Policy,
    sink: Sink,
    metrics: Arc<Metrics>,
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
            Output::Stdout(std::io::BufWriter::with_capacity(256 * 1024, std::io::stdout()))
        } else {
            let file = rotate::RotatingFile::open(Path::new(log_path), limits)
                .map_err(|e| format!("opening the audit log {log_path}: {e}"))?;
            Output::File(file)
        };
        let sink =
            Sink::start(output, QUEUE, metrics.clone()).map_err(|e| format!("starting the audit log writer: {e}"))?;
        Ok(Self { policy, sink, metrics })
    }

    /// Writes every event queued so far (at shutdown).
    pub async fn stop(&self) {
        self.sink.stop().await;
    }

    /// Counts a policy decision in `apiserver_audit_level_total`.
    fn count_level(&self, level: Level) {
        let level = match level {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        };
        self.metrics.audit_levels.get_or_create(&crate::metrics::LevelLabel { level }).inc();
    }

    fn emit(&self, record: &Record, stage: Stage) {
        if record.config.writes(stage) {
            self.sink.send(record.event_line(stage));
        }
    }
}

/// The request's audit ID, or a new one.
fn audit_id(request: &Request) -> Arc<str> {
    match request.headers().get(AUDIT_ID).and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty()) {
        Some(id) => id.into(),
        None => uuid::Uuid::new_v4().to_string().into(),
    }
}

/// What [`audit_init`] hands the inner [`audit`] layer.
#[derive(Clone)]
struct Auditing {
    /// The request's audit ID.
    id: Arc<str>,
    /// Set by the inner layer: authentication let the request through.
    authenticated: Arc<AtomicBool>,
}

/// Where a request came from, kept by [`audit_init`] for the event of a failed authentication
/// (cheap copies: the header values share their bytes).
struct Origin {
    method: http::Method,
    uri: http::Uri,
    headers: http::HeaderMap,
    peer: Option<std::net::IpAddr>,
}

impl Origin {
    fn of(request: &Request) -> Self {
        let mut headers = http::HeaderMap::new();
        for name in [http::header::USER_AGENT.as_str(), "x-forwarded-for", "x-real-ip"] {
            for value in request.headers().get_all(name) {
                headers.append(http::HeaderName::from_static(name), value.clone());
            }
        }
        let peer = request.extensions().get::<crate::tls::PeerAddress>().map(|a| a.0);
        Self { method: request.method().clone(), uri: request.uri().clone(), headers, peer }
    }
}

/// The outer middleware, before authentication: takes the request's `Audit-ID` (or makes one)
/// and returns it; records a request that authentication refused (401) as the kube-apiserver
/// does, with one `ResponseStarted` event and no user. Without an auditor it only passes an
/// `Audit-ID` sent back.
pub async fn audit_init(auditor: Option<Arc<Auditor>>, mut request: Request, next: Next) -> Response {
    let Some(auditor) = auditor else {
        let id = request.headers().get(AUDIT_ID).cloned();
        let mut response = next.run(request).await;
        if let Some(id) = id {
            response.headers_mut().insert(AUDIT_ID, id);
        }
        return response;
    };
    let id = audit_id(&request);
    let authenticated = Arc::new(AtomicBool::new(false));
    request.extensions_mut().insert(Auditing { id: id.clone(), authenticated: authenticated.clone() });
    let origin = Origin::of(&request);
    let response = next.run(request).await;
    let response = if response.status() == http::StatusCode::UNAUTHORIZED && !authenticated.load(Ordering::Relaxed) {
        failed_authentication(&auditor, origin, id.to_string(), response).await
    } else {
        response
    };
    with_audit_id(response, &id)
}

/// Records a request authentication refused: the policy decides for a request without a user.
async fn failed_authentication(auditor: &Arc<Auditor>, origin: Origin, id: String, response: Response) -> Response {
    let user = Arc::new(UserInfo::default());
    let attributes = attributes(&origin.method, origin.uri.path(), &Query::parse(origin.uri.query()));
    let config = auditor.policy.evaluate(&user, &attributes);
    auditor.count_level(config.level);
    if !config.writes(Stage::ResponseStarted) {
        return response;
    }
    let mut record = record(config, id, &origin.uri, &attributes, user, &origin.headers, origin.peer);
    let response = read_response(&mut record, response).await;
    auditor.emit(&record, Stage::ResponseStarted);
    response
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

/// The inner middleware (see the module documentation), after authentication.
pub async fn audit(auditor: Option<Arc<Auditor>>, mut request: Request, next: Next) -> Response {
    let (Some(auditor), Some(auditing)) = (auditor, request.extensions().get::<Auditing>().cloned()) else {
        return next.run(request).await;
    };
    auditing.authenticated.store(true, Ordering::Relaxed);
    let Some((mut record, decision)) = begin(&auditor, &mut request, auditing.id.to_string()) else {
        return next.run(request).await;
    };
    let request = match read_request_object(request, &mut record).await {
        Ok(request) => request,
        Err(response) => return finish(&auditor, record, response).await,
    };
    auditor.emit(&record, Stage::RequestReceived);
    let response = next.run(request).await;
    if let Some((allowed, reason)) = decision.get() {
        record.authorized(allowed, reason);
    }
    finish(&auditor, record, response).await
}

/// A new record of a request.
fn record(
    config: policy::RequestConfig,
    audit_id: String,
    uri: &http::Uri,
    attributes: &Attributes,
    user: Arc<UserInfo>,
    headers: &http::HeaderMap,
    peer: Option<std::net::IpAddr>,
) -> Record {
    let verb = match attributes {
        Attributes::Resource { verb, .. } | Attributes::NonResource { verb, .. } => verb.clone(),
    };
    Record {
        config,
        audit_id,
        request_uri: uri.path_and_query().map(|p| p.as_str()).unwrap_or("/").to_string(),
        verb,
        user,
        source_ips: event::source_ips(headers, peer),
        user_agent: event::user_agent(headers),
        object_ref: object_ref(attributes),
        received: k8s_openapi::jiff::Timestamp::now(),
        response_status: None,
        request_object: None,
        response_object: None,
        annotations: Default::default(),
    }
}

/// The record of `request`, when the policy records it, and the slot authorization fills.
fn begin(auditor: &Auditor, request: &mut Request, audit_id: String) -> Option<(Record, Decision)> {
    let user: Arc<UserInfo> = request.extensions().get::<Arc<UserInfo>>().cloned().unwrap_or_default();
    let attributes = attributes(request.method(), request.uri().path(), &Query::parse(request.uri().query()));
    let config = auditor.policy.evaluate(&user, &attributes);
    auditor.count_level(config.level);
    if config.level == Level::None {
        return None;
    }
    let decision = Decision::default();
    request.extensions_mut().insert(decision.clone());
    let peer = request.extensions().get::<crate::tls::PeerAddress>().map(|a| a.0);
    let record = record(config, audit_id, request.uri(), &attributes, user, request.headers(), peer);
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
async fn finish(auditor: &Arc<Auditor>, mut record: Record, response: Response) -> Response {
    let streaming = record.verb == "watch" && response.status().as_u16() < 400;
    if streaming {
        record.response_status = Some(ResponseStatus::code(response.status().as_u16()));
        auditor.emit(&record, Stage::ResponseStarted);
        let done = Completion { auditor: auditor.clone(), record: Some(record) };
        return response.map(|body| {
            Body::new(http_body_util::BodyExt::map_frame(body, move |frame| {
                let _ = &done;
                frame
            }))
        });
    }
    let response = read_response(&mut record, response).await;
    auditor.emit(&record, Stage::ResponseComplete);
    response
}

/// Records the response's status and, when the level asks for it, its object (never a
/// stream's); an error's body is read for its `Status`.
async fn read_response(record: &mut Record, response: Response) -> Response {
    let code = response.status().as_u16();
    let full = record.config.level == Level::RequestResponse;
    if code < 400 && !full {
        record.response_status = Some(ResponseStatus::code(code));
        return response;
    }
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let parsed = parse(&parts.headers, &bytes);
    record.response_status = Some(match (code >= 400, parsed.as_ref()) {
        (true, Some(status)) => {
            ResponseStatus::failure(code, serde_json::from_value(status.clone()).unwrap_or_default())
        }
        _ => ResponseStatus::code(code),
    });
    if full {
        record.response_object = parsed.map(|mut object| {
            if record.config.omit_managed_fields {
                event::omit_managed_fields(&mut object);
            }
            object
        });
    }
    Response::from_parts(parts, Body::from(bytes))
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

/// `response` with the `Audit-Id` header.
fn with_audit_id(mut response: Response, id: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(id) {
        response.headers_mut().insert(AUDIT_ID, value);
    }
    response
}
