//! A `Status` written as the kube-apiserver writes one: its fields in the order of Go's
//! `metav1.Status` (`kind`, `apiVersion`, `metadata`, `status`, `message`, `reason`, `details`,
//! `code`; details and causes likewise) and empty ones left out as Go's `omitempty` leaves them.
//! k8s-openapi's own serialization orders fields alphabetically, which a JSON reader does not
//! see but a person reading an indented answer (`curl`) does.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, Status, StatusCause, StatusDetails};
use serde::Serialize;

fn empty(text: &Option<String>) -> bool {
    text.as_deref().is_none_or(str::is_empty)
}

fn zero(number: &Option<i32>) -> bool {
    number.is_none_or(|n| n == 0)
}

#[derive(Serialize)]
struct GoStatus<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    metadata: &'a ListMeta,
    #[serde(skip_serializing_if = "empty")]
    status: &'a Option<String>,
    #[serde(skip_serializing_if = "empty")]
    message: &'a Option<String>,
    #[serde(skip_serializing_if = "empty")]
    reason: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<GoDetails<'a>>,
    #[serde(skip_serializing_if = "zero")]
    code: &'a Option<i32>,
}

#[derive(Serialize)]
struct GoDetails<'a> {
    #[serde(skip_serializing_if = "empty")]
    name: &'a Option<String>,
    #[serde(skip_serializing_if = "empty")]
    group: &'a Option<String>,
    #[serde(skip_serializing_if = "empty")]
    kind: &'a Option<String>,
    #[serde(skip_serializing_if = "empty")]
    uid: &'a Option<String>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    causes: Vec<GoCause<'a>>,
    #[serde(rename = "retryAfterSeconds", skip_serializing_if = "zero")]
    retry_after_seconds: &'a Option<i32>,
}

#[derive(Serialize)]
struct GoCause<'a> {
    #[serde(skip_serializing_if = "empty")]
    reason: &'a Option<String>,
    #[serde(skip_serializing_if = "empty")]
    message: &'a Option<String>,
    #[serde(skip_serializing_if = "empty")]
    field: &'a Option<String>,
}

impl<'a> From<&'a StatusDetails> for GoDetails<'a> {
    fn from(d: &'a StatusDetails) -> Self {
        let causes = d.causes.iter().flatten().map(GoCause::from).collect();
        Self {
            name: &d.name,
            group: &d.group,
            kind: &d.kind,
            uid: &d.uid,
            causes,
            retry_after_seconds: &d.retry_after_seconds,
        }
    }
}

impl<'a> From<&'a StatusCause> for GoCause<'a> {
    fn from(c: &'a StatusCause) -> Self {
        Self { reason: &c.reason, message: &c.message, field: &c.field }
    }
}

/// `status` as compact JSON, in Go's order.
pub fn status_json(status: &Status) -> Vec<u8> {
    let go = GoStatus {
        kind: "Status",
        api_version: "v1",
        metadata: &status.metadata,
        status: &status.status,
        message: &status.message,
        reason: &status.reason,
        details: status.details.as_ref().map(GoDetails::from),
        code: &status.code,
    };
    // Serializing plain strings, integers and maps cannot fail.
    serde_json::to_vec(&go).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_is_written_in_gos_order_without_empty_fields() {
        let status = Status {
            code: Some(422),
            details: Some(StatusDetails {
                causes: Some(vec![StatusCause {
                    field: Some("spec.weight".into()),
                    message: Some("Required value".into()),
                    reason: Some("FieldValueRequired".into()),
                }]),
                group: Some("farm.example.com".into()),
                kind: Some("Llama".into()),
                name: Some("dolly".into()),
                retry_after_seconds: None,
                uid: Some(String::new()),
            }),
            message: Some("invalid".into()),
            metadata: ListMeta::default(),
            reason: Some("Invalid".into()),
            status: Some("Failure".into()),
        };
        assert_eq!(
            String::from_utf8(status_json(&status)).unwrap_or_default(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"invalid","reason":"Invalid","details":{"name":"dolly","group":"farm.example.com","kind":"Llama","causes":[{"reason":"FieldValueRequired","message":"Required value","field":"spec.weight"}]},"code":422}"#
        );
        let bare = Status { details: Some(StatusDetails::default()), ..Default::default() };
        assert_eq!(
            String::from_utf8(status_json(&bare)).unwrap_or_default(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"details":{}}"#
        );
    }
}
