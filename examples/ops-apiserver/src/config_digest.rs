//! ConfigDigest: a namespaced, read-only view of the cluster's ConfigMaps, one per ConfigMap
//! with its namespace and name, telling at a glance what `kubectl get configmaps` does not: its
//! keys, its size and a digest of its data (two ConfigMaps with one digest hold the same data).

use apiserver_kit::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use sha2::{Digest, Sha256};

/// ConfigDigestSpec summarises a ConfigMap's data.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "ops.example.com",
    version = "v1",
    kind = "ConfigDigest",
    shortname = "cd",
    category = "ops",
    namespaced,
    selectable = ".spec.digest",
    printcolumn(name = "Bytes", type_ = "integer", json_path = ".spec.bytes", description = "Bytes of the values."),
    printcolumn(name = "Digest", type_ = "string", json_path = ".spec.digest", description = "SHA-256 of the data."),
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

/// A view: read-only.
impl ApiResource for ConfigDigest {
    const VERBS: &'static [Verb] = &[Verb::Get, Verb::List, Verb::Watch];
}

/// Views are made by the server, never written by clients: nothing to refuse; the columns are
/// the derive's printer columns but for the number of keys, which no path gives.
impl Strategy for ConfigDigest {
    fn columns() -> Vec<Column<Self>> {
        let keys =
            Column::computed("Keys", ColumnType::Integer, "Number of keys.", |d: &Self| d.spec.keys.len().into());
        let printed = Column::of_definition(&apiserver_kit::machinery::resource::definition::<Self>());
        std::iter::once(keys).chain(printed).collect()
    }
}
