//! Conversion of Llamas between `farm.example.com/v1alpha` and `farm.example.com/v1`, on their
//! JSON form (so the same functions serve the registry and the CRD conversion webhook, whose
//! objects may carry fields this server does not know).
//!
//! v1 moves `spec.color` to `spec.coat.color` and adds `spec.coat.pattern`. What v1 holds and
//! v1alpha cannot (the coat less its colour: its pattern, or a coat that is empty) travels in the
//! annotation [`COAT_ANNOTATION`] while the object is served at v1alpha, as the kube-apiserver's
//! HPA autoscaling/v1 ↔ v2 conversion keeps v2's metrics: a v1alpha client that reads an object
//! and writes it back keeps its pattern; one that removes the annotation removes the pattern. So
//! both round trips are the identity: v1alpha → v1 → v1alpha for every valid v1alpha object (its
//! annotation, if any, written as this module writes it), v1 → v1alpha → v1 for every valid v1
//! object (which may not carry the annotation: it is reserved).
//!
//! Everything else (metadata, status, weight, height, fields this module does not know) is
//! carried over as it is.

use crate::machinery::error::FieldError;
use crate::machinery::json_scan;
use crate::machinery::stored::Edit;
use serde_json::{Map, Value};

/// The group the versions belong to.
use crate::resources::GROUP;
/// `apiVersion` of the older version.
pub const V1ALPHA: &str = "farm.example.com/v1alpha";
/// `apiVersion` of the newer version (served beside v1alpha; the storage version next).
pub const V1: &str = "farm.example.com/v1";
/// The annotation holding, at v1alpha, the v1 coat less its colour, as compact JSON.
pub const COAT_ANNOTATION: &str = "farm.example.com/v1-coat";

/// `object` (at either version) at `api_version`; an object already there, or of another
/// group or version, is returned as it is. Only a v1alpha object whose [`COAT_ANNOTATION`] is
/// not a JSON object fails, with the field's error.
pub fn convert(object: Value, api_version: &str) -> Result<Value, FieldError> {
    let from = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    match (from, api_version) {
        (V1ALPHA, V1) => to_v1(object),
        (V1, V1ALPHA) => Ok(to_v1alpha(object)),
        _ => Ok(object),
    }
}

/// Converts one object of a CRD's `ConversionReview` to `desired`: a Llama of any group served
/// at `v1alpha` and `v1` (the conversion does not depend on the group; a CRD user's group is
/// their own), to the other version of the same group.
pub fn review_object(object: Value, desired: &str) -> Result<Value, String> {
    let from = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_string();
    let split = |api_version: &str| api_version.rsplit_once('/').map(|(g, v)| (g.to_string(), v.to_string()));
    let (Some((group, version)), Some((desired_group, desired_version))) = (split(&from), split(desired)) else {
        return Err(format!("cannot convert {from:?} to {desired:?}: each must be group/version"));
    };
    let served = |v: &str| v == "v1alpha" || v == "v1";
    if object.get("kind").and_then(Value::as_str) != Some("Llama") || !served(&version) {
        return Err(format!("not a Llama at v1alpha or v1: {from} {}", object.get("kind").unwrap_or(&Value::Null)));
    }
    if desired_group != group || !served(&desired_version) {
        return Err(format!(
            "cannot convert a {from} Llama to {desired}: Llamas are served at {group}/v1alpha and {group}/v1"
        ));
    }
    // The conversion names farm.example.com; another group's object goes through it renamed.
    let mut object = object;
    set_api_version(&mut object, &format!("{}/{version}", GROUP));
    let mut converted = convert(object, &format!("{GROUP}/{desired_version}")).map_err(|e| e.to_string())?;
    set_api_version(&mut converted, desired);
    Ok(converted)
}

/// A v1alpha Llama at v1: the colour into the coat, the annotation's coat fields with it.
pub fn to_v1(mut object: Value) -> Result<Value, FieldError> {
    let coat = take_annotation(&mut object)?;
    set_api_version(&mut object, V1);
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(object);
    };
    let color = spec.remove("color");
    let mut coat = match coat {
        Some(coat) => coat,
        None if color.is_some() => Map::new(),
        None => return Ok(object),
    };
    // The colour is v1alpha's own field: it wins over one the annotation may carry.
    if let Some(color) = color {
        coat.insert("color".into(), color);
    }
    spec.insert("coat".into(), Value::Object(coat));
    Ok(object)
}

/// A v1 Llama at v1alpha: the coat's colour as the colour, the rest of the coat (when there is
/// more than a colour, or the coat is empty) into the annotation.
pub fn to_v1alpha(mut object: Value) -> Value {
    set_api_version(&mut object, V1ALPHA);
    let annotatable = can_annotate(&object);
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return object;
    };
    // A coat that is not an object, or an object whose metadata cannot take the annotation, is
    // valid at no version: carried back as it came, for validation to report.
    if !annotatable || !spec.get("coat").is_some_and(Value::is_object) {
        return object;
    }
    let Some(Value::Object(mut coat)) = spec.remove("coat") else { return object };
    let color = coat.remove("color");
    if let Some(color) = color.clone() {
        spec.insert("color".into(), color);
    }
    if color.is_none() || !coat.is_empty() {
        // Compact, keys in order (serde_json's map is sorted), as `to_v1` reads it back.
        let text = Value::Object(coat).to_string();
        set_annotation(&mut object, COAT_ANNOTATION, text);
    }
    object
}

/// The edit of the part of a stored v1 llama's encoding that holds its spec (the whole encoding,
/// or what follows its head) that makes the coat v1alpha's colour: `Some(None)` when there is
/// no coat, `None` when the coat holds more or less than a colour.
pub fn coat_edit(json: &[u8]) -> Option<Option<Edit<'_>>> {
    let Some((key, coat)) = coat_member(json)? else { return Some(None) };
    let mut members = json_scan::members(json, coat);
    let (Some((color_key, color)), None) = (members.next(), members.next()) else { return None };
    if color_key.bytes(json).as_ref() != b"color" || json.get(color) != Some(&b'\x22') {
        return None;
    }
    let (color_end, coat_end) = (json_scan::value_end(json, color)?, json_scan::value_end(json, coat)?);
    // `"color":"…"` as the coat holds it: the coat's member becomes the spec's.
    let with = json.get(color_key.start().checked_sub(1)?..color_end)?;
    Some(Some(Edit { range: key.start().checked_sub(1)?..coat_end, with }))
}

/// [`coat_edit`] without a scan, for a stored v1 llama whose index holds where `spec.coat.color`
/// sits (`colour`, its contents between their quotes): the edit when the coat holds that colour
/// alone (the colour is its first member and its brace closes right after), else `None`.
pub fn colour_alone_edit(json: &[u8], colour: json_scan::Span) -> Option<Edit<'_>> {
    const COAT_THEN_COLOUR: &[u8] = b"\x22coat\x22:\x7b\x22color\x22:";
    let open = colour.start().checked_sub(1)?;
    let coat = open.checked_sub(COAT_THEN_COLOUR.len())?;
    let alone = json.get(coat..open) == Some(COAT_THEN_COLOUR)
        && json.get(open) == Some(&b'\x22')
        && json.get(colour.end()..colour.end() + 2) == Some(&b"\x22}"[..]);
    let with = json.get(coat + b"\x22coat\x22:\x7b".len()..colour.end() + 1)?;
    alone.then_some(Edit { range: coat..colour.end() + 2, with })
}

/// The coat member of a stored v1 llama's spec (its key's span and where its value starts), or
/// `Some(None)` when the spec has none; `None` when the encoding is not as expected. The spec is
/// found from the end (SIMD search): `"spec":{` cannot occur inside a string (its quotes would be
/// escaped), and the top-level one is the last, followed only by the status or the end.
fn coat_member(json: &[u8]) -> Option<Option<(json_scan::Span, usize)>> {
    // `"spec":` and its brace, escaped.
    let Some(key) = memchr::memmem::rfind(json, b"\x22spec\x22:\x7b") else { return Some(None) };
    let spec = key + b"\x22spec\x22:".len();
    let after = json.get(json_scan::value_end(json, spec)?..)?;
    if after != b"}" && !after.starts_with(br#","status":"#) {
        return None;
    }
    Some(json_scan::members(json, spec).find(|(key, _)| key.bytes(json).as_ref() == b"coat"))
}

/// Whether `object`'s metadata can take an annotation and give it back unchanged: metadata is
/// an object, its annotations an object or absent (as in every object a server stores).
fn can_annotate(object: &Value) -> bool {
    object.get("metadata").and_then(Value::as_object).is_some_and(|m| m.get("annotations").is_none_or(Value::is_object))
}

fn set_api_version(object: &mut Value, api_version: &str) {
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), Value::String(api_version.into()));
    }
}

/// Sets annotation `key` of `object`, making `annotations` when missing (see [`can_annotate`]).
fn set_annotation(object: &mut Value, key: &str, text: String) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    let annotations = metadata.entry("annotations").or_insert_with(|| Value::Object(Map::new()));
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(key.into(), Value::String(text));
    }
}

/// Removes [`COAT_ANNOTATION`] from a v1alpha object (and `annotations` when it is left empty:
/// Go's encoding omits an empty map, so none and an empty one are the same object) and reads
/// it: a JSON object, the fields of the v1 coat besides its colour. What they hold is checked
/// at v1, like any field of a body (an unknown one dropped, a pattern outside the enum a 422).
fn take_annotation(object: &mut Value) -> Result<Option<Map<String, Value>>, FieldError> {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return Ok(None) };
    let Some(annotations) = metadata.get_mut("annotations").and_then(Value::as_object_mut) else {
        return Ok(None);
    };
    let text = annotations.remove(COAT_ANNOTATION);
    // Left empty (or empty already, as after a client removed the coat's annotation): gone.
    if annotations.is_empty() {
        metadata.remove("annotations");
    }
    text.map(|text| coat_in(&text)).transpose()
}

/// The coat fields [`COAT_ANNOTATION`]'s value holds, or the annotation's error.
fn coat_in(text: &Value) -> Result<Map<String, Value>, FieldError> {
    // Read as a map of members rather than as a `Value`: serde_json's `Value` takes an object
    // whose first key is its raw-value marker (`$serde_json::private::RawValue`, a key sorted
    // first) for a raw value, and such a key, which the conversion wrote, must read back.
    match text.as_str().map(serde_json::from_str::<std::collections::BTreeMap<String, Value>>) {
        Some(Ok(coat)) => Ok(coat.into_iter().collect()),
        _ => Err(FieldError::invalid(
            format!("metadata.annotations[{COAT_ANNOTATION}]"),
            text,
            "must be a JSON object: the fields of the v1 coat besides its colour",
        )),
    }
}

/// The error of a v1alpha object's [`COAT_ANNOTATION`] that v1 could not read, if it has one:
/// such an object is refused when written, so that every stored object reads at both versions.
pub fn annotation_error(annotations: Option<&std::collections::BTreeMap<String, String>>) -> Option<FieldError> {
    let text = annotations?.get(COAT_ANNOTATION)?;
    coat_in(&Value::String(text.clone())).err()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn v1alpha(spec: Value, annotations: Option<Value>) -> Value {
        let mut object = json!({"apiVersion": V1ALPHA, "kind": "Llama",
            "metadata": {"name": "dolly", "namespace": "default"}, "spec": spec, "status": {"observedGeneration": 1}});
        if let Some(annotations) = annotations {
            object["metadata"]["annotations"] = annotations;
        }
        object
    }

    #[test]
    fn the_colour_moves_into_the_coat_and_back() {
        let old = v1alpha(json!({"weight": 1, "height": 2, "color": "brown"}), None);
        let new = to_v1(old.clone()).unwrap();
        assert_eq!(new["apiVersion"], V1);
        assert_eq!(new["spec"], json!({"weight": 1, "height": 2, "coat": {"color": "brown"}}));
        assert_eq!(new["status"], old["status"]);
        assert_eq!(new["metadata"], old["metadata"], "no annotation for a coat that is only a colour");
        assert_eq!(to_v1alpha(new), old);
    }

    #[test]
    fn a_pattern_travels_in_the_annotation_at_v1alpha() {
        let new = json!({"apiVersion": V1, "kind": "Llama", "metadata": {"name": "dolly"},
            "spec": {"weight": 1, "height": 2, "coat": {"color": "brown", "pattern": "Spotted"}}});
        let old = to_v1alpha(new.clone());
        assert_eq!(old["spec"], json!({"weight": 1, "height": 2, "color": "brown"}));
        assert_eq!(old["metadata"]["annotations"][COAT_ANNOTATION], r#"{"pattern":"Spotted"}"#);
        assert_eq!(to_v1(old.clone()).unwrap(), new);
        let mut without = old;
        without["metadata"]["annotations"].as_object_mut().unwrap().remove(COAT_ANNOTATION);
        let stripped = to_v1(without).unwrap();
        assert_eq!(stripped["spec"]["coat"], json!({"color": "brown"}), "removing the annotation removes the pattern");
    }

    #[test]
    fn an_empty_coat_and_no_coat_stay_apart() {
        let empty = json!({"apiVersion": V1, "kind": "Llama", "metadata": {"name": "dolly"},
            "spec": {"weight": 1, "height": 2, "coat": {}}});
        assert_eq!(to_v1alpha(empty.clone())["metadata"]["annotations"][COAT_ANNOTATION], "{}");
        assert_eq!(to_v1(to_v1alpha(empty.clone())).unwrap(), empty);
        let none = json!({"apiVersion": V1, "kind": "Llama", "metadata": {"name": "dolly"}, "spec": {"weight": 1, "height": 2}});
        assert_eq!(to_v1alpha(none.clone())["metadata"], json!({"name": "dolly"}));
    }

    #[test]
    fn an_annotation_that_is_not_a_json_object_is_the_field_s_error() {
        for text in [json!("["), json!("[]"), json!("\"Solid\""), json!(5)] {
            let old = v1alpha(json!({"weight": 1, "height": 2}), Some(json!({(COAT_ANNOTATION): text})));
            let error = to_v1(old).unwrap_err();
            assert_eq!(error.field, "metadata.annotations[farm.example.com/v1-coat]");
        }
    }

    #[test]
    fn other_versions_and_odd_shapes_pass_through() {
        let other = json!({"apiVersion": "farm.example.com/v9", "spec": {"color": "x"}});
        assert_eq!(convert(other.clone(), V1).unwrap(), other);
        assert_eq!(convert(json!("text"), V1).unwrap(), json!("text"));
        let odd = json!({"apiVersion": V1, "metadata": 5, "spec": {"coat": {"pattern": "Solid"}}});
        assert_eq!(convert(odd, V1ALPHA).unwrap()["metadata"], 5);
    }

    /// Empty annotations are no annotations (Go's encoding omits an empty map).
    fn normalised(mut object: Value) -> Value {
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut)
            && metadata.get("annotations").and_then(Value::as_object).is_some_and(Map::is_empty)
        {
            metadata.remove("annotations");
        }
        object
    }

    fn size() -> impl Strategy<Value = Value> {
        prop_oneof![(1u32..1000).prop_map(|n| json!(n)), (0.001f64..1e6).prop_map(|f| json!(f))]
    }

    fn annotations() -> impl Strategy<Value = Option<Value>> {
        proptest::option::of(proptest::collection::btree_map("[a-z]{1,6}", "[ -~]{0,8}", 1..3).prop_map(|m| json!(m)))
    }

    fn pattern() -> impl Strategy<Value = Option<&'static str>> {
        proptest::option::of(proptest::sample::select(crate::resources::llama::v1::PATTERNS))
    }

    prop_compose! {
        /// A valid v1 Llama: sizes, a coat or none, annotations without the reserved one.
        fn valid_v1()(weight in size(), height in size(), coat in proptest::option::of((proptest::option::of("[ -~]{0,12}"), pattern())),
                      annotations in annotations()) -> Value {
            let mut spec = json!({"weight": weight, "height": height});
            if let Some((color, pattern)) = coat {
                let mut coat = json!({});
                if let Some(color) = color { coat["color"] = json!(color); }
                if let Some(pattern) = pattern { coat["pattern"] = json!(pattern); }
                spec["coat"] = coat;
            }
            let mut object = json!({"apiVersion": V1, "kind": "Llama", "metadata": {"name": "dolly", "namespace": "default"}, "spec": spec});
            if let Some(annotations) = annotations { object["metadata"]["annotations"] = annotations; }
            object
        }
    }

    prop_compose! {
        /// A valid v1alpha Llama as the server writes it: its annotation, when it has one,
        /// written by [`to_v1alpha`].
        fn valid_v1alpha()(object in valid_v1()) -> Value {
            to_v1alpha(object)
        }
    }

    proptest! {
        #[test]
        fn v1_to_v1alpha_and_back_is_the_identity(object in valid_v1()) {
            let back = to_v1(to_v1alpha(object.clone())).unwrap();
            prop_assert_eq!(normalised(back), normalised(object));
        }

        #[test]
        fn v1alpha_to_v1_and_back_is_the_identity(object in valid_v1alpha()) {
            let back = to_v1alpha(to_v1(object.clone()).unwrap());
            prop_assert_eq!(normalised(back), normalised(object));
        }

        #[test]
        fn conversion_never_panics(text in "[ -~]{0,60}", color in proptest::option::of("[ -~]{0,6}")) {
            let annotated = v1alpha(json!({"weight": 1, "height": 2, "color": color}), Some(json!({(COAT_ANNOTATION): text})));
            let _ = convert(annotated.clone(), V1);
            if let Ok(v1) = to_v1(annotated) {
                prop_assert_eq!(to_v1(to_v1alpha(v1.clone())).unwrap(), v1);
            }
        }
    }

    proptest! {
        /// Splicing a stored v1 llama's bytes gives what converting its values gives: the same
        /// encoding, index and managed fields.
        #[test]
        fn splicing_bytes_gives_what_converting_values_gives(mut object in valid_v1(), label in "[a-z]{1,5}") {
            use crate::machinery::stored::Stored;
            use crate::machinery::version::{Served, through_values};
            object["metadata"]["labels"] = json!({"herd": label.clone()});
            if label.len() % 2 == 0 {
                object["status"] = json!({"observedGeneration": 1});
            }
            object["metadata"]["resourceVersion"] = json!("42");
            object["metadata"]["managedFields"] = json!([{"apiVersion": V1, "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:weight": {}}}, "manager": "m", "operation": "Update"}]);
            let hub: super::super::v1::Llama = serde_json::from_value(object).unwrap();
            let stored = std::sync::Arc::new(Stored::new(hub).unwrap());
            let slow = through_values::<_, super::super::Llama>(&stored).unwrap();
            let fast = <super::super::Llama as Served<_>>::stored_from_hub(&stored).unwrap();
            prop_assert_eq!(fast.json(), slow.json());
            let mut written = b"[".to_vec();
            <super::super::Llama as Served<_>>::write_from_hub(&stored, &mut written).unwrap();
            prop_assert_eq!(&written[1..], &slow.json()[..], "a list's item is written the same");
            prop_assert_eq!(fast.field("spec.color"), slow.field("spec.color"));
            prop_assert_eq!(fast.label("herd"), slow.label("herd"));
            prop_assert_eq!((fast.name(), fast.namespace(), fast.resource_version()), (slow.name(), slow.namespace(), slow.resource_version()));
            prop_assert_eq!(fast.metadata_json(), slow.metadata_json());
        }
    }

    #[test]
    fn a_coat_field_named_like_serde_json_s_raw_value_marker_survives_the_round_trip() {
        let v1 = json!({"apiVersion": V1, "kind": "Llama", "metadata": {"name": "dolly"},
            "spec": {"weight": 1, "height": 2, "coat": {"$serde_json::private::RawValue": "x", "pattern": "Solid"}}});
        assert_eq!(to_v1(to_v1alpha(v1.clone())).unwrap(), v1);
    }

    #[test]
    fn only_a_coat_of_a_colour_alone_is_spliced() {
        let json = |coat: &str| {
            format!(
                r#"{{"apiVersion":"farm.example.com/v1","kind":"Llama","metadata":{{"name":"a"}},"spec":{{"weight":1.0,"height":2.0{coat}}}}}"#
            )
        };
        assert_eq!(coat_edit(json("").as_bytes()), Some(None));
        let colour = json(r#","coat":{"color":"w\"x"}"#);
        let edit = coat_edit(colour.as_bytes()).unwrap().unwrap();
        assert_eq!((&colour[edit.range.clone()], edit.with), (r#""coat":{"color":"w\"x"}"#, &br#""color":"w\"x""#[..]));
        let escaped = json_scan::find(colour.as_bytes(), &["spec", "coat", "color"])
            .and_then(|at| json_scan::scalar(colour.as_bytes(), at))
            .unwrap();
        assert_eq!(colour_alone_edit(colour.as_bytes(), escaped), Some(edit));
        for more in [r#","coat":{"color":"w","pattern":"Solid"}"#, r#","coat":{"pattern":"Solid","color":"w"}"#] {
            let more = json(more);
            let at = json_scan::find(more.as_bytes(), &["spec", "coat", "color"]).unwrap();
            let colour = json_scan::scalar(more.as_bytes(), at).unwrap();
            assert_eq!(colour_alone_edit(more.as_bytes(), colour), None, "{more}");
        }
        assert!(coat_edit(json(r#","coat":{}"#).as_bytes()).is_none());
        assert!(coat_edit(json(r#","coat":{"color":"w","pattern":"Solid"}"#).as_bytes()).is_none());
    }
}
