//! What a resource is, as the generic machinery sees it: the group and version, its names,
//! scope and verbs ([`ResourceInfo`]), its Rust type ([`ApiResource`]) and the type-erased
//! description discovery and OpenAPI use ([`ResourceDescriptor`]).

use super::definition::Definition;
use super::verb::Verb;
use kube::core::object::HasSpec;
use kube::{CustomResourceExt, Resource};
use serde::{Serialize, de::DeserializeOwned};
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

/// What a resource is, as discovery, OpenAPI, paths and errors say it: read from its
/// CustomResourceDefinition ([`super::definition`]) the first time it is asked for
/// ([`ApiResource::info`]), but for the verbs ([`ApiResource::VERBS`]) and the scope, which is the
/// Rust type's ([`kube::Resource::Scope`]).
#[derive(Clone, Copy, Debug)]
pub struct ResourceInfo {
    /// The API group, e.g. `example.com` (`#[kube(group)]`).
    pub group: &'static str,
    /// Kind, e.g. `Widget` (`#[kube(kind)]`).
    pub kind: &'static str,
    /// Kind of the list, e.g. `WidgetList`.
    pub list_kind: &'static str,
    /// Plural name used in paths, e.g. `widgets` (`#[kube(plural)]`, or kube's plural of the kind).
    pub plural: &'static str,
    /// Singular name, e.g. `widget`.
    pub singular: &'static str,
    /// Short names accepted by kubectl, e.g. `lm` (`#[kube(shortname)]`).
    pub short_names: &'static [&'static str],
    /// Categories (`kubectl get all`; `#[kube(category)]`).
    pub categories: &'static [&'static str],
    /// Whether objects live in namespaces: the type's [`kube::Resource::Scope`] (kube's derive
    /// makes it `NamespaceResourceScope` with `namespaced`, `ClusterResourceScope` without).
    pub namespaced: bool,
    /// Verbs served, in discovery order ([`ApiResource::VERBS`]).
    pub verbs: &'static [Verb],
    /// One-paragraph description used as the schema's description (`kubectl explain`): kube's
    /// `#[kube(doc = "…")]`. Without it, kube's derive describes the kind as "Auto-generated
    /// derived type for …Spec via `CustomResource`"; the doc comment on the `…Spec` struct is the
    /// description of the `spec` field.
    pub description: &'static str,
    /// Fields usable in field selectors besides `metadata.name` and `metadata.namespace`
    /// (`#[kube(selectable = ".spec.color")]`, listed here without the dot): dotted paths of
    /// scalars (an unset field selects as the empty string), read from the stored encoding
    /// ([`super::stored::Stored::field`]).
    pub selectable_fields: &'static [&'static str],
    /// Subresources served besides the object itself (routes, discovery, OpenAPI and the status
    /// rules of writes follow this): `status` when kube's derive has `status = "…"` and the
    /// resource is written at all (a read-only view's status is a field like the others: nobody
    /// writes it, so no subresource keeps writers apart).
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
    /// `K`'s facts, read from its definition on the first call and kept. Requests ask for them
    /// several times each, on every core: each thread keeps the ones it asked for, so that
    /// asking again touches no lock (a shared lock's counter alone cost a GET 7% of its CPU).
    pub fn of<K: ApiResource>() -> &'static Self {
        thread_local! {
            static KNOWN: std::cell::RefCell<Vec<(TypeId, &'static ResourceInfo)>> =
                const { std::cell::RefCell::new(Vec::new()) };
        }
        let id = TypeId::of::<K>();
        let known = KNOWN.with_borrow(|known| known.iter().find(|(k, _)| *k == id).map(|(_, info)| *info));
        known.unwrap_or_else(|| {
            let info = Self::shared::<K>();
            KNOWN.with_borrow_mut(|known| known.push((id, info)));
            info
        })
    }

    /// `K`'s facts as every thread shares them, made on the first call.
    fn shared<K: ApiResource>() -> &'static Self {
        type Infos = parking_lot::RwLock<HashMap<TypeId, &'static ResourceInfo>>;
        static INFOS: LazyLock<Infos> = LazyLock::new(Infos::default);
        if let Some(info) = INFOS.read().get(&TypeId::of::<K>()) {
            return info;
        }
        let info = Self::from_definition(&definition::<K>(), K::VERBS, <K::Scope as ObjectScope>::NAMESPACED);
        INFOS.write().entry(TypeId::of::<K>()).or_insert_with(|| Box::leak(Box::new(info)))
    }

    /// The facts `definition` states, with `verbs` and the scope of the type.
    fn from_definition(definition: &Definition, verbs: &'static [Verb], namespaced: bool) -> Self {
        let kind = definition.name("kind").unwrap_or_default();
        let lower = kind.to_ascii_lowercase();
        Self {
            group: leak(definition.group()),
            kind: leak(kind),
            list_kind: leak(&definition.name("listKind").map_or_else(|| format!("{kind}List"), str::to_string)),
            plural: leak(definition.name("plural").unwrap_or(&format!("{lower}s"))),
            singular: leak(definition.name("singular").unwrap_or(&lower)),
            short_names: leak_all(definition.names("shortNames")),
            categories: leak_all(definition.names("categories")),
            namespaced,
            verbs,
            description: leak(definition.description()),
            selectable_fields: leak_all(definition.selectable_fields()),
            subresources: match definition.has_status() && verbs.iter().any(|v| v.is_write()) {
                true => &[Subresource::Status],
                false => &[],
            },
        }
    }

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

/// What a resource is: its wire type, names and schema (its behaviour on writes is its
/// [`super::strategy::Strategy`]).
///
/// The Rust type is the wire type, as kube's `CustomResource` derive makes it: it serializes
/// with `apiVersion` and `kind`, its `metadata` is k8s-openapi's `ObjectMeta`, it has a spec,
/// and its CustomResourceDefinition ([`CustomResourceExt::crd`]) says everything else once:
/// the group, kind, plural, singular, short names, categories and scope, the description, the
/// schema (with the status when there is one), the status subresource, the printer columns and
/// the selectable fields. Only the verbs are said here, when they are not all of them:
///
/// ```
/// # use apiserver_kit::prelude::*;
/// /// A widget: how big it is.
/// #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
/// #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, derive = "PartialEq")]
/// pub struct WidgetSpec {
///     size: i64,
/// }
///
/// impl ApiResource for Widget {
///     const VERBS: &'static [Verb] = &[Verb::Get, Verb::List, Verb::Watch];
/// }
///
/// assert_eq!((Widget::info().plural, Widget::info().namespaced), ("widgets", true));
/// ```
pub trait ApiResource:
    Resource<DynamicType = (), Scope: ObjectScope>
    + CustomResourceExt
    + HasSpec<Spec: PartialEq>
    + Serialize
    + DeserializeOwned
    + Clone
    + PartialEq
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// The verbs served on the object, in discovery order: all of them unless said otherwise (a
    /// read-only view: `&[Verb::Get, Verb::List, Verb::Watch]`; other verbs are `405`).
    const VERBS: &'static [Verb] = Verb::ALL;

    /// Names, scope, verbs, subresources and selectable fields, read from the definition once
    /// ([`ResourceInfo::of`]).
    fn info() -> &'static ResourceInfo {
        ResourceInfo::of::<Self>()
    }

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
    /// The validation rules of the object's root (`#[kube(validation = …)]`), published with its
    /// schema as a CustomResourceDefinition's are.
    pub validations: Option<serde_json::Value>,
    /// The version its objects are stored at, whose `group/version/kind` discovery's
    /// `storageVersionHash` digests at every version.
    pub storage_version: String,
    /// When this version of the resource is deprecated, the `Warning` every answer at it carries
    /// (and its OpenAPI operations are marked deprecated).
    pub deprecation: Option<String>,
    /// What the server cannot serve as the definition says, each naming its field (the builder
    /// refuses the resource): see [`super::definition::problems`] and [`disagreements`].
    pub problems: Vec<String>,
}

impl ResourceDescriptor {
    /// The descriptor of `K`, stored at its own version.
    pub fn of<K: ApiResource>() -> Self {
        Self::stored_as::<K, K>()
    }

    /// The descriptor of `V`, whose objects are stored as `Hub`.
    pub fn stored_as<Hub: ApiResource, V: ApiResource>() -> Self {
        let schema = body_schema::<V>();
        let definition = definition::<V>();
        Self {
            info: *V::info(),
            properties: schema.properties.clone(),
            required: schema.required.clone(),
            validations: definition.schema().get("x-kubernetes-validations").cloned(),
            storage_version: Hub::version(&()).into_owned(),
            deprecation: None,
            problems: [
                super::definition::problems(&definition, V::info().namespaced),
                disagreements(Hub::info(), V::info()),
            ]
            .concat(),
        }
    }

    /// The same, deprecated in favour of `Hub`'s version, with the warning a
    /// CustomResourceDefinition gives for a deprecated version without a `deprecationWarning`.
    pub fn deprecated_for<Hub: ApiResource, V: ApiResource>() -> Self {
        let warning = deprecation_warning(&V::api_version(&()), &Hub::api_version(&()), V::info().kind);
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
    /// The whole object's schema: `apiVersion`, `kind`, metadata's shapes and the properties
    /// (what server-side apply compiles, [`crate::structured_merge::shape::object_schema`]).
    pub object: serde_json::Value,
}

/// `K`'s body schema (its definition's, without `nullable`: a Kubernetes schema marks an optional
/// field by leaving it out of `required`), built on the first call and kept, so decoding a write
/// reads it instead of running schemars again.
pub fn body_schema<K: ApiResource>() -> Arc<BodySchema> {
    type Schemas = parking_lot::RwLock<HashMap<TypeId, Arc<BodySchema>>>;
    static SCHEMAS: LazyLock<Schemas> = LazyLock::new(Schemas::default);
    if let Some(schema) = SCHEMAS.read().get(&TypeId::of::<K>()) {
        return schema.clone();
    }
    let (mut properties, required) = definition::<K>().body();
    for property in properties.values_mut() {
        super::schema::strip_nulls(property);
        // Bounds as the schema's author wrote them (`minimum: 0`, not k8s-openapi's `0.0`).
        super::number::integral_as_integers(property);
    }
    let required = required.iter().map(|r| leak(r)).collect();
    let mut all = properties.clone();
    all.insert("apiVersion".into(), serde_json::json!({"type": "string"}));
    all.insert("kind".into(), serde_json::json!({"type": "string"}));
    all.insert("metadata".into(), super::schema::object_meta_shapes());
    let object = serde_json::json!({"type": "object", "properties": all});
    let built = Arc::new(BodySchema { properties, required, object });
    SCHEMAS.write().entry(TypeId::of::<K>()).or_insert(built).clone()
}

/// Where the facts of a version `other` of a resource differ from those of its storage version
/// `hub`: a resource has one group, kind, plural and scope at every version, and kubectl finds it
/// by the same short names and categories.
pub fn disagreements(hub: &ResourceInfo, other: &ResourceInfo) -> Vec<String> {
    let fields: [(&str, &dyn std::fmt::Debug, &dyn std::fmt::Debug, bool); 8] = [
        ("spec.group", &hub.group, &other.group, hub.group == other.group),
        ("spec.names.kind", &hub.kind, &other.kind, hub.kind == other.kind),
        ("spec.names.listKind", &hub.list_kind, &other.list_kind, hub.list_kind == other.list_kind),
        ("spec.names.plural", &hub.plural, &other.plural, hub.plural == other.plural),
        ("spec.names.singular", &hub.singular, &other.singular, hub.singular == other.singular),
        ("spec.names.shortNames", &hub.short_names, &other.short_names, hub.short_names == other.short_names),
        ("spec.names.categories", &hub.categories, &other.categories, hub.categories == other.categories),
        ("spec.scope (namespaced)", &hub.namespaced, &other.namespaced, hub.namespaced == other.namespaced),
    ];
    let differing = fields.into_iter().filter(|(_, _, _, same)| !same);
    differing
        .map(|(field, at_hub, here, _)| format!("{field} is {here:?} here but {at_hub:?} at the storage version"))
        .collect()
}

/// `K`'s CustomResourceDefinition at `K`'s version.
pub fn definition<K: ApiResource>() -> Definition {
    Definition::new(serde_json::to_value(K::crd()).unwrap_or_default(), &K::version(&()))
}

/// `text` kept for the life of the program: a resource's names are read once per type.
fn leak(text: &str) -> &'static str {
    Box::leak(text.to_string().into_boxed_str())
}

fn leak_all(texts: Vec<&str>) -> &'static [&'static str] {
    Box::leak(texts.into_iter().map(leak).collect::<Vec<_>>().into_boxed_slice())
}
