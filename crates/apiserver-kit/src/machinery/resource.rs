//! What a resource is, as the generic machinery sees it: the group and version, its names,
//! scope and verbs ([`ResourceInfo`]), its Rust type ([`ApiResource`]) and the type-erased
//! description discovery and OpenAPI use ([`ResourceDescriptor`]).

use super::verb::Verb;
use kube::Resource;
use serde::{Serialize, de::DeserializeOwned};
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

/// Static facts about a resource, as advertised by discovery and OpenAPI.
#[derive(Clone, Copy, Debug)]
pub struct ResourceInfo {
    /// The API group, e.g. `example.com`.
    pub group: &'static str,
    /// Kind, e.g. `Widget`.
    pub kind: &'static str,
    /// Kind of the list, e.g. `WidgetList`.
    pub list_kind: &'static str,
    /// Plural name used in paths, e.g. `widgets`.
    pub plural: &'static str,
    /// Singular name, e.g. `widget`.
    pub singular: &'static str,
    /// Short names accepted by kubectl, e.g. `lm`.
    pub short_names: &'static [&'static str],
    /// Categories (`kubectl get all`).
    pub categories: &'static [&'static str],
    /// Whether objects live in namespaces: must agree with the type's
    /// [`kube::Resource::Scope`] (kube's derive makes it `NamespaceResourceScope` with
    /// `namespaced`, `ClusterResourceScope` without): [`check_scope`] makes a mismatch a
    /// compile error where the resource is mounted.
    pub namespaced: bool,
    /// Verbs served, in discovery order.
    pub verbs: &'static [Verb],
    /// One-paragraph description used as the schema's description (`kubectl explain`).
    pub description: &'static str,
    /// Fields usable in field selectors besides `metadata.name` and `metadata.namespace`: dotted
    /// paths of scalars (an unset field selects as the empty string), read from the stored
    /// encoding ([`super::stored::Stored::field`]).
    pub selectable_fields: &'static [&'static str],
    /// Subresources served besides the object itself (routes, discovery, OpenAPI follow this).
    pub subresources: &'static [Subresource],
}

/// Which part of an object a request addresses: the object itself, or one of its subresources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subresource {
    /// The object (`/widgets/{name}`): a write may change everything but the status.
    Main,
    /// `/status`: a write may change the status only, as for a custom resource.
    Status,
}

impl Subresource {
    /// The path segment after the object's name, and the `subresource` of authorization
    /// attributes; `None` for the object itself.
    pub const fn name(self) -> Option<&'static str> {
        match self {
            Self::Main => None,
            Self::Status => Some("status"),
        }
    }
}

impl ResourceInfo {
    /// Whether this resource serves `verb`.
    pub fn allows(&self, verb: Verb) -> bool {
        self.verbs.contains(&verb)
    }

    /// The verbs served on the object ([`ResourceInfo::verbs`]) or on one of its subresources,
    /// in discovery order.
    pub fn verbs_of(&self, subresource: Subresource) -> &'static [Verb] {
        match subresource {
            Subresource::Main => self.verbs,
            Subresource::Status => &[Verb::Get, Verb::Patch, Verb::Update],
        }
    }

    /// Whether this resource serves `subresource` (the object itself is always served).
    pub fn has(&self, subresource: Subresource) -> bool {
        subresource == Subresource::Main || self.subresources.contains(&subresource)
    }

    /// `plural.group`, for error messages.
    pub fn group_resource(&self) -> super::error::GroupResource {
        super::error::GroupResource { group: self.group, resource: self.plural }
    }
}

/// The scope of a resource's objects as its Rust type declares it: in a namespace
/// ([`kube::core::NamespaceResourceScope`]) or in the cluster ([`kube::core::ClusterResourceScope`]).
/// A cluster-scoped object has no namespace: its paths have no `namespaces/{namespace}/`
/// segment, a namespace in its body is cleared on writes, and no namespace lifecycle applies.
pub trait ObjectScope {
    /// Whether objects of this scope live in namespaces.
    const NAMESPACED: bool;
}

impl ObjectScope for kube::core::NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl ObjectScope for kube::core::ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// Stops the build of a program that serves `K` when `K::INFO.namespaced` disagrees with the
/// scope `K`'s type declares ([`ObjectScope`]): the check runs when the compiler instantiates it
/// for `K`, so a mismatch is a compile error, not a server answering at the wrong paths. The
/// builder calls it for every resource it mounts. A namespaced type said to be cluster-scoped
/// does not build:
///
/// ```compile_fail,E0080
/// use apiserver_kit::machinery::resource::{ApiResource, ResourceInfo, check_scope};
/// use apiserver_kit::machinery::verb::Verb;
///
/// #[derive(kube::CustomResource, serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq, schemars::JsonSchema)]
/// #[kube(group = "example.com", version = "v1", kind = "Thing", namespaced, derive = "PartialEq")]
/// pub struct ThingSpec {
///     size: i64,
/// }
///
/// impl ApiResource for Thing {
///     const INFO: ResourceInfo = ResourceInfo {
///         group: "example.com",
///         kind: "Thing",
///         list_kind: "ThingList",
///         plural: "things",
///         singular: "thing",
///         short_names: &[],
///         categories: &[],
///         namespaced: false, // kube's derive says `namespaced`
///         verbs: Verb::ALL,
///         description: "A thing.",
///         selectable_fields: &[],
///         subresources: &[],
///     };
///
///     fn body_properties() -> (serde_json::Map<String, serde_json::Value>, Vec<&'static str>) {
///         (serde_json::Map::new(), Vec::new())
///     }
/// }
///
/// fn main() {
///     check_scope::<Thing>();
/// }
/// ```
pub const fn check_scope<K: ApiResource>() {
    const {
        assert!(
            K::INFO.namespaced == <K::Scope as ObjectScope>::NAMESPACED,
            "ResourceInfo::namespaced disagrees with the type's kube::Resource::Scope"
        )
    }
}

/// What a resource is: its wire type, names and schema (its behaviour on writes is its
/// [`super::strategy::Strategy`]).
///
/// The Rust type is the wire type: it serializes with `apiVersion` and `kind` (kube's
/// `CustomResource` derive does this), its `metadata` is k8s-openapi's `ObjectMeta`.
pub trait ApiResource:
    Resource<DynamicType = (), Scope: ObjectScope>
    + Serialize
    + DeserializeOwned
    + Clone
    + PartialEq
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// Names, scope and verbs.
    const INFO: ResourceInfo;

    /// JSON schema of the top-level fields other than `apiVersion`, `kind` and `metadata`
    /// (e.g. `spec`), fully inlined, plus the names of the required ones. Used by OpenAPI and by
    /// the structural check of request bodies.
    fn body_properties() -> (serde_json::Map<String, serde_json::Value>, Vec<&'static str>);

    /// An object as a store holds it. An earlier release may have stored it at an older
    /// version: a resource whose storage version changed reads those here, converting them, as
    /// the kube-apiserver's storage decodes every version it ever stored (the object moves to
    /// the storage version at its next write).
    fn decode_stored(json: &[u8]) -> serde_json::Result<Self> {
        serde_json::from_slice(json)
    }

    /// Whether `json`, as a store holds it, is at the storage version (an update that changes
    /// nothing rewrites an object that is not).
    fn stored_current(_json: &[u8]) -> bool {
        true
    }
}

/// A resource's description without its Rust type, for discovery and OpenAPI.
#[derive(Clone, Debug)]
pub struct ResourceDescriptor {
    /// Names, scope and verbs.
    pub info: ResourceInfo,
    /// Top-level properties besides apiVersion, kind and metadata.
    pub properties: serde_json::Map<String, serde_json::Value>,
    /// Which of those are required.
    pub required: Vec<&'static str>,
    /// The version its objects are stored at, whose `group/version/kind` discovery's
    /// `storageVersionHash` digests at every version.
    pub storage_version: String,
    /// When this version of the resource is deprecated, the `Warning` every answer at it carries
    /// (and its OpenAPI operations are marked deprecated).
    pub deprecation: Option<String>,
}

impl ResourceDescriptor {
    /// The descriptor of `K`, stored at its own version.
    pub fn of<K: ApiResource>() -> Self {
        Self::stored_as::<K, K>()
    }

    /// The descriptor of `V`, whose objects are stored as `Hub`.
    pub fn stored_as<Hub: ApiResource, V: ApiResource>() -> Self {
        let schema = body_schema::<V>();
        Self {
            info: V::INFO,
            properties: schema.properties.clone(),
            required: schema.required.clone(),
            storage_version: Hub::version(&()).into_owned(),
            deprecation: None,
        }
    }

    /// The same, deprecated in favour of `Hub`'s version, with the warning a
    /// CustomResourceDefinition gives for a deprecated version without a `deprecationWarning`.
    pub fn deprecated_for<Hub: ApiResource, V: ApiResource>() -> Self {
        let warning = deprecation_warning(&V::api_version(&()), &Hub::api_version(&()), V::INFO.kind);
        Self { deprecation: Some(warning), ..Self::stored_as::<Hub, V>() }
    }
}

/// The kube-apiserver's default warning for a deprecated version of a custom resource
/// (apiextensions-apiserver's `defaultDeprecationWarning`): `group/v1alpha Kind is deprecated;
/// use group/v1 Kind`, naming the newest served version that is not deprecated.
pub fn deprecation_warning(deprecated: &str, replacement: &str, kind: &str) -> String {
    format!("{deprecated} {kind} is deprecated; use {replacement} {kind}")
}

/// The versions of the group, the preferred first, each with the resources served at it.
pub type GroupVersions = [(&'static str, Vec<ResourceDescriptor>)];

/// The schema of a resource's top-level fields besides `apiVersion`, `kind` and `metadata`.
#[derive(Debug)]
pub struct BodySchema {
    /// Each field's inlined schema.
    pub properties: serde_json::Map<String, serde_json::Value>,
    /// The fields a body must have.
    pub required: Vec<&'static str>,
    /// The whole object's schema (apiVersion, kind, metadata's shapes and the properties),
    /// compiled for managed fields ([`super::typed`]) and server-side apply.
    pub object: Arc<super::shape::Schema>,
}

/// `K`'s body schema ([`ApiResource::body_properties`]), built on the first call and kept, so
/// decoding a write reads it instead of running schemars again.
pub fn body_schema<K: ApiResource>() -> Arc<BodySchema> {
    type Schemas = parking_lot::RwLock<HashMap<TypeId, Arc<BodySchema>>>;
    static SCHEMAS: LazyLock<Schemas> = LazyLock::new(Schemas::default);
    if let Some(schema) = SCHEMAS.read().get(&TypeId::of::<K>()) {
        return schema.clone();
    }
    let (properties, required) = K::body_properties();
    let mut all = properties.clone();
    all.insert("apiVersion".into(), serde_json::json!({"type": "string"}));
    all.insert("kind".into(), serde_json::json!({"type": "string"}));
    all.insert("metadata".into(), super::schema::object_meta_shapes());
    let object = Arc::new(super::shape::Schema::compile(&serde_json::json!({"type": "object", "properties": all})));
    let built = Arc::new(BodySchema { properties, required, object });
    SCHEMAS.write().entry(TypeId::of::<K>()).or_insert(built).clone()
}
