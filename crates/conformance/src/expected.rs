//! What a write must have stored, computed from the object before it and the request alone,
//! for the writes the tested server made where the reference refused (there is then no stored
//! object of the reference's to compare with): the request's change (a create's or update's
//! body; a merge patch, a JSON patch or an apply configuration applied by `patch`, written
//! here from their specifications), less the fields the tested server warned of as unknown,
//! `null` members and the fields the write resets (the status, or all but the status for a
//! write of `status`); the metadata the server keeps (uid, creation time, generation, raised
//! when the object's content changed) and the managedFields the write leaves (`fields`).
//! What the server makes up is taken from its answer: a new object's uid, creation time and
//! name (for `generateName`), and the new resourceVersion of a write that changed the object
//! (one that changed nothing keeps the old one).

mod fields;
mod patch;

use crate::exchange::{Answer, Request};
use crate::subject::Subject;
use fields::{Entry, Fields};
use serde_json::{Value, json};

/// What a write is to: the version of its path, and the subresource (`status`) if any.
struct Target<'a> {
    version: &'a str,
    subresource: Option<&'static str>,
}

impl<'a> Target<'a> {
    fn of(subject: &'a Subject, request: &Request) -> Result<Self, String> {
        let version = if request.path.starts_with("{gv2}") { subject.versions[1] } else { subject.versions[0] };
        let status = request.path.strip_suffix("/status").filter(|p| subject.is_object_path(p));
        let subresource = status.map(|_| "status");
        let creates = request.method == reqwest::Method::POST && subject.is_collection_path(&request.path);
        if status.is_none() && !subject.is_object_path(&request.path) && !creates {
            return Err(format!("a write to {} is not a write of one object", request.path));
        }
        Ok(Self { version, subresource })
    }
}

/// The object `write` must have left stored (`None`: no object), given the object `before` it
/// (as the tested server answered it) and the tested server's `answer`; or why it cannot be
/// told.
pub fn stored(
    subject: &Subject,
    write: &Request,
    before: Option<&Value>,
    answer: &Answer,
) -> Result<Option<Value>, String> {
    let target = Target::of(subject, write)?;
    if write.method == reqwest::Method::DELETE {
        let finalizers = before.is_some_and(|b| b["metadata"]["finalizers"].as_array().is_some_and(|f| !f.is_empty()));
        return match before {
            Some(_) if finalizers => Err("a delete of an object with finalizers".into()),
            Some(_) => Ok(None),
            None => Err("a delete of no object".into()),
        };
    }
    let body = body_of(write).ok_or("a body that is neither JSON nor YAML")?;
    let live = before.cloned().unwrap_or_else(patch::nothing);
    let unknown = unknown_fields(&answer.warnings);
    let content_type = write.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("content-type"));
    let content_type = content_type.map_or("", |(_, v)| v.as_str());
    let writer = writer(subject, write, &target, content_type);
    let (content, applied) = match (write.method.as_str(), content_type) {
        ("POST" | "PUT", _) => (cleaned(&body, &unknown), None),
        ("PATCH", t) if t.starts_with("application/merge-patch+json") => (patch::merge_patch(&live, &body), None),
        ("PATCH", t) if t.starts_with("application/json-patch+json") => (patch::json_patch(&live, &body)?, None),
        ("PATCH", t) if t.starts_with("application/apply-patch+yaml") => {
            // A field applied as `null` is owned, and unset.
            let config = with_client_fields(&body, &unknown);
            let owned = fields::without_unowned(fields::fields_of(&config, false), target.subresource);
            let owned = owned.into_keys().collect();
            let writer = Entry { owned, ..writer.clone() };
            let mut merged = patch::apply_merge(&live, &config);
            for removed in fields::no_longer_applied(&Entry::all_of(before), &writer) {
                fields::remove(&mut merged, &removed);
            }
            (merged, Some(writer))
        }
        (method, content_type) => return Err(format!("a {method} of {content_type:?}")),
    };
    let content = cleaned(&content, &unknown);
    let mut object = with_kept_fields(subject, &target, before, content, answer)?;
    let old = owned_fields(before, &target);
    let new = owned_fields(Some(&object), &target);
    let entries = match applied {
        Some(applier) => fields::after_apply(Entry::all_of(before), applier, forced(write), &old, &new)?,
        None => fields::after_update(Entry::all_of(before), writer, &old, &new),
    };
    let entries: Vec<Value> = entries.iter().map(Entry::to_json).collect();
    object["metadata"]["managedFields"] = json!(entries);
    if entries.is_empty() {
        remove_member(&mut object["metadata"], "managedFields");
    }
    with_resource_version(&mut object, before, answer);
    Ok(Some(crate::exchange::normalise(object, subject.plural)))
}

/// The entry the write's manager writes, owning nothing yet.
fn writer(subject: &Subject, write: &Request, target: &Target, content_type: &str) -> Entry {
    let manager = write.query.split('&').find_map(|p| p.strip_prefix("fieldManager="));
    let applies = content_type.starts_with("application/apply-patch");
    Entry {
        manager: manager.unwrap_or("unknown").to_string(),
        operation: if applies { "Apply" } else { "Update" }.into(),
        api_version: subject.api_version(target.version),
        subresource: target.subresource.unwrap_or_default().into(),
        owned: Default::default(),
    }
}

fn forced(write: &Request) -> bool {
    write.query.split('&').any(|p| p == "force=true")
}

/// The fields of `object` its managers may own, for a write of `target`.
fn owned_fields(object: Option<&Value>, target: &Target) -> Fields {
    object.map_or_else(Fields::new, |o| fields::without_unowned(fields::fields_of(o, true), target.subresource))
}

/// `content` with what the server keeps or makes: the type, the name and namespace, the
/// metadata the server keeps, the reset fields of `before`, and the generation.
fn with_kept_fields(
    subject: &Subject,
    target: &Target,
    before: Option<&Value>,
    content: Value,
    answer: &Answer,
) -> Result<Value, String> {
    let mut object = match (target.subresource, before) {
        (Some(_), Some(before)) => {
            let mut object = before.clone();
            match content.get("status") {
                Some(status) => object["status"] = status.clone(),
                None => remove_member(&mut object, "status"),
            }
            object
        }
        (Some(_), None) => return Err("a write of the status of no object".into()),
        (None, _) => {
            let mut object = content;
            match before.and_then(|b| b.get("status")) {
                Some(status) => object["status"] = status.clone(),
                None => remove_member(&mut object, "status"),
            }
            object
        }
    };
    object["apiVersion"] = json!(subject.api_version(target.version));
    object["kind"] = json!(subject.kind);
    let made = &answer.body["metadata"];
    let kept = before.map_or(made, |b| &b["metadata"]);
    let metadata = &mut object["metadata"];
    if metadata.get("name").is_none() {
        metadata["name"] = made["name"].clone();
    }
    if subject.namespaced {
        metadata["namespace"] = made["namespace"].clone();
    }
    for field in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"] {
        match kept.get(field) {
            Some(value) => metadata[field] = value.clone(),
            None => remove_member(metadata, field),
        }
    }
    let generation = before.map_or(1, |b| {
        let raised = without(b, &["metadata", "status"]) != without(&object, &["metadata", "status"]);
        b["metadata"]["generation"].as_i64().unwrap_or(1) + i64::from(raised)
    });
    object["metadata"]["generation"] = json!(generation);
    Ok(object)
}

/// The resourceVersion the write leaves: the old one when it changed nothing, else the new one
/// of the tested server's answer (or a note that the answer kept the old one).
fn with_resource_version(object: &mut Value, before: Option<&Value>, answer: &Answer) {
    let version = |o: &Value| o["metadata"]["resourceVersion"].clone();
    let unchanged = before.is_some_and(|b| without(b, &["metadata.resourceVersion"]) == without(object, &[]));
    object["metadata"]["resourceVersion"] = match before {
        Some(before) if unchanged => version(before),
        Some(before) if version(before) == version(&answer.body) => json!("<a new resourceVersion>"),
        _ => version(&answer.body),
    };
}

/// `object` without the members `fields` names (`metadata`, or `metadata.resourceVersion`).
fn without(object: &Value, fields: &[&str]) -> Value {
    let mut object = crate::exchange::normalise(object.clone(), "");
    remove_member(&mut object["metadata"], "resourceVersion");
    for field in fields {
        match field.split_once('.') {
            Some((parent, name)) => remove_member(&mut object[parent], name),
            None => remove_member(&mut object, field),
        }
    }
    object
}

fn remove_member(value: &mut Value, name: &str) {
    if let Some(map) = value.as_object_mut() {
        map.remove(name);
    }
}

/// A body as the server reads it: what it keeps of a client's metadata (not the server's
/// fields, which a write cannot set, nor the resourceVersion and uid, which are
/// preconditions), a label or annotation sent as `null` read as an empty string (as Go reads
/// `null` into a string), `null` members unset, the fields named `unknown` dropped, and empty
/// lists and maps of the metadata left out (as Go's encoding leaves them).
fn cleaned(body: &Value, unknown: &[String]) -> Value {
    patch::without_nulls(&with_client_fields(body, unknown))
}

/// [`cleaned`] but for its `null` members.
fn with_client_fields(body: &Value, unknown: &[String]) -> Value {
    let mut body = body.clone();
    for field in unknown {
        let path: Vec<String> = field.split('.').map(|name| format!("f:{name}")).collect();
        fields::remove(&mut body, &path);
    }
    if let Some(metadata) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        for server in ["uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink"] {
            metadata.remove(server);
        }
        for texts in ["labels", "annotations"] {
            for value in metadata.get_mut(texts).and_then(Value::as_object_mut).into_iter().flat_map(|m| m.values_mut())
            {
                if value.is_null() {
                    *value = json!("");
                }
            }
        }
        metadata
            .retain(|_, v| !(v.as_array().is_some_and(Vec::is_empty) || v.as_object().is_some_and(|m| m.is_empty())));
        if metadata.get("namespace").is_some_and(|n| n == "") {
            metadata.remove("namespace");
        }
    }
    body
}

/// The field a Warning of an unknown field names (`299 - "unknown field \"spec.horns\""`, the
/// quotes of the warning's text escaped in the header).
pub fn unknown_field(warning: &str) -> Option<&str> {
    warning.split_once("unknown field \\\"")?.1.split("\\\"").next()
}

/// The fields the tested server's Warnings name as unknown (`spec.horns`).
fn unknown_fields(warnings: &[String]) -> Vec<String> {
    warnings.iter().filter_map(|w| unknown_field(w).map(String::from)).collect()
}

/// The body a request sent, read as JSON or YAML.
pub fn body_of(request: &Request) -> Option<Value> {
    let text = request.body_text();
    serde_json::from_str(&text).ok().or_else(|| serde_saphyr::from_str::<Value>(&text).ok())
}

/// Where `read` (the tested server's read of the object after the write) differs from what the
/// write must have stored.
pub fn difference(expected: &Option<Value>, read: &Answer) -> Option<String> {
    match expected {
        Some(expected) if read.code != 200 => Some(format!("read {}, where the object must be stored", read.code)),
        Some(expected) => crate::exchange::first_difference("stored", &read.body, expected),
        None if read.code == 404 => None,
        None => Some(format!("read {}, where no object must be stored", read.code)),
    }
}

#[cfg(test)]
mod tests;
