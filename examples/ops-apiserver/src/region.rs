//! Region: a cluster-scoped resource the server stores, with a status subresource. A Region
//! names the zones it spans and how many machines it may hold; its controller reports, through
//! `/status`, how many it holds.

use apiserver_kit::prelude::*;

/// RegionSpec is where a region is and how much it may hold.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "ops.example.com",
    version = "v1",
    kind = "Region",
    shortname = "rg",
    category = "ops",
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

/// Every verb, and the rest from the derive: names, scope (cluster), schema, status subresource.
impl ApiResource for Region {}

/// Nothing beyond the schema and the status rules of the status subresource (which the server
/// applies: a create or a write of the object keeps the status, `/status` keeps the spec): the
/// schema's bounds (`length(min = 1)` on the zones, `range(min = 1)` on the capacity,
/// `range(min = 0)` on the machines) are published in the OpenAPI document and checked on every
/// write, as a CustomResourceDefinition's schema is.
impl Strategy for Region {
    /// The zones as kubectl's own columns print a list (`west-a,west-b`), then two printer
    /// columns a CustomResourceDefinition could have.
    fn columns() -> Vec<Column<Self>> {
        vec![
            Column::computed("Zones", ColumnType::String, "Its zones.", |r| r.spec.zones.join(",").into()),
            Column::path("Capacity", ColumnType::Integer, "Machines it may hold.", ".spec.capacity"),
            Column::path("Machines", ColumnType::Integer, "Machines it holds.", ".status.machines"),
        ]
    }
}
