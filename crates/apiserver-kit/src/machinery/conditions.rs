//! The schema of a `metav1.Condition` list (`status.conditions`) with the constraints
//! controller-gen writes for that type into a custom resource's schema, which the kube-apiserver
//! then enforces: `type` a qualified name of at most 316 characters, unique in the list (a
//! list-map keyed by `type`); `status` one of True, False, Unknown; `reason` 1 to 1024 characters
//! of `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`; `message` at most 32768; `observedGeneration`
//! ≥ 0; `lastTransitionTime` required. [`super::schema_validation`] enforces them on writes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde_json::json;

const TYPE_PATTERN: &str =
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";
const REASON_PATTERN: &str = "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";
const STATUSES: &[&str] = &["True", "False", "Unknown"];

/// The schema of a condition list as published (OpenAPI, `kubectl explain`): k8s-openapi's schema
/// of `Condition` with the constraints above, a list-map keyed by `type`. For
/// `#[schemars(schema_with = "…")]` on a `Vec<Condition>` field.
pub fn list_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut item = generator.subschema_for::<Condition>().to_value();
    let constraints = [
        ("type", json!({"maxLength": 316, "pattern": TYPE_PATTERN})),
        ("status", json!({"enum": STATUSES})),
        ("reason", json!({"minLength": 1, "maxLength": 1024, "pattern": REASON_PATTERN})),
        ("message", json!({"maxLength": 32768})),
        ("observedGeneration", json!({"minimum": 0})),
    ];
    for (field, extra) in constraints {
        if let (Some(schema), Some(extra)) = (item.pointer_mut(&format!("/properties/{field}")), extra.as_object())
            && let Some(schema) = schema.as_object_mut()
        {
            schema.extend(extra.clone());
        }
    }
    let list = json!({
        "type": "array",
        "items": item,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
    });
    schemars::Schema::try_from(list).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patterns_compile_and_accept_what_kubernetes_accepts() {
        let mut generator =
            schemars::generate::SchemaSettings::draft07().with(|s| s.inline_subschemas = true).into_generator();
        let schema = list_schema(&mut generator).to_value();
        let item = &schema["items"]["properties"];
        let matches = |field: &str, text: &str| {
            let pattern = item[field]["pattern"].as_str().unwrap();
            regex::Regex::new(pattern).unwrap().is_match(text)
        };
        assert!(matches("type", "Ready") && matches("type", "example.com/Fed") && !matches("type", "not ok"));
        assert!(matches("reason", "Waiting:Hay") && !matches("reason", "1st") && !matches("reason", "Ends_with:"));
        assert_eq!(item["status"]["enum"], json!(["True", "False", "Unknown"]));
        assert_eq!(schema["x-kubernetes-list-map-keys"], json!(["type"]));
    }
}
