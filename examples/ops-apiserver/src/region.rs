//! Region: a cluster-scoped resource the server stores, with a status subresource. A Region
//! names the zones it spans and how many machines it may hold; its controller reports, through
//! `/status`, how many it holds.

use apiserver_kit::machinery::columns::{Column, ColumnType};
use apiserver_kit::machinery::error::FieldError;
use apiserver_kit::machinery::resource::{ApiResource, ResourceInfo, Subresource};
use apiserver_kit::machinery::strategy::{Strategy, status_subresource};
use apiserver_kit::machinery::{schema::inline_schema, verb::Verb};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// RegionSpec is where a region is and how much it may hold.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "ops.example.com",
    version = "v1",
    kind = "Region",
    shortname = "rg",
    status = "RegionStatus",
    derive = "PartialEq",
    doc = "Region is a part of the fleet: the zones it spans and the machines it may hold."
)]
pub struct RegionSpec {
    /// The zones of the region, at least one.
    #[schemars(length(min = 1))]
    pub zones: Vec<String>,
    /// How many machines the region may hold: 1 or more.
    #[schemars(range(min = 1))]
    pub capacity: i64,
    /// How many times over the machines' CPUs may be promised (1.5 for half as much again),
    /// at least 1; none when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub overcommit: Option<f64>,
}

/// RegionStatus is what the region's controller observed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct RegionStatus {
    /// How many machines the region holds.
    #[schemars(range(min = 0))]
    pub machines: i64,
}

impl ApiResource for Region {
    const INFO: ResourceInfo = ResourceInfo {
        group: "ops.example.com",
        kind: "Region",
        list_kind: "RegionList",
        plural: "regions",
        singular: "region",
        short_names: &["rg"],
        categories: &["ops"],
        namespaced: false,
        verbs: Verb::ALL,
        description: "Region is a part of the fleet: the zones it spans and the machines it may hold.",
        selectable_fields: &[],
        subresources: &[Subresource::Status],
    };

    fn body_properties() -> (Map<String, Value>, Vec<&'static str>) {
        let properties = [("spec", inline_schema::<RegionSpec>()), ("status", inline_schema::<RegionStatus>())];
        (properties.into_iter().map(|(k, v)| (k.to_string(), v)).collect(), vec!["spec"])
    }
}

impl Strategy for Region {
    /// A create may not set the status: only the controller writes it, through `/status`.
    fn prepare_for_create(&mut self) {
        status_subresource::prepare_for_create(self);
    }

    /// The object keeps its stored status; `/status` keeps the stored spec.
    fn prepare_for_update(&mut self, old: &Self, subresource: Subresource) {
        status_subresource::prepare_for_update(self, old, subresource);
    }

    /// Nothing beyond the schema: its bounds (`length(min = 1)` on the zones, `range(min = 1)`
    /// on the capacity, `range(min = 0)` on the machines) are published in the OpenAPI document
    /// and checked by the server on every write, as a CustomResourceDefinition's schema is. Rules
    /// a schema cannot state would go here.
    fn validate(&self) -> Vec<FieldError> {
        Vec::new()
    }

    fn spec_changed(&self, old: &Self) -> bool {
        self.spec != old.spec
    }

    fn columns() -> &'static [Column] {
        &[
            Column { name: "Zones", kind: ColumnType::String, format: "", description: "Its zones.", priority: 0 },
            Column {
                name: "Capacity",
                kind: ColumnType::Integer,
                format: "",
                description: "Machines it may hold.",
                priority: 0,
            },
            Column {
                name: "Machines",
                kind: ColumnType::Integer,
                format: "",
                description: "Machines it holds.",
                priority: 0,
            },
        ]
    }

    fn cells(&self) -> Vec<Value> {
        let machines = self.status.as_ref().map_or(Value::Null, |s| json!(s.machines));
        vec![json!(self.spec.zones.join(",")), json!(self.spec.capacity), machines]
    }
}
