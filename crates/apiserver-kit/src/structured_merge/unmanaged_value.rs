//! An object as JSON without its `metadata.managedFields`, the view the field manager compares
//! ([`super::managed`]), or only some of its top-level fields ([`top_level`]). The managed fields are left out while serializing, not removed after:
//! they are most of a small object's JSON, and building them only to drop them was a third of
//! what tracking them cost on an update.
//!
//! serde has no hook to skip a field of a type it does not own (`ObjectMeta` is k8s-openapi's),
//! so [`to_value`] serializes through `Skipping`, a [`Serializer`] that passes everything to
//! `serde_json`'s value serializer but the `metadata` field of the object and, inside it, the
//! `managedFields` field.

use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};
use serde_json::Value;

/// `object` as JSON, without `metadata.managedFields`.
pub fn to_value<T: Serialize + ?Sized>(object: &T) -> Result<Value, serde_json::Error> {
    let mut value = object.serialize(Skipping { inner: serde_json::value::Serializer, level: Level::Object })?;
    // An object that serializes as a map rather than a struct is not filtered on the way.
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    crate::machinery::number::integral_as_integers(&mut value);
    Ok(value)
}

/// The top-level `fields` of `object` as a JSON object, the others left out unserialized (the
/// stored status a write keeps, without encoding the whole object to read it).
pub fn top_level<T: Serialize + ?Sized>(
    object: &T,
    fields: &'static [&'static str],
) -> Result<Value, serde_json::Error> {
    let mut value = object.serialize(Skipping { inner: serde_json::value::Serializer, level: Level::Only(fields) })?;
    // An object that serializes as a map rather than a struct is not filtered on the way.
    if let Some(members) = value.as_object_mut() {
        members.retain(|name, _| fields.contains(&name.as_str()));
    }
    crate::machinery::number::integral_as_integers(&mut value);
    Ok(value)
}

/// Where in the object a [`Skipping`] serializer is.
#[derive(Clone, Copy)]
enum Level {
    /// The object: its `metadata` is serialized one level down.
    Object,
    /// `metadata`: its `managedFields` are left out.
    Metadata,
    /// The object, of which only these fields are kept.
    Only(&'static [&'static str]),
}

/// A serializer that forwards to `inner`, leaving out the field [`Level`] names.
struct Skipping<S> {
    inner: S,
    level: Level,
}

/// A value serialized one level down.
struct Below<'a, T: ?Sized> {
    value: &'a T,
    level: Level,
}

impl<T: Serialize + ?Sized> Serialize for Below<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(Skipping { inner: serializer, level: self.level })
    }
}

/// A struct's fields, forwarded or left out.
struct Fields<S> {
    inner: S,
    level: Level,
}

impl<S: SerializeStruct> SerializeStruct for Fields<S> {
    type Ok = S::Ok;
    type Error = S::Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), S::Error> {
        match (self.level, key) {
            (Level::Object, "metadata") => self.inner.serialize_field(key, &Below { value, level: Level::Metadata }),
            (Level::Metadata, "managedFields") => self.inner.skip_field(key),
            (Level::Only(kept), _) if !kept.contains(&key) => self.inner.skip_field(key),
            _ => self.inner.serialize_field(key, value),
        }
    }

    fn end(self) -> Result<S::Ok, S::Error> {
        self.inner.end()
    }
}

/// Forwards a serializer method to `inner`.
macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(fn $method(self, $($arg: $ty),*) -> Result<$out, S::Error> {
            self.inner.$method($($arg),*)
        })*
    };
}

impl<S: Serializer> Serializer for Skipping<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = S::SerializeSeq;
    type SerializeTuple = S::SerializeTuple;
    type SerializeTupleStruct = S::SerializeTupleStruct;
    type SerializeTupleVariant = S::SerializeTupleVariant;
    type SerializeMap = S::SerializeMap;
    type SerializeStruct = Fields<S::SerializeStruct>;
    type SerializeStructVariant = S::SerializeStructVariant;

    forward! {
        serialize_bool(v: bool) -> S::Ok;
        serialize_i8(v: i8) -> S::Ok;
        serialize_i16(v: i16) -> S::Ok;
        serialize_i32(v: i32) -> S::Ok;
        serialize_i64(v: i64) -> S::Ok;
        serialize_u8(v: u8) -> S::Ok;
        serialize_u16(v: u16) -> S::Ok;
        serialize_u32(v: u32) -> S::Ok;
        serialize_u64(v: u64) -> S::Ok;
        serialize_f32(v: f32) -> S::Ok;
        serialize_f64(v: f64) -> S::Ok;
        serialize_char(v: char) -> S::Ok;
        serialize_str(v: &str) -> S::Ok;
        serialize_bytes(v: &[u8]) -> S::Ok;
        serialize_none() -> S::Ok;
        serialize_unit() -> S::Ok;
        serialize_unit_struct(name: &'static str) -> S::Ok;
        serialize_unit_variant(name: &'static str, index: u32, variant: &'static str) -> S::Ok;
        serialize_seq(len: Option<usize>) -> S::SerializeSeq;
        serialize_tuple(len: usize) -> S::SerializeTuple;
        serialize_tuple_struct(name: &'static str, len: usize) -> S::SerializeTupleStruct;
        serialize_tuple_variant(name: &'static str, index: u32, variant: &'static str, len: usize)
            -> S::SerializeTupleVariant;
        serialize_map(len: Option<usize>) -> S::SerializeMap;
        serialize_struct_variant(name: &'static str, index: u32, variant: &'static str, len: usize)
            -> S::SerializeStructVariant;
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, name: &'static str, value: &T) -> Result<S::Ok, S::Error> {
        self.inner.serialize_newtype_struct(name, value)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        self.inner.serialize_newtype_variant(name, index, variant, value)
    }

    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Self::SerializeStruct, S::Error> {
        Ok(Fields { inner: self.inner.serialize_struct(name, len)?, level: self.level })
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    #[test]
    fn managed_fields_are_left_out_and_everything_else_kept() {
        let config_map: ConfigMap = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "dolly", "labels": {"herd": "north"}, "managedFields": [
                {"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:weight": {}}}}]},
            "data": {"weight": "120"},
        }))
        .unwrap();
        let mut expected = serde_json::to_value(&config_map).unwrap();
        expected["metadata"].as_object_mut().unwrap().remove("managedFields");
        assert_eq!(to_value(&config_map).unwrap(), expected);
        assert_eq!(
            to_value(&json!({"metadata": {"managedFields": []}, "a": 1})).unwrap(),
            json!({"metadata": {}, "a": 1})
        );
    }

    /// A value that cannot be serialized: reaching it fails the whole serialization.
    struct Unserializable;

    impl Serialize for Unserializable {
        fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("serialized"))
        }
    }

    #[derive(Serialize)]
    struct Object {
        metadata: Meta,
        spec: Meta,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        name: &'static str,
        managed_fields: Option<Unserializable>,
    }

    #[test]
    fn managed_fields_are_never_serialized_and_only_metadata_loses_them() {
        let meta = |name| Meta { name, managed_fields: Some(Unserializable) };
        let object = Object { metadata: meta("dolly"), spec: Meta { name: "spec", managed_fields: None } };
        let value = to_value(&object).unwrap();
        assert_eq!(value, json!({"metadata": {"name": "dolly"}, "spec": {"name": "spec", "managedFields": null}}));
        assert!(to_value(&Object { metadata: meta("dolly"), spec: meta("spec") }).is_err());
    }
}
