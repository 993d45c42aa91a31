//! Server-side apply on arbitrary JSON: the input is two JSON documents one after the other, the
//! live object and the applied configuration, merged by the typed merge (`merge::merge`) and
//! applied by the field manager (`managed::apply`, over no managers, then again over the managers
//! it left) under a schema of `set` and `map` lists: finalizers, ownerReferences (keyed by uid),
//! ports keyed by two fields whose entries hold a set and a map list of their own, an atomic list.
//!
//! Checks that nothing panics or hangs, and:
//! - from the second merge of the configuration on, merging it again changes nothing. (The first
//!   merge is not idempotent: it drops list entries that have no name and the nodes it leaves
//!   empty, which the configuration may then bring back empty: `{"spec":{"ports":[{}]},"a":1}`
//!   merged with `{"spec":{}}` gives `{"a":1}`, then `{"a":1,"spec":{}}`.)
//! - a forced apply never conflicts, and the applier then owns exactly what it sent
//!   (`to_field_set` of the configuration, without the status it may not set and the metadata
//!   nobody owns);
//! - the same apply again, not forced, over the managers the first left, does not conflict.
#![no_main]

use farm_apiserver::structured_merge::fieldpath::PathElement;
use farm_apiserver::structured_merge::managed::{self, Managed, OneVersion, Set, Write};
use farm_apiserver::structured_merge::merge::merge;
use farm_apiserver::structured_merge::shape::Schema;
use farm_apiserver::structured_merge::typed::to_field_set;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use std::sync::LazyLock;

const API_VERSION: &str = "farm.example.com/v1";

/// The schema: lists of each kind, at the top and inside the entries of a map list.
static SCHEMA: LazyLock<Schema> = LazyLock::new(|| {
    let string = json!({"type": "string"});
    let set = json!({"type": "array", "items": string, "x-kubernetes-list-type": "set"});
    let keyed = |keys: Value, properties: Value| {
        json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": keys,
            "items": {"type": "object", "properties": properties}})
    };
    let hosts = keyed(json!(["ip"]), json!({"ip": string, "weight": {"type": "integer"}}));
    let ports = keyed(
        json!(["name", "port"]),
        json!({"name": string, "port": {"type": "integer"}, "protocol": string, "tags": set, "hosts": hosts}),
    );
    let owners = keyed(json!(["uid"]), json!({"uid": string, "name": string, "controller": {"type": "boolean"}}));
    Schema::compile(&json!({"type": "object", "properties": {
        "apiVersion": string, "kind": string,
        "metadata": {"type": "object", "properties": {
            "name": string, "finalizers": set, "ownerReferences": owners,
            "labels": {"type": "object", "additionalProperties": string},
        }},
        "spec": {"type": "object", "properties": {
            "ports": ports, "tags": set, "atomic": {"type": "array", "items": string},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic"},
        }},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
    }}))
});

/// What a write of the status would reset: an apply to the object itself may not set it.
static RESET: LazyLock<Set> = LazyLock::new(|| managed::top_level(&["status"]));

/// An apply by `fuzz`.
fn write() -> Write<'static> {
    let now = Time(Timestamp::from_second(1_700_000_000).unwrap_or_else(|e| panic!("a valid time: {e}")));
    Write { manager: "fuzz", subresource: "", api_version: API_VERSION, reset: &RESET, now, versions: &OneVersion }
}

/// The fields an applier of `config` owns: what it sets, without the reset status and the
/// metadata nobody owns (apiVersion, kind, metadata itself and its name; the schema declares no
/// other field of it that nobody owns).
fn owned_by_applier(config: &Value) -> Value {
    let mut nobody = managed::top_level(&["apiVersion", "kind", "metadata"]);
    nobody.insert(&[PathElement::Field("metadata".into()), PathElement::Field("name".into())]);
    let mut owned = to_field_set(config, &SCHEMA).recursive_difference(&RESET);
    owned.remove(&nobody);
    owned.to_fields_v1()
}

fuzz_target!(|data: &[u8]| {
    let mut documents = serde_json::Deserializer::from_slice(data).into_iter::<Value>();
    let (Some(Ok(live)), Some(Ok(config))) = (documents.next(), documents.next()) else { return };
    let twice = merge(&merge(&live, &config, &SCHEMA), &config, &SCHEMA);
    assert_eq!(merge(&twice, &config, &SCHEMA), twice, "a third merge of the configuration changed the object");

    let applied = managed::apply(Some(&live), &config, &config, Managed::default(), &write(), true, &SCHEMA)
        .unwrap_or_else(|conflicts| panic!("a forced apply conflicted: {conflicts:?}"));
    let object = applied.object.unwrap_or(live);
    let entries = applied.managed.encode().unwrap_or_default();
    let mine = entries.iter().find(|e| e.manager.as_deref() == Some("fuzz") && e.operation.as_deref() == Some("Apply"));
    let owned = mine.and_then(|e| e.fields_v1.as_ref()).map_or(json!({}), |fields| fields.0.clone());
    assert_eq!(owned, owned_by_applier(&config), "the applier owns other fields than it sent");

    // Applying the same configuration again over the managers it left finds no conflict.
    let again = managed::apply(Some(&object), &config, &config, applied.managed, &write(), false, &SCHEMA);
    assert!(again.is_ok(), "the same apply again conflicted: {:?}", again.err());
});
