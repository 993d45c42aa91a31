//! The reviewed tables of differences from the reference.
//!
//! [`ON_PURPOSE`]: farm-apiserver answers differently by design: kube-apiserver 1.20 (the
//! reference) predates a behaviour of current Kubernetes that farm-apiserver follows (the entry
//! names the version), or a CustomResourceDefinition behaves unlike a built-in resource and
//! farm-apiserver behaves as the built-in (and as servers on k8s.io/apiserver do).
//!
//! [`TO_FIX`]: differences the suite found that are defects of farm-apiserver, not yet fixed.
//! Each is a piece of work; the issue of this suite stays open while this table has entries.
//!
//! An entry matches only the requests and answers it explains; a difference no entry explains
//! fails the test.

use crate::exchange::{Answer, Request};
use serde_json::Value;

/// One allowed difference.
pub struct Allowed {
    /// What differs, for the report.
    pub name: &'static str,
    /// Why, and since which Kubernetes version the kube-apiserver does the same (when it does).
    pub reason: &'static str,
    /// Whether this entry explains the difference between the answers to `request`.
    pub applies: fn(request: &Request, farm: &Answer, reference: &Answer) -> bool,
}

fn message(answer: &Answer) -> &str {
    answer.body["message"].as_str().unwrap_or_default()
}

fn reason(answer: &Answer) -> &str {
    answer.body["reason"].as_str().unwrap_or_default()
}

/// A `Status` body without its `message` and its causes' (an object's own fields called
/// `message`, such as a condition's, stay).
fn without_messages(value: &Value) -> Value {
    let mut value = value.clone();
    if value["kind"] == "Status" {
        if let Some(map) = value.as_object_mut() {
            map.remove("message");
        }
        for cause in value["details"]["causes"].as_array_mut().into_iter().flatten() {
            if let Some(cause) = cause.as_object_mut() {
                cause.remove("message");
            }
        }
    }
    value
}

/// A cause without its message.
fn cause_without_message(cause: &Value) -> Value {
    let mut cause = cause.clone();
    if let Some(map) = cause.as_object_mut() {
        map.remove("message");
    }
    cause
}

/// The causes of a `Status` answer, as they are (none for another answer).
fn causes_of(answer: &Answer) -> Vec<Value> {
    answer.body["details"]["causes"].as_array().cloned().unwrap_or_default()
}

/// The causes of a `Status` answer without their messages, leaving out those `skip` picks.
fn causes_without_messages(answer: &Answer, skip: impl Fn(&Value) -> bool) -> Vec<Value> {
    causes_of(answer).iter().filter(|c| !skip(c)).map(cause_without_message).collect()
}

/// The two answers are the same but for the wording of their messages.
fn only_wording(farm: &Answer, reference: &Answer) -> bool {
    farm.code == reference.code
        && farm.content_type == reference.content_type
        && farm.warnings == reference.warnings
        && without_messages(&farm.body) == without_messages(&reference.body)
}

/// Whether the request's query has `name`.
fn has_param(request: &Request, name: &str) -> bool {
    request.query.split('&').any(|p| p.split('=').next() == Some(name))
}

fn farm_warns_of_unknown_fields_only(farm: &Answer, reference: &Answer) -> bool {
    !farm.warnings.is_empty()
        && farm.warnings.iter().all(|w| w.contains("unknown field"))
        && reference.warnings.is_empty()
        && Answer { warnings: Vec::new(), ..farm.clone() } == *reference
}

fn text(answer: &Answer) -> String {
    answer.body.to_string()
}

/// Both answers are watches whose events are the same but for their order.
fn same_events_in_another_order(request: &Request, farm: &Answer, reference: &Answer) -> bool {
    let sorted = |answer: &Answer| {
        let mut events: Vec<String> = answer.body.as_array().into_iter().flatten().map(Value::to_string).collect();
        events.sort();
        events
    };
    request.is_watch() && farm.code == reference.code && sorted(farm) == sorted(reference)
}

/// `value` without any `managedFields` member, at any depth (items of lists, objects of events).
fn without_managed_fields(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "managedFields")
                .map(|(k, v)| (k.clone(), without_managed_fields(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_managed_fields).collect()),
        other => other.clone(),
    }
}

/// Both answers are lists whose items are the same but for their order.
fn same_items_in_another_order(farm: &Answer, reference: &Answer) -> bool {
    let sorted = |answer: &Answer| {
        let mut items: Vec<String> =
            answer.body["items"].as_array().into_iter().flatten().map(Value::to_string).collect();
        items.sort();
        items
    };
    let without_items = |answer: &Answer| {
        let mut body = answer.body.clone();
        if let Some(map) = body.as_object_mut() {
            map.remove("items");
        }
        body
    };
    farm.code == reference.code && without_items(farm) == without_items(reference) && sorted(farm) == sorted(reference)
}

pub const ON_PURPOSE: &[Allowed] = &[
    Allowed {
        name: "the order of a list served from the watch cache",
        reason: "kube-apiserver 1.20 serves a list with resourceVersion=0 or NotOlderThan from its watch cache in no order; current Kubernetes' B-tree watch cache (1.32), like etcd and farm-apiserver, in key order.",
        applies: |request, farm, reference| {
            has_param(request, "resourceVersion") && same_items_in_another_order(farm, reference)
        },
    },
    Allowed {
        name: "the order of a watch's initial ADDED events",
        reason: "A watch without a resourceVersion starts with an ADDED event per object, in no promised order: the kube-apiserver's watch cache sends them in its own; farm-apiserver in key order.",
        applies: same_events_in_another_order,
    },
    Allowed {
        name: "the wording of an error message (code, reason, details and causes equal)",
        reason: "Parse errors name their cause in Go's words in the reference (`strconv.ParseInt: parsing \"x\": invalid syntax`, json-iterator's byte offsets, `unable to parse requirement: found ''`); farm-apiserver says the same in its own. Clients act on the code, reason and causes' fields, never on this text.",
        applies: |_, farm, reference| only_wording(farm, reference),
    },
    Allowed {
        name: "a 400 for a body that is not a Llama, where the reference's decoder words it differently",
        reason: "Both refuse the body as BadRequest; the reference's message comes from its generic decoder (`couldn't get version/kind; json parse error: ...`), farm-apiserver's from its typed one.",
        applies: |_, farm, reference| {
            farm.code == 400
                && reference.code == 400
                && reason(farm) == "BadRequest"
                && reason(reference) == "BadRequest"
        },
    },
    Allowed {
        name: "Warning headers for unknown fields",
        reason: "Kubernetes 1.27 made fieldValidation=Warn the default: unknown and duplicate fields are dropped with a Warning header. 1.20 drops them silently.",
        applies: |_, farm, reference| farm_warns_of_unknown_fields_only(farm, reference),
    },
    Allowed {
        name: "the fieldValidation parameter",
        reason: "fieldValidation (Ignore, Warn, Strict) is Kubernetes 1.25 (beta) / 1.27 (GA); 1.20 ignores the parameter.",
        applies: |request, _, _| has_param(request, "fieldValidation"),
    },
    Allowed {
        name: "sendInitialEvents",
        reason: "Watch lists (sendInitialEvents with resourceVersionMatch=NotOlderThan) are Kubernetes 1.27 (alpha); 1.20 ignores the parameter and refuses resourceVersionMatch on a watch.",
        applies: |request, _, _| has_param(request, "sendInitialEvents"),
    },
    Allowed {
        name: "selectable field spec.color",
        reason: "CRD selectableFields are Kubernetes 1.30 (1.32 GA); farm-apiserver declares spec.color selectable, which 1.20 cannot.",
        applies: |request, _, _| request.query.contains("spec.color"),
    },
    Allowed {
        name: "managedFields of status and subresource",
        reason: "Kubernetes 1.22 (reset fields) stopped recording in managedFields what a write of the main resource dropped from the status, and added `subresource` to the entries of status writes; 1.20 does neither.",
        applies: |request, farm, reference| {
            let (f, r) = (text(farm), text(reference));
            let status_fields =
                request.path.ends_with("/status") || r.contains("\"f:status\"") || f.contains("\"subresource\"");
            status_fields
                && farm.code == reference.code
                && without_managed_fields(&farm.body) == without_managed_fields(&reference.body)
        },
    },
    Allowed {
        name: "an apply of the status ignores the spec it carries",
        reason: "Since Kubernetes 1.22 (reset fields) the fields a write of /status cannot change are dropped before the apply, so they conflict with no one; 1.20 reports a conflict over them.",
        applies: |request, farm, reference| {
            request.path.ends_with("/status")
                && request.has_header("content-type", "apply-patch")
                && farm.code == 200
                && reference.code == 409
                && text(reference).contains("FieldManagerConflict")
        },
    },
    Allowed {
        name: "Content-Type of Table and metadata-only answers",
        reason: "Current Kubernetes names what it sent in the Content-Type (`application/json;as=Table;v=v1;g=meta.k8s.io`); 1.20 wrote `application/json`.",
        applies: |_, farm, reference| {
            // 1.20's Name column still links the old page on names.
            let old_link = "http://kubernetes.io/docs/user-guide/identifiers#names";
            let new_link = "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
            // managedFields of Table rows' objects differ as the entry on managedFields says.
            let comparable = |answer: &Answer| without_managed_fields(&answer.body).to_string();
            farm.content_type.contains(";as=")
                && farm.content_type.split(';').next() == Some(reference.content_type.as_str())
                && farm.code == reference.code
                && comparable(farm) == comparable(reference).replace(old_link, new_link)
        },
    },
    Allowed {
        name: "paths and methods no resource serves",
        reason: "A CRD's group answers an unknown path with the text `404 page not found`, serves its discovery document to any method, treats a POST to an object or a PUT to a collection as a create or an update, and ignores path segments after a subresource. Built-in groups (and servers on k8s.io/apiserver, whose routes are go-restful's) answer a 404 or 405 Status, which farm-apiserver does.",
        applies: |request, farm, reference| {
            let no_such_path = message(farm) == "the server could not find the requested resource";
            farm.code == 405
                || (farm.code == 404 && reference.content_type.starts_with("text/plain"))
                || (farm.code == 404 && reference.code == 200 && request.path.contains("/status/"))
                || (farm.code == 404 && reference.code == 404 && no_such_path)
        },
    },
    Allowed {
        name: "protobuf",
        reason: "farm-apiserver reads and writes JSON and YAML only; a client offering protobuf also offers JSON (kubectl, client-go), and a body sent as protobuf is refused with 415.",
        applies: |request, _, _| request.headers.iter().any(|(_, v)| v.contains("protobuf")),
    },
    Allowed {
        name: "a kind or apiVersion other than the resource's",
        reason: "A built-in resource's decoder refuses a body of another kind or version as BadRequest (`the kind in the data (Alpaca) does not match the expected kind (Llama)`) before it looks the object up, and its patcher refuses such a patched object as an Invalid `patch` (422), as farm-apiserver does. A CRD decodes any kind: it first answers what else is wrong (404, a missing resourceVersion), then refuses the kind as Invalid (422, `kind: Invalid value`), and a write of its status keeps the stored kind.",
        applies: |request, farm, reference| {
            let refused_type =
                |text: &str| text.contains("does not match the expected") || text.contains("is missing in");
            let by_decoder = farm.code == 400 && refused_type(message(farm));
            let cause = &farm.body["details"]["causes"][0];
            let by_patcher =
                farm.code == 422 && cause["field"] == "patch" && cause["message"].as_str().is_some_and(refused_type);
            (by_decoder || by_patcher)
                && ((400..500).contains(&reference.code) || (request.path.ends_with("/status") && reference.code < 300))
        },
    },
    Allowed {
        name: "a JSON patch operation on the root",
        reason: "Kubernetes' evanphx/json-patch replaces the whole document at path \"\" since v4.12 (Kubernetes 1.23), as RFC 6902 says and farm-apiserver does (the result is then judged as any patched object); 1.20's v4.9 refused it as a missing key.",
        applies: |request, farm, reference| {
            request.has_header("content-type", "json-patch")
                && request.body_text().contains(r#""path": """#)
                && farm.code == 422
                && reference.code == 422
        },
    },
    Allowed {
        name: "an empty PartialObjectMetadataList",
        reason: "The kube-apiserver writes the nil slice of an empty metadata-only list as `\"items\": null` (every version so far); farm-apiserver writes `[]`, as for every other list. client-go and kube-rs read both as empty.",
        applies: |_, farm, reference| {
            let with_empty_items = |answer: &Answer| {
                let mut body = answer.body.clone();
                body["items"] = Value::Array(Vec::new());
                body
            };
            farm.body["kind"] == "PartialObjectMetadataList"
                && reference.body["items"].is_null()
                && with_empty_items(farm) == with_empty_items(reference)
        },
    },
    Allowed {
        name: "a limit with resourceVersion=0",
        reason: "The kube-apiserver serves a list at resourceVersion=0 from its watch cache and ignores its limit there (which the API conventions allow); farm-apiserver honours the limit and sends a continue token.",
        applies: |request, farm, reference| {
            let items = |answer: &Answer| answer.body["items"].as_array().cloned().unwrap_or_default();
            request.query.contains("resourceVersion=0")
                && has_param(request, "limit")
                && farm.code == 200
                && reference.code == 200
                && items(farm).len() < items(reference).len()
                && items(farm).iter().all(|item| items(reference).contains(item))
        },
    },
    Allowed {
        name: "a GET at resourceVersion=0 of an object just created",
        reason: "resourceVersion=0 accepts any state: the kube-apiserver serves it from its watch cache, which may not yet hold an object created a moment before (404); farm-apiserver's store answers its latest state.",
        applies: |request, farm, reference| {
            request.method == reqwest::Method::GET
                && request.query.split('&').any(|p| p == "resourceVersion=0")
                && farm.code == 200
                && reference.code == 404
        },
    },
    Allowed {
        name: "a watch from a resourceVersion before one server's window",
        reason: "A watch from an old resourceVersion gets 410 Expired once it is older than the server's window of events: the kube-apiserver's watch cache starts when the CRD is established, farm-apiserver's window holds the events since it started; both send 410 for what has left theirs.",
        applies: |request, farm, reference| {
            let expired = |answer: &Answer| answer.body[0]["object"]["code"] == 410;
            request.is_watch() && farm.code == 200 && reference.code == 200 && expired(reference) && !expired(farm)
        },
    },
    Allowed {
        name: "resourceVersionMatch=Exact at a future resourceVersion",
        reason: "kube-apiserver 1.20 passes etcd's `required revision is a future revision` on as a 500; farm-apiserver answers it as every read of a future resourceVersion, 504 `Timeout: Too large resource version`.",
        applies: |request, farm, reference| {
            request.query.contains("resourceVersionMatch=Exact")
                && farm.code == 504
                && reference.code == 500
                && message(reference).contains("future revision")
        },
    },
    Allowed {
        name: "an empty string where the schema wants a string",
        reason: "kube-apiserver 1.20 refuses an empty string (a condition's `message`, a `color`) as `null` (`must be of type string: \"null\"`), though the schema only asks for a string (and metav1.Condition says a message may be empty); later versions accept it, as farm-apiserver does.",
        applies: |request, farm, reference| {
            let empty_as_null = |cause: &Value| {
                cause["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Invalid value: \"null\": ") && m.contains("must be of type string"))
            };
            let causes = |answer: &Answer, skip: bool| causes_without_messages(answer, |c| skip && empty_as_null(c));
            // Whatever farm-apiserver answered (it may have found something else to refuse first)
            // when the empty string was all the reference refused.
            request.body_text().contains(r#":"""#)
                && reference.code == 422
                && causes(reference, true).len() < causes(reference, false).len()
                && (causes(reference, true).is_empty()
                    || (farm.code == 422 && causes(reference, true) == causes(farm, false)))
        },
    },
    Allowed {
        name: "bodies nested deeper than 128 levels",
        reason: "farm-apiserver refuses a body nested deeper than 128 arrays and objects with 400 (serde_json's limit, which keeps parsing, patching and dropping a body within a worker's stack); Go's decoder, which parses on growing goroutine stacks, allows 10,000. No Llama field nests deeper than 4 levels, so only bodies carrying deeply nested unknown fields, which both drop, are refused.",
        applies: |_, farm, _| farm.code == 400 && message(farm).contains("recursion limit exceeded"),
    },
    Allowed {
        name: "the same causes in another order",
        reason: "A CRD's schema validator walks an object's properties, and server-side apply its managers' conflicts, in Go's map order, which is random; farm-apiserver lists them in the schema's order and by manager. The causes (and the message listing them) are the same set.",
        applies: |_, farm, reference| {
            // The set of causes (repeated ones counted once), with or without their messages.
            let causes = |answer: &Answer, with_messages: bool| -> Vec<String> {
                let all = if with_messages { causes_of(answer) } else { causes_without_messages(answer, |_| false) };
                let mut set: Vec<String> = all.iter().map(Value::to_string).collect();
                set.sort();
                set.dedup();
                set
            };
            let without_causes = |answer: &Answer| {
                let mut body = without_messages(&answer.body);
                if let Some(details) = body.get_mut("details").and_then(Value::as_object_mut) {
                    details.remove("causes");
                }
                body
            };
            farm.code == reference.code
                && farm.code >= 400
                && !causes(farm, true).is_empty()
                && without_causes(farm) == without_causes(reference)
                && (causes(farm, true) == causes(reference, true) || causes(farm, false) == causes(reference, false))
        },
    },
    Allowed {
        name: "an apply the reference cannot type",
        reason: "kube-apiserver 1.20 answers an apply carrying a field its schema does not declare, or a status that is not an object, with a 500 (`failed to create typed patch object`). farm-apiserver applies it as its other writes take such a body: an unknown field is dropped with a Warning (fieldValidation=Warn, Kubernetes 1.27) and the status, which a write of the object resets (Kubernetes 1.22), is not applied.",
        applies: |request, farm, reference| {
            request.has_header("content-type", "apply-patch")
                && reference.code == 500
                && message(reference).contains("failed to create typed patch object")
                && farm.code < 300
        },
    },
    Allowed {
        name: "a null label value in an apply configuration",
        reason: "kube-apiserver 1.20's server-side apply stores a label applied as `null` with an empty value, owned by no one and not validated; farm-apiserver refuses the configuration (400: a label's value is a string), as it cannot tell what the applier meant to own.",
        applies: |request, farm, _| {
            request.has_header("content-type", "apply-patch")
                && farm.code == 400
                && message(farm).contains("metadata.labels.")
                && message(farm).contains("invalid type: null")
        },
    },
    Allowed {
        name: "the order of verbs in discovery",
        reason: "k8s.io/apiserver lists a resource's verbs sorted (as for every built-in resource); the CRD handler lists them in its own order.",
        applies: |_, farm, reference| {
            let sorted_verbs = |answer: &Answer| {
                let mut body = answer.body.clone();
                for resource in body["resources"].as_array_mut().into_iter().flatten() {
                    if let Some(verbs) = resource["verbs"].as_array_mut() {
                        verbs.sort_by_key(Value::to_string);
                    }
                }
                body
            };
            farm.body["kind"] == "APIResourceList"
                && farm.code == reference.code
                && sorted_verbs(farm) == sorted_verbs(reference)
        },
    },
    Allowed {
        name: "a CRD's metadata causes, repeated",
        reason: "A CRD's update validates the object's metadata in more than one place (its strategy, its schema validator, the generic store), and each adds the same cause; a built-in resource, like farm-apiserver, lists each cause once.",
        applies: |_, farm, reference| {
            let causes = |answer: &Answer| -> Vec<Value> {
                let mut seen = Vec::new();
                for cause in causes_without_messages(answer, |_| false) {
                    if !seen.contains(&cause) {
                        seen.push(cause);
                    }
                }
                seen
            };
            let count = |answer: &Answer| causes_of(answer).len();
            farm.code == 422
                && reference.code == 422
                && count(reference) > count(farm)
                && causes(farm) == causes(reference)
                && count(farm) == causes(farm).len()
        },
    },
    Allowed {
        name: "a client's mistake that the reference answers with 500",
        reason: "kube-apiserver 1.20 answers some malformed requests (resourceVersion=bogus, a DeleteOptions body of another kind, a merge patch that is `null`, an apply that does not match the schema) with a 500 InternalError; farm-apiserver answers the client's mistake with a 4xx.",
        applies: |_, farm, reference| reference.code == 500 && (400..500).contains(&farm.code),
    },
    Allowed {
        name: "a full last page without a continue token",
        reason: "The kube-apiserver fills a page from etcd and sends a continue token whenever keys remain after it, even when none of them matches the selector (the next page is then empty); farm-apiserver sends none when nothing after the page matches. Clients follow a token until there is none, so both end the same.",
        applies: |request, farm, reference| {
            let without_continue = |answer: &Answer| {
                let mut body = answer.body.clone();
                if let Some(metadata) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                    metadata.remove("continue");
                    metadata.remove("remainingItemCount");
                }
                body
            };
            has_param(request, "limit")
                && farm.body["metadata"].get("continue").is_none()
                && reference.body["metadata"].get("continue").is_some()
                && without_continue(farm) == without_continue(reference)
        },
    },
    Allowed {
        name: "DELETE answers the deleted object",
        reason: "farm-apiserver answers a delete with the deleted object and the resourceVersion of its deletion, as the kube-apiserver does for Pods and Services (ReturnDeletedObject), so a client can match its delete with the watch's DELETED event; for a CRD (and ConfigMaps) it answers a `Success` Status. kubectl, client-go and kube-rs (`Either<K, Status>`) accept both.",
        applies: |_, farm, reference| {
            reference.body["kind"] == "Status" && reference.body["status"] == "Success" && farm.body["kind"] == "Llama"
        },
    },
    Allowed {
        name: "managedFields kept through a write carrying an untypable status",
        reason: "kube-apiserver 1.20 clears every managedFields entry of an object when a write carries a value its schema cannot type (a status that is not an object, which the write drops anyway); farm-apiserver keeps them, as later versions do.",
        applies: |_, farm, reference| {
            reference.body["metadata"].get("managedFields").is_none()
                && farm.body["metadata"].get("managedFields").is_some()
                && without_managed_fields(&farm.body) == without_managed_fields(&reference.body)
        },
    },
    Allowed {
        name: "export=true",
        reason: "The `export` parameter was removed in Kubernetes 1.21 (deprecated since 1.14); 1.20 still strips creationTimestamp for it.",
        applies: |request, _, _| has_param(request, "export"),
    },
    Allowed {
        name: "null for a field",
        reason: "A built-in resource reads `\"color\": null` as an unset field (a required one is then missing); a 1.20 CRD refuses a null for a field its schema does not make nullable as being of type null.",
        applies: |_, farm, reference| {
            let refuses_null = |cause: &Value| {
                cause["message"].as_str().is_some_and(|m| m.contains("must be of type") && m.contains("\"null\""))
            };
            let causes =
                |answer: &Answer, skip_nulls: bool| causes_without_messages(answer, |c| skip_nulls && refuses_null(c));
            let only_nulls_refused = farm.code < 300
                && reference.code == 422
                && message(reference).contains("must be of type")
                && message(reference).contains("\"null\"");
            let other_causes_equal = farm.code == 422
                && reference.code == 422
                && causes(reference, false).len() > causes(farm, false).len()
                && causes(reference, true) == causes(farm, false);
            // A required field sent as null: missing to farm-apiserver, of type null to the CRD.
            let field_reason = |c: &Value| (c["field"].clone(), c["reason"].clone());
            let required_not_null = farm.code == 422
                && reference.code == 422
                && causes_of(farm).len() == causes_of(reference).len()
                && causes_of(farm).iter().zip(causes_of(reference)).all(|(f, r)| {
                    field_reason(f) == field_reason(&r)
                        || (f["field"] == r["field"] && f["reason"] == "FieldValueRequired" && refuses_null(&r))
                });
            only_nulls_refused || other_causes_equal || required_not_null
        },
    },
    Allowed {
        name: "integers beyond 2^53 in a number field",
        reason: "The schema says `number` (a double): farm-apiserver keeps what a float64 keeps, as a built-in float64 field does; a CRD keeps a JSON integer as an int64 exactly.",
        applies: |_, farm, reference| {
            text(farm).contains("9223372036854775808") && text(reference).contains("9223372036854775807")
        },
    },
];

/// Labels of hand-written requests whose difference is a defect still to fix (see the note of
/// each group).
const TO_FIX_LABELS: &[(&str, &[&str])] = &[];

/// Known defects that generated requests meet too, recognised by their answers.
pub const TO_FIX: &[Allowed] = &[];

/// The label groups of [`TO_FIX_LABELS`] none of whose requests differed in a run that
/// found `seen`: fixed, or now explained by an entry of [`ON_PURPOSE`]; to be removed.
pub fn no_longer_seen(seen: &std::collections::BTreeMap<&'static str, usize>) -> Vec<&'static str> {
    TO_FIX_LABELS.iter().map(|(name, _)| *name).filter(|name| !seen.contains_key(name)).collect()
}

/// Whether `request` and its answers show a known defect; its name.
pub fn to_fix(request: &Request, farm: &Answer, reference: &Answer) -> Option<&'static str> {
    let by_label = TO_FIX_LABELS.iter().find(|(_, labels)| labels.contains(&request.label.as_str()));
    by_label
        .map(|(name, _)| *name)
        .or_else(|| TO_FIX.iter().find(|a| (a.applies)(request, farm, reference)).map(|a| a.name))
}
