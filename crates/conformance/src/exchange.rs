//! One request and the two answers to it: how a request is written once and sent to either
//! side (the server under test's group, or the reference CustomResourceDefinition's, both
//! through the kube-apiserver), and how an answer is made comparable: the reference's group
//! named as the tested one, what each server made up for an object named by the object and by
//! order of appearance ([`Identities`]), and what must differ between two servers otherwise
//! (continue tokens, ages, managedFields times, generated names) replaced by placeholders.

use crate::identities::Identities;
use crate::subject::Subject;
use serde_json::{Map, Value};
use std::time::Duration;

/// A request, written for the tested group. In `path`, `{gv}` stands for
/// `/apis/<group>/<first version>` and `{gv2}` for the second version's (see [`Subject::expand`]);
/// in the query and the body, `$RV`, `$LISTRV` and `$CONTINUE` stand for the last
/// resourceVersion of an object, of a list, and the last continue token the side sent, `$UID`
/// for the last object's uid and `$CREATEDRV` for the resourceVersion of the last object it
/// created (a 201).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Request {
    /// What the request checks, for the report.
    pub label: String,
    #[serde(with = "method")]
    pub method: reqwest::Method,
    pub path: String,
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

/// A method as its name, for the examples of the tables (`GET`).
mod method {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(method: &reqwest::Method, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(method.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<reqwest::Method, D::Error> {
        let name = String::deserialize(deserializer)?;
        reqwest::Method::from_bytes(name.as_bytes()).map_err(serde::de::Error::custom)
    }
}

impl Request {
    pub fn new(label: impl Into<String>, method: reqwest::Method, path: impl Into<String>) -> Self {
        Self { label: label.into(), method, path: path.into(), query: String::new(), headers: Vec::new(), body: None }
    }

    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = query.into();
        self
    }

    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn content_type(self, value: &str) -> Self {
        self.header("content-type", value)
    }

    pub fn accept(self, value: &str) -> Self {
        self.header("accept", value)
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = Some(body.into());
        self
    }

    /// A JSON body (its Content-Type is set apart, with [`Request::content_type`]).
    pub fn json(self, body: &Value) -> Self {
        self.body(body.to_string())
    }

    /// Whether the request is a watch (its answer is a stream the server ends at `timeoutSeconds`).
    pub fn is_watch(&self) -> bool {
        self.path.contains("/watch/") || self.query.split('&').any(|p| p == "watch=true" || p == "watch=1")
    }

    pub fn has_header(&self, name: &str, value: &str) -> bool {
        self.headers.iter().any(|(n, v)| n.eq_ignore_ascii_case(name) && v.contains(value))
    }

    /// The `metadata.generateName` of a JSON body, when it has one.
    fn generate_name(&self) -> Option<String> {
        let body: Value = serde_json::from_slice(self.body.as_deref()?).ok()?;
        body["metadata"]["generateName"].as_str().filter(|g| !g.is_empty()).map(str::to_string)
    }

    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(self.body.as_deref().unwrap_or_default()).into_owned()
    }
}

/// An answer, normalised: comparable with the other side's.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Answer {
    pub code: u16,
    /// The `Content-Type` header, parameters included.
    pub content_type: String,
    /// The `Content-Encoding` header (`gzip`, or empty); the body is the decoded one.
    pub content_encoding: String,
    /// Each `Warning` header, in order.
    pub warnings: Vec<String>,
    /// The `Cache-Control` header (empty when absent).
    pub cache_control: String,
    /// How many `Audit-Id` values the answer has (the values differ by request): one when the
    /// kube-apiserver audits, none when it does not, two when a proxy added the backend's.
    pub audit_ids: usize,
    /// The `Retry-After` header (empty when absent).
    #[serde(default)]
    pub retry_after: String,
    /// The `Location` header (empty when absent): a redirect's, or a create's.
    #[serde(default)]
    pub location: String,
    /// When a watch's first bytes came, from the request's start.
    #[serde(skip)]
    pub first_event: FirstEvent,
    pub body: Value,
}

/// How long a watch's first bytes (its first event) took to come, from the request's start;
/// `None` for another request, or a watch that sent nothing. Never part of an answer's
/// equality: [`crate::difference`] judges it.
#[derive(Clone, Copy, Debug, Default)]
pub struct FirstEvent(pub Option<Duration>);

impl PartialEq for FirstEvent {
    fn eq(&self, _: &FirstEvent) -> bool {
        true
    }
}

impl FirstEvent {
    /// How much later than the reference's a watch's first event may come: the time of a busy
    /// machine's scheduling, far below the second a held-back event waits for a timeout.
    pub const SLACK: Duration = Duration::from_millis(500);

    /// Why `ours` held back what the reference sent at once, if it did.
    pub fn held_back(ours: FirstEvent, reference: FirstEvent) -> Option<String> {
        let (Some(reference), ours) = (reference.0, ours.0) else { return None };
        let late = ours.is_none_or(|ours| ours > reference + Self::SLACK);
        late.then(|| format!("watch: our first event after {ours:?}, the reference's after {reference:?}"))
    }
}

/// A header of an answer that both sides' answers must carry alike, unless the entry that
/// allows their difference names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    ContentType,
    ContentEncoding,
    Warning,
    CacheControl,
    AuditId,
    RetryAfter,
    Location,
}

impl Header {
    /// Every header compared.
    pub const ALL: [Header; 7] = [
        Header::ContentType,
        Header::ContentEncoding,
        Header::Warning,
        Header::CacheControl,
        Header::AuditId,
        Header::RetryAfter,
        Header::Location,
    ];

    /// The header's name.
    pub fn name(self) -> &'static str {
        match self {
            Header::ContentType => "Content-Type",
            Header::ContentEncoding => "Content-Encoding",
            Header::Warning => "Warning",
            Header::CacheControl => "Cache-Control",
            Header::AuditId => "Audit-Id",
            Header::RetryAfter => "Retry-After",
            Header::Location => "Location",
        }
    }
}

impl Answer {
    /// A JSON answer of `code` with `body` and the headers every answer of the kube-apiserver
    /// carries (for tests of the tables).
    pub fn json(code: u16, body: Value) -> Self {
        Self {
            code,
            content_type: "application/json".into(),
            content_encoding: String::new(),
            warnings: Vec::new(),
            cache_control: "no-cache, private".into(),
            audit_ids: 1,
            retry_after: String::new(),
            location: String::new(),
            first_event: FirstEvent::default(),
            body,
        }
    }

    /// What stands for a request the server gave up on without an answer (an HTTP/2 stream it
    /// reset, as Go's server does when a handler panics): code 0, no headers, the error as body.
    pub const RESET: u16 = 0;

    /// The stand-in for a request answered with a reset stream, or `None` for another failure.
    pub fn reset(error: &str) -> Option<Self> {
        error.contains("INTERNAL_ERROR").then(|| Self {
            code: Self::RESET,
            content_type: String::new(),
            content_encoding: String::new(),
            warnings: Vec::new(),
            cache_control: String::new(),
            audit_ids: 0,
            retry_after: String::new(),
            location: String::new(),
            first_event: FirstEvent::default(),
            body: Value::String("stream reset (INTERNAL_ERROR)".into()),
        })
    }

    /// The header's value as compared (`Warning`: each value on a line of its own).
    pub fn header(&self, header: Header) -> String {
        match header {
            Header::ContentType => self.content_type.clone(),
            Header::ContentEncoding => self.content_encoding.clone(),
            Header::Warning => self.warnings.join("\n"),
            Header::CacheControl => self.cache_control.clone(),
            Header::AuditId => format!("{} values", self.audit_ids),
            Header::RetryAfter => self.retry_after.clone(),
            Header::Location => self.location.clone(),
        }
    }

    /// Gives this answer `other`'s value of `header`.
    pub fn set_header(&mut self, header: Header, other: &Answer) {
        match header {
            Header::ContentType => self.content_type.clone_from(&other.content_type),
            Header::ContentEncoding => self.content_encoding.clone_from(&other.content_encoding),
            Header::Warning => self.warnings.clone_from(&other.warnings),
            Header::CacheControl => self.cache_control.clone_from(&other.cache_control),
            Header::AuditId => self.audit_ids = other.audit_ids,
            Header::RetryAfter => self.retry_after.clone_from(&other.retry_after),
            Header::Location => self.location.clone_from(&other.location),
        }
    }

    /// The first header other than those of `allowed` that differs from `other`'s, with both
    /// values.
    pub fn header_difference(&self, other: &Answer, allowed: &[Header]) -> Option<String> {
        Header::ALL.into_iter().filter(|h| !allowed.contains(h)).find_map(|h| {
            let (ours, theirs) = (self.header(h), other.header(h));
            (ours != theirs).then(|| format!("{}: ours {ours:?} / reference {theirs:?}", h.name()))
        })
    }
}

/// What a side remembers between requests, to fill in `$RV`, `$LISTRV`, `$CONTINUE`, `$UID`
/// and `$CREATEDRV`.
#[derive(Default, Clone)]
struct Remembered {
    rv: String,
    list_rv: String,
    continue_token: String,
    uid: String,
    created_rv: String,
}

/// One side: a group served through the kube-apiserver.
pub struct Side {
    subject: &'static Subject,
    group: &'static str,
    base: String,
    client: reqwest::Client,
    remembered: Remembered,
    identities: Identities,
}

impl Side {
    /// The server under test's side of `subject`, reached at `base` (the kube-apiserver).
    pub fn tested(subject: &'static Subject, base: &str, client: reqwest::Client) -> Self {
        let (remembered, identities) = (Remembered::default(), Identities::default());
        Self { subject, group: subject.group, base: base.into(), client, remembered, identities }
    }

    /// The reference CRD's side of `subject`.
    pub fn reference(subject: &'static Subject, base: &str, client: reqwest::Client) -> Self {
        Self { group: subject.reference_group, ..Self::tested(subject, base, client) }
    }

    /// `text` with its placeholders filled in and the group renamed, but for the subject's texts
    /// that both sides name alike (see [`Subject::unrenamed`]).
    fn fill_in(&self, text: &str) -> String {
        let mut text = text
            .replace("$LISTRV", &self.remembered.list_rv)
            .replace("$CREATEDRV", &self.remembered.created_rv)
            .replace("$RV", &self.remembered.rv)
            .replace("$UID", &self.remembered.uid)
            .replace("$CONTINUE", &self.remembered.continue_token);
        for (i, kept) in self.subject.unrenamed.iter().enumerate() {
            text = text.replace(kept, &format!("\u{0}{i}\u{0}"));
        }
        text = text.replace(self.subject.group, self.group);
        for (i, kept) in self.subject.unrenamed.iter().enumerate() {
            text = text.replace(&format!("\u{0}{i}\u{0}"), kept);
        }
        text
    }

    /// [`Side::send`], but what the answer carries is not remembered for the placeholders of
    /// later requests (its identities are named all the same).
    pub async fn peek(&mut self, request: &Request) -> Result<Answer, String> {
        let remembered = self.remembered.clone();
        let answer = self.send(request).await;
        self.remembered = remembered;
        answer
    }

    /// Sends `request` and returns the normalised answer, or why no answer came.
    pub async fn send(&mut self, request: &Request) -> Result<Answer, String> {
        // Renamed before the placeholders are filled in: the reference's group may contain the
        // tested one (`crd.ops.example.com`, `ops.example.com`).
        let path = self.subject.expand(&request.path.replace(self.subject.group, self.group), self.group);
        let mut url = format!("{}{}", self.base, path);
        if !request.query.is_empty() {
            url = format!("{url}?{}", self.fill_in(&request.query));
        }
        let requested = reqwest::Url::parse(&url).ok();
        let mut builder = self.client.request(request.method.clone(), url).timeout(Duration::from_secs(30));
        for (name, value) in &request.headers {
            builder = builder.header(name, self.fill_in(value));
        }
        if let Some(body) = &request.body {
            builder = match std::str::from_utf8(body) {
                Ok(text) => builder.body(self.fill_in(text)),
                Err(_) => builder.body(body.clone()),
            };
        }
        let started = std::time::Instant::now();
        let mut response = builder.send().await.map_err(|e| format!("{e:?}"))?;
        if requested.as_ref() != Some(response.url()) {
            // The caller's client followed a redirect: the answer compared would be another's.
            return Err(format!("the client followed a redirect to {}: build it without", response.url()));
        }
        let code = response.status().as_u16();
        let tested = self.subject.group;
        let header = |name: &str| -> Vec<String> {
            let values = response.headers().get_all(name).iter();
            values.map(|v| String::from_utf8_lossy(v.as_bytes()).replace(self.group, tested)).collect()
        };
        let content_type = header("content-type").join(", ");
        let warnings = header("warning");
        let content_encoding = header("content-encoding").join(", ");
        let cache_control = header("cache-control").join(", ");
        let audit_ids = header("audit-id").iter().map(|v| v.split(',').count()).sum();
        let retry_after = header("retry-after").join(", ");
        let location = header("location").join(", ");
        let mut bytes = Vec::new();
        let mut first_event = FirstEvent::default();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("reading the body: {e:?}"))? {
            if first_event.0.is_none() && !chunk.is_empty() && request.is_watch() {
                first_event = FirstEvent(Some(started.elapsed()));
            }
            bytes.extend_from_slice(&chunk);
        }
        let bytes = decoded(bytes, &content_encoding)?;
        let text = without_generated_names(String::from_utf8_lossy(&bytes).replace(self.group, tested), request);
        let mut body = parse(&text, &content_type, request.is_watch() && code == 200);
        self.remember(code, &body);
        self.identities.rename(&mut body);
        let body = normalise(body, self.subject.plural);
        Ok(Answer {
            code,
            content_type,
            content_encoding,
            warnings,
            cache_control,
            audit_ids,
            retry_after,
            location,
            first_event,
            body,
        })
    }

    fn remember(&mut self, code: u16, body: &Value) {
        let metadata = &body["metadata"];
        let Some(rv) = metadata["resourceVersion"].as_str() else { return };
        let kind = body["kind"].as_str().unwrap_or_default();
        if kind.ends_with("List") {
            self.remembered.list_rv = rv.into();
            self.remembered.continue_token = metadata["continue"].as_str().unwrap_or_default().into();
        } else if kind != "Table" {
            self.remembered.rv = rv.into();
            if let Some(uid) = metadata["uid"].as_str() {
                self.remembered.uid = uid.into();
            }
            if code == 201 {
                self.remembered.created_rv = rv.into();
            }
        }
    }
}

/// The body as sent, before its `Content-Encoding` (`gzip` or none; any other is an error).
fn decoded(bytes: Vec<u8>, content_encoding: &str) -> Result<Vec<u8>, String> {
    match content_encoding {
        // A gzipped stream that ended before its first member (a watch that sent nothing).
        _ if bytes.is_empty() => Ok(bytes),
        "" => Ok(bytes),
        "gzip" => {
            let mut text = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(&bytes[..]), &mut text)
                .map_err(|e| format!("a body with Content-Encoding gzip that gunzip refuses: {e}"))?;
            Ok(text)
        }
        other => Err(format!("a body with Content-Encoding {other:?}")),
    }
}

/// `text` with every name generated from the request's `generateName` (the prefix and five
/// random characters) as `<prefix><generated>`, in messages and details too.
fn without_generated_names(text: String, request: &Request) -> String {
    let Some(prefix) = request.generate_name() else { return text };
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(&prefix) {
        let (before, after) = rest.split_at(at + prefix.len());
        out.push_str(before);
        let random = after.bytes().take(5).filter(|b| b.is_ascii_lowercase() || b.is_ascii_digit()).count();
        rest = if random == 5 {
            out.push_str("<generated>");
            &after[5..]
        } else {
            after
        };
    }
    out.push_str(rest);
    out
}

/// The body as a value: JSON, YAML, a watch's events as an array, or the text itself.
fn parse(text: &str, content_type: &str, watch: bool) -> Value {
    if text.is_empty() {
        return Value::Null;
    }
    if watch {
        let events = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        return events.map(|e| e.unwrap_or_else(|e| Value::String(format!("unparsable event: {e}")))).collect();
    }
    if content_type.contains("yaml")
        && let Ok(value) = serde_saphyr::from_str::<Value>(text)
    {
        return value;
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.trim_end().into()))
}

/// `value` with what must differ between two servers replaced by placeholders, and discovery
/// documents with the resource `plural` (and its subresources) only.
pub fn normalise(value: Value, plural: &str) -> Value {
    match value {
        Value::Object(map) => Value::Object(normalise_object(map, plural)),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| normalise(v, plural)).collect()),
        other => other,
    }
}

fn normalise_object(map: Map<String, Value>, plural: &str) -> Map<String, Value> {
    let table = map.get("kind").and_then(Value::as_str) == Some("Table");
    let age_column = table.then(|| age_column(&map)).flatten();
    let resource_list = map.get("kind").and_then(Value::as_str) == Some("APIResourceList");
    map.into_iter()
        // A CRD's lists carry `"continue": ""`, built-in lists leave it out: both mean no more pages.
        .filter(|(key, value)| !(key == "continue" && value.as_str() == Some("")))
        .map(|(key, value)| {
            let value = match (key.as_str(), value) {
                // What [`Identities`] did not name (of no object it knows): erased.
                ("uid", Value::String(s)) if !s.starts_with('<') => Value::String("<uid>".into()),
                ("creationTimestamp" | "deletionTimestamp", Value::String(s)) if !s.starts_with('<') => {
                    Value::String("<time>".into())
                }
                ("time", Value::String(_)) => Value::String("<time>".into()),
                ("resourceVersion", Value::String(s)) if !s.is_empty() && !s.starts_with('<') => {
                    Value::String("<rv>".into())
                }
                ("continue", Value::String(s)) if !s.is_empty() => Value::String("<continue>".into()),
                ("message", Value::String(s)) if s.starts_with(TOO_LARGE) => Value::String(without_current(s)),
                ("storageVersionHash", Value::String(_)) => Value::String("<hash>".into()),
                ("managedFields", Value::Array(entries)) => Value::Array(in_order_without_time(entries)),
                ("rows", Value::Array(rows)) if age_column.is_some() => {
                    Value::Array(rows.into_iter().map(|row| without_age(row, age_column.unwrap_or(0))).collect())
                }
                ("resources", Value::Array(resources)) if resource_list => Value::Array(
                    resources
                        .into_iter()
                        .filter(|r| r["name"].as_str().is_some_and(|n| n.split('/').next() == Some(plural)))
                        .collect(),
                ),
                (_, value) => value,
            };
            (key, normalise(value, plural))
        })
        .collect()
}

/// managedFields entries in the order both servers give them when their writes fall in the same
/// second: the kube-apiserver sorts by operation, then the second of each entry's time, then
/// manager, apiVersion and subresource. The times are placeholders here, and two servers under
/// load can see two writes in one second or in two, so the order by time is not comparable.
fn in_order_without_time(mut entries: Vec<Value>) -> Vec<Value> {
    let key = |entry: &Value| {
        ["operation", "manager", "apiVersion", "subresource"]
            .map(|field| entry[field].as_str().unwrap_or_default().to_string())
    };
    entries.sort_by_key(key);
    entries
}

/// How the answer to a read at a resourceVersion the server has not reached begins.
const TOO_LARGE: &str = "Timeout: Too large resource version: ";

/// The message of a read at a future resourceVersion without the server's current one.
fn without_current(message: String) -> String {
    match message.find(", current: ") {
        Some(at) => format!("{}, current: <rv>", &message[..at]),
        None => message,
    }
}

fn age_column(table: &Map<String, Value>) -> Option<usize> {
    table.get("columnDefinitions")?.as_array()?.iter().position(|c| c["name"] == "Age")
}

fn without_age(mut row: Value, column: usize) -> Value {
    if let Some(cell) = row["cells"].get_mut(column) {
        *cell = Value::String("<age>".into());
    }
    row
}

/// Where two values first differ, as a JSON path with both values, or `None` when they are equal.
pub fn first_difference(path: &str, ours: &Value, reference: &Value) -> Option<String> {
    match (ours, reference) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter().find_map(|k| {
                let (x, y) = (a.get(k).unwrap_or(&Value::Null), b.get(k).unwrap_or(&Value::Null));
                match (a.contains_key(k), b.contains_key(k)) {
                    (true, false) => Some(format!("{path}.{k}: only ours has it ({})", short(x))),
                    (false, true) => Some(format!("{path}.{k}: only the reference has it ({})", short(y))),
                    _ => first_difference(&format!("{path}.{k}"), x, y),
                }
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            a.iter().zip(b).enumerate().find_map(|(i, (x, y))| first_difference(&format!("{path}[{i}]"), x, y))
        }
        (a, b) if a == b => None,
        (a, b) => Some(format!("{path}: ours {} / reference {}", short(a), short(b))),
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 300 { format!("{}…", text.chars().take(300).collect::<String>()) } else { text }
}
