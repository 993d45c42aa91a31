//! A resource's schema compiled once into the shapes that managed fields and server-side apply
//! walk ([`super::typed`], [`super::merge`]), so that walking an object reads no schema JSON: per
//! node, its declared type, its declared fields, the schema of its other keys and of its items,
//! and its `x-kubernetes-map-type`, `x-kubernetes-list-type` and `x-kubernetes-list-map-keys`.
//!
//! The shapes are structured-merge-diff's: a scalar; an object, granular unless
//! `x-kubernetes-map-type: atomic`; a list, atomic unless `x-kubernetes-list-type` is `set` (its
//! entries named by value) or `map` (named by its key fields). A node that declares no type takes
//! its shape from the value (objects granular, lists atomic); `x-kubernetes-int-or-string` is a
//! scalar whatever the value.

use serde_json::Value;
use std::collections::BTreeMap;

/// The declared fields of an object, by name.
pub type Fields = BTreeMap<String, Schema>;

/// One schema node, compiled (see the module documentation).
#[derive(Debug, Default)]
pub struct Schema {
    declared: Declared,
    fields: Option<Fields>,
    extra: Option<Box<Schema>>,
    items: Option<Box<Schema>>,
    atomic_map: bool,
    /// Whether keys other than the declared fields are kept (`additionalProperties: true` or
    /// `x-kubernetes-preserve-unknown-fields`).
    open: bool,
    list: ListKind,
}

/// The type a node declares.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Declared {
    /// No `type`: the value decides.
    #[default]
    Untyped,
    Object,
    Array,
    /// Any other type, or `x-kubernetes-int-or-string`.
    Scalar,
}

/// How a list's entries are told apart.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum ListKind {
    /// The list is one value.
    #[default]
    Atomic,
    /// Entries are scalars, each its own identity.
    Set,
    /// Entries are objects, identified by these fields.
    Map(Vec<String>),
}

/// How a schema node treats a value.
pub enum Shape<'s> {
    /// A scalar: one value.
    Scalar,
    /// An object, its keys walked one by one unless it is atomic.
    Object {
        /// Its declared fields (`properties`), if any.
        fields: Option<&'s Fields>,
        /// The schema of its undeclared keys (`additionalProperties`), if any.
        extra: Option<&'s Schema>,
        /// Whether it is one value (`x-kubernetes-map-type: atomic`).
        atomic: bool,
        /// Whether a key it does not declare is unknown, dropped by the decoder: the node
        /// declares fields, and neither a schema for other keys nor `additionalProperties: true`
        /// or `x-kubernetes-preserve-unknown-fields`.
        closed: bool,
    },
    /// A list.
    List {
        /// The schema of its entries (`items`), if any.
        items: Option<&'s Schema>,
        /// How its entries are told apart.
        kind: &'s ListKind,
    },
}

/// The list kind of a value no schema describes.
static ATOMIC: ListKind = ListKind::Atomic;

impl Schema {
    /// Compiles an OpenAPI v3 schema (inlined, no `$ref`).
    pub fn compile(schema: &Value) -> Schema {
        let extension = |name: &str| schema.get(name);
        let text = |name: &str| extension(name).and_then(Value::as_str);
        let declared = if extension("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
            Declared::Scalar
        } else {
            match text("type") {
                None => Declared::Untyped,
                Some("object") => Declared::Object,
                Some("array") => Declared::Array,
                Some(_) => Declared::Scalar,
            }
        };
        let fields = extension("properties")
            .and_then(Value::as_object)
            .map(|properties| properties.iter().map(|(name, field)| (name.clone(), Schema::compile(field))).collect());
        let list = match text("x-kubernetes-list-type") {
            Some("set") => ListKind::Set,
            Some("map") => ListKind::Map(
                extension("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|keys| keys.iter().filter_map(Value::as_str).map(str::to_string).collect())
                    .unwrap_or_default(),
            ),
            _ => ListKind::Atomic,
        };
        Schema {
            declared,
            fields,
            extra: extension("additionalProperties").filter(|a| a.is_object()).map(|a| Box::new(Schema::compile(a))),
            items: extension("items").map(|items| Box::new(Schema::compile(items))),
            atomic_map: text("x-kubernetes-map-type") == Some("atomic"),
            open: extension("additionalProperties") == Some(&Value::Bool(true))
                || extension("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)),
            list,
        }
    }

    /// The declared fields (`properties`), if any.
    pub fn fields(&self) -> Option<&Fields> {
        self.fields.as_ref()
    }

    /// The schema of undeclared keys (`additionalProperties`), if any.
    pub fn extra(&self) -> Option<&Schema> {
        self.extra.as_deref()
    }

    /// The schema of a list's entries (`items`), if any.
    pub fn items(&self) -> Option<&Schema> {
        self.items.as_deref()
    }
}

/// The shape `schema` gives `value` (a missing schema, or one declaring no type, deduces it from
/// the value).
pub fn shape<'s>(schema: Option<&'s Schema>, value: &Value) -> Shape<'s> {
    let declared = schema.map_or(Declared::Untyped, |s| s.declared);
    let object = match (declared, value) {
        (Declared::Object, _) | (Declared::Untyped, Value::Object(_)) => true,
        (Declared::Array, _) | (Declared::Untyped, Value::Array(_)) => false,
        _ => return Shape::Scalar,
    };
    match schema {
        None if object => Shape::Object { fields: None, extra: None, atomic: false, closed: false },
        None => Shape::List { items: None, kind: &ATOMIC },
        Some(s) if object => Shape::Object {
            fields: s.fields(),
            extra: s.extra(),
            atomic: s.atomic_map,
            closed: s.fields.is_some() && s.extra.is_none() && !s.open,
        },
        Some(s) => Shape::List { items: s.items(), kind: &s.list },
    }
}

/// The schema of field `key` of an object: its declared one, else the one of undeclared keys.
pub fn field_schema<'s>(fields: Option<&'s Fields>, extra: Option<&'s Schema>, key: &str) -> Option<&'s Schema> {
    fields.and_then(|f| f.get(key)).or(extra)
}

/// The compiled schema of a resource's whole object
/// ([`BodySchema::object`](crate::machinery::resource::BodySchema::object)), compiled on the
/// first call and kept. Body schemas live as long as the program (`body_schema` keeps each), so
/// each one's address names it.
pub fn object_schema(body: &std::sync::Arc<crate::machinery::resource::BodySchema>) -> std::sync::Arc<Schema> {
    use std::collections::HashMap;
    use std::sync::{Arc, LazyLock};
    type Compiled = parking_lot::RwLock<HashMap<usize, Arc<Schema>>>;
    static COMPILED: LazyLock<Compiled> = LazyLock::new(Compiled::default);
    let key = Arc::as_ptr(body) as usize;
    if let Some(schema) = COMPILED.read().get(&key) {
        return schema.clone();
    }
    let compiled = Arc::new(Schema::compile(&body.object));
    COMPILED.write().entry(key).or_insert(compiled).clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn is_scalar(shape: Shape) -> bool {
        matches!(shape, Shape::Scalar)
    }

    #[test]
    fn declared_types_decide_and_undeclared_ones_follow_the_value() {
        let string = Schema::compile(&json!({"type": "string"}));
        assert!(is_scalar(shape(Some(&string), &json!({"a": 1}))), "a declared scalar stays one");
        let int_or_string = Schema::compile(&json!({"type": "object", "x-kubernetes-int-or-string": true}));
        assert!(is_scalar(shape(Some(&int_or_string), &json!({}))));
        let untyped = Schema::compile(&json!({}));
        assert!(matches!(shape(Some(&untyped), &json!({})), Shape::Object { atomic: false, .. }));
        assert!(matches!(shape(None, &json!([1])), Shape::List { kind: ListKind::Atomic, .. }));
        assert!(is_scalar(shape(None, &json!(1))));
    }

    #[test]
    fn kubernetes_extensions_are_read_once() {
        let schema = Schema::compile(&json!({
            "type": "object",
            "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic"},
                "conditions": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"], "items": {"type": "object"}},
                "finalizers": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            },
            "additionalProperties": true,
        }));
        let Shape::Object { fields, extra, atomic: false, closed } = shape(Some(&schema), &json!({})) else { panic!() };
        assert!(extra.is_none(), "only a schema object describes other keys");
        assert!(!closed, "`additionalProperties: true` keeps other keys");
        let field = |name| field_schema(fields, extra, name);
        assert!(matches!(shape(field("labels"), &json!({})), Shape::Object { extra: Some(_), .. }));
        assert!(matches!(shape(field("selector"), &json!({})), Shape::Object { atomic: true, .. }));
        let conditions = shape(field("conditions"), &json!([]));
        assert!(matches!(conditions, Shape::List { kind: ListKind::Map(keys), items: Some(_) } if keys == &["type"]));
        assert!(matches!(shape(field("finalizers"), &json!([])), Shape::List { kind: ListKind::Set, .. }));
        assert!(field("other").is_none());
        let closed = |schema| matches!(shape(Some(&Schema::compile(&schema)), &json!({})), Shape::Object { closed, .. } if closed);
        assert!(closed(json!({"type": "object", "properties": {"a": {}}})), "declared fields alone");
        assert!(!closed(
            json!({"type": "object", "properties": {"a": {}}, "x-kubernetes-preserve-unknown-fields": true})
        ));
        assert!(!closed(json!({"type": "object", "additionalProperties": {"type": "string"}})));
        assert!(!closed(json!({"type": "object"})), "no declared fields: every key kept");
    }
}
