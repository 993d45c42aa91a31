//! The static types of CEL expressions, as cel-go's type checker has them, and the declarations
//! of the variables an expression may read: Kubernetes' admission environment (`object` dyn,
//! `request` a `kubernetes.AdmissionRequest` with declared fields, ...) or any other, such as a
//! validation rule's `self` typed from its schema.

use std::collections::BTreeMap;
use std::fmt;
use std::mem::discriminant;
use std::sync::{Arc, LazyLock};

/// A static type, as cel-go's checker has it (`list(int)`, `map(string, dyn)`,
/// `kubernetes.AdmissionRequest`); [`fmt::Display`] writes it as cel-go's messages do.
#[derive(Clone, Debug, PartialEq)]
pub enum CelType {
    /// Any value: known only when the expression runs (an object's fields in admission policies).
    Dyn,
    /// The type of `null`.
    Null,
    /// `bool`.
    Bool,
    /// `int`.
    Int,
    /// `uint`.
    Uint,
    /// `double`.
    Double,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// `google.protobuf.Timestamp`, written `timestamp`.
    Timestamp,
    /// `google.protobuf.Duration`, written `duration`.
    Duration,
    /// `list(element)`.
    List(Box<CelType>),
    /// `map(key, value)`.
    Map(Box<CelType>, Box<CelType>),
    /// An object type (`kubernetes.AdmissionRequest`, or a library's `kubernetes.Quantity`):
    /// selecting a field it does not declare is an error.
    Object(Arc<ObjectType>),
    /// A type of a library's values, by name (`net.IP`), perhaps with parameters
    /// (`optional_type(int)`).
    Opaque(Arc<str>, Vec<CelType>),
    /// The type of a type value: `type(int)` (the type of the identifier `int`), or `type`.
    Type(Option<Box<CelType>>),
    /// A type parameter (the `A` of `size(list(A))`), which the checker binds as it unifies.
    Param(Arc<str>),
    /// The type of what the checker refused (cel-go's `!error!`): assignable to anything, so
    /// that one mistake is reported once.
    Error,
}

impl CelType {
    /// `list(element)`.
    pub fn list(element: CelType) -> CelType {
        CelType::List(Box::new(element))
    }

    /// `map(key, value)`.
    pub fn map(key: CelType, value: CelType) -> CelType {
        CelType::Map(Box::new(key), Box::new(value))
    }

    /// `optional_type(value)`.
    pub fn optional(value: CelType) -> CelType {
        CelType::Opaque(Arc::from(OPTIONAL), vec![value])
    }

    /// The nil type, which k8s.io/apiserver's `JSONPatch` type gives a field it does not have:
    /// written empty, assignable from dyn alone; an expression of that type fails compilation.
    pub(crate) fn nil() -> CelType {
        CelType::Opaque(Arc::from(""), Vec::new())
    }

    /// Whether the type is or holds the nil type.
    pub(crate) fn holds_nil(&self) -> bool {
        matches!(self, CelType::Opaque(name, _) if name.is_empty()) || self.parameters().iter().any(|p| p.holds_nil())
    }

    /// A library's opaque type without parameters (`net.IP`).
    pub fn opaque(name: &str) -> CelType {
        CelType::Opaque(Arc::from(name), Vec::new())
    }

    /// `type(of)`: the type of the identifier that names `of`.
    pub fn type_of(of: CelType) -> CelType {
        CelType::Type(Some(Box::new(of)))
    }

    /// cel-go's type name (`TypeName`): parameters left out, well-known types by their full
    /// names (`google.protobuf.Timestamp`).
    pub fn name(&self) -> &str {
        match self {
            CelType::Dyn => "dyn",
            CelType::Null => "null_type",
            CelType::Bool => "bool",
            CelType::Int => "int",
            CelType::Uint => "uint",
            CelType::Double => "double",
            CelType::String => "string",
            CelType::Bytes => "bytes",
            CelType::Timestamp => "google.protobuf.Timestamp",
            CelType::Duration => "google.protobuf.Duration",
            CelType::List(_) => "list",
            CelType::Map(..) => "map",
            CelType::Object(object) => &object.name,
            CelType::Opaque(name, _) | CelType::Param(name) => name,
            CelType::Type(_) => "type",
            CelType::Error => "error",
        }
    }

    /// The type's parameters: a list's element type, a map's key and value types, ...
    pub fn parameters(&self) -> Vec<&CelType> {
        match self {
            CelType::List(element) => vec![element],
            CelType::Map(key, value) => vec![key, value],
            CelType::Opaque(_, parameters) => parameters.iter().collect(),
            CelType::Type(Some(of)) => vec![of],
            _ => Vec::new(),
        }
    }

    /// The same type with `parameters` instead of its own (as many).
    pub(crate) fn with_parameters(&self, parameters: Vec<CelType>) -> CelType {
        if let CelType::Opaque(name, _) = self {
            return CelType::Opaque(name.clone(), parameters);
        }
        let mut parameters = parameters.into_iter();
        let mut next = || parameters.next().unwrap_or(CelType::Dyn);
        match self {
            CelType::List(_) => CelType::list(next()),
            CelType::Map(..) => {
                let key = next();
                CelType::map(key, next())
            }
            CelType::Type(Some(_)) => CelType::type_of(next()),
            other => other.clone(),
        }
    }

    /// Whether both are of one kind (both lists, both objects, ...), whatever their parameters.
    pub(crate) fn same_kind(&self, other: &CelType) -> bool {
        discriminant(self) == discriminant(other)
    }

    /// cel-go's `IsExactType`: the same type, type parameters by name.
    pub fn is_exactly(&self, other: &CelType) -> bool {
        self.is_like(other, true)
    }

    /// cel-go's `IsEquivalentType`: the same type, any type parameter matching another.
    pub fn is_equivalent(&self, other: &CelType) -> bool {
        self.is_like(other, false)
    }

    fn is_like(&self, other: &CelType, parameter_names: bool) -> bool {
        let (mine, theirs) = (self.parameters(), other.parameters());
        self.same_kind(other)
            && mine.len() == theirs.len()
            && ((!parameter_names && matches!(self, CelType::Param(_))) || self.name() == other.name())
            && mine.iter().zip(&theirs).all(|(a, b)| a.is_like(b, parameter_names))
    }

    /// `dyn` (cel-go's `isDyn`).
    pub(crate) fn is_dyn(&self) -> bool {
        matches!(self, CelType::Dyn)
    }

    /// `dyn` or the type of an error: assignable to and from anything.
    pub(crate) fn is_dyn_or_error(&self) -> bool {
        matches!(self, CelType::Dyn | CelType::Error)
    }

    /// The value type of `optional_type(value)`; `None` for any other type.
    pub(crate) fn optional_value(&self) -> Option<&CelType> {
        match self {
            CelType::Opaque(name, parameters) if &**name == OPTIONAL => parameters.first(),
            _ => None,
        }
    }
}

impl CelType {
    /// cel-go's `Type.String()`, which k8s.io/apiserver's compiler writes in its return type
    /// errors (`must evaluate to Object but got dyn`): well-known types by their full names
    /// (`google.protobuf.Timestamp`), `null_type`, a type parameter `<A>`.
    pub fn go_string(&self) -> String {
        let name = match self {
            CelType::Param(name) => return format!("<{name}>"),
            CelType::Error => "*error*",
            other => other.name(),
        };
        let parameters = self.parameters();
        if parameters.is_empty() {
            return name.to_string();
        }
        let parameters: Vec<String> = parameters.iter().map(|p| p.go_string()).collect();
        format!("{name}({})", parameters.join(", "))
    }
}

/// The name of optional types.
const OPTIONAL: &str = "optional_type";

impl fmt::Display for CelType {
    /// cel-go's `FormatCELType`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CelType::Dyn => return f.write_str("dyn"),
            CelType::Null => return f.write_str("null"),
            CelType::Timestamp => return f.write_str("timestamp"),
            CelType::Duration => return f.write_str("duration"),
            CelType::Error => return f.write_str("!error!"),
            _ => {}
        }
        f.write_str(self.name())?;
        let parameters = self.parameters();
        if parameters.is_empty() {
            return Ok(());
        }
        f.write_str("(")?;
        for (i, parameter) in parameters.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{parameter}")?;
        }
        f.write_str(")")
    }
}

/// An object type: its name and its fields' types.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectType {
    name: String,
    fields: BTreeMap<String, CelType>,
    /// Whether its fields are declared: a library's object types (`kubernetes.Quantity`) are
    /// objects to cel-go's checker, but it knows no fields of them.
    declared: bool,
    /// The type of any field it does not declare, if it allows them: dyn for a mutation's
    /// `Object` types, the nil type ([`CelType::nil`]) for `JSONPatch`.
    undeclared: Option<CelType>,
}

impl ObjectType {
    /// An object type named `name` (`kubernetes.UserInfo`) with `fields`.
    pub fn new<N: Into<String>>(name: impl Into<String>, fields: impl IntoIterator<Item = (N, CelType)>) -> ObjectType {
        let fields = fields.into_iter().map(|(field, t)| (field.into(), t)).collect();
        ObjectType { name: name.into(), fields, declared: true, undeclared: None }
    }

    /// An object type whose every field is allowed, of type dyn (k8s.io/apiserver's
    /// `dynamic.ObjectType`: `Object`, `Object.spec`).
    pub fn open(name: impl Into<String>) -> ObjectType {
        ObjectType { name: name.into(), fields: BTreeMap::new(), declared: true, undeclared: Some(CelType::Dyn) }
    }

    /// A library's object type (`kubernetes.Quantity`, `kubernetes.authorization.Authorizer`),
    /// whose fields cel-go's checker cannot resolve.
    pub(crate) fn library(name: &str) -> ObjectType {
        ObjectType { name: name.to_string(), fields: BTreeMap::new(), declared: false, undeclared: None }
    }

    /// Whether the type's fields are declared (see [`ObjectType::library`]).
    pub(crate) fn is_declared(&self) -> bool {
        self.declared
    }

    /// The type's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The type of the field `name`, if the type declares it (any field of an open type: dyn).
    pub fn field(&self, name: &str) -> Option<&CelType> {
        self.fields.get(name).or(self.undeclared.as_ref())
    }

    /// The declared fields, by name.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &CelType)> {
        self.fields.iter().map(|(name, t)| (name.as_str(), t))
    }
}

/// The variables an expression may read, each with its type: what the type checker knows
/// besides the environment's functions.
///
/// ```
/// use apiserver_kit::cel::{CelType, Declarations, ObjectType, Program};
/// use std::sync::Arc;
///
/// let spec = ObjectType::new("Spec", [("replicas", CelType::Int), ("paused", CelType::Bool)]);
/// let declarations = Declarations::new().with_variable("self", CelType::Object(Arc::new(spec)));
/// assert!(Program::compile_declared("self.replicas > 1 || self.paused", &declarations).is_ok());
/// let error = Program::compile_declared("self.replica > 1", &declarations).unwrap_err();
/// assert_eq!(error.issues, "ERROR: <input>:1:5: undefined field 'replica'\n | self.replica > 1\n | ....^");
/// ```
#[derive(Clone, Debug, Default)]
pub struct Declarations {
    variables: Vec<(String, CelType)>,
    /// Whether a mutation's types and functions are declared ([`Declarations::with_patch_types`]).
    patch_types: bool,
}

impl Declarations {
    /// No variables.
    pub fn new() -> Declarations {
        Declarations::default()
    }

    /// These declarations and the variable `name` of type `t` (replacing one of that name).
    pub fn with_variable(mut self, name: impl Into<String>, t: CelType) -> Declarations {
        let name = name.into();
        self.variables.retain(|(n, _)| *n != name);
        self.variables.push((name, t));
        self
    }

    /// The variables `names` as k8s.io/apiserver's admission-policy environment declares them:
    /// `object`, `oldObject` and `params` dyn, `request` a `kubernetes.AdmissionRequest`,
    /// `namespaceObject` a `kubernetes.Namespace`, `authorizer` (and
    /// `authorizer.requestResource`) the authorization library's types, `variables` a map of dyn
    /// values; any other name dyn.
    pub fn admission(names: &[&str]) -> Declarations {
        let mut declarations = Declarations::new();
        for name in names {
            declarations = match *name {
                "request" => declarations.with_variable("request", CelType::Object(ADMISSION_REQUEST.clone())),
                "namespaceObject" => declarations.with_variable("namespaceObject", CelType::Object(NAMESPACE.clone())),
                "authorizer" => declarations
                    .with_variable("authorizer", library_object("kubernetes.authorization.Authorizer"))
                    .with_variable(
                        "authorizer.requestResource",
                        library_object("kubernetes.authorization.ResourceCheck"),
                    ),
                "variables" => declarations.with_variable("variables", CelType::map(CelType::String, CelType::Dyn)),
                other => declarations.with_variable(other, CelType::Dyn),
            };
        }
        declarations
    }

    /// These declarations with a MutatingAdmissionPolicy's mutation types, as k8s.io/apiserver
    /// compiles its mutations (`HasPatchTypes`): the object types `Object` and `Object.<path>`
    /// (any field, of type dyn) and `JSONPatch` (`op`, `path`, `from` strings, `value` dyn),
    /// which struct literals build ([`super::objects`]), and the function
    /// `jsonpatch.escapeKey(string) -> string`.
    ///
    /// ```
    /// use apiserver_kit::cel::{Declarations, Program};
    ///
    /// let declarations = Declarations::admission(&["object"]).with_patch_types();
    /// let program = Program::compile_declared("Object{spec: Object.spec{replicas: 2}}", &declarations).unwrap();
    /// assert_eq!(program.output_type().to_string(), "Object");
    /// assert!(Program::compile_declared("Object{}", &Declarations::admission(&["object"])).is_err());
    /// ```
    pub fn with_patch_types(mut self) -> Declarations {
        self.patch_types = true;
        self
    }

    /// Whether a mutation's types and functions are declared.
    pub fn has_patch_types(&self) -> bool {
        self.patch_types
    }

    /// The type of the variable `name`, if declared.
    pub fn variable(&self, name: &str) -> Option<&CelType> {
        self.variables.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    /// The declared variables' names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.variables.iter().map(|(name, _)| name.as_str())
    }

    /// The object type named `name` that a declared variable's type holds, at any depth (cel-go
    /// resolves such names as types: `kubernetes.AdmissionRequest`).
    pub fn object_type(&self, name: &str) -> Option<Arc<ObjectType>> {
        if let Some(t) = patch_type(name).filter(|_| self.patch_types) {
            return Some(t);
        }
        let mut pending: Vec<&CelType> = self.variables.iter().map(|(_, t)| t).collect();
        while let Some(t) = pending.pop() {
            if let CelType::Object(object) = t {
                if object.name == name && object.declared {
                    return Some(object.clone());
                }
                pending.extend(object.fields.values());
            }
            pending.extend(t.parameters());
        }
        None
    }
}

/// The object type a mutation's type resolver resolves `name` to (k8s.io/apiserver's
/// `DynamicTypeResolver`), if any.
fn patch_type(name: &str) -> Option<Arc<ObjectType>> {
    use super::objects::{JSON_PATCH, is_patch_type};
    if name == JSON_PATCH {
        return Some(JSON_PATCH_TYPE.clone());
    }
    is_patch_type(name).then(|| Arc::new(ObjectType::open(name)))
}

/// k8s.io/apiserver's `JSONPatchType`.
static JSON_PATCH_TYPE: LazyLock<Arc<ObjectType>> = LazyLock::new(|| {
    use CelType::{Dyn, String};
    let fields = [("op", String), ("path", String), ("from", String), ("value", Dyn)];
    // Its resolver answers any other field with no type (Go's nil `*types.Type`).
    let mut patch = ObjectType::new(super::objects::JSON_PATCH, fields);
    patch.undeclared = Some(CelType::nil());
    Arc::new(patch)
});

/// A library's object type (see [`ObjectType::library`]).
pub(crate) fn library_object(name: &str) -> CelType {
    CelType::Object(Arc::new(ObjectType::library(name)))
}

fn object(name: &str, fields: &[(&str, CelType)]) -> CelType {
    CelType::Object(Arc::new(ObjectType::new(name, fields.iter().cloned())))
}

fn strings() -> CelType {
    CelType::list(CelType::String)
}

/// k8s.io/apiserver's `BuildRequestType`: the admission request without its objects.
static ADMISSION_REQUEST: LazyLock<Arc<ObjectType>> = LazyLock::new(|| {
    use CelType::{Bool, Dyn, String};
    let kind = object("kubernetes.GroupVersionKind", &[("group", String), ("version", String), ("kind", String)]);
    let resource =
        object("kubernetes.GroupVersionResource", &[("group", String), ("version", String), ("resource", String)]);
    let user = object(
        "kubernetes.UserInfo",
        &[("username", String), ("uid", String), ("groups", strings()), ("extra", CelType::map(String, strings()))],
    );
    let fields = [
        ("kind", kind.clone()),
        ("resource", resource.clone()),
        ("subResource", String),
        ("requestKind", kind),
        ("requestResource", resource),
        ("requestSubResource", String),
        ("name", String),
        ("namespace", String),
        ("operation", String),
        ("userInfo", user),
        ("dryRun", Bool),
        ("options", Dyn),
    ];
    Arc::new(ObjectType::new("kubernetes.AdmissionRequest", fields))
});

/// k8s.io/apiserver's `BuildNamespaceType`: a Namespace without its managed fields and owners.
static NAMESPACE: LazyLock<Arc<ObjectType>> = LazyLock::new(|| {
    use CelType::{Int, String, Timestamp};
    let labels = CelType::map(String, String);
    let spec = object("kubernetes.NamespaceSpec", &[("finalizers", strings())]);
    let condition = object(
        "kubernetes.NamespaceCondition",
        &[
            ("status", String),
            ("type", String),
            ("lastTransitionTime", Timestamp),
            ("message", String),
            ("reason", String),
        ],
    );
    let status = object("kubernetes.NamespaceStatus", &[("conditions", CelType::list(condition)), ("phase", String)]);
    let metadata = object(
        "kubernetes.NamespaceMetadata",
        &[
            ("name", String),
            ("generateName", String),
            ("namespace", String),
            ("labels", labels.clone()),
            ("annotations", labels),
            ("UID", String),
            ("creationTimestamp", Timestamp),
            ("deletionGracePeriodSeconds", Int),
            ("deletionTimestamp", Timestamp),
            ("generation", Int),
            ("resourceVersion", String),
            ("finalizers", strings()),
        ],
    );
    let fields = [("metadata", metadata), ("spec", spec), ("status", status)];
    Arc::new(ObjectType::new("kubernetes.Namespace", fields))
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_written_as_cel_go_writes_them() {
        let t = CelType::map(CelType::String, CelType::list(CelType::optional(CelType::Timestamp)));
        assert_eq!(t.to_string(), "map(string, list(optional_type(timestamp)))");
        assert_eq!(CelType::type_of(CelType::Null).to_string(), "type(null)");
        assert_eq!(CelType::Type(None).to_string(), "type");
        assert_eq!(CelType::Object(ADMISSION_REQUEST.clone()).to_string(), "kubernetes.AdmissionRequest");
        assert_eq!(CelType::Error.to_string(), "!error!");
    }

    #[test]
    fn exact_types_compare_parameter_names_and_equivalent_ones_do_not() {
        let a = CelType::list(CelType::Param(Arc::from("A")));
        let b = CelType::list(CelType::Param(Arc::from("B")));
        assert!(!a.is_exactly(&b));
        assert!(a.is_equivalent(&b));
        assert!(!CelType::list(CelType::Int).is_equivalent(&CelType::list(CelType::Dyn)));
    }

    #[test]
    fn admission_variables_have_kubernetes_types_and_their_object_types_are_found_by_name() {
        let declarations = Declarations::admission(&["object", "request", "authorizer", "variables"]);
        assert_eq!(declarations.variable("object"), Some(&CelType::Dyn));
        assert_eq!(
            declarations.variable("authorizer.requestResource").map(|t| t.name()),
            Some("kubernetes.authorization.ResourceCheck")
        );
        assert!(declarations.variable("namespaceObject").is_none());
        let user = declarations.object_type("kubernetes.UserInfo");
        assert_eq!(user.and_then(|u| u.field("groups").cloned()), Some(CelType::list(CelType::String)));
        assert!(declarations.object_type("kubernetes.Namespace").is_none());
        assert!(declarations.object_type("kubernetes.authorization.Authorizer").is_none());
    }

    #[test]
    fn a_variable_declared_again_takes_its_new_type() {
        let declarations =
            Declarations::new().with_variable("self", CelType::Int).with_variable("self", CelType::String);
        assert_eq!(declarations.names().collect::<Vec<_>>(), ["self"]);
        assert_eq!(declarations.variable("self"), Some(&CelType::String));
    }
}
