//! A MutatingAdmissionPolicy's mutation applied to the object, as k8s.io/apiserver's patchers
//! apply them (`mutating/patch`), with their error messages:
//!
//! - an `ApplyConfiguration` (an `Object{…}` value) is typed against the resource's schema at
//!   the version the policy matched (no undeclared fields; no atomic list or map set, as those
//!   would be replaced whole) and merged into the object as server-side apply merges;
//! - a `JSONPatch` (a list of `JSONPatch{…}` values) is applied as `evanphx/json-patch` v4
//!   applies it; a failed `test` operation leaves the object as it was, and a patch on which
//!   that library panics fails the whole write with a 500, as the kube-apiserver's recovery
//!   of the panic does.

use super::compiled::PatchType;
use crate::cel::{Value, mutation};
use crate::machinery::error::{Error, Result};
use crate::machinery::json_patch_v4;
use crate::machinery::resource::BodySchema;
use crate::structured_merge::{merge::merge, shape::object_schema, validate};
use serde_json::Value as Json;
use std::sync::Arc;

/// `object` (at the version the policy matched, its schema `schema`) patched by the mutation's
/// `outcome`, or the message of the policy's error; an error of the write itself fails it.
pub fn patch(
    patch_type: PatchType,
    outcome: std::result::Result<Value, String>,
    object: Json,
    schema: &Arc<BodySchema>,
) -> Result<std::result::Result<Json, String>> {
    let value = match outcome {
        Ok(value) => value,
        Err(message) => return Ok(Err(message)),
    };
    match patch_type {
        PatchType::ApplyConfiguration => Ok(apply_configuration(&value, object, schema)),
        PatchType::JsonPatch => json_patch(&value, object),
    }
}

/// `applyConfigPatcher.Patch` and `ApplyStructuredMergeDiff`.
fn apply_configuration(value: &Value, object: Json, schema: &Arc<BodySchema>) -> std::result::Result<Json, String> {
    let mut configuration = mutation::apply_configuration(value)?;
    // The patch takes the object's apiVersion and kind (`SetGroupVersionKind`).
    for field in ["apiVersion", "kind"] {
        match object.get(field) {
            Some(known) => configuration.insert(field.into(), known.clone()),
            None => configuration.remove(field),
        };
    }
    let configuration = Json::Object(configuration);
    let schema = object_schema(schema);
    if let Some(errors) = validate::undeclared_fields(&configuration, &schema) {
        return Err(format!("error applying patch: failed to convert patch object to typed object: {errors}"));
    }
    let atomics = validate::atomics(&configuration, &schema);
    if !atomics.is_empty() {
        return Err(format!(
            "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {}",
            atomics.join(", ")
        ));
    }
    Ok(merge(&object, &configuration, &schema))
}

/// `jsonPatcher.Patch`.
fn json_patch(value: &Value, object: Json) -> Result<std::result::Result<Json, String>> {
    let operations = match mutation::json_patch(value) {
        Ok(operations) => operations,
        Err(message) => return Ok(Err(message)),
    };
    match json_patch_v4::apply(&object, &operations) {
        Ok(patched) => Ok(Ok(patched)),
        Err(error) if error.panicked => Err(Error::Internal(error.message)),
        Err(error) if error.test_failed => Ok(Ok(object)),
        Err(error) => Ok(Err(format!("JSON Patch: {}", error.message))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::{Declarations, PER_CALL_LIMIT, Program, evaluate};
    use serde_json::json;

    fn value(source: &str) -> Value {
        let declarations = Declarations::admission(&[]).with_patch_types();
        let program = Program::compile_declared(source, &declarations).unwrap();
        evaluate(&program, &[], PER_CALL_LIMIT).value.unwrap()
    }

    fn schema() -> Arc<BodySchema> {
        let spec = json!({"type": "object", "properties": {
            "weight": {"type": "number"},
            "color": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        }});
        let object = json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"},
            "metadata": crate::machinery::schema::object_meta_shapes(), "spec": spec.clone()}});
        let properties = serde_json::Map::from_iter([("spec".to_string(), spec)]);
        Arc::new(BodySchema { properties, required: Vec::new(), object })
    }

    fn llama() -> Json {
        json!({"apiVersion": "farm.example.com/v1", "kind": "Llama",
            "metadata": {"name": "dolly", "labels": {"a": "b"}}, "spec": {"weight": 1, "tags": ["x"]}})
    }

    fn patched(patch_type: PatchType, source: &str) -> std::result::Result<Json, String> {
        patch(patch_type, Ok(value(source)), llama(), &schema()).unwrap()
    }

    #[test]
    fn apply_configurations_merge_into_the_object() {
        let merged = patched(
            PatchType::ApplyConfiguration,
            "Object{metadata: Object.metadata{labels: {'c': 'd'}}, spec: Object.spec{color: 'white'}}",
        )
        .unwrap();
        assert_eq!(merged["metadata"]["labels"], json!({"a": "b", "c": "d"}));
        assert_eq!(merged["spec"], json!({"weight": 1, "tags": ["x"], "color": "white"}));
        assert_eq!(merged["kind"], "Llama");
    }

    #[test]
    fn apply_configurations_are_typed_first() {
        let undeclared = patched(PatchType::ApplyConfiguration, "Object{spec: Object.spec{colour: 'red'}}");
        assert_eq!(
            undeclared.unwrap_err(),
            "error applying patch: failed to convert patch object to typed object: .spec.colour: field not declared \
             in schema"
        );
        let atomic = patched(PatchType::ApplyConfiguration, "Object{spec: Object.spec{tags: ['y']}}");
        assert_eq!(
            atomic.unwrap_err(),
            "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.tags"
        );
        let misnamed = patched(PatchType::ApplyConfiguration, "Object{spec: Object.status{color: 'red'}}");
        assert!(misnamed.unwrap_err().starts_with("type mismatch: unexpected type name \"Object.status\""));
    }

    #[test]
    fn json_patches_apply_and_a_failed_test_leaves_the_object() {
        let added = patched(PatchType::JsonPatch, "[JSONPatch{op: 'add', path: '/spec/color', value: 'brown'}]");
        assert_eq!(added.unwrap()["spec"]["color"], "brown");
        let tested = "[JSONPatch{op: 'test', path: '/spec/weight', value: 2}, \
                      JSONPatch{op: 'replace', path: '/spec/weight', value: 3}]";
        assert_eq!(patched(PatchType::JsonPatch, tested).unwrap(), llama());
        let missing = patched(PatchType::JsonPatch, "[JSONPatch{op: 'remove', path: '/spec/nothing'}]");
        assert_eq!(
            missing.unwrap_err(),
            "JSON Patch: error in remove for path: '/spec/nothing': Unable to remove nonexistent key: nothing: missing \
             value"
        );
    }

    #[test]
    fn errors_of_the_expression_are_the_policy_s() {
        let failed = patch(PatchType::JsonPatch, Err("expression 'x' resulted in error".into()), llama(), &schema());
        assert_eq!(failed.unwrap(), Err("expression 'x' resulted in error".into()));
    }
}
