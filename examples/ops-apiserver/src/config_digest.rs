//! ConfigDigest: a namespaced, read-only view of the cluster's ConfigMaps, one per ConfigMap
//! with its namespace and name, telling at a glance what `kubectl get configmaps` does not: its
//! keys, its size and a digest of its data (two ConfigMaps with one digest hold the same data).

use apiserver_kit::machinery::columns::{Column, ColumnType};
use apiserver_kit::machinery::error::FieldError;
use apiserver_kit::machinery::resource::{ApiResource, ResourceInfo};
use apiserver_kit::machinery::{schema::inline_schema, strategy::Strategy, verb::Verb};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// ConfigDigestSpec summarises a ConfigMap's data.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "ops.example.com",
    version = "v1",
    kind = "ConfigDigest",
    shortname = "cd",
    namespaced,
    derive = "PartialEq",
    doc = "ConfigDigest is a read-only view of a ConfigMap: its keys, size and a digest of its data."
)]
#[serde(rename_all = "camelCase")]
pub struct ConfigDigestSpec {
    /// The keys of `data` and `binaryData`, sorted.
    pub keys: Vec<String>,
    /// The bytes of all values together.
    pub bytes: i64,
    /// `sha256:` and the hex SHA-256 of the keys and values, in key order.
    pub digest: String,
    /// Whether the ConfigMap is immutable.
    pub immutable: bool,
}

impl ConfigDigest {
    /// The ConfigDigest of `map`; `None` for a ConfigMap without name or namespace.
    pub fn project(map: &ConfigMap) -> Option<Self> {
        let meta = &map.metadata;
        let mut entries: Vec<(&str, &[u8])> = Vec::new();
        entries.extend(map.data.iter().flatten().map(|(k, v)| (k.as_str(), v.as_bytes())));
        entries.extend(map.binary_data.iter().flatten().map(|(k, v)| (k.as_str(), v.0.as_slice())));
        entries.sort_unstable();
        let mut hash = Sha256::new();
        for (key, value) in &entries {
            hash.update((key.len() as u64).to_be_bytes());
            hash.update(key.as_bytes());
            hash.update((value.len() as u64).to_be_bytes());
            hash.update(value);
        }
        let metadata = ObjectMeta {
            name: Some(meta.name.clone()?),
            namespace: Some(meta.namespace.clone()?),
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            creation_timestamp: meta.creation_timestamp.clone(),
            labels: meta.labels.clone(),
            ..ObjectMeta::default()
        };
        let spec = ConfigDigestSpec {
            keys: entries.iter().map(|(k, _)| k.to_string()).collect(),
            bytes: entries.iter().map(|(_, v)| v.len() as i64).sum(),
            digest: format!("sha256:{}", hex::encode(hash.finalize())),
            immutable: map.immutable.unwrap_or(false),
        };
        Some(Self { metadata, spec })
    }
}

impl ApiResource for ConfigDigest {
    const INFO: ResourceInfo = ResourceInfo {
        group: "ops.example.com",
        kind: "ConfigDigest",
        list_kind: "ConfigDigestList",
        plural: "configdigests",
        singular: "configdigest",
        short_names: &["cd"],
        categories: &["ops"],
        namespaced: true,
        verbs: &[Verb::Get, Verb::List, Verb::Watch],
        description: "ConfigDigest is a read-only view of a ConfigMap: its keys, size and a digest of its data.",
        selectable_fields: &["spec.digest"],
        subresources: &[],
    };

    fn body_properties() -> (Map<String, Value>, Vec<&'static str>) {
        (Map::from_iter([("spec".into(), inline_schema::<ConfigDigestSpec>())]), vec!["spec"])
    }
}

impl Strategy for ConfigDigest {
    /// Views are made by the server, never written by clients: nothing to refuse.
    fn validate(&self) -> Vec<FieldError> {
        Vec::new()
    }

    fn spec_changed(&self, old: &Self) -> bool {
        self.spec != old.spec
    }

    fn columns() -> &'static [Column] {
        &[
            Column { name: "Keys", kind: ColumnType::Integer, format: "", description: "Number of keys.", priority: 0 },
            Column {
                name: "Bytes",
                kind: ColumnType::Integer,
                format: "",
                description: "Bytes of the values.",
                priority: 0,
            },
            Column {
                name: "Digest",
                kind: ColumnType::String,
                format: "",
                description: "SHA-256 of the data.",
                priority: 0,
            },
        ]
    }

    fn cells(&self) -> Vec<Value> {
        vec![json!(self.spec.keys.len()), json!(self.spec.bytes), json!(self.spec.digest)]
    }
}
