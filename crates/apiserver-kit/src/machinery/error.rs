//! The one error type of the API layer and its conversion to a `meta.k8s.io/v1` `Status` response.
//!
//! Every non-2xx answer the server gives goes through [`Error`], so clients always receive a
//! `Status` with `kind`, `apiVersion`, `status: Failure`, `message`, `reason`, `details` and `code`,
//! exactly as the kube-apiserver sends them (`k8s.io/apimachinery/pkg/api/errors`).

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, Status, StatusCause, StatusDetails};

/// `Result` with the API [`Error`] as its default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Names a resource in error messages the way the kube-apiserver does: `widgets.example.com`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupResource {
    /// API group, empty for the core group.
    pub group: &'static str,
    /// Plural resource name, e.g. `widgets`.
    pub resource: &'static str,
}

impl std::fmt::Display for GroupResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() { f.write_str(self.resource) } else { write!(f, "{}.{}", self.resource, self.group) }
    }
}

/// One invalid field, as carried by a 422 `Invalid` Status in `details.causes`.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// Path of the field, e.g. `spec.weight` or `metadata.labels`.
    pub field: String,
    /// Which kind of problem: mirrors `field.ErrorType` of apimachinery.
    pub kind: FieldErrorKind,
    /// The offending value rendered as the kube-apiserver renders it, when the kind shows one.
    pub value: Option<String>,
    /// Human explanation, e.g. `must be greater than 0`.
    pub detail: String,
}

/// The field error types of `k8s.io/apimachinery/pkg/util/validation/field`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// `Required value`
    Required,
    /// `Invalid value`
    Invalid,
    /// `Invalid value` of the wrong JSON type (`FieldValueTypeInvalid`)
    TypeInvalid,
    /// `Forbidden`
    Forbidden,
    /// `Unsupported value`
    NotSupported,
    /// `Too long`
    TooLong,
    /// `Duplicate value`
    Duplicate,
}

impl FieldErrorKind {
    fn reason(self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Invalid => "FieldValueInvalid",
            Self::TypeInvalid => "FieldValueTypeInvalid",
            Self::Forbidden => "FieldValueForbidden",
            Self::NotSupported => "FieldValueNotSupported",
            Self::TooLong => "FieldValueTooLong",
            Self::Duplicate => "FieldValueDuplicate",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::Forbidden => "Forbidden",
            Self::NotSupported => "Unsupported value",
            Self::TooLong => "Too long",
            Self::Duplicate => "Duplicate value",
        }
    }
}

impl FieldError {
    /// A field that must be set and is not.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self { field: field.into(), kind: FieldErrorKind::Required, value: None, detail: detail.into() }
    }

    /// A value that is present but wrong; `value` is shown as JSON (strings quoted).
    pub fn invalid(field: impl Into<String>, value: &serde_json::Value, detail: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            kind: FieldErrorKind::Invalid,
            value: Some(render_value(value)),
            detail: detail.into(),
        }
    }

    /// A value of the wrong type; `value` is shown as JSON (strings quoted).
    pub fn type_invalid(field: impl Into<String>, value: &serde_json::Value, detail: impl Into<String>) -> Self {
        Self { kind: FieldErrorKind::TypeInvalid, ..Self::invalid(field, value, detail) }
    }

    /// A change or value that is not allowed at all.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self { field: field.into(), kind: FieldErrorKind::Forbidden, value: None, detail: detail.into() }
    }

    /// A value outside an enumerated set.
    pub fn not_supported(field: impl Into<String>, value: &serde_json::Value, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        Self {
            field: field.into(),
            kind: FieldErrorKind::NotSupported,
            value: Some(render_value(value)),
            detail: format!("supported values: {}", list.join(", ")),
        }
    }

    /// An entry that repeats an earlier one; `value` is written as it is to be shown.
    pub fn duplicate(field: impl Into<String>, value: impl Into<String>) -> Self {
        Self { field: field.into(), kind: FieldErrorKind::Duplicate, value: Some(value.into()), detail: String::new() }
    }

    /// A value longer than allowed.
    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        Self {
            field: field.into(),
            kind: FieldErrorKind::TooLong,
            value: None,
            detail: format!("must have at most {max} bytes"),
        }
    }

    /// The message without the field path, as put in a Status cause.
    pub fn cause_message(&self) -> String {
        let mut out = self.kind.label().to_string();
        if let Some(value) = &self.value {
            out.push_str(": ");
            out.push_str(value);
        }
        if !self.detail.is_empty() {
            out.push_str(": ");
            out.push_str(&self.detail);
        }
        out
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.cause_message())
    }
}

/// Renders a JSON value as apimachinery's field errors print Go values: strings quoted, numbers bare.
fn render_value(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => go_quote(s),
        serde_json::Value::Null => "null".to_string(),
        serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        serde_json::Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), go_float),
        other => other.to_string(),
    }
}

/// A float64 as Go's `%v` prints it: its shortest digits, with an exponent of at least two
/// digits when it is below -4 or from 6 up (`-3`, `0.0001234`, `2.5e-07`, `1e+06`).
fn go_float(f: f64) -> String {
    let scientific = format!("{f:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..6).contains(&exponent) {
        return format!("{f}");
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.abs())
}

/// `text` quoted as Go's `%q` (`strconv.Quote`) quotes it ([`go_quote_bytes`]).
pub fn go_quote(text: &str) -> String {
    go_quote_bytes(text.as_bytes())
}

/// `bytes` quoted as Go's `strconv.Quote` quotes a string holding them: printable characters
/// (a single quote and combining marks included) as they are, `\n`-style escapes, `\xNN` for
/// other ASCII controls and for bytes that are not UTF-8, `\uNNNN` / `\UNNNNNNNN` for other
/// characters that do not print (Rust's notion of printable stands in for Go's
/// `unicode.IsPrint`).
pub fn go_quote_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        chunk.valid().chars().for_each(|c| push_go_quoted(&mut out, c));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('"');
    out
}

fn push_go_quoted(out: &mut String, c: char) {
    let escaped = match c {
        '"' => "\\\"",
        '\\' => "\\\\",
        '\u{7}' => "\\a",
        '\u{8}' => "\\b",
        '\u{c}' => "\\f",
        '\n' => "\\n",
        '\r' => "\\r",
        '\t' => "\\t",
        '\u{b}' => "\\v",
        _ => "",
    };
    if !escaped.is_empty() {
        out.push_str(escaped);
    } else if c == ' ' || c == '\'' || printable(c) {
        out.push(c);
    } else if (c as u32) < 0x80 {
        out.push_str(&format!("\\x{:02x}", c as u32));
    } else if (c as u32) < 0x10000 {
        out.push_str(&format!("\\u{:04x}", c as u32));
    } else {
        out.push_str(&format!("\\U{:08x}", c as u32));
    }
}

/// Whether `c` prints: `str::escape_debug` keeps it after another character (where it does not
/// escape combining marks, which Go prints).
fn printable(c: char) -> bool {
    let text: String = ['a', c].into_iter().collect();
    text.escape_debug().eq(text.chars())
}

/// A list of strings as Go's `%#v` prints a `[]string`: `[]string{"a", "b"}`.
pub fn go_string_slice<S: AsRef<str>>(values: impl IntoIterator<Item = S>) -> String {
    let quoted: Vec<String> = values.into_iter().map(|value| go_quote(value.as_ref())).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// Every failure the API can answer with. Each variant maps to one HTTP code and `Status.reason`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 400 `BadRequest`: a malformed request, body or parameter.
    #[error("{0}")]
    BadRequest(String),
    /// 401 `Unauthorized`: no acceptable credentials.
    #[error("Unauthorized")]
    Unauthorized,
    /// 403 `Forbidden`.
    #[error("{0}")]
    Forbidden(String),
    /// 403 `Forbidden` for a named object, as admission refuses it: `widgets.example.com
    /// "dolly" is forbidden: <why>`, with the resource in `details` and optional causes.
    #[error("{}", forbidden_object_message(resource, name, detail))]
    ForbiddenObject {
        /// The resource written.
        resource: GroupResource,
        /// The object's name, possibly empty (generateName).
        name: String,
        /// Why.
        detail: String,
        /// `details.causes`, e.g. `NamespaceTerminating`.
        causes: Vec<StatusCause>,
    },
    /// 404 `NotFound` for a named object.
    #[error("{resource} \"{name}\" not found")]
    NotFound {
        /// The resource looked up.
        resource: GroupResource,
        /// The object's name.
        name: String,
    },
    /// 404 `NotFound` for a path the server does not serve.
    #[error("the server could not find the requested resource")]
    PathNotFound,
    /// 405 `MethodNotAllowed`.
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    /// 406 `NotAcceptable`.
    #[error("{0}")]
    NotAcceptable(String),
    /// 409 `AlreadyExists`.
    #[error("{resource} \"{name}\" already exists")]
    AlreadyExists {
        /// The resource created.
        resource: GroupResource,
        /// The object's name.
        name: String,
    },
    /// 409 `Conflict`: optimistic concurrency or a precondition failed.
    #[error("Operation cannot be fulfilled on {resource} \"{name}\": {detail}")]
    Conflict {
        /// The resource written.
        resource: GroupResource,
        /// The object's name.
        name: String,
        /// Why, e.g. "the object has been modified; ...".
        detail: String,
    },
    /// 409 `Conflict` of a server-side apply: fields other managers own, one cause each.
    #[error("{message}")]
    ApplyConflict {
        /// "Apply failed with N conflicts: …".
        message: String,
        /// `FieldManagerConflict` causes naming the field and its manager.
        causes: Vec<StatusCause>,
    },
    /// 410 `Expired`.
    #[error("{0}")]
    Expired(String),
    /// 410 `Expired` for a continue token, carrying a token that continues inconsistently.
    #[error("{}", super::paging::EXPIRED_CONTINUE)]
    ExpiredContinue {
        /// The inconsistent-continuation token for `metadata.continue`.
        token: String,
    },
    /// 504 `Timeout`: a resourceVersion newer than the store reached within the wait.
    #[error("Timeout: Too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion {
        /// What the client asked for.
        requested: u64,
        /// The store's revision.
        current: u64,
    },
    /// 413 `RequestEntityTooLarge`.
    #[error("{0}")]
    TooLarge(String),
    /// 415 `UnsupportedMediaType`.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 431: the request's head (its path, query and headers) is larger than the server reads;
    /// named after the HTTP status, as 413's `RequestEntityTooLarge` is (apimachinery has no
    /// reason of its own for it).
    #[error("{0}")]
    HeadersTooLarge(String),
    /// 422 `Invalid`: every field error found, collected.
    #[error("{}", invalid_message(kind, group, name, causes))]
    Invalid {
        /// The object's kind, e.g. `Widget`.
        kind: &'static str,
        /// The kind's group.
        group: &'static str,
        /// The object's name, possibly empty.
        name: String,
        /// Every field error.
        causes: Vec<FieldError>,
    },
    /// 422 with no field detail and empty `details` (a JSON patch operation that cannot apply).
    #[error("{0}")]
    Unprocessable(String),
    /// 429 `TooManyRequests`.
    #[error("{message}")]
    TooManyRequests {
        /// Why.
        message: String,
        /// Seconds the client should wait.
        retry_after: u32,
    },
    /// 504 `Timeout`: the request took longer than the server's request timeout.
    #[error("Timeout: request did not complete within the allotted timeout")]
    Timeout,
    /// 500 `InternalError`.
    #[error("Internal error occurred: {0}")]
    Internal(String),
    /// A `Status` given whole, with its own code, reason, message and details: an admission
    /// webhook's refusal.
    #[error("{}", .0.message.as_deref().unwrap_or_default())]
    Refused(Box<Status>),
    /// 507 `InsufficientStorage`: the storage's quota is full (etcd's `NOSPACE` alarm); the
    /// message is etcd's, as the kube-apiserver passes it on.
    #[error("{0}")]
    InsufficientStorage(String),
    /// 503 `ServiceUnavailable` without Retry-After: the server was started without what the
    /// request needs, so waiting will not help (the message says what to change).
    #[error("{0}")]
    NotConfigured(String),
    /// 503 `ServiceUnavailable`.
    #[error("{message}")]
    Unavailable {
        /// Why.
        message: String,
        /// Seconds the client should wait.
        retry_after: u32,
    },
}

/// The HTTP code of a given `Status`: its own when it is an error code, else 500.
fn refused_code(status: &Status) -> StatusCode {
    let code = status.code.and_then(|c| u16::try_from(c).ok()).filter(|c| (400..600).contains(c));
    code.and_then(|c| StatusCode::from_u16(c).ok()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// The `Status.reason` the kube-apiserver gives an error of this code when nobody names one
/// (`StatusReasonForCode`), for the request log and metrics.
fn reason_of(code: StatusCode) -> &'static str {
    match code.as_u16() {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Gone",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        431 => "RequestHeaderFieldsTooLarge",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        507 => "InsufficientStorage",
        _ => "Unknown",
    }
}

fn forbidden_object_message(resource: &GroupResource, name: &str, detail: &str) -> String {
    if name.is_empty() {
        format!("{resource} is forbidden: {detail}")
    } else {
        format!("{resource} {name:?} is forbidden: {detail}")
    }
}

fn invalid_message(kind: &str, group: &str, name: &str, causes: &[FieldError]) -> String {
    let errs: Vec<String> = causes.iter().map(ToString::to_string).collect();
    let list = if errs.len() == 1 { errs[0].clone() } else { format!("[{}]", errs.join(", ")) };
    // As Go prints a `schema.GroupKind`: empty when the error names no kind (a patch's result).
    let kind = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
    format!("{kind} {name:?} is invalid: {list}")
}

impl Error {
    /// The HTTP status code.
    pub fn code(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) | Self::ForbiddenObject { .. } => StatusCode::FORBIDDEN,
            Self::NotFound { .. } | Self::PathNotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            Self::AlreadyExists { .. } | Self::Conflict { .. } | Self::ApplyConflict { .. } => StatusCode::CONFLICT,
            Self::Expired(_) | Self::ExpiredContinue { .. } => StatusCode::GONE,
            Self::TooLargeResourceVersion { .. } | Self::Timeout => StatusCode::GATEWAY_TIMEOUT,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::HeadersTooLarge(_) => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::Invalid { .. } | Self::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Unavailable { .. } | Self::NotConfigured(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::InsufficientStorage(_) => StatusCode::INSUFFICIENT_STORAGE,
            Self::Refused(status) => refused_code(status),
        }
    }

    /// `Status.reason`, one of apimachinery's `metav1.StatusReason` values.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::BadRequest(_) => "BadRequest",
            Self::Unauthorized => "Unauthorized",
            Self::Forbidden(_) | Self::ForbiddenObject { .. } => "Forbidden",
            Self::NotFound { .. } | Self::PathNotFound => "NotFound",
            Self::MethodNotAllowed => "MethodNotAllowed",
            Self::NotAcceptable(_) => "NotAcceptable",
            Self::AlreadyExists { .. } => "AlreadyExists",
            Self::Conflict { .. } | Self::ApplyConflict { .. } => "Conflict",
            Self::Expired(_) | Self::ExpiredContinue { .. } => "Expired",
            Self::TooLargeResourceVersion { .. } | Self::Timeout => "Timeout",
            Self::TooLarge(_) => "RequestEntityTooLarge",
            Self::UnsupportedMediaType(_) => "UnsupportedMediaType",
            Self::HeadersTooLarge(_) => "RequestHeaderFieldsTooLarge",
            Self::Invalid { .. } => "Invalid",
            Self::Unprocessable(_) => "Invalid",
            Self::TooManyRequests { .. } => "TooManyRequests",
            Self::Internal(_) => "InternalError",
            Self::Unavailable { .. } | Self::NotConfigured(_) => "ServiceUnavailable",
            Self::InsufficientStorage(_) => "InsufficientStorage",
            Self::Refused(status) => reason_of(refused_code(status)),
        }
    }

    fn retry_after(&self) -> Option<u32> {
        match self {
            Self::TooManyRequests { retry_after, .. } | Self::Unavailable { retry_after, .. } => Some(*retry_after),
            Self::TooLargeResourceVersion { .. } => Some(1),
            _ => None,
        }
    }

    fn details(&self) -> Option<StatusDetails> {
        match self {
            Self::NotFound { resource, name }
            | Self::AlreadyExists { resource, name }
            | Self::Conflict { resource, name, .. } => Some(StatusDetails {
                name: Some(name.clone()),
                group: (!resource.group.is_empty()).then(|| resource.group.to_string()),
                kind: Some(resource.resource.to_string()),
                ..Default::default()
            }),
            Self::ForbiddenObject { resource, name, causes, .. } => Some(StatusDetails {
                name: (!name.is_empty()).then(|| name.clone()),
                group: (!resource.group.is_empty()).then(|| resource.group.to_string()),
                kind: Some(resource.resource.to_string()),
                causes: (!causes.is_empty()).then(|| causes.clone()),
                ..Default::default()
            }),
            Self::Invalid { kind, group, name, causes } => Some(StatusDetails {
                // As Go's `omitempty`: options and nameless objects carry no name.
                name: (!name.is_empty()).then(|| name.clone()),
                group: (!group.is_empty()).then(|| group.to_string()),
                kind: (!kind.is_empty()).then(|| kind.to_string()),
                causes: Some(
                    causes
                        .iter()
                        .map(|c| StatusCause {
                            field: Some(c.field.clone()),
                            message: Some(c.cause_message()),
                            reason: Some(c.kind.reason().to_string()),
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            Self::ApplyConflict { causes, .. } => {
                Some(StatusDetails { causes: Some(causes.clone()), ..Default::default() })
            }
            Self::TooManyRequests { retry_after, .. } | Self::Unavailable { retry_after, .. } => {
                Some(StatusDetails { retry_after_seconds: Some(*retry_after as i32), ..Default::default() })
            }
            Self::Internal(message) => Some(StatusDetails {
                causes: Some(vec![StatusCause { message: Some(message.clone()), ..Default::default() }]),
                ..Default::default()
            }),
            Self::TooLargeResourceVersion { .. } => Some(StatusDetails {
                causes: Some(vec![StatusCause {
                    reason: Some("ResourceVersionTooLarge".into()),
                    message: Some("Too large resource version".into()),
                    ..Default::default()
                }]),
                retry_after_seconds: Some(1),
                ..Default::default()
            }),
            // A JSON patch that cannot apply: `details: {}`, as the kube-apiserver's generic 422.
            Self::PathNotFound | Self::MethodNotAllowed | Self::Unprocessable(_) => Some(StatusDetails::default()),
            _ => None,
        }
    }

    /// The `Status` object for this error.
    pub fn to_status(&self) -> Status {
        if let Self::Refused(status) = self {
            return Status { code: Some(i32::from(refused_code(status).as_u16())), ..(**status).clone() };
        }
        let mut status = failure_status(self.code(), self.reason(), self.to_string(), self.details());
        if let Self::ExpiredContinue { token } = self {
            status.metadata.continue_ = Some(token.clone());
        }
        status
    }
}

/// A `Status` with `status: Failure`; also used for the `ERROR` events of watches.
pub fn failure_status(code: StatusCode, reason: &str, message: String, details: Option<StatusDetails>) -> Status {
    Status {
        code: Some(i32::from(code.as_u16())),
        details,
        message: Some(message),
        metadata: ListMeta::default(),
        reason: Some(reason.to_string()),
        status: Some("Failure".to_string()),
    }
}

pub use super::status_json::status_json;

/// Why a request failed, attached to its response for the request log (`crate::observe`).
#[derive(Clone, Debug)]
pub struct Failure {
    /// The Status reason (`NotFound`, `Conflict`, …).
    pub reason: &'static str,
    /// The Status message.
    pub message: String,
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let code = self.code();
        let mut response = (code, status_json(&self.to_status())).into_response();
        response.extensions_mut().insert(Failure { reason: self.reason(), message: self.to_string() });
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(seconds) = self.retry_after() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_printed_as_go_prints_them() {
        // What `fmt.Printf("%v\n", f)` printed for each with Go 1.26.
        for (f, go) in [
            (2.5e-7, "2.5e-07"),
            (-0.5, "-0.5"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (1e21, "1e+21"),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (0.0001234, "0.0001234"),
            (314.265, "314.265"),
            (-3.0, "-3"),
            (123456.0, "123456"),
            (12345678901234567890.0, "1.2345678901234567e+19"),
        ] {
            assert_eq!(go_float(f), go, "{f}");
        }
    }

    #[test]
    fn strings_are_quoted_as_go_quotes_them() {
        for (text, quoted) in [
            ("plain é 寱", r#""plain é 寱""#),
            ("a\"b\\c\n\t", r#""a\"b\\c\n\t""#),
            ("\u{1b}\u{7f}", r#""\x1b\x7f""#),
            ("\u{94}\u{53cb5}", r#""\u0094\U00053cb5""#),
        ] {
            assert_eq!(go_quote(text), quoted, "{text:?}");
        }
    }

    #[test]
    fn invalid_message_lists_several_causes_in_brackets() {
        let err = Error::Invalid {
            kind: "Widget",
            group: "test.example.com",
            name: "dolly".into(),
            causes: vec![
                FieldError::invalid("spec.weight", &serde_json::json!(-1), "must be greater than 0"),
                FieldError::required("spec.height", ""),
            ],
        };
        assert_eq!(
            err.to_string(),
            "Widget.test.example.com \"dolly\" is invalid: [spec.weight: Invalid value: -1: must be greater than 0, spec.height: Required value]"
        );
        let status = err.to_status();
        assert_eq!(status.code, Some(422));
        let causes = status.details.and_then(|d| d.causes).unwrap_or_default();
        assert_eq!(causes[1].reason.as_deref(), Some("FieldValueRequired"));
    }

    #[test]
    fn single_cause_message_has_no_brackets_and_strings_are_quoted() {
        let err = Error::Invalid {
            kind: "Widget",
            group: "test.example.com",
            name: "Bad".into(),
            causes: vec![FieldError::invalid("metadata.name", &serde_json::json!("Bad"), "a lowercase name")],
        };
        assert_eq!(
            err.to_string(),
            "Widget.test.example.com \"Bad\" is invalid: metadata.name: Invalid value: \"Bad\": a lowercase name"
        );
    }

    #[test]
    fn status_json_carries_kind_and_api_version() {
        let body = status_json(&Error::PathNotFound.to_status());
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["kind"], "Status");
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["status"], "Failure");
        assert_eq!(v["reason"], "NotFound");
        assert_eq!(v["code"], 404);
    }
}
