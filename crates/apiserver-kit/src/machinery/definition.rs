//! A resource's CustomResourceDefinition, as kube's `CustomResource` derive writes it
//! ([`kube::CustomResourceExt::crd`]), read as JSON: the one place a resource's names, scope,
//! description, schema, subresources, printer columns and selectable fields are said. Read as
//! JSON rather than as k8s-openapi's types, whose fields depend on the Kubernetes version the
//! server's binary chooses (`selectableFields` is 1.30's).
//!
//! [`problems`] lists what the server cannot serve as the definition says (the builder refuses
//! it, naming the field): a scale subresource, a selectable field whose path is not in the
//! schema, a scope other than the Rust type's; [`column_problem`] a table column whose path is
//! not in the schema.

use serde_json::{Map, Value};

/// The definition of one version of a resource: `spec` and the `spec.versions` entry of `version`.
#[derive(Debug)]
pub struct Definition {
    spec: Value,
    version: Value,
}

impl Definition {
    /// `definition` (a CustomResourceDefinition), at `version` (its first version when none has
    /// that name, as kube's derive writes one version per type).
    pub fn new(definition: Value, version: &str) -> Self {
        let mut spec = definition.get("spec").cloned().unwrap_or_default();
        let versions = spec.get_mut("versions").and_then(Value::as_array_mut).map(std::mem::take).unwrap_or_default();
        let at = versions.iter().position(|v| v["name"] == version).unwrap_or_default();
        let version = versions.into_iter().nth(at).unwrap_or_default();
        Self { spec, version }
    }

    /// `spec.group`.
    pub fn group(&self) -> &str {
        self.spec["group"].as_str().unwrap_or_default()
    }

    /// A string of `spec.names`.
    pub fn name(&self, field: &str) -> Option<&str> {
        self.spec["names"][field].as_str()
    }

    /// A list of strings of `spec.names` (short names, categories).
    pub fn names(&self, field: &str) -> Vec<&str> {
        strings(&self.spec["names"][field])
    }

    /// Whether `spec.scope` says `Namespaced`.
    pub fn namespaced(&self) -> bool {
        self.spec["scope"] == "Namespaced"
    }

    /// The version's `openAPIV3Schema`.
    pub fn schema(&self) -> &Value {
        &self.version["schema"]["openAPIV3Schema"]
    }

    /// The schema's description (kube's `doc`, or the type's doc comment).
    pub fn description(&self) -> &str {
        self.schema()["description"].as_str().unwrap_or_default()
    }

    /// The schema's top-level properties besides `apiVersion`, `kind` and `metadata`, and which
    /// of them are required.
    pub fn body(&self) -> (Map<String, Value>, Vec<String>) {
        let mut properties = self.schema()["properties"].as_object().cloned().unwrap_or_default();
        for envelope in ["apiVersion", "kind", "metadata"] {
            properties.remove(envelope);
        }
        let required = strings(&self.schema()["required"]).into_iter().filter(|r| properties.contains_key(*r));
        let required = required.map(str::to_string).collect();
        (properties, required)
    }

    /// Whether the version has a status subresource.
    pub fn has_status(&self) -> bool {
        self.version["subresources"].get("status").is_some_and(|s| !s.is_null())
    }

    /// The version's selectable fields, without their leading dot (`spec.color`).
    pub fn selectable_fields(&self) -> Vec<&str> {
        let fields = self.version["selectableFields"].as_array().map(Vec::as_slice).unwrap_or_default();
        fields.iter().filter_map(|f| f["jsonPath"].as_str()).map(|p| p.trim_start_matches('.')).collect()
    }

    /// The version's `additionalPrinterColumns`.
    pub fn printer_columns(&self) -> &[Value] {
        self.version["additionalPrinterColumns"].as_array().map(Vec::as_slice).unwrap_or_default()
    }
}

fn strings(value: &Value) -> Vec<&str> {
    value.as_array().map(Vec::as_slice).unwrap_or_default().iter().filter_map(Value::as_str).collect()
}

/// What in `definition` the server cannot serve as it says, each naming its field; `namespaced`
/// is the scope of the Rust type.
pub fn problems(definition: &Definition, namespaced: bool) -> Vec<String> {
    let mut problems = Vec::new();
    if definition.namespaced() != namespaced {
        let scope = definition.spec["scope"].as_str().unwrap_or_default();
        problems.push(format!("spec.scope is {scope:?}, but the type's kube::Resource::Scope says otherwise"));
    }
    if definition.version["subresources"].get("scale").is_some_and(|s| !s.is_null()) {
        problems.push("subresources.scale: the scale subresource is not served (only status)".into());
    }
    let paths = definition.version["selectableFields"].as_array().map(Vec::as_slice).unwrap_or_default();
    for path in paths.iter().filter_map(|f| f["jsonPath"].as_str()).filter(|p| !p.starts_with('.')) {
        // A CustomResourceDefinition's are JSONPaths from the object: `.spec.color`.
        let first = path.split(['.', '[']).next().unwrap_or_default();
        problems.push(format!("selectableFields: {path} is an invalid path: expected [ or . but got: {first}"));
    }
    for field in definition.selectable_fields() {
        match schema_at(definition.schema(), field) {
            Some(schema) if is_scalar(schema) => {}
            Some(_) => problems.push(format!("selectableFields: {field} is not a string, integer or boolean")),
            None => problems.push(format!("selectableFields: {field} is not in the schema")),
        }
    }
    problems
}

/// A table column `name` whose cells are at `path` (a printer column's JSONPath), when `path` is
/// not in `definition`'s schema (the strategy's columns are checked so, the printer columns of
/// the definition among them).
pub fn column_problem(definition: &Definition, name: &str, path: &str) -> Option<String> {
    let found = path.starts_with('.') && schema_at(definition.schema(), &plain_fields(path)).is_some();
    (!found).then(|| format!("columns: {name}'s jsonPath {path} is not in the schema"))
}

/// The fields of a printer column's JSONPath up to its first index or filter, dotted
/// (`.status.conditions[?(@.type=="Ready")].status` → `status.conditions`).
pub fn plain_fields(path: &str) -> String {
    let plain = path.split('[').next().unwrap_or_default();
    plain.trim_start_matches('.').to_string()
}

/// The schema of the dotted `path` in `schema` (an object's schema), through objects' properties
/// and lists' items (`metadata` is every object's).
pub fn schema_at<'a>(schema: &'a Value, path: &str) -> Option<&'a Value> {
    if path.is_empty() || path == "metadata" || path.starts_with("metadata.") {
        return Some(schema);
    }
    path.split('.').try_fold(schema, |schema, field| {
        let schema = if schema["type"] == "array" { &schema["items"] } else { schema };
        schema["properties"].get(field).or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))
    })
}

fn is_scalar(schema: &Value) -> bool {
    matches!(schema["type"].as_str(), Some("string" | "integer" | "boolean"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn definition() -> Definition {
        Definition::new(
            json!({"spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"]},
                "versions": [{"name": "v1", "subresources": {"status": {}},
                    "selectableFields": [{"jsonPath": ".spec.color"}],
                    "additionalPrinterColumns": [{"name": "Ready", "type": "string",
                        "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}],
                    "schema": {"openAPIV3Schema": {"description": "A widget.", "type": "object", "required": ["spec"],
                        "properties": {"apiVersion": {"type": "string"}, "metadata": {"type": "object"},
                            "spec": {"type": "object", "properties": {"color": {"type": "string"}, "size": {"type": "object"}}},
                            "status": {"type": "object", "properties": {"conditions": {"type": "array",
                                "items": {"type": "object", "properties": {"type": {"type": "string"}}}}}}}}}}]}}),
            "v1",
        )
    }

    #[test]
    fn names_schema_and_subresources_are_read_from_the_definition() {
        let d = definition();
        assert_eq!((d.group(), d.name("kind"), d.names("shortNames")), ("example.com", Some("Widget"), vec!["wd"]));
        assert!(d.namespaced() && d.has_status());
        assert_eq!(d.description(), "A widget.");
        let (properties, required) = d.body();
        assert_eq!(properties.keys().collect::<Vec<_>>(), ["spec", "status"]);
        assert_eq!(required, ["spec"]);
        assert_eq!(d.selectable_fields(), ["spec.color"]);
        assert!(problems(&d, true).is_empty(), "{:?}", problems(&d, true));
    }

    #[test]
    fn what_cannot_be_served_is_named() {
        let mut d = definition();
        d.version["selectableFields"] = json!([{"jsonPath": ".spec.size"}, {"jsonPath": ".spec.colour"}]);
        d.version["additionalPrinterColumns"][0]["jsonPath"] = ".status.phase".into();
        d.version["subresources"]["scale"] = json!({"specReplicasPath": ".spec.replicas"});
        assert_eq!(
            problems(&d, false),
            [
                "spec.scope is \"Namespaced\", but the type's kube::Resource::Scope says otherwise",
                "subresources.scale: the scale subresource is not served (only status)",
                "selectableFields: spec.size is not a string, integer or boolean",
                "selectableFields: spec.colour is not in the schema",
            ]
        );
        assert_eq!(column_problem(&d, "Ready", ".status.conditions[?(@.type==\"Ready\")].status"), None);
        assert_eq!(column_problem(&d, "Color", ".spec.color"), None);
        let missing = column_problem(&d, "Phase", ".status.phase");
        assert_eq!(missing.as_deref(), Some("columns: Phase's jsonPath .status.phase is not in the schema"));
        assert!(column_problem(&d, "Color", "spec.color").is_some(), "a printer column's path starts with a dot");
        // So does a selectable field's, as a CustomResourceDefinition's must.
        d.version["selectableFields"] = json!([{"jsonPath": "spec.color"}]);
        let undotted = "selectableFields: spec.color is an invalid path: expected [ or . but got: spec";
        assert!(problems(&d, true).contains(&undotted.to_string()), "{:?}", problems(&d, true));
    }
}
