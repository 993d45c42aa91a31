//! Audit logging, as k8s.io/apiserver writes it: the policy ([`policy`]) decides, per request,
//! how much is recorded and at which stages; the record becomes `audit.k8s.io/v1` Event lines
//! ([`event`]) handed to a queue ([`sink`]) that one thread writes to a rotated file
//! ([`rotate`]) or standard output.
//!
//! One middleware, [`gate`], runs the steps the kube-apiserver's filters run, in their order:
//! it takes the request's `Audit-ID` (the aggregator sends one) or makes one, and returns it in
//! the response's `Audit-Id` header; authenticates (a refused request is recorded with one
//! `ResponseStarted` event and no user); asks the policy, knowing the user; writes
//! `RequestReceived`; authorizes (the decision and its reason become annotations); runs the
//! request and writes `ResponseComplete` (a watch: `ResponseStarted`, then `ResponseComplete`
//! when its stream ends). Bodies are read only when the level needs them: the request's object
//! (for a create or an update also at `Metadata`, to name the object), the response's at
//! `RequestResponse` (never a watch's stream), and an error's `Status`. Without an audit log the
//! server authenticates and authorizes in one step (`crate::auth::require`), with none of this.

pub mod event;
pub mod policy;
pub mod rotate;
pub mod sink;

use crate::api::query::Query;
use crate::auth::Authenticator;
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
pub const AUDIT_ID: &str = "audit-id";

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

/// The record of a request authentication refused, when the policy records it: the policy
/// decides for a request without a user, and one `ResponseStarted` event records it.
fn failed_authentication(auditor: &Auditor, request: &Request, id: String) -> Option<Record> {
    let user = Arc::new(UserInfo::default());
    let attributes = attributes(request.method(), request.uri().path(), &Query::parse(request.uri().query()));
    let config = auditor.policy.evaluate(&user, &attributes);
    auditor.count_level(config.level);
    if !config.writes(Stage::ResponseStarted) {
        return None;
    }
    let peer = request.extensions().get::<crate::tls::PeerAddress>();
    Some(record(config, id, request.uri(), &attributes, user, request.headers(), peer))
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

/// The middleware that authenticates, audits and authorizes every request it wraps (see the
/// module documentation), as the kube-apiserver's filters do in that order.
pub async fn gate(
    auditor: Arc<Auditor>,
    authenticator: Authenticator,
    metrics: Arc<Metrics>,
    mut request: Request,
    next: Next,
) -> Response {
    let id = audit_id(&request);
    if let Err(refused) = crate::auth::authenticate(&authenticator, &metrics, &mut request).await {
        let Some(mut record) = failed_authentication(&auditor, &request, id.to_string()) else {
            return with_audit_id(refused, &id);
        };
        drop(request);
        let response = read_response(&mut record, refused).await;
        auditor.emit(&record, Stage::ResponseStarted);
        return with_audit_id(response, &id);
    }
    let Some(mut record) = begin(&auditor, &request, id.to_string()) else {
        let response = match crate::auth::authorize(&authenticator, &metrics, &request).await {
            Ok(_) => next.run(request).await,
            Err((refused, _)) => refused,
        };
        return with_audit_id(response, &id);
    };
    auditor.emit(&record, Stage::RequestReceived);
    let response = match crate::auth::authorize(&authenticator, &metrics, &request).await {
        Ok(reason) => {
            record.authorized(true, &reason);
            match read_request_object(request, &mut record).await {
                Ok(request) => {
                    let (response, annotations) = with_annotations(next.run(request)).await;
                    record.annotations.extend(annotations);
                    response
                }
                Err(refused) => refused,
            }
        }
        Err((refused, reason)) => {
            record.authorized(false, &reason);
            refused
        }
    };
    with_audit_id(finish(&auditor, record, response).await, &id)
}

tokio::task_local! {
    /// The annotations that the handling of a request added (admission policies').
    static ANNOTATIONS: std::cell::RefCell<Vec<(String, String)>>;
}

/// Adds the annotation `key: value` to the audit event of the request being handled (nothing
/// when no audit log records it), as admission's `Attributes.AddAnnotation`.
pub fn annotate(key: String, value: String) {
    let _ = ANNOTATIONS.try_with(|annotations| annotations.borrow_mut().push((key, value)));
}

/// Runs `handling`, gathering what it [`annotate`]s.
async fn with_annotations(handling: impl Future<Output = Response>) -> (Response, Vec<(String, String)>) {
    ANNOTATIONS
        .scope(std::cell::RefCell::new(Vec::new()), async {
            let response = handling.await;
            (response, ANNOTATIONS.with(std::cell::RefCell::take))
        })
        .await
}

/// A new record of a request.
fn record(
    config: policy::RequestConfig,
    audit_id: String,
    uri: &http::Uri,
    attributes: &Attributes,
    user: Arc<UserInfo>,
    headers: &http::HeaderMap,
    peer: Option<&crate::tls::PeerAddress>,
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
        middle: Default::default(),
    }
}

/// The record of `request`, when the policy records it.
fn begin(auditor: &Auditor, request: &Request, audit_id: String) -> Option<Record> {
    let user: Arc<UserInfo> = request.extensions().get::<Arc<UserInfo>>().cloned().unwrap_or_default();
    let attributes = attributes(request.method(), request.uri().path(), &Query::parse(request.uri().query()));
    let config = auditor.policy.evaluate(&user, &attributes);
    auditor.count_level(config.level);
    if config.level == Level::None {
        return None;
    }
    let peer = request.extensions().get::<crate::tls::PeerAddress>();
    Some(record(config, audit_id, request.uri(), &attributes, user, request.headers(), peer))
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
    if wanted {
        if let Some(mut object) = parse(&parts.headers, &bytes) {
            if let (true, Ok(named)) = (names_object, <Named as serde::Deserialize>::deserialize(&object)) {
                named.fill(record.object_ref.as_mut());
            }
            if record.config.omit_managed_fields {
                event::omit_managed_fields(&mut object);
            }
            record.request_object = Some(object);
        }
    } else {
        // Only the names: read without building the whole object.
        let named = serde_json::from_slice::<Named>(&bytes)
            .ok()
            .or_else(|| parse(&parts.headers, &bytes).and_then(|v| serde_json::from_value(v).ok()));
        if let Some(named) = named {
            named.fill(record.object_ref.as_mut());
        }
    }
    // The object reference may have changed since the first event.
    record.middle = Default::default();
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// What a request's object says about itself, for the object reference.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct Named {
    metadata: NamedMeta,
}

#[derive(serde::Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct NamedMeta {
    name: String,
    namespace: String,
    uid: String,
    resource_version: String,
}

impl Named {
    /// Fills what `reference` lacks: name, namespace, uid, resourceVersion.
    fn fill(self, reference: Option<&mut ObjectRef>) {
        let Some(reference) = reference else { return };
        let meta = self.metadata;
        for (slot, value) in [
            (&mut reference.name, meta.name),
            (&mut reference.namespace, meta.namespace),
            (&mut reference.uid, meta.uid),
            (&mut reference.resource_version, meta.resource_version),
        ] {
            if slot.is_empty() {
                *slot = value;
            }
        }
    }
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
    // A large answer is gzipped for a client that accepts it; its object is read unzipped.
    let gzipped = parts.headers.get(http::header::CONTENT_ENCODING).is_some_and(|e| e == "gzip");
    let parsed = match gzipped {
        true => crate::api::compression::gunzip(&bytes).ok().and_then(|plain| parse(&parts.headers, &plain)),
        false => parse(&parts.headers, &bytes),
    };
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
