//! The `admission.k8s.io/v1` AdmissionReview a webhook is sent, and what its answer means, as the
//! kube-apiserver builds and reads them (k8s.io/apiserver `admission/plugin/webhook/request`:
//! `CreateV1AdmissionReview`, `VerifyAdmissionResponse`; `webhook/errors`: `ToStatusErr`).
//!
//! kube-core's admission types are made for webhook servers and do not fit the calling side: its
//! `GroupVersionResource` writes a stray `api_version` field into the request, and its
//! `AdmissionResponse` requires `status` and reads `patch` as an array of numbers where webhooks
//! send base64. The review is therefore written here, with k8s-openapi's `UserInfo` and
//! `Status` inside.

use base64::Engine;
use k8s_openapi::api::authentication::v1::UserInfo;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The API version of the reviews this server sends and accepts.
pub const API_VERSION: &str = "admission.k8s.io/v1";
/// The kind of a review.
pub const KIND: &str = "AdmissionReview";

/// A kind, fully qualified.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct GroupVersionKind<'a> {
    /// The API group; empty for the core group.
    pub group: &'a str,
    /// The version of the group.
    pub version: &'a str,
    /// The kind (e.g. `Widget`).
    pub kind: &'a str,
}

/// A resource, fully qualified.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct GroupVersionResource<'a> {
    /// The API group; empty for the core group.
    pub group: &'a str,
    /// The version of the group.
    pub version: &'a str,
    /// The resource (plural name, e.g. `widgets`).
    pub resource: &'a str,
}

/// What a webhook is asked about: `kind` and `resource` at the version the webhook matched,
/// whose objects it receives; `requestKind` and `requestResource` repeat them at the version
/// the request was made at.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    /// Names this call: the answer must carry it back.
    pub uid: &'a str,
    /// The fully-qualified type of the object being submitted.
    pub kind: GroupVersionKind<'a>,
    /// The fully-qualified resource being requested.
    pub resource: GroupVersionResource<'a>,
    /// The version the request was made at.
    pub request_version: &'a str,
    /// `status`, or empty.
    pub subresource: &'a str,
    /// The object's name; empty for a create that generates it.
    pub name: &'a str,
    /// The namespace associated with the request; empty for a cluster-scoped object.
    pub namespace: &'a str,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: &'static str,
    /// Who asks.
    pub user: &'a UserInfo,
    /// The object as it would be stored (`null` for a delete).
    pub object: Option<&'a Value>,
    /// The stored object (`null` for a create).
    pub old_object: Option<&'a Value>,
    /// Whether the changes will definitely not be stored (`dryRun`).
    pub dry_run: bool,
    /// The operation's options (`meta.k8s.io/v1` CreateOptions, UpdateOptions or DeleteOptions).
    pub options: Option<&'a Value>,
}

/// The wire form of a review request.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReviewOut<'a> {
    api_version: &'static str,
    kind: &'static str,
    request: RequestOut<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RequestOut<'a> {
    uid: &'a str,
    kind: GroupVersionKind<'a>,
    resource: GroupVersionResource<'a>,
    #[serde(skip_serializing_if = "str::is_empty")]
    sub_resource: &'a str,
    request_kind: GroupVersionKind<'a>,
    request_resource: GroupVersionResource<'a>,
    #[serde(skip_serializing_if = "str::is_empty")]
    request_sub_resource: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    namespace: &'a str,
    operation: &'static str,
    user_info: &'a UserInfo,
    object: Option<&'a Value>,
    old_object: Option<&'a Value>,
    dry_run: bool,
    options: Option<&'a Value>,
}

/// The request of a review, on the wire.
fn request_out<'a>(request: &Request<'a>) -> RequestOut<'a> {
    RequestOut {
        uid: request.uid,
        kind: request.kind,
        resource: request.resource,
        sub_resource: request.subresource,
        request_kind: GroupVersionKind { version: request.request_version, ..request.kind },
        request_resource: GroupVersionResource { version: request.request_version, ..request.resource },
        request_sub_resource: request.subresource,
        name: request.name,
        namespace: request.namespace,
        operation: request.operation,
        user_info: request.user,
        object: request.object,
        old_object: request.old_object,
        dry_run: request.dry_run,
        options: request.options,
    }
}

/// The JSON body sent to the webhook.
pub fn encode(request: &Request) -> Result<Vec<u8>, serde_json::Error> {
    crate::machinery::json::to_vec(&ReviewOut { api_version: API_VERSION, kind: KIND, request: request_out(request) })
}

/// The `request` variable of admission policies' expressions (k8s.io/apiserver's
/// `CreateAdmissionRequest`): a review's request without its objects.
pub fn policy_request(request: &Request) -> Value {
    let mut value = serde_json::to_value(request_out(request)).unwrap_or_default();
    if let Some(fields) = value.as_object_mut() {
        fields.remove("object");
        fields.remove("oldObject");
    }
    value
}

/// The wire form of a webhook's answer.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReviewIn {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    response: Option<ResponseIn>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResponseIn {
    #[serde(default)]
    uid: String,
    #[serde(default)]
    allowed: bool,
    status: Option<Status>,
    /// base64, as Go writes a `[]byte`.
    patch: Option<String>,
    patch_type: Option<String>,
    #[serde(default)]
    audit_annotations: BTreeMap<String, String>,
    #[serde(default)]
    warnings: Vec<String>,
}

/// What a webhook answered, checked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    /// Whether the webhook permitted the request.
    pub allowed: bool,
    /// Why it refused, when it did (`status`).
    pub result: Option<Status>,
    /// A mutating webhook's patch (a JSON patch document), decoded from base64.
    pub patch: Option<Vec<u8>>,
    /// Its type (only `JSONPatch` exists).
    pub patch_type: Option<String>,
    /// Added to the audit event, prefixed with the webhook's name.
    pub audit_annotations: BTreeMap<String, String>,
    /// Passed to the client as `Warning` headers.
    pub warnings: Vec<String>,
}

/// Reads and checks the answer to the review `uid` (`VerifyAdmissionResponse`): a review of this
/// version carrying a response for this very request; a mutating webhook's patch and patch type
/// come together; a validating webhook sends neither. The error is the kube-apiserver's words,
/// which the caller wraps as a failed call.
pub fn verify(uid: &str, mutating: bool, body: &[u8]) -> Result<Answer, String> {
    let review: ReviewIn = serde_json::from_slice(body).map_err(|e| format!("decoding the response: {e}"))?;
    let response = review.response.ok_or("webhook response was absent")?;
    if response.uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {:?}", response.uid));
    }
    if review.api_version != API_VERSION || review.kind != KIND {
        return Err(format!(
            "expected webhook response of {}, got {}",
            gvk_string(API_VERSION, KIND),
            gvk_string(&review.api_version, &review.kind)
        ));
    }
    let patch = match &response.patch {
        Some(text) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| format!("decoding response.patch: {e}"))?,
        ),
        None => None,
    }
    .filter(|p| !p.is_empty());
    match (mutating, &patch, &response.patch_type) {
        (true, Some(_), None) => return Err("webhook returned response.patch but not response.patchType".into()),
        (true, None, Some(_)) => return Err("webhook returned response.patchType but not response.patch".into()),
        (true, _, Some(kind)) if kind.is_empty() => {
            return Err(format!("webhook returned invalid response.patchType of {kind:?}"));
        }
        (false, Some(_), _) => return Err("validating webhook may not return response.patch".into()),
        (false, _, Some(_)) => return Err("validating webhook may not return response.patchType".into()),
        _ => {}
    }
    Ok(Answer {
        allowed: response.allowed,
        result: response.status,
        patch,
        patch_type: response.patch_type,
        audit_annotations: response.audit_annotations,
        warnings: response.warnings,
    })
}

/// `schema.GroupVersionKind.String()` of an `apiVersion` and `kind`: `admission.k8s.io/v1,
/// Kind=AdmissionReview`, or `/v1, Kind=…` for the core group.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// The `Status` a refusal answers the client with (`ToStatusErr`): the webhook's own, its code
/// at least 400 and its status `Failure`, its message (or else its reason) after `admission
/// webhook "<webhook>" denied the request: `. Nothing else is added: no reason or details that
/// the webhook did not give (as 1.20 and current Kubernetes both answer).
pub fn refusal(webhook: &str, result: Option<&Status>) -> Status {
    let mut status = result.cloned().unwrap_or_default();
    if status.code.unwrap_or_default() < 400 {
        status.code = Some(400);
    }
    if matches!(status.status.as_deref(), None | Some("" | "Success")) {
        status.status = Some("Failure".into());
    }
    let denied = format!("admission webhook {webhook:?} denied the request");
    let said = |text: &Option<String>| text.clone().filter(|t| !t.is_empty());
    status.message = Some(match said(&status.message).or_else(|| said(&status.reason)) {
        Some(text) => format!("{denied}: {text}"),
        None => format!("{denied} without explanation"),
    });
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user() -> UserInfo {
        UserInfo { username: Some("alice".into()), groups: Some(vec!["builders".into()]), ..Default::default() }
    }

    const WIDGET: GroupVersionKind = GroupVersionKind { group: "test.example.com", version: "v1alpha", kind: "Widget" };
    const WIDGETS: GroupVersionResource =
        GroupVersionResource { group: "test.example.com", version: "v1alpha", resource: "widgets" };

    fn create<'a>(user: &'a UserInfo, object: &'a Value, options: &'a Value) -> Request<'a> {
        Request {
            uid: "0d9c-uid",
            kind: WIDGET,
            resource: WIDGETS,
            request_version: "v1alpha",
            subresource: "",
            name: "dolly",
            namespace: "pasture",
            operation: "CREATE",
            user,
            object: Some(object),
            old_object: None,
            dry_run: false,
            options: Some(options),
        }
    }

    #[test]
    fn a_review_is_written_as_the_kube_apiserver_writes_it() {
        let (user, object) = (user(), json!({"kind": "Widget", "spec": {"weight": 120}}));
        let options = json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"});
        let sent: Value = serde_json::from_slice(&encode(&create(&user, &object, &options)).unwrap()).unwrap();
        let gvk = json!({"group": "test.example.com", "version": "v1alpha", "kind": "Widget"});
        let gvr = json!({"group": "test.example.com", "version": "v1alpha", "resource": "widgets"});
        assert_eq!(
            sent,
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
                "uid": "0d9c-uid", "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
                "name": "dolly", "namespace": "pasture", "operation": "CREATE",
                "userInfo": {"username": "alice", "groups": ["builders"]},
                "object": object, "oldObject": null, "dryRun": false, "options": options,
            }})
        );
        let status = Request { subresource: "status", operation: "UPDATE", ..create(&user, &object, &options) };
        let sent: Value = serde_json::from_slice(&encode(&status).unwrap()).unwrap();
        assert_eq!(
            (sent["request"]["subResource"].as_str(), sent["request"]["requestSubResource"].as_str()),
            (Some("status"), Some("status"))
        );
    }

    fn answer(response: Value) -> Vec<u8> {
        serde_json::to_vec(
            &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}),
        )
        .unwrap()
    }

    #[test]
    fn an_answer_is_read_with_its_patch_warnings_and_annotations() {
        let patch = br#"[{"op":"add","path":"/metadata/labels/checked","value":"yes"}]"#;
        let encoded = base64::engine::general_purpose::STANDARD.encode(patch);
        let body = answer(json!({"uid": "u", "allowed": true, "patch": encoded, "patchType": "JSONPatch",
            "warnings": ["heavy widget"], "auditAnnotations": {"checked": "yes"}}));
        let read = verify("u", true, &body).unwrap();
        assert!(read.allowed);
        assert_eq!(read.patch.as_deref(), Some(&patch[..]));
        assert_eq!(read.patch_type.as_deref(), Some("JSONPatch"));
        assert_eq!(read.warnings, ["heavy widget"]);
        assert_eq!(read.audit_annotations.get("checked").map(String::as_str), Some("yes"));
        let refused =
            verify("u", false, &answer(json!({"uid": "u", "allowed": false, "status": {"message": "no"}}))).unwrap();
        assert_eq!((refused.allowed, refused.result.and_then(|s| s.message)), (false, Some("no".into())));
    }

    #[test]
    fn malformed_answers_are_refused_in_the_kube_apiserver_s_words() {
        let cases = [
            (true, answer(json!({"uid": "other", "allowed": true})), r#"expected response.uid="u", got "other""#),
            (
                true,
                serde_json::to_vec(&json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
                    "response": {"uid": "u", "allowed": true}}))
                .unwrap(),
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview",
            ),
            (
                true,
                br#"{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}"#.to_vec(),
                "webhook response was absent",
            ),
            (
                true,
                answer(json!({"uid": "u", "allowed": true, "patch": "W10="})),
                "webhook returned response.patch but not response.patchType",
            ),
            (
                true,
                answer(json!({"uid": "u", "allowed": true, "patchType": "JSONPatch"})),
                "webhook returned response.patchType but not response.patch",
            ),
            (
                true,
                answer(json!({"uid": "u", "allowed": true, "patch": "W10=", "patchType": ""})),
                r#"webhook returned invalid response.patchType of """#,
            ),
            (
                false,
                answer(json!({"uid": "u", "allowed": true, "patch": "W10="})),
                "validating webhook may not return response.patch",
            ),
            (
                false,
                answer(json!({"uid": "u", "allowed": true, "patchType": "JSONPatch"})),
                "validating webhook may not return response.patchType",
            ),
        ];
        for (mutating, body, expected) in cases {
            assert_eq!(verify("u", mutating, &body).unwrap_err(), expected);
        }
        assert!(
            verify("u", true, &answer(json!({"uid": "u", "patch": "not base64!"})))
                .unwrap_err()
                .starts_with("decoding response.patch")
        );
        assert!(verify("u", true, b"<html>").unwrap_err().starts_with("decoding the response"));
    }

    #[test]
    fn a_refusal_is_the_webhooks_status_with_the_webhook_named() {
        let plain = refusal("weight.test.example.com", None);
        assert_eq!((plain.code, plain.status.as_deref()), (Some(400), Some("Failure")));
        assert_eq!(
            plain.message.as_deref(),
            Some(r#"admission webhook "weight.test.example.com" denied the request without explanation"#)
        );
        assert_eq!((plain.reason, plain.details), (None, None), "nothing is added");

        let said = Status { code: Some(422), message: Some("weight over 500".into()), ..Default::default() };
        let explained = refusal("w", Some(&said));
        assert_eq!(explained.code, Some(422));
        assert_eq!(explained.message.as_deref(), Some(r#"admission webhook "w" denied the request: weight over 500"#));

        let reason_only = Status {
            code: Some(200),
            reason: Some("TooHeavy".into()),
            status: Some("Success".into()),
            ..Default::default()
        };
        let by_reason = refusal("w", Some(&reason_only));
        assert_eq!(by_reason.message.as_deref(), Some(r#"admission webhook "w" denied the request: TooHeavy"#));
        assert_eq!(
            (by_reason.code, by_reason.status.as_deref(), by_reason.reason.as_deref()),
            (Some(400), Some("Failure"), Some("TooHeavy")),
            "a refusal is never a success"
        );
    }
}
