//! Validation rules in schemas (`x-kubernetes-validations`), enforced as the kube-apiserver
//! enforces them for a custom resource (k8s.io/apiextensions-apiserver's `schema/cel`): the CEL
//! rules kube's derive puts in a resource's schema (`#[x_kube(validation = Rule::new("self.x >
//! 0").message("…"))]`, `#[kube(validation = …)]` at the root) are compiled once per version of
//! the resource, `self` typed from the schema node as Kubernetes types it, and every write (a
//! create, update, patch, apply or status write) is refused with the rules' field errors, after
//! the strategy's own validation as a custom resource's rules run after its schema validation.
//!
//! - [`Rules::compile`] compiles a schema's rules, and says what a CustomResourceDefinition of
//!   the schema would be refused for ([`Rules::problems`]: a rule that does not compile, or
//!   whose estimated cost, times how many times its node may be in an object, is over the
//!   per-expression limit, a message expression over it, all of them over the schema's limit,
//!   in the kube-apiserver's words); [`of`] keeps each resource version's rules, which the
//!   server's builder compiles and checks before it serves anything.
//! - [`Rules::validate`] checks an object, and on an update the old object: each node's rules
//!   with `self` its value; transition rules (those reading `oldSelf`) only where an old value
//!   correlates (properties, map entries, items of `x-kubernetes-list-type: map` lists by their
//!   keys), unless `optionalOldSelf`; `message`, `messageExpression` (within its limits), the
//!   default `failed rule: …`; `reason` and `fieldPath`; the per-call cost limit and the
//!   object's cost budget; and ratcheting, which turns a failure on a value the update left as
//!   it was into a warning.
//!
//! Layout: `schema` (what is read of a schema node), `escape` (property names as CEL
//! identifiers), `types` (a node's CEL type), `sizes` (the sizes its values may have, which
//! rules' costs are estimated from), `values` (JSON as the CEL value of its node), `compile` (a
//! rule compiled, and the definition's problems), `cost` (the definition's cost limits),
//! `build` (the tree of nodes with rules), `path` (error paths and `fieldPath`), `ratchet`
//! (correlation with the old object), `validate` (the walk).

mod build;
mod compile;
mod cost;
mod escape;
mod path;
mod ratchet;
mod schema;
mod sizes;
mod types;
mod validate;
mod values;

pub use compile::Rule;
pub use validate::{Outcome, RUNTIME_COST_BUDGET};

use crate::machinery::error::{FieldError, FieldErrorKind};
use crate::machinery::resource::ApiResource;
use serde_json::Value;
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

/// Where a resource version's schema is in the CustomResourceDefinition kube's derive writes,
/// as the kube-apiserver names it when it refuses such a definition (of one version, whose
/// schema it validates as the definition's own): the prefix of the problems' paths.
pub const DEFINITION_SCHEMA: &str = "spec.validation.openAPIV3Schema";

/// A schema's rules, compiled.
///
/// ```
/// use apiserver_kit::validation_rules::Rules;
/// use serde_json::json;
///
/// let spec = json!({"type": "object", "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
///     "x-kubernetes-validations": [{"rule": "self.min <= self.max", "message": "min is above max"},
///         {"rule": "self.max == oldSelf.max", "message": "max is immutable", "fieldPath": ".max"}]});
/// let rules = Rules::compile(&json!({"type": "object", "properties": {"spec": spec}}));
/// assert!(rules.problems().is_empty());
/// let created = rules.validate(&json!({"spec": {"min": 5, "max": 1}}), None);
/// assert_eq!(created.errors[0].to_string(), "spec: Invalid value: min is above max");
/// let updated = rules.validate(&json!({"spec": {"min": 5, "max": 9}}), Some(&json!({"spec": {"min": 5, "max": 1}})));
/// assert_eq!(updated.errors[0].to_string(), "spec.max: Invalid value: max is immutable");
/// ```
#[derive(Debug)]
pub struct Rules {
    /// The root node (the resource's), when the schema has rules.
    root: Option<build::Node>,
    /// What a definition of the schema would be refused for.
    problems: Vec<String>,
}

impl Rules {
    /// Compiles the rules of `schema`, a resource's schema (its root the resource's own).
    pub fn compile(schema: &Value) -> Rules {
        Rules::compile_at(schema, DEFINITION_SCHEMA)
    }

    /// [`Rules::compile`], the problems' paths starting with `path`.
    pub fn compile_at(schema: &Value, path: &str) -> Rules {
        let mut builder = build::Builder::new();
        let at = build::At { path: path.to_string(), uncorrelatable: None, cardinality: Some(1), costed: true };
        // The rules of `allOf` branches run only beside others (`NewValidator` looks for rules
        // everywhere but there).
        let root = if has_rules(schema) { builder.node(schema, schema, true, &at) } else { None };
        Rules { root, problems: builder.problems(path) }
    }

    /// Whether the schema has no rules at all.
    pub fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    /// What the kube-apiserver would refuse a CustomResourceDefinition of this schema for, each
    /// a field error (`spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule:
    /// Invalid value: …: compilation failed: ERROR: <input>:1:6: undefined field 'nope'`).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Validates `object`; on an update, `old` is the object before it.
    pub fn validate(&self, object: &Value, old: Option<&Value>) -> Outcome {
        let Some(root) = &self.root else { return Outcome::default() };
        let mut walk = validate::Walk::new();
        let path = path::Path::root();
        match old {
            Some(old) => {
                let correlated = ratchet::Correlated::new(object, old, &root.schema);
                walk.validate(root, &path, object, Some(old), &ratchet::Ratchet::root(correlated));
            }
            None => walk.validate(root, &path, object, None, &ratchet::Ratchet::default()),
        }
        walk.outcome
    }
}

/// Whether `schema` has rules, but in `allOf` branches (`hasXValidations`).
fn has_rules(schema: &Value) -> bool {
    let own = schema.get("x-kubernetes-validations").and_then(Value::as_array).is_some_and(|r| !r.is_empty());
    let properties = schema.get("properties").and_then(Value::as_object).into_iter().flat_map(|p| p.values());
    let below = ["items", "additionalProperties"].iter().filter_map(|k| schema.get(*k)).chain(properties);
    own || below.filter(|s| s.is_object()).any(has_rules)
}

/// The rules of `K`'s version, compiled from its definition's schema on the first call and kept.
pub fn of<K: ApiResource>() -> Arc<Rules> {
    type Compiled = parking_lot::RwLock<HashMap<TypeId, Arc<Rules>>>;
    static COMPILED: LazyLock<Compiled> = LazyLock::new(Compiled::default);
    if let Some(rules) = COMPILED.read().get(&TypeId::of::<K>()) {
        return rules.clone();
    }
    let rules = Arc::new(Rules::compile(&resource_schema::<K>()));
    COMPILED.write().entry(TypeId::of::<K>()).or_insert(rules).clone()
}

/// `K`'s schema as the server publishes it (no `null` types; integral bounds as integers), its
/// root's rules included.
fn resource_schema<K: ApiResource>() -> Value {
    let mut schema = crate::machinery::resource::definition::<K>().schema().clone();
    crate::machinery::schema::strip_nulls(&mut schema);
    crate::machinery::number::integral_as_integers(&mut schema);
    schema
}

/// The error a custom resource's strategy adds instead of running the rules when the errors
/// found before them include one that blocks them (`hasBlockingErr`: a required, unsupported,
/// too long or mistyped value).
pub fn not_checked(errors: &[FieldError]) -> Option<FieldError> {
    use FieldErrorKind::{NotSupported, Required, TooLong, TypeInvalid};
    let blocking = errors.iter().any(|e| matches!(e.kind, NotSupported | Required | TooLong | TypeInvalid));
    blocking.then(|| FieldError {
        field: "<nil>".into(),
        kind: FieldErrorKind::Invalid,
        value: Some("null".into()),
        detail: "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".into(),
    })
}
