//! One request's audit record and the `audit.k8s.io/v1` Event lines written from it, one per
//! stage (the fields that do not change between stages serialized once), with the
//! kube-apiserver's fields in its order (`pkg/apis/audit/v1/types.go`):
//! microsecond timestamps, the user as authentication found it, `sourceIPs` from
//! `X-Forwarded-For`, `X-Real-Ip` and the peer, the object reference from the path (and the
//! request's object), the response's status, the bodies the level asks for, and the
//! authorization decision as annotations. A bearer token is never part of any of them: no header
//! but the User-Agent and the forwarding ones is read.

use super::policy::{Level, RequestConfig, Stage};
use crate::machinery::user::UserInfo;
use crate::tls::PeerAddress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusDetails};
use k8s_openapi::jiff::{self, Timestamp};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

/// The longest User-Agent recorded; a longer one is cut and marked.
const MAX_USER_AGENT: usize = 1024;

/// `metav1.MicroTime`'s layout, `2006-01-02T15:04:05.000000Z` (truncated to the microsecond,
/// as Go formats it), written digit by digit: twice per event, and `strftime` or `Display` cost
/// ten times as much.
fn micro_time(time: Timestamp) -> String {
    let at = jiff::tz::Offset::UTC.to_datetime(time);
    let mut text = String::with_capacity(27);
    let mut digits = |value: i64, width: usize, after: char| {
        let value = value.unsigned_abs();
        for place in (0..width).rev() {
            let digit = (value / 10u64.pow(place as u32)) % 10;
            text.push(char::from(b'0' + digit as u8));
        }
        text.push(after);
    };
    digits(at.year().into(), 4, '-');
    digits(at.month().into(), 2, '-');
    digits(at.day().into(), 2, 'T');
    digits(at.hour().into(), 2, ':');
    digits(at.minute().into(), 2, ':');
    digits(at.second().into(), 2, '.');
    digits(i64::from(at.subsec_nanosecond()) / 1000, 6, 'Z');
    text
}

/// What a request is about, when it is about a resource.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// The resource (plural name, e.g. `widgets`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// The object's namespace; empty for a cluster-scoped one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The object's name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's UID, when the request's object carries one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The name of the API group; empty for the core group.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// The version of the API group.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The object's resourceVersion, when the request's object carries one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// The subresource (e.g. `status`), if any.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// The response's status as an event writes it: a `metav1.Status` without kind and apiVersion;
/// `code` alone for a success.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ResponseStatus {
    metadata: serde_json::Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<StatusDetails>,
    code: u16,
}

impl ResponseStatus {
    /// A success's: its code.
    pub fn code(code: u16) -> Self {
        Self { code, ..Default::default() }
    }

    /// A failure's: the fields of its `Status`.
    pub fn failure(code: u16, status: Status) -> Self {
        Self {
            status: status.status,
            message: status.message,
            reason: status.reason,
            details: status.details,
            code,
            ..Default::default()
        }
    }
}

/// The user as an event writes it (`authentication/v1` UserInfo).
#[derive(Serialize)]
struct User<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    username: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    uid: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    groups: &'a [String],
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    extra: &'a BTreeMap<String, Vec<String>>,
}

/// The first fields of an event, which differ between its stages.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Head<'a> {
    kind: &'static str,
    api_version: &'static str,
    level: &'static str,
    #[serde(rename = "auditID")]
    audit_id: &'a str,
    stage: Stage,
}

/// The fields in the middle, the same at every stage: serialized once per request.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Middle<'a> {
    #[serde(rename = "requestURI")]
    request_uri: &'a str,
    verb: &'a str,
    user: User<'a>,
    #[serde(rename = "sourceIPs", skip_serializing_if = "<[String]>::is_empty")]
    source_ips: &'a [String],
    #[serde(skip_serializing_if = "str::is_empty")]
    user_agent: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    object_ref: Option<&'a ObjectRef>,
}

/// The last fields: what the response added, and the times.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Tail<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    response_status: Option<&'a ResponseStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_object: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_object: Option<&'a Value>,
    request_received_timestamp: String,
    stage_timestamp: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: &'a BTreeMap<String, String>,
}

/// Appends `value`'s fields to `line`, after a comma: its JSON object without the braces.
/// (Each part serializes at least one field.)
fn append_fields(line: &mut Vec<u8>, value: &impl Serialize) {
    let start = line.len();
    // Strings, maps and JSON values always serialize.
    let _ = serde_json::to_writer(&mut *line, value);
    if line.len() > start {
        line[start] = b',';
        line.pop();
    }
}

/// Everything recorded about one request so far.
#[derive(Debug)]
pub struct Record {
    /// What the policy asks of it.
    pub config: RequestConfig,
    /// Unique ID of the request: its `Audit-ID` header, or a new UUID.
    pub audit_id: String,
    /// Path and query, as sent.
    pub request_uri: String,
    /// The authorization verb (`get`, `create`, …; the lower-case method for other paths).
    pub verb: String,
    /// The user as authentication found it.
    pub user: Arc<UserInfo>,
    /// Where the request came from, and the proxies in between (see [`source_ips`]).
    pub source_ips: Vec<String>,
    /// The User-Agent the client reported (not to be trusted), as [`user_agent`] cuts it.
    pub user_agent: String,
    /// The object the request is about; `None` for a non-resource request.
    pub object_ref: Option<ObjectRef>,
    /// When the request reached the server.
    pub received: Timestamp,
    /// `code` alone for a success; the error's `Status` otherwise.
    pub response_status: Option<ResponseStatus>,
    /// The request's object, at level Request and above.
    pub request_object: Option<Value>,
    /// The response's object, at level RequestResponse.
    pub response_object: Option<Value>,
    /// `authorization.k8s.io/decision` and `authorization.k8s.io/reason`.
    pub annotations: BTreeMap<String, String>,
    /// The fields from `requestURI` to `objectRef`, serialized by the first event (they do not
    /// change once the request has been received).
    pub middle: std::sync::OnceLock<Vec<u8>>,
}

impl Record {
    /// The JSON line of the event of `stage`, stamped now.
    pub fn event_line(&self, stage: Stage) -> Vec<u8> {
        let level = match self.config.level {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        };
        let middle = self.middle.get_or_init(|| {
            let mut middle = Vec::with_capacity(512);
            append_fields(&mut middle, &self.middle());
            middle
        });
        let mut line = Vec::with_capacity(middle.len() + 512);
        let head = Head { kind: "Event", api_version: "audit.k8s.io/v1", level, audit_id: &self.audit_id, stage };
        let _ = serde_json::to_writer(&mut line, &head);
        line.pop();
        line.extend_from_slice(middle);
        let stamped = if stage == Stage::RequestReceived { self.received } else { Timestamp::now() };
        let tail = Tail {
            response_status: self.response_status.as_ref(),
            request_object: self.request_object.as_ref(),
            response_object: self.response_object.as_ref(),
            request_received_timestamp: micro_time(self.received),
            stage_timestamp: micro_time(stamped),
            annotations: &self.annotations,
        };
        append_fields(&mut line, &tail);
        line.extend_from_slice(b"}\n");
        line
    }

    fn middle(&self) -> Middle<'_> {
        Middle {
            request_uri: &self.request_uri,
            verb: &self.verb,
            user: User {
                username: &self.user.name,
                uid: self.user.uid.as_deref(),
                groups: &self.user.groups,
                extra: &self.user.extra,
            },
            source_ips: &self.source_ips,
            user_agent: &self.user_agent,
            object_ref: self.object_ref.as_ref(),
        }
    }

    /// Records authorization's decision and reason.
    pub fn authorized(&mut self, allowed: bool, reason: &str) {
        self.annotations
            .insert("authorization.k8s.io/decision".into(), if allowed { "allow" } else { "forbid" }.into());
        self.annotations.insert("authorization.k8s.io/reason".into(), reason.to_string());
    }
}

/// `utilnet.SourceIPs`: the addresses of `X-Forwarded-For`, then `X-Real-Ip` when it is not
/// among them, then the peer unless it is the last one already.
pub fn source_ips(headers: &http::HeaderMap, peer: Option<&PeerAddress>) -> Vec<String> {
    let mut ips: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|ip| ip.trim().parse().ok())
        .collect();
    let real: Option<IpAddr> =
        headers.get("x-real-ip").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    if let Some(real) = real.filter(|ip| !ips.contains(ip)) {
        ips.push(real);
    }
    let peer = peer.filter(|peer| ips.last() != Some(&peer.ip));
    let mut texts: Vec<String> = ips.iter().map(IpAddr::to_string).collect();
    // The peer's text is made once per connection.
    texts.extend(peer.map(|peer| peer.text.to_string()));
    texts
}

/// The User-Agent, cut at 1,024 bytes with `...TRUNCATED` after.
pub fn user_agent(headers: &http::HeaderMap) -> String {
    let agent =
        headers.get(http::header::USER_AGENT).map(|v| String::from_utf8_lossy(v.as_bytes())).unwrap_or_default();
    if agent.len() <= MAX_USER_AGENT {
        return agent.into_owned();
    }
    let mut end = MAX_USER_AGENT;
    while !agent.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...TRUNCATED", &agent[..end])
}

/// `object` without `metadata.managedFields`, and a list's items without theirs.
pub fn omit_managed_fields(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    if let Some(items) = object.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(omit_managed_fields);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record() -> Record {
        Record {
            config: RequestConfig { level: Level::Metadata, ..Default::default() },
            audit_id: "4b5c".into(),
            request_uri: "/apis/test.example.com/v1alpha/namespaces/default/widgets?fieldManager=kubectl".into(),
            verb: "create".into(),
            user: Arc::new(UserInfo { name: "alice".into(), groups: vec!["builders".into()], ..Default::default() }),
            source_ips: vec!["10.0.0.7".into()],
            user_agent: "kubectl/v1.32.0".into(),
            object_ref: Some(ObjectRef {
                resource: "widgets".into(),
                namespace: "default".into(),
                api_group: "test.example.com".into(),
                api_version: "v1alpha".into(),
                ..Default::default()
            }),
            received: "2026-11-25T02:04:24.123456789Z".parse().unwrap(),
            response_status: Some(ResponseStatus::code(201)),
            request_object: None,
            response_object: None,
            annotations: BTreeMap::new(),
            middle: Default::default(),
        }
    }

    #[test]
    fn an_event_has_the_kube_apiservers_fields_in_its_order() {
        let mut record = record();
        record.authorized(true, "RBAC: allowed");
        let line = record.event_line(Stage::ResponseComplete);
        assert_eq!(line.last(), Some(&b'\n'));
        let event: Value = serde_json::from_slice(&line).unwrap();
        let stage_timestamp = event["stageTimestamp"].as_str().unwrap().to_string();
        assert_eq!(
            event,
            json!({
                "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "4b5c",
                "stage": "ResponseComplete",
                "requestURI": "/apis/test.example.com/v1alpha/namespaces/default/widgets?fieldManager=kubectl",
                "verb": "create", "user": {"username": "alice", "groups": ["builders"]},
                "sourceIPs": ["10.0.0.7"], "userAgent": "kubectl/v1.32.0",
                "objectRef": {"resource": "widgets", "namespace": "default", "apiGroup": "test.example.com", "apiVersion": "v1alpha"},
                "responseStatus": {"metadata": {}, "code": 201},
                "requestReceivedTimestamp": "2026-11-25T02:04:24.123456Z",
                "stageTimestamp": stage_timestamp,
                "annotations": {"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": "RBAC: allowed"},
            })
        );
        let text = String::from_utf8(line).unwrap();
        let order = [
            "\"kind\"",
            "\"level\"",
            "\"auditID\"",
            "\"stage\"",
            "\"requestURI\"",
            "\"verb\"",
            "\"user\"",
            "\"sourceIPs\"",
            "\"objectRef\"",
            "\"responseStatus\"",
            "\"requestReceivedTimestamp\"",
            "\"stageTimestamp\"",
            "\"annotations\"",
        ];
        let positions: Vec<usize> = order.iter().map(|k| text.find(k).unwrap()).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(stage_timestamp.ends_with('Z') && stage_timestamp.len() == "2026-11-25T02:04:24.123456Z".len());
    }

    #[test]
    fn micro_times_have_six_digits_truncated() {
        let at = |text: &str| micro_time(text.parse().unwrap());
        assert_eq!(at("2026-11-25T02:04:24.123456789Z"), "2026-11-25T02:04:24.123456Z");
        assert_eq!(at("2026-01-02T03:04:05Z"), "2026-01-02T03:04:05.000000Z");
        assert_eq!(at("0999-12-31T23:59:59.000001Z"), "0999-12-31T23:59:59.000001Z");
    }

    #[test]
    fn source_ips_are_the_forwarded_ones_then_the_real_ip_and_the_peer() {
        let mut headers = http::HeaderMap::new();
        headers.append("x-forwarded-for", "10.0.0.1, not-an-ip, 10.0.0.2".parse().unwrap());
        headers.append("x-real-ip", "10.0.0.2".parse().unwrap());
        let peer = |ip: &str| PeerAddress { ip: ip.parse().unwrap(), text: ip.into() };
        assert_eq!(source_ips(&headers, Some(&peer("127.0.0.1"))), ["10.0.0.1", "10.0.0.2", "127.0.0.1"]);
        assert_eq!(source_ips(&headers, Some(&peer("10.0.0.2"))), ["10.0.0.1", "10.0.0.2"], "the peer is the last one");
        assert_eq!(source_ips(&headers, Some(&peer("10.0.0.1"))), ["10.0.0.1", "10.0.0.2", "10.0.0.1"]);
        assert_eq!(source_ips(&http::HeaderMap::new(), Some(&peer("127.0.0.1"))), ["127.0.0.1"]);
    }

    #[test]
    fn a_long_user_agent_is_cut() {
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::USER_AGENT, "é".repeat(600).parse().unwrap());
        let agent = user_agent(&headers);
        assert!(agent.ends_with("...TRUNCATED") && agent.len() <= 1024 + "...TRUNCATED".len(), "{}", agent.len());
        assert_eq!(user_agent(&http::HeaderMap::new()), "");
    }

    #[test]
    fn managed_fields_are_left_out_of_objects_and_list_items() {
        let mut list =
            json!({"metadata": {"managedFields": [1]}, "items": [{"metadata": {"name": "a", "managedFields": [2]}}]});
        omit_managed_fields(&mut list);
        assert_eq!(list, json!({"metadata": {}, "items": [{"metadata": {"name": "a"}}]}));
    }
}
