//! Sprinklers: served at v1 and, deprecated, at v1beta1, whose `litresPerHour` v1 names `flow`.

use apiserver_kit::prelude::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// SprinklerSpec is the zone a sprinkler waters and how much.
#[allow(clippy::duplicated_attributes)] // clippy takes two columns' `type_ = "string"` for a repeated attribute
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(group = "garden.example.org", version = "v1", kind = "Sprinkler", namespaced, shortname = "sp")]
#[kube(status = "SprinklerStatus", derive = "PartialEq", selectable = ".spec.zone")]
#[kube(doc = "Sprinkler waters the planters of one zone.")]
#[kube(
    printcolumn(name = "Zone", type_ = "string", json_path = ".spec.zone"),
    printcolumn(name = "Flow", type_ = "number", json_path = ".spec.flow"),
    printcolumn(name = "Running", type_ = "string", json_path = ".status.conditions[?(@.type==\"Running\")].status")
)]
pub struct SprinklerSpec {
    /// The zone it waters.
    #[schemars(length(min = 1))]
    pub zone: String,
    /// How much it sprays, in litres per hour.
    #[schemars(range(min = 0))]
    pub flow: f64,
}

/// SprinklerStatus is what the sprinkler last reported.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct SprinklerStatus {
    /// Running: whether it sprays now, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "apiserver_kit::machinery::conditions::list_schema")]
    pub conditions: Vec<Condition>,
}

impl ApiResource for Sprinkler {}
impl Strategy for Sprinkler {}

/// The version before v1.
pub mod v1beta1 {
    use apiserver_kit::prelude::*;
    use serde_json::Value;

    /// SprinklerSpec is the zone a sprinkler waters and how much.
    #[allow(clippy::duplicated_attributes)] // clippy takes two columns' `type_ = "string"` for a repeated attribute
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
    #[kube(group = "garden.example.org", version = "v1beta1", kind = "Sprinkler", namespaced, shortname = "sp")]
    #[kube(status = "super::SprinklerStatus", derive = "PartialEq", selectable = ".spec.zone")]
    #[kube(doc = "Sprinkler waters the planters of one zone.")]
    #[kube(
        printcolumn(name = "Zone", type_ = "string", json_path = ".spec.zone"),
        printcolumn(name = "Litres/h", type_ = "number", json_path = ".spec.litresPerHour"),
        printcolumn(
            name = "Running",
            type_ = "string",
            json_path = ".status.conditions[?(@.type==\"Running\")].status"
        )
    )]
    pub struct SprinklerSpec {
        /// The zone it waters.
        #[schemars(length(min = 1))]
        pub zone: String,
        /// How much it sprays: v1's `flow`.
        #[serde(rename = "litresPerHour")]
        #[schemars(range(min = 0))]
        pub litres_per_hour: f64,
    }

    impl ApiResource for Sprinkler {}
    impl Strategy for Sprinkler {}

    /// Served from the stored v1: the library sets `apiVersion`, the conversion moves the field.
    impl Served<super::Sprinkler> for Sprinkler {
        fn value_from_hub(object: Value) -> Result<Value> {
            Ok(renamed(object, "flow", "litresPerHour"))
        }

        fn value_to_hub(object: Value) -> Result<Value> {
            Ok(renamed(object, "litresPerHour", "flow"))
        }
    }

    /// `object` with `spec.<from>` moved to `spec.<to>`.
    fn renamed(mut object: Value, from: &str, to: &str) -> Value {
        if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut)
            && let Some(value) = spec.remove(from)
        {
            spec.insert(to.into(), value);
        }
        object
    }
}
