//! Decoding request bodies into typed objects, as the kube-apiserver decodes them.
//!
//! 1. The body is read with a 3 MiB limit (413 beyond it) and must be JSON or YAML (415
//!    otherwise; 400 when it does not parse).
//! 2. `apiVersion` and `kind` must name the resource, and `metadata` must decode (400). The
//!    body is prepared as Go reads it ([`prepare_body`]: `null` as the zero value, reset fields
//!    dropped). Steps 1 and 2 run before the stored object is looked up; an update and a patch
//!    run the next ones once it is read, after their preconditions (see `registry`).
//! 3. A check against the resource's schema, as for CRDs
//!    ([`crate::machinery::schema_validation`]): required fields, JSON types, bounds, enums,
//!    patterns, lengths and list uniqueness, every error collected into one 422 with field paths.
//! 4. Typed decoding; fields the type does not know are dropped, reported in `Warning` headers, or
//!    refused with 400 according to `fieldValidation`.

use super::query::FieldValidation;
use crate::machinery::error::{Error, FieldError, Result};
use crate::machinery::json_depth;
use crate::machinery::resource::ApiResource;
use crate::machinery::strategy::{Strategy, Subresource};
use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

/// The largest request body accepted, as the kube-apiserver's limit.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Reads a request body, refusing more than [`MAX_BODY_BYTES`] with 413.
pub async fn read_body(body: axum::body::Body) -> Result<Bytes> {
    read_body_within(body, MAX_BODY_BYTES).await
}

/// Reads a request body, refusing more than `limit` bytes with 413.
pub async fn read_body_within(body: axum::body::Body, limit: usize) -> Result<Bytes> {
    axum::body::to_bytes(body, limit).await.map_err(|err| {
        let inner = err.into_inner();
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(inner.as_ref());
        while let Some(e) = source {
            if e.is::<http_body_util::LengthLimitError>() {
                return Error::TooLarge(format!("Request entity too large: limit is {limit}"));
            }
            source = e.source();
        }
        Error::BadRequest(format!("unable to read the request body: {inner}"))
    })
}

/// The essence of a `Content-Type` header, lower-cased, without parameters.
pub fn media_type(headers: &http::HeaderMap) -> String {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// The media types a create, update or delete body may have, as for custom resources.
const ACCEPTED: &str = "application/json, application/yaml";

/// Parses a create, update or delete body by its `Content-Type`: JSON, or YAML read as
/// sigs.k8s.io/yaml reads it ([`super::yaml`]). A body without a `Content-Type` is read as JSON,
/// the kube-apiserver's first supported type (the official Python client sends its custom-object
/// creates so); another type is a 415, and a body that does not parse is a 400 naming the type
/// expected (`kind`), all in the kube-apiserver's words.
pub fn parse_body(headers: &http::HeaderMap, bytes: &[u8], kind: &str) -> Result<Value> {
    check_media_type(headers)?;
    if media_type(headers) == "application/yaml" { parse_yaml(bytes, kind) } else { parse_json(bytes, kind) }
}

/// [`parse_body`], and what the kube-apiserver's strict decoding says of the fields the body
/// repeats (`duplicate field "spec.weight"`; in YAML `line 4: key "weight" already set in map`),
/// which a write warns of or refuses by its `fieldValidation`.
pub fn parse_body_with_duplicates(headers: &http::HeaderMap, bytes: &[u8], kind: &str) -> Result<(Value, Vec<String>)> {
    check_media_type(headers)?;
    if media_type(headers) == "application/yaml" {
        return super::yaml::to_json_noting_duplicates(bytes, |err| unrecognized(kind, err));
    }
    let value = parse_json(bytes, kind)?;
    let repeated = crate::machinery::json_duplicates::duplicate_fields(bytes, &value);
    Ok((value, repeated.iter().map(|path| format!("duplicate field {path:?}")).collect()))
}

/// Refuses (415) a body that is neither JSON (or unlabelled) nor YAML.
pub fn check_media_type(headers: &http::HeaderMap) -> Result<()> {
    match media_type(headers).as_str() {
        "application/json" | "" | "application/yaml" => Ok(()),
        _ => Err(Error::UnsupportedMediaType(format!(
            "the body of the request was in an unknown format - accepted media types include: {ACCEPTED}"
        ))),
    }
}

/// Parses a JSON body that should hold a `kind`, 400 when it does not parse.
pub fn parse_json(bytes: &[u8], kind: &str) -> Result<Value> {
    json_from_slice(bytes).map_err(|err| unrecognized(kind, err.to_string()))
}

/// Parses JSON as Go's decoder reads it: an escaped UTF-16 surrogate without its partner
/// (`"\ud83e"`), which serde_json refuses, is U+FFFD, and a body may nest as deep as Go reads
/// ([`json_depth`]: what lies deeper than any stored field is emptied first).
pub fn json_from_slice(bytes: &[u8]) -> serde_json::Result<Value> {
    let bytes = &*json_depth::shallow(bytes).map_err(<serde_json::Error as serde::de::Error>::custom)?;
    serde_json::from_slice(bytes).or_else(|err| match lone_surrogates_replaced(bytes) {
        Some(repaired) => serde_json::from_slice(&repaired),
        None => Err(err),
    })
}

/// `bytes` with every `\uXXXX` escape of a surrogate that is not part of a pair replaced by
/// `\ufffd`; `None` when there is none.
fn lone_surrogates_replaced(bytes: &[u8]) -> Option<Vec<u8>> {
    let unit = |at: usize| {
        let digits = bytes.get(at..at + 6).filter(|e| e.starts_with(b"\\u"))?;
        u16::from_str_radix(std::str::from_utf8(&digits[2..]).ok()?, 16).ok()
    };
    let (high, low) = (0xD800..0xDC00, 0xDC00..0xE000);
    let mut out = Vec::with_capacity(bytes.len());
    let (mut i, mut in_string, mut changed) = (0, false, false);
    while i < bytes.len() {
        let step = match (in_string, bytes[i]) {
            (_, b'"') => {
                in_string = !in_string;
                1
            }
            (true, b'\\') => match unit(i) {
                Some(u) if high.contains(&u) && unit(i + 6).is_some_and(|l| low.contains(&l)) => 12,
                Some(u) if high.contains(&u) || low.contains(&u) => {
                    out.extend_from_slice(b"\\ufffd");
                    changed = true;
                    i += 6;
                    continue;
                }
                Some(_) => 6,
                None => 2,
            },
            _ => 1,
        };
        out.extend_from_slice(&bytes[i..(i + step).min(bytes.len())]);
        i += step;
    }
    changed.then_some(out)
}

/// Parses a YAML body that should hold a `kind`, 400 when it does not parse.
pub fn parse_yaml(bytes: &[u8], kind: &str) -> Result<Value> {
    super::yaml::to_json(bytes, |err| unrecognized(kind, err))
}

fn unrecognized(kind: &str, why: String) -> Error {
    Error::BadRequest(format!("the object provided is unrecognized (must be of type {kind}): {why}"))
}

/// A decoded object and the warnings its decoding produced.
#[derive(Debug)]
pub struct Decoded<K> {
    /// The object.
    pub object: K,
    /// `Warning` header texts (unknown fields under `fieldValidation=Warn`).
    pub warnings: Vec<String>,
}

fn cannot_handle<K: ApiResource>(why: impl std::fmt::Display) -> Error {
    let kind = K::info().kind;
    let version = K::version(&());
    Error::BadRequest(format!("{kind} in version \"{version}\" cannot be handled as a {kind}: {why}"))
}

fn excerpt(value: &Value) -> String {
    let text = value.to_string();
    text.chars().take(100).collect()
}

/// Metadata errors of a body whose other fields failed the structural check, so one 422 reports
/// everything wrong. `namespace` is the request's (used when the body names none).
fn metadata_errors(value: &Value, namespace: &str) -> Vec<FieldError> {
    let Some(raw) = value.get("metadata") else {
        return vec![FieldError::required("metadata.name", "name or generateName is required")];
    };
    let Ok(mut meta) = serde_json::from_value::<ObjectMeta>(raw.clone()) else {
        // Mistyped metadata is reported by typed decoding once the structural errors are fixed.
        return Vec::new();
    };
    if namespace.is_empty() {
        meta.namespace = None;
    } else if meta.namespace.as_deref().is_none_or(str::is_empty) {
        meta.namespace = Some(namespace.to_string());
    }
    if meta.name.as_deref().is_none_or(str::is_empty)
        && let Some(prefix) = meta.generate_name.as_deref().filter(|p| !p.is_empty())
    {
        // Validate the name a generated suffix would give.
        meta.name = Some(format!("{prefix}x"));
    }
    crate::machinery::validation::object_meta(&meta, !namespace.is_empty())
}

/// Refuses a body whose `kind` or `apiVersion` is missing or is not `K`'s, with the kube-apiserver's
/// messages.
fn check_type_meta<K: ApiResource>(map: &serde_json::Map<String, Value>, value: &Value) -> Result<()> {
    match map.get("kind") {
        Some(Value::String(kind)) if kind == K::info().kind => {}
        None | Some(Value::Null) => {
            return Err(Error::BadRequest(format!("Object 'Kind' is missing in '{}'", excerpt(value))));
        }
        Some(Value::String(kind)) if kind.is_empty() => {
            return Err(Error::BadRequest(format!("Object 'Kind' is missing in '{}'", excerpt(value))));
        }
        Some(other) => {
            let shown = other.as_str().map(str::to_string).unwrap_or_else(|| other.to_string());
            return Err(cannot_handle::<K>(format!(
                "the kind in the data ({shown}) does not match the expected kind ({})",
                K::info().kind
            )));
        }
    }
    let api_version = K::api_version(&());
    match map.get("apiVersion") {
        Some(Value::String(v)) if *v == api_version => {}
        None | Some(Value::Null) => {
            return Err(Error::BadRequest(format!("Object 'apiVersion' is missing in '{}'", excerpt(value))));
        }
        Some(other) => {
            let shown = other.as_str().map(str::to_string).unwrap_or_else(|| other.to_string());
            return Err(Error::BadRequest(format!(
                "the API version in the data ({shown}) does not match the expected API version ({api_version})"
            )));
        }
    }

    Ok(())
}

/// Steps 1 and 2 of the module documentation on a parsed body: an object naming `K`'s
/// `apiVersion` and `kind`. What the kube-apiserver's decoder refuses before admission runs.
pub fn check_kind<K: ApiResource>(value: &Value) -> Result<&serde_json::Map<String, Value>> {
    let Value::Object(map) = value else {
        return Err(cannot_handle::<K>(format!(
            "expected a JSON object, got {}",
            crate::machinery::schema_validation::json_type(value)
        )));
    };
    check_type_meta::<K>(map, value)?;
    Ok(map)
}

/// Refuses (400) a body whose `metadata` does not decode as `ObjectMeta`: the kube-apiserver's
/// decoder reads the metadata of every body, a custom resource's too, before it looks the object
/// up or validates anything else.
pub fn check_metadata<K: ApiResource>(value: &Value) -> Result<()> {
    let Some(metadata) = value.get("metadata").filter(|m| !m.is_null()) else { return Ok(()) };
    match serde_path_to_error::deserialize::<_, ObjectMeta>(metadata) {
        Ok(_) => Ok(()),
        Err(err) => {
            let path = err.path().to_string();
            Err(cannot_handle::<K>(format!("metadata.{path}: {}", err.into_inner())))
        }
    }
}

/// Refuses an apply configuration for an object that exists when its metadata does not decode
/// (400) or a field holds a value of the wrong JSON type for the schema (422, each such field a
/// cause), as the same configuration is refused when it creates the object and as an update or
/// merge patch is refused: the typed merge would otherwise drop `spec: 7` and answer 200. A
/// configuration is partial, so nothing else (required fields, bounds) is checked here.
pub fn check_applied_types<K: ApiResource>(config: &Value) -> Result<()> {
    check_metadata::<K>(config)?;
    let Some(map) = config.as_object() else { return Ok(()) };
    let schema = crate::machinery::resource::body_schema::<K>();
    let mut causes = Vec::new();
    for (name, property) in &schema.properties {
        if let Some(v) = map.get(name) {
            crate::machinery::schema_validation::check_types(name, v, property, &mut causes);
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    let name = map.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or_default();
    Err(Error::Invalid { kind: K::info().kind, group: K::info().group, name: name.to_string(), causes })
}

/// Prepares a body for decoding as Go's decoder and the kube-apiserver's write see it:
/// - drops the top-level fields a write of `subresource` resets from the stored object (the
///   status, for writes of the object itself) and that a body need not carry, so they are
///   neither validated nor decoded: the kube-apiserver resets them before it validates (a create
///   carrying an invalid status succeeds, without it);
/// - a missing or `null` metadata becomes an empty one (its missing name is then what is
///   reported), and a `null` label or annotation value an empty string, as Go decodes `null`
///   into a struct or a string (as its zero value).
pub fn prepare_body<K: Strategy>(value: &mut Value, subresource: Subresource) -> Vec<String> {
    let unknown = unknown_in_reset_fields::<K>(value, subresource);
    drop_reset_fields::<K>(value, subresource);
    metadata_map(value);
    null_labels_as_empty(value);
    unknown
}

/// What strict decoding says of the unknown fields inside the fields a write of `subresource`
/// resets (`unknown field "status.height"`): the kube-apiserver prunes the whole body as it
/// decodes it, before its strategy resets them.
fn unknown_in_reset_fields<K: Strategy>(value: &Value, subresource: Subresource) -> Vec<String> {
    let schema = crate::machinery::resource::body_schema::<K>();
    let mut unknown = Vec::new();
    for field in K::reset_fields(subresource) {
        if let (Some(v), Some(s)) = (value.get(*field), schema.properties.get(*field)) {
            crate::machinery::schema_validation::unknown_fields(field, v, s, &mut unknown);
        }
    }
    unknown.iter().map(|path| format!("unknown field {path:?}")).collect()
}

/// The metadata of a body, a missing or `null` one made empty first (as Go decodes `null` into
/// a struct); `None` when the body or its metadata is no map.
pub fn metadata_map(value: &mut Value) -> Option<&mut serde_json::Map<String, Value>> {
    let metadata = value.as_object_mut()?.entry("metadata").or_insert(Value::Null);
    if metadata.is_null() {
        *metadata = Value::Object(serde_json::Map::new());
    }
    metadata.as_object_mut()
}

/// Whether `value` has a `null` label or annotation value.
pub fn has_null_labels(value: &Value) -> bool {
    let metadata = &value["metadata"];
    ["labels", "annotations"]
        .iter()
        .filter_map(|field| metadata[*field].as_object())
        .any(|values| values.values().any(Value::is_null))
}

/// Every `null` label or annotation value of `value` as an empty string, as Go decodes `null`
/// into a string (its zero value).
pub fn null_labels_as_empty(value: &mut Value) {
    let Some(metadata) = value.get_mut("metadata") else { return };
    for field in ["labels", "annotations"] {
        let values = metadata.get_mut(field).and_then(Value::as_object_mut).into_iter().flat_map(|m| m.values_mut());
        for value in values.filter(|v| v.is_null()) {
            *value = Value::String(String::new());
        }
    }
}

/// Drops from `value` the top-level fields a write of `subresource` resets and that a body need
/// not carry (the status, for a write of the object itself).
pub fn drop_reset_fields<K: Strategy>(value: &mut Value, subresource: Subresource) {
    let schema = crate::machinery::resource::body_schema::<K>();
    if let Some(map) = value.as_object_mut() {
        for field in K::reset_fields(subresource).iter().filter(|f| !schema.required.contains(f)) {
            map.remove(*field);
        }
    }
}

/// Top-level members of an object: each a value, or `None` for none.
pub type Fields = Vec<(&'static str, Option<Value>)>;

/// `value` with `fields` in place of its own; `value` itself when that changes nothing.
pub fn with_fields(value: &Value, fields: Fields) -> std::borrow::Cow<'_, Value> {
    if fields.iter().all(|(name, field)| field.is_none() && value.get(*name).is_none()) {
        return std::borrow::Cow::Borrowed(value);
    }
    let mut value = value.clone();
    set_fields(&mut value, fields);
    std::borrow::Cow::Owned(value)
}

/// Puts `fields` in place of `value`'s own (removing those that are `None`).
pub fn set_fields(value: &mut Value, fields: Fields) {
    if let Some(members) = value.as_object_mut() {
        for (name, field) in fields {
            match field {
                Some(field) => members.insert(name.to_string(), field),
                None => members.remove(name),
            };
        }
    }
}

/// Empty finalizers, labels and annotations as none, as the kube-apiserver stores them (it sets
/// the finalizers it decided on, and sets none as none; a custom resource's decoder writes its
/// metadata back as the typed `ObjectMeta`, whose `omitempty` leaves empty maps out: seen on
/// 1.37.2, where a create with `labels: {}` stores and answers no labels).
fn drop_empty_metadata(meta: &mut ObjectMeta) {
    if meta.finalizers.as_ref().is_some_and(Vec::is_empty) {
        meta.finalizers = None;
    }
    if meta.labels.as_ref().is_some_and(|l| l.is_empty()) {
        meta.labels = None;
    }
    if meta.annotations.as_ref().is_some_and(|a| a.is_empty()) {
        meta.annotations = None;
    }
}

/// How a refusal of unknown fields under `fieldValidation=Strict` begins.
const STRICT_DECODING: &str = "strict decoding error:";

/// Decodes the result of a patch as [`decode_object`] does, except that a result that is not a
/// `K` (another kind, a mistyped field) is the 422 of the kube-apiserver's patcher, naming the
/// patched document as the invalid value of `patch`, unknown fields under `Strict` included
/// (`jsonPatcher.applyPatchToCurrentObject` since Kubernetes 1.25).
pub fn decode_patched<K: ApiResource>(
    value: &Value,
    namespace: &str,
    validation: (FieldValidation, &[String]),
    subresource: Subresource,
    old: Old<'_>,
) -> Result<Decoded<K>> {
    decode_body_over::<K>(value, namespace, validation, subresource, old).map_err(|error| as_patch_error(value, error))
}

/// [`check_kind`] and [`check_metadata`] on the result of a patch, refusing it as
/// [`decode_patched`] does.
pub fn check_patched_type<K: ApiResource>(value: &Value) -> Result<()> {
    check_kind::<K>(value)
        .map(drop)
        .and_then(|()| check_metadata::<K>(value))
        .map_err(|error| as_patch_error(value, error))
}

/// A decoding error of a patched `value` as the kube-apiserver's patcher reports it.
fn as_patch_error(value: &Value, error: Error) -> Error {
    match error {
        Error::BadRequest(message) => Error::Invalid {
            kind: "",
            group: "",
            name: String::new(),
            causes: vec![FieldError::invalid("patch", &Value::String(value.to_string()), message)],
        },
        other => other,
    }
}

/// Decodes a JSON value into `K`, applying the checks described in the module documentation.
/// `namespace` is the request's, used to validate metadata alongside structural errors.
pub fn decode_object<K: ApiResource>(
    value: &Value,
    namespace: &str,
    validation: FieldValidation,
) -> Result<Decoded<K>> {
    decode_write::<K>(value, namespace, validation, Subresource::Main)
}

/// Decodes the body of a write of `subresource` as [`decode_object`] does, except that a write
/// of the status reports no errors of the body's metadata: it keeps the stored metadata, which
/// the kube-apiserver's status strategies put in place before they validate.
pub fn decode_write<K: ApiResource>(
    value: &Value,
    namespace: &str,
    validation: FieldValidation,
    subresource: Subresource,
) -> Result<Decoded<K>> {
    decode_body::<K>(value, namespace, (validation, &[]), subresource)
}

/// [`decode_write`] of a body that repeats fields, which `duplicates` says (as
/// [`parse_body_with_duplicates`] gives them): each is warned of before the unknown fields, or
/// refused with them under `Strict`.
pub fn decode_body<K: ApiResource>(
    value: &Value,
    namespace: &str,
    validation: (FieldValidation, &[String]),
    subresource: Subresource,
) -> Result<Decoded<K>> {
    decode_body_over::<K>(value, namespace, validation, subresource, None)
}

/// The object an update replaces, at the version of the write, made when asked for: what the
/// validation rules of a body with schema errors compare with (transition rules, ratcheting).
pub type Old<'a> = Option<&'a dyn Fn() -> Result<Value>>;

/// [`decode_body`] of an update of `old`.
pub fn decode_body_over<K: ApiResource>(
    value: &Value,
    namespace: &str,
    (validation, duplicates): (FieldValidation, &[String]),
    subresource: Subresource,
    old: Old<'_>,
) -> Result<Decoded<K>> {
    // Decoded (and its unknown fields noted) before its kind is checked and it is validated, as
    // a custom resource's decoder prunes the body first: its warnings go out with a refusal too.
    let (object, mut unknown) = deserialize_noting_unknown::<K>(value);
    if object.is_err() {
        // Deserializing stopped at the first field it could not read: the schema names the
        // rest, as a custom resource's pruning does whatever the types of the other fields.
        for path in unknown_by_schema::<K>(value) {
            if !unknown.contains(&path) {
                unknown.push(path);
            }
        }
    }
    let unknown = unknown.iter().map(|p| format!("unknown field {p:?}"));
    let messages: Vec<String> = duplicates.iter().cloned().chain(unknown).collect();
    let kind_checked = check_kind::<K>(value);
    if validation == FieldValidation::Warn {
        super::warning_recorder::record(&decoder_warnings(value, &messages, kind_checked.is_ok()));
    }
    let map = kind_checked?;
    let errors = schema_errors::<K>(map);
    if !errors.is_empty() {
        let mut all = match subresource {
            Subresource::Status => Vec::new(),
            Subresource::Main => metadata_errors(value, namespace),
        };
        all.extend(errors);
        rules_beside_schema_errors::<K>(value, &mut all, old)?;
        let name =
            map.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or_default().to_string();
        return Err(Error::Invalid { kind: K::info().kind, group: K::info().group, name, causes: all });
    }
    let mut object = object?;
    drop_empty_metadata(object.meta_mut());
    match validation {
        FieldValidation::Strict if !messages.is_empty() => {
            Err(Error::BadRequest(format!("{STRICT_DECODING} {}", messages.join(", "))))
        }
        FieldValidation::Warn => Ok(Decoded { object, warnings: messages }),
        _ => Ok(Decoded { object, warnings: Vec::new() }),
    }
}

/// Adds to `errors` (a body's metadata and schema errors) those of `K`'s validation rules on the
/// body, as a custom resource's strategy runs them after its schema validation unless an error
/// blocks them ([`crate::validation_rules::not_checked`]); the failures ratcheting lets pass
/// are recorded as warnings.
fn rules_beside_schema_errors<K: ApiResource>(value: &Value, errors: &mut Vec<FieldError>, old: Old<'_>) -> Result<()> {
    let rules = crate::validation_rules::of::<K>();
    if rules.is_empty() {
        return Ok(());
    }
    if let Some(not_checked) = crate::validation_rules::not_checked(errors) {
        errors.push(not_checked);
        return Ok(());
    }
    let old = old.map(|old| old()).transpose()?;
    let outcome = rules.validate(value, old.as_ref());
    errors.extend(outcome.errors);
    super::warning_recorder::record(&outcome.warnings);
    Ok(())
}

/// Which of a body's `messages` (its duplicate and unknown fields) a custom resource's decoder
/// warns of, whatever refuses the body later: all of them when the body is of the resource's
/// kind and version (`of_the_kind`); of another, only those of its metadata (which it decodes as
/// `ObjectMeta` whatever the kind; the rest it prunes by no schema); none when the body is no
/// object, names no kind (nothing decoded it), or has `items` (read as a list, whose items it
/// prunes nothing of).
fn decoder_warnings(value: &Value, messages: &[String], of_the_kind: bool) -> Vec<String> {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or_default();
    if !value.is_object() || kind.is_empty() || value.get("items").is_some() {
        return Vec::new();
    }
    let of_metadata = |m: &&String| m.starts_with("unknown field \"metadata.");
    messages.iter().filter(|m| of_the_kind || of_metadata(m)).cloned().collect()
}

/// The paths of the fields of `value` (but its metadata's) that `K`'s schema does not declare.
fn unknown_by_schema<K: ApiResource>(value: &Value) -> Vec<String> {
    let schema = crate::machinery::resource::body_schema::<K>();
    let mut unknown = Vec::new();
    for (name, field) in value.as_object().into_iter().flatten() {
        match schema.properties.get(name) {
            Some(declared) => crate::machinery::schema_validation::unknown_fields(name, field, declared, &mut unknown),
            None if ["apiVersion", "kind", "metadata"].contains(&name.as_str()) => {}
            None => unknown.push(name.clone()),
        }
    }
    unknown
}

/// What `K`'s schema says is wrong with the fields of a body (`map`): required ones missing,
/// and each field's own errors.
fn schema_errors<K: ApiResource>(map: &serde_json::Map<String, Value>) -> Vec<FieldError> {
    let schema = crate::machinery::resource::body_schema::<K>();
    let mut errors = Vec::new();
    for &name in &schema.required {
        if map.get(name).is_none_or(Value::is_null) {
            errors.push(FieldError::required(name, ""));
        }
    }
    for (name, property) in &schema.properties {
        if let Some(v) = map.get(name) {
            crate::machinery::schema_validation::check(name, v, property, &mut errors);
        }
    }
    errors
}

/// `value` as a `K`, and the paths of the fields `K` does not have (but `apiVersion` and `kind`),
/// those found before a field that does not decode included.
fn deserialize_noting_unknown<K: ApiResource>(value: &Value) -> (Result<K>, Vec<String>) {
    let mut unknown = Vec::new();
    let mut record = |path: serde_ignored::Path<'_>| {
        let path = path.to_string();
        if path != "apiVersion" && path != "kind" {
            unknown.push(path);
        }
    };
    // A whole float (`12.0`) that the schema took as an integer decodes as one.
    let whole;
    let value = if crate::machinery::number::has_integral_floats(value) {
        let mut integers = value.clone();
        crate::machinery::number::integral_as_integers(&mut integers);
        whole = integers;
        &whole
    } else {
        value
    };
    let ignored = serde_ignored::Deserializer::new(value, &mut record);
    let object = serde_path_to_error::deserialize(ignored).map_err(|err| {
        let path = err.path().to_string();
        cannot_handle::<K>(format!("{path}: {}", err.into_inner()))
    });
    (object, unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_read_as_go_reads_them() {
        let read = |text: &str| json_from_slice(text.as_bytes()).unwrap();
        assert_eq!(read(r#"{"a":"x\ud83e"}"#), json!({"a": "x\u{fffd}"}));
        assert_eq!(read(r#"{"a":"\udc00\ud83e\u0041"}"#), json!({"a": "\u{fffd}\u{fffd}A"}));
        assert_eq!(read(r#"{"a":"\ud83e\udd99","\\ud83e":1}"#), json!({"a": "\u{1f999}", "\\ud83e": 1}));
        assert!(json_from_slice(br#"["\ud83e"#).is_err(), "still not JSON");
    }
    use crate::machinery::testing::Widget;
    use serde_json::json;

    fn body(spec: Value) -> Value {
        json!({"apiVersion": "test.example.com/v1", "kind": "Widget", "metadata": {"name": "dolly"}, "spec": spec})
    }

    #[test]
    fn a_good_body_decodes_without_warnings() {
        let d = decode_object::<Widget>(&body(json!({"size": 1, "color": "red"})), "default", FieldValidation::Strict)
            .unwrap();
        assert_eq!(d.object.spec.size, 1.0);
        assert!(d.warnings.is_empty());
    }

    #[test]
    fn missing_and_mistyped_fields_are_collected_into_one_422() {
        let err =
            decode_object::<Widget>(&body(json!({"size": "big", "color": 3})), "default", FieldValidation::Strict)
                .unwrap_err();
        let Error::Invalid { causes, .. } = &err else { panic!("{err:?}") };
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["spec.color", "spec.size"]);
        assert_eq!(
            causes[1].to_string(),
            "spec.size: Invalid value: \"string\": spec.size in body must be of type number: \"string\""
        );
        let err = decode_object::<Widget>(&body(json!({})), "default", FieldValidation::Strict).unwrap_err();
        let Error::Invalid { causes, .. } = &err else { panic!("{err:?}") };
        assert_eq!(causes.iter().map(|c| c.field.as_str()).collect::<Vec<_>>(), ["spec.size"], "required");
    }

    #[test]
    fn bounds_and_metadata_errors_join_structural_ones() {
        let mut v = body(json!({"size": -1}));
        v["metadata"]["name"] = json!("Bad_Name");
        let err = decode_object::<Widget>(&v, "default", FieldValidation::Strict).unwrap_err();
        let Error::Invalid { causes, .. } = &err else { panic!("{err:?}") };
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["metadata.name", "spec.size"]);
        assert_eq!(causes[1].to_string(), "spec.size: Invalid value: -1: spec.size in body should be greater than 0");
        v["metadata"]["labels"] = json!({"v".repeat(64): "x"});
        let err = decode_write::<Widget>(&v, "default", FieldValidation::Strict, Subresource::Status).unwrap_err();
        let Error::Invalid { causes, .. } = &err else { panic!("{err:?}") };
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["spec.size"], "a write of the status keeps the stored metadata: its own is not validated");
    }

    #[test]
    fn unknown_fields_follow_field_validation() {
        let mut v = body(json!({"size": 1, "horns": 2}));
        v["metadata"]["colour"] = json!("x");
        let err = decode_object::<Widget>(&v.clone(), "default", FieldValidation::Strict).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::BAD_REQUEST);
        assert!(err.to_string().contains("unknown field \"spec.horns\""), "{err}");
        assert!(err.to_string().contains("unknown field \"metadata.colour\""), "{err}");
        let warned = decode_object::<Widget>(&v.clone(), "default", FieldValidation::Warn).unwrap();
        assert_eq!(warned.warnings.len(), 2);
        let ignored = decode_object::<Widget>(&v, "default", FieldValidation::Ignore).unwrap();
        assert!(ignored.warnings.is_empty());
    }

    #[test]
    fn wrong_api_version_or_kind_is_a_bad_request() {
        let mut v = body(json!({"size": 1}));
        v["apiVersion"] = json!("v1");
        assert_eq!(decode_object::<Widget>(&v, "default", FieldValidation::Ignore).unwrap_err().code(), 400);
        let mut v = body(json!({"size": 1}));
        v["kind"] = json!("Pod");
        assert_eq!(decode_object::<Widget>(&v, "default", FieldValidation::Ignore).unwrap_err().code(), 400);
        let mut v = body(json!({"size": 1}));
        v.as_object_mut().unwrap().remove("kind");
        assert!(
            decode_object::<Widget>(&v, "default", FieldValidation::Ignore)
                .unwrap_err()
                .to_string()
                .contains("'Kind' is missing")
        );
    }

    #[test]
    fn mistyped_metadata_is_a_bad_request_naming_the_path() {
        let mut v = body(json!({"size": 1}));
        v["metadata"]["labels"] = json!({"a": 1});
        let err = decode_object::<Widget>(&v, "default", FieldValidation::Ignore).unwrap_err();
        assert_eq!(err.code(), 400);
        assert!(err.to_string().contains("metadata.labels.a"), "{err}");
    }
}
