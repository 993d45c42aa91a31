//! OpenAPI v2 (`/openapi/v2`) and v3 (`/openapi/v3`, `/openapi/v3/apis/<group>/<version>`)
//! documents, built once at start-up from the resources' descriptors.
//!
//! Schemas come from the Rust types: resource properties through `schemars`, and the
//! `meta.k8s.io` types (ObjectMeta, ListMeta, Status, DeleteOptions, ...) through k8s-openapi's
//! `JsonSchema` implementations, under their canonical Kubernetes names (reshaped where the
//! kube-apiserver publishes them otherwise, see `as_kubernetes_publishes`). Operations are built
//! as the kube-apiserver's CRD builder (apiextensions-apiserver `controller/openapi/builder`)
//! and kube-openapi build them: each carries `x-kubernetes-action` and
//! `x-kubernetes-group-version-kind`, consumes and produces JSON and YAML, and the parameters
//! every operation of a path takes are listed once for the path, all sorted by name. PATCH lists
//! only the patch types served (JSON patch, merge patch, apply), so kubectl computes merge
//! patches as it does for custom resources. Where this server publishes unlike a CRD
//! (DELETE answers the object, deletecollection takes DeleteOptions, ...), it publishes as the
//! built-in resources do; `tests/openapi_reference.rs` compares both with a real kube-apiserver
//! and lists each difference with its reason. Bodies are served with strong ETags; v3
//! group-version documents are addressed by a content hash, as the kube-apiserver does.

use crate::machinery::identity::Identity;
use crate::machinery::resource::{GroupVersions, ResourceDescriptor, ResourceInfo};
use crate::machinery::schema::strip_nulls;
use crate::machinery::verb::Verb;
use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};
use std::borrow::Cow;

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";

/// Which document flavour is being built; they differ in reference paths and operation shapes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavour {
    V2,
    V3,
}

impl Flavour {
    fn reference(self, name: &str) -> Value {
        match self {
            Self::V2 => json!({ "$ref": format!("#/definitions/{name}") }),
            Self::V3 => json!({ "$ref": format!("#/components/schemas/{name}") }),
        }
    }
}

/// The `meta.k8s.io` definitions every document carries, with everything they reference.
fn meta_definitions(flavour: Flavour) -> Map<String, Value> {
    let path = match flavour {
        Flavour::V2 => "/definitions",
        Flavour::V3 => "/components/schemas",
    };
    let mut generator = SchemaSettings::draft07()
        .with(|s| {
            s.definitions_path = path.into();
            s.meta_schema = None;
        })
        .into_generator();
    generator.subschema_for::<meta::ObjectMeta>();
    generator.subschema_for::<meta::ListMeta>();
    generator.subschema_for::<meta::Status>();
    generator.subschema_for::<meta::DeleteOptions>();
    generator.subschema_for::<meta::Patch>();
    generator.subschema_for::<meta::APIResourceList>();
    generator.subschema_for::<meta::APIGroup>();
    let mut definitions = generator.take_definitions(true);
    definitions.insert(
        format!("{META}.WatchEvent"),
        json!({
            "description": "Event represents a single event to a watched resource.",
            "type": "object",
            "required": ["type", "object"],
            "properties": {
                "object": {"description": "Object is:\n * If Type is Added or Modified: the new state of the object.\n * If Type is Deleted: the state of the object immediately before deletion.\n * If Type is Error: *Status is recommended; other types may make sense\n   depending on context.", "type": "object"},
                "type": {"type": "string"}
            }
        }),
    );
    let mut value = Value::Object(definitions);
    strip_nulls(&mut value);
    as_kubernetes_publishes(flavour, &mut value);
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The `meta.k8s.io` schemas as the kube-apiserver publishes them, where k8s-openapi's derive
/// differs: a v2 reference carries its description beside `$ref` (kube-openapi's v2 readers,
/// kubectl's among them, take an `allOf` for an untyped value); `Status.metadata` is optional
/// (k8s-openapi makes it required); ObjectMeta's lists keep the patch strategies of their Go
/// tags (`finalizers` merged, `ownerReferences` merged by `uid`); and the list and map types and
/// the v3 defaults kube-openapi writes are written too.
fn as_kubernetes_publishes(flavour: Flavour, definitions: &mut Value) {
    if flavour == Flavour::V2 {
        unwrap_described_references(definitions);
    }
    if let Some(status) = definitions.get_mut(format!("{META}.Status")).and_then(Value::as_object_mut) {
        status.remove("required");
    }
    let patch_strategies = [
        ("finalizers", json!({"x-kubernetes-patch-strategy": "merge"})),
        ("ownerReferences", json!({"x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge"})),
    ];
    for (name, extensions) in patch_strategies {
        extend(definitions, &["ObjectMeta", "properties", name], extensions);
    }
    // The list and map types of Kubernetes 1.37's Go markers (`+listType`, `+structType`).
    let atomic_list = || json!({"x-kubernetes-list-type": "atomic"});
    extend(definitions, &["ObjectMeta", "properties", "finalizers"], json!({"x-kubernetes-list-type": "set"}));
    extend(definitions, &["ObjectMeta", "properties", "managedFields"], atomic_list());
    let keyed_by_uid = json!({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"]});
    extend(definitions, &["ObjectMeta", "properties", "ownerReferences"], keyed_by_uid);
    extend(definitions, &["OwnerReference"], json!({"x-kubernetes-map-type": "atomic"}));
    extend(definitions, &["StatusDetails", "properties", "causes"], atomic_list());
    extend(definitions, &["DeleteOptions", "properties", "dryRun"], atomic_list());
    let status_kind = json!([{"group": "", "kind": "Status", "version": "v1"}]);
    extend(definitions, &["Status"], json!({"x-kubernetes-group-version-kind": status_kind}));
    if flavour == Flavour::V3 {
        // kube-openapi's v3 gives a required value field its zero value as `default`.
        for field in ["apiVersion", "kind", "name", "uid"] {
            extend(definitions, &["OwnerReference", "properties", field], json!({"default": ""}));
        }
        extend(definitions, &["ShardInfo", "properties", "selector"], json!({"default": ""}));
        extend(definitions, &["Status", "properties", "metadata"], json!({"default": {}}));
    }
}

/// Adds `extensions` (an object) to the schema at `path` below the meta.k8s.io definition
/// `path[0]`, when there is one.
fn extend(definitions: &mut Value, path: &[&str], extensions: Value) {
    let Some((name, rest)) = path.split_first() else { return };
    let mut at = definitions.get_mut(format!("{META}.{name}"));
    for step in rest {
        at = at.and_then(|v| v.get_mut(*step));
    }
    if let (Some(Value::Object(schema)), Value::Object(extensions)) = (at, extensions) {
        schema.extend(extensions);
    }
}

/// `{"allOf": [{"$ref": R}], ...}` becomes `{"$ref": R, ...}`, everywhere in `value`.
fn unwrap_described_references(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let single = map
                .get("allOf")
                .and_then(Value::as_array)
                .filter(|all| all.len() == 1)
                .and_then(|all| all[0].get("$ref"))
                .cloned();
            if let Some(reference) = single {
                map.remove("allOf");
                map.insert("$ref".into(), reference);
            }
            map.values_mut().for_each(unwrap_described_references);
        }
        Value::Array(items) => items.iter_mut().for_each(unwrap_described_references),
        _ => {}
    }
}

/// `com.example.test.v1beta1.Widget`: the definition name Kubernetes gives a group's kind at a
/// version.
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// `TestExampleCom`: the group as operation IDs spell it.
fn group_camel(group: &str) -> String {
    group.split('.').map(capitalize).collect()
}

/// `testExampleCom_v1beta1`: the tag of the group-version's operations.
fn version_tag(group: &str, version: &str) -> String {
    let camel = group_camel(group);
    let mut chars = camel.chars();
    let lower: String = chars.next().map(|c| c.to_lowercase().chain(chars).collect()).unwrap_or_default();
    format!("{lower}_{version}")
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

fn with_description(flavour: Flavour, name: &str, description: &str) -> Value {
    let reference = flavour.reference(name);
    match flavour {
        Flavour::V2 => {
            let mut v = reference;
            v["description"] = json!(description);
            v
        }
        Flavour::V3 => json!({"allOf": [reference], "default": {}, "description": description}),
    }
}

fn resource_definitions(
    group: &str,
    flavour: Flavour,
    version: &str,
    resource: &ResourceDescriptor,
    into: &mut Map<String, Value>,
) {
    let info = &resource.info;
    let mut properties = Map::new();
    properties.insert(
        "apiVersion".into(),
        json!({"description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources", "type": "string"}),
    );
    properties.insert(
        "kind".into(),
        json!({"description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds", "type": "string"}),
    );
    properties.insert(
        "metadata".into(),
        with_description(flavour, &format!("{META}.ObjectMeta"), "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"),
    );
    for (name, schema) in &resource.properties {
        properties.insert(name.clone(), schema.clone());
    }
    let mut kind = json!({
        "description": info.description,
        "type": "object",
        "required": resource.required,
        "properties": properties,
        "x-kubernetes-group-version-kind": [gvk(group, version, info.kind)],
    });
    if let Some(rules) = &resource.validations {
        kind["x-kubernetes-validations"] = rules.clone();
    }
    into.insert(definition_name(group, version, info.kind), kind);
    let mut list_properties = Map::new();
    list_properties.insert("apiVersion".into(), properties["apiVersion"].clone());
    list_properties.insert("kind".into(), properties["kind"].clone());
    list_properties.insert(
        "items".into(),
        json!({"description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", info.plural), "type": "array", "items": flavour.reference(&definition_name(group, version, info.kind))}),
    );
    list_properties.insert(
        "metadata".into(),
        with_description(flavour, &format!("{META}.ListMeta"), "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"),
    );
    into.insert(
        definition_name(group, version, info.list_kind),
        json!({
            "description": format!("{} is a list of {}", info.list_kind, info.kind),
            "type": "object",
            "required": ["items"],
            "properties": list_properties,
            "x-kubernetes-group-version-kind": [gvk(group, version, info.list_kind)],
        }),
    );
}

/// A query or path parameter: name, location, type, description.
#[derive(Clone)]
struct Param(&'static str, &'static str, &'static str, Cow<'static, str>);

const P_NAMESPACE: Param =
    Param("namespace", "path", "string", Cow::Borrowed("object name and auth scope, such as for teams and projects"));
const P_PRETTY: Param = Param(
    "pretty",
    "query",
    "string",
    Cow::Borrowed(
        "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).",
    ),
);
const P_DRY_RUN: Param = Param(
    "dryRun",
    "query",
    "string",
    Cow::Borrowed(
        "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
    ),
);
const P_FIELD_MANAGER: Param = Param(
    "fieldManager",
    "query",
    "string",
    Cow::Borrowed(
        "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.",
    ),
);
/// `fieldManager` of a patch, which an apply needs.
const P_FIELD_MANAGER_PATCH: Param = Param(
    "fieldManager",
    "query",
    "string",
    Cow::Borrowed(
        "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).",
    ),
);
const P_FORCE: Param = Param(
    "force",
    "query",
    "boolean",
    Cow::Borrowed(
        "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.",
    ),
);
const P_FIELD_VALIDATION: Param = Param(
    "fieldValidation",
    "query",
    "string",
    Cow::Borrowed(
        "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.",
    ),
);
const P_GRACE: Param = Param(
    "gracePeriodSeconds",
    "query",
    "integer",
    Cow::Borrowed(
        "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.",
    ),
);
const P_ORPHAN: Param = Param(
    "orphanDependents",
    "query",
    "boolean",
    Cow::Borrowed(
        "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both.",
    ),
);
const P_PROPAGATION: Param = Param(
    "propagationPolicy",
    "query",
    "string",
    Cow::Borrowed(
        "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.",
    ),
);
const P_LABEL_SELECTOR: Param = Param(
    "labelSelector",
    "query",
    "string",
    Cow::Borrowed("A selector to restrict the list of returned objects by their labels. Defaults to everything."),
);
const P_FIELD_SELECTOR: Param = Param(
    "fieldSelector",
    "query",
    "string",
    Cow::Borrowed("A selector to restrict the list of returned objects by their fields. Defaults to everything."),
);
const P_LIMIT: Param = Param(
    "limit",
    "query",
    "integer",
    Cow::Borrowed(
        "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned.",
    ),
);
const P_CONTINUE: Param = Param(
    "continue",
    "query",
    "string",
    Cow::Borrowed(
        "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the \"next key\".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications.",
    ),
);
const P_RV: Param = Param(
    "resourceVersion",
    "query",
    "string",
    Cow::Borrowed(
        "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset",
    ),
);
const P_RV_MATCH: Param = Param(
    "resourceVersionMatch",
    "query",
    "string",
    Cow::Borrowed(
        "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset",
    ),
);
const P_WATCH: Param = Param(
    "watch",
    "query",
    "boolean",
    Cow::Borrowed(
        "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.",
    ),
);
const P_BOOKMARKS: Param = Param(
    "allowWatchBookmarks",
    "query",
    "boolean",
    Cow::Borrowed(
        "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.",
    ),
);
const P_SEND_INITIAL: Param = Param(
    "sendInitialEvents",
    "query",
    "boolean",
    Cow::Borrowed(
        // Kubernetes' text as it is (the double space included).
        "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.\n\nWhen `sendInitialEvents` option is set, we require `resourceVersionMatch` option to also be set. The semantic of the watch request is as following: - `resourceVersionMatch` = NotOlderThan\n  is interpreted as \"data at least as new as the provided `resourceVersion`\"\n  and the bookmark event is send when the state is synced\n  to a `resourceVersion` at least as fresh as the one provided by the ListOptions.\n  If `resourceVersion` is unset, this is interpreted as \"consistent read\" and the\n  bookmark event is send when the state is synced at least to the moment\n  when request started being processed.\n- `resourceVersionMatch` set to any other value or unset\n  Invalid error is returned.\n\nDefaults to true if `resourceVersion=\"\"` or `resourceVersion=\"0\"` (for backward compatibility reasons) and to false otherwise.",
    ),
);
const P_TIMEOUT: Param = Param(
    "timeoutSeconds",
    "query",
    "integer",
    Cow::Borrowed(
        "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.",
    ),
);

/// One operation of the API, rendered into both document flavours.
struct Operation {
    method: &'static str,
    id: String,
    action: &'static str,
    kind: &'static str,
    description: String,
    params: Vec<Param>,
    body: Option<(&'static [&'static str], String)>,
    responses: Vec<(&'static str, String)>,
}

/// The names one resource's operations are built from.
struct Names<'a> {
    info: &'a ResourceInfo,
    /// `TestExampleComV1beta1`, between the action and the kind in operation ids.
    suffix: String,
    /// The definition of the object, and of its list.
    object: String,
    list: String,
}

/// Whether an operation is on every namespace's objects at once, on one namespace's, or on a
/// cluster-scoped resource's (whose operation ids have no `Namespaced`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    AllNamespaces,
    Namespaced,
    Cluster,
}

impl Scope {
    /// The scope of a resource's operations on one namespace's objects (or on its own).
    fn of(info: &ResourceInfo) -> Self {
        if info.namespaced { Self::Namespaced } else { Self::Cluster }
    }

    /// What operation ids say between the version and the kind.
    fn infix(self) -> &'static str {
        match self {
            Self::Namespaced => "Namespaced",
            Self::AllNamespaces | Self::Cluster => "",
        }
    }
}

/// What every body but a patch may be, and every answer but a watch's stream is.
const JSON_YAML: &[&str] = &["application/json", "application/yaml"];
/// What a list operation that also watches answers.
const JSON_YAML_WATCH: &[&str] = &["application/json", "application/yaml", "application/json;stream=watch"];
const PATCH_TYPES: &[&str] =
    &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"];

fn list_params(info: &ResourceInfo) -> Vec<Param> {
    let mut params = vec![P_LABEL_SELECTOR, P_FIELD_SELECTOR, P_LIMIT, P_CONTINUE, P_RV, P_RV_MATCH, P_TIMEOUT];
    if info.allows(Verb::Watch) {
        params.extend([P_WATCH, P_BOOKMARKS, P_SEND_INITIAL]);
    }
    params
}

fn write_params() -> Vec<Param> {
    vec![P_DRY_RUN, P_FIELD_MANAGER, P_FIELD_VALIDATION]
}

fn delete_params() -> Vec<Param> {
    vec![P_DRY_RUN, P_GRACE, P_ORPHAN, P_PROPAGATION]
}

/// The operation of `verb` in `scope`: HTTP method, id, description, parameters, body and
/// responses, as the kube-apiserver publishes them for a custom resource.
fn operation(verb: Verb, scope: Scope, names: &Names) -> Operation {
    let (kind, suffix, object, list) = (names.info.kind, &names.suffix, &names.object, &names.list);
    let scoped = scope.infix();
    let delete_options = || Some((JSON_YAML, format!("{META}.DeleteOptions")));
    let (method, id, description, params, body, responses) = match verb {
        Verb::List | Verb::Watch => {
            let id = match scope {
                Scope::AllNamespaces => format!("list{suffix}{kind}ForAllNamespaces"),
                Scope::Namespaced | Scope::Cluster => format!("list{suffix}{scoped}{kind}"),
            };
            let description = format!("list or watch objects of kind {kind}");
            ("get", id, description, list_params(names.info), None, vec![("200", list.clone())])
        }
        Verb::Create => {
            let responses = vec![("200", object.clone()), ("201", object.clone()), ("202", object.clone())];
            let id = format!("create{suffix}{scoped}{kind}");
            ("post", id, format!("create a {kind}"), write_params(), Some((JSON_YAML, object.clone())), responses)
        }
        Verb::DeleteCollection => {
            let mut params = delete_params();
            params.extend(list_params(names.info));
            let id = format!("delete{suffix}Collection{scoped}{kind}");
            let description = format!("delete collection of {kind}");
            ("delete", id, description, params, delete_options(), vec![("200", list.clone())])
        }
        Verb::Get => {
            let id = format!("read{suffix}{scoped}{kind}");
            ("get", id, format!("read the specified {kind}"), vec![P_RV], None, vec![("200", object.clone())])
        }
        Verb::Update => {
            let responses = vec![("200", object.clone()), ("201", object.clone())];
            let id = format!("replace{suffix}{scoped}{kind}");
            (
                "put",
                id,
                format!("replace the specified {kind}"),
                write_params(),
                Some((JSON_YAML, object.clone())),
                responses,
            )
        }
        Verb::Patch => {
            let body = Some((PATCH_TYPES, format!("{META}.Patch")));
            let id = format!("patch{suffix}{scoped}{kind}");
            let description = format!("partially update the specified {kind}");
            let params = vec![P_DRY_RUN, P_FIELD_MANAGER_PATCH, P_FIELD_VALIDATION, P_FORCE];
            ("patch", id, description, params, body, vec![("200", object.clone())])
        }
        Verb::Delete => {
            // The deleted object, or (202) the object that stays for its dependents' deletion.
            let responses = vec![("200", object.clone()), ("202", object.clone())];
            let id = format!("delete{suffix}{scoped}{kind}");
            ("delete", id, format!("delete a {kind}"), delete_params(), delete_options(), responses)
        }
    };
    Operation { method, id, action: verb.openapi_action(), kind, description, params, body, responses }
}

/// The operation of `verb` on the subresource `segment` (`status`): the object's operation with
/// the subresource in its id and description, as the kube-apiserver names them
/// (`readTestExampleComV1beta1NamespacedWidgetStatus`, "read status of the specified Widget").
fn subresource_operation(verb: Verb, segment: &str, names: &Names) -> Operation {
    let mut op = operation(verb, Scope::of(names.info), names);
    op.id = format!("{}{}", op.id, capitalize(segment));
    let kind = names.info.kind;
    op.description =
        op.description.replace(&format!("the specified {kind}"), &format!("{segment} of the specified {kind}"));
    op
}

/// Every path of one resource with its operations and the parameters common to the path.
fn resource_paths(
    group: &str,
    version: &str,
    resource: &ResourceDescriptor,
) -> Vec<(String, Vec<Param>, Vec<Operation>)> {
    let info = &resource.info;
    let names = Names {
        info,
        suffix: format!("{}{}", group_camel(group), capitalize(version)),
        object: definition_name(group, version, info.kind),
        list: definition_name(group, version, info.list_kind),
    };
    let operations = |verbs: &[Verb], scope: Scope| -> Vec<Operation> {
        verbs.iter().filter(|v| info.allows(**v)).map(|v| operation(*v, scope, &names)).collect()
    };
    let base = format!("/apis/{group}/{version}");
    // As the kube-apiserver describes the name of a built-in resource or a custom resource.
    let name_description = Cow::Owned(format!("name of the {}", info.kind));
    let mut paths = Vec::new();
    let scope = Scope::of(info);
    let (collection_path, mut scope_params) = if info.namespaced {
        if info.allows(Verb::List) {
            let all = operations(&[Verb::List], Scope::AllNamespaces);
            paths.push((format!("{base}/{}", info.plural), vec![P_PRETTY], all));
        }
        (format!("{base}/namespaces/{{namespace}}/{}", info.plural), vec![P_NAMESPACE, P_PRETTY])
    } else {
        (format!("{base}/{}", info.plural), vec![P_PRETTY])
    };
    let collection = operations(&[Verb::List, Verb::Create, Verb::DeleteCollection], scope);
    paths.push((collection_path.clone(), scope_params.clone(), collection));
    let item = operations(&[Verb::Get, Verb::Update, Verb::Patch, Verb::Delete], scope);
    let item_path = format!("{collection_path}/{{name}}");
    scope_params.insert(0, Param("name", "path", "string", name_description));
    let item_params = scope_params;
    paths.push((item_path.clone(), item_params.clone(), item));
    for &subresource in info.subresources {
        if let Some(segment) = subresource.name() {
            let ops = info.verbs_of(subresource).iter().map(|v| subresource_operation(*v, segment, &names)).collect();
            paths.push((format!("{item_path}/{segment}"), item_params.clone(), ops));
        }
    }
    paths
}

fn render_param(flavour: Flavour, p: &Param) -> Value {
    let Param(name, location, kind, description) = p;
    let mut v = json!({"name": name, "in": location, "description": description});
    if *location == "path" {
        v["required"] = json!(true);
    }
    // kube-openapi marks every parameter that may not repeat, path parameters included; v3
    // says so in the schema only (a Parameter Object has no `uniqueItems`).
    match flavour {
        Flavour::V2 => {
            v["type"] = json!(kind);
            v["uniqueItems"] = json!(true);
        }
        Flavour::V3 => v["schema"] = json!({"type": kind, "uniqueItems": true}),
    }
    v
}

/// The parameters every operation of a path takes, which kube-openapi lists once for the path,
/// in its order (by name, then location).
fn common_params(path_params: &[Param], operations: &[Operation]) -> Vec<Param> {
    let every = |p: &Param| operations.iter().all(|op| op.params.iter().any(|q| (q.0, q.1) == (p.0, p.1)));
    let mut common: Vec<Param> = path_params.to_vec();
    if let Some(first) = operations.first() {
        common.extend(first.params.iter().filter(|p| every(p)).cloned());
    }
    common.sort_by_key(|p| (p.0, p.1));
    common
}

/// Parameters as kube-openapi orders them: by name, then by location.
fn sort_params(params: &mut [Value]) {
    let key = |v: &Value| {
        (v["name"].as_str().unwrap_or_default().to_string(), v["in"].as_str().unwrap_or_default().to_string())
    };
    params.sort_by_key(key);
}

/// What an operation answers: JSON or YAML, and a list that watches also a stream of events.
fn produces(op: &Operation) -> &'static [&'static str] {
    if op.action == Verb::List.openapi_action() && op.params.iter().any(|p| p.0 == "watch") {
        JSON_YAML_WATCH
    } else {
        JSON_YAML
    }
}

/// `op` with the parameters of `common` left to its path.
fn render_operation(group: &str, flavour: Flavour, version: &str, op: &Operation, common: &[Param]) -> Value {
    let own = op.params.iter().filter(|p| !common.iter().any(|c| (c.0, c.1) == (p.0, p.1)));
    let mut params: Vec<Value> = own.map(|p| render_param(flavour, p)).collect();
    let mut v = json!({
        "description": op.description,
        "operationId": op.id,
        "tags": [version_tag(group, version)],
        "x-kubernetes-action": op.action,
        "x-kubernetes-group-version-kind": gvk(group, version, op.kind),
    });
    match flavour {
        Flavour::V2 => render_v2_exchange(op, &mut v, &mut params),
        Flavour::V3 => render_v3_exchange(op, &mut v),
    }
    sort_params(&mut params);
    if !params.is_empty() {
        v["parameters"] = Value::Array(params);
    }
    v
}

/// A v2 operation's body parameter, media types and responses.
fn render_v2_exchange(op: &Operation, v: &mut Value, params: &mut Vec<Value>) {
    let flavour = Flavour::V2;
    let consumes = match &op.body {
        Some((types, schema)) => {
            let mut body = json!({"name": "body", "in": "body", "schema": flavour.reference(schema)});
            // As go-restful writes it: a parameter that is not required says nothing.
            if op.method != "delete" {
                body["required"] = json!(true);
            }
            params.push(body);
            *types
        }
        None => JSON_YAML,
    };
    v["consumes"] = json!(consumes);
    v["produces"] = json!(produces(op));
    v["schemes"] = json!(["https"]);
    let mut responses = Map::new();
    for (code, schema) in &op.responses {
        responses.insert(code.to_string(), json!({"description": describe(code), "schema": flavour.reference(schema)}));
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    v["responses"] = Value::Object(responses);
}

/// A v3 operation's request body and responses, one content entry per media type.
fn render_v3_exchange(op: &Operation, v: &mut Value) {
    let flavour = Flavour::V3;
    let content = |types: &[&str], schema: &str| -> Map<String, Value> {
        types.iter().map(|t| (t.to_string(), json!({"schema": flavour.reference(schema)}))).collect()
    };
    if let Some((types, schema)) = &op.body {
        v["requestBody"] = json!({"content": content(types, schema)});
        if op.method != "delete" {
            v["requestBody"]["required"] = json!(true);
        }
    }
    let mut responses = Map::new();
    for (code, schema) in &op.responses {
        let answer = json!({"description": describe(code), "content": content(produces(op), schema)});
        responses.insert(code.to_string(), answer);
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    v["responses"] = Value::Object(responses);
}

fn describe(code: &str) -> &'static str {
    match code {
        "200" => "OK",
        "201" => "Created",
        "202" => "Accepted",
        _ => "",
    }
}

fn discovery_paths(group: &str, flavour: Flavour, version: &str) -> Vec<(String, Value)> {
    let produce = |schema: &str| match flavour {
        Flavour::V2 => {
            json!({"consumes": ["application/json"], "produces": ["application/json"], "schemes": ["https"], "responses": {"200": {"description": "OK", "schema": flavour.reference(schema)}, "401": {"description": "Unauthorized"}}})
        }
        Flavour::V3 => {
            json!({"responses": {"200": {"description": "OK", "content": {"application/json": {"schema": flavour.reference(schema)}}}, "401": {"description": "Unauthorized"}}})
        }
    };
    let mut api_group = produce(&format!("{META}.APIGroup"));
    api_group["description"] = json!("get information of a group");
    api_group["operationId"] = json!(format!("get{}APIGroup", group_camel(group)));
    let tag = version_tag(group, version);
    api_group["tags"] = json!([tag.trim_end_matches(&format!("_{version}"))]);
    let mut resources = produce(&format!("{META}.APIResourceList"));
    resources["description"] = json!("get available resources");
    resources["operationId"] = json!(format!("get{}{}APIResources", group_camel(group), capitalize(version)));
    resources["tags"] = json!([tag]);
    vec![
        (format!("/apis/{group}/"), json!({"get": api_group})),
        (format!("/apis/{group}/{version}/"), json!({"get": resources})),
    ]
}

fn paths(
    group: &str,
    flavour: Flavour,
    version: &str,
    resources: &[ResourceDescriptor],
    include_group: bool,
) -> Map<String, Value> {
    let mut out = Map::new();
    for (path, item) in discovery_paths(group, flavour, version) {
        if include_group || path.ends_with(&format!("{version}/")) {
            out.insert(path, item);
        }
    }
    for resource in resources {
        for (path, path_params, operations) in resource_paths(group, version, resource) {
            let common = common_params(&path_params, &operations);
            let mut item = Map::new();
            for op in &operations {
                let mut operation = render_operation(group, flavour, version, op, &common);
                if resource.deprecation.is_some() {
                    operation["deprecated"] = Value::Bool(true);
                }
                item.insert(op.method.to_string(), operation);
            }
            item.insert("parameters".into(), Value::Array(common.iter().map(|p| render_param(flavour, p)).collect()));
            out.insert(path, Value::Object(item));
        }
    }
    out
}

fn title(identity: &Identity) -> Value {
    json!({"title": identity.name, "version": format!("v{}", identity.version)})
}

/// The OpenAPI v2 document: every version of the group in one document, as the kube-apiserver
/// serves it.
pub fn v2_document(identity: &Identity, group: &str, versions: &GroupVersions) -> Value {
    let mut definitions = meta_definitions(Flavour::V2);
    let mut all_paths = Map::new();
    for (at, (version, resources)) in versions.iter().enumerate() {
        for r in resources {
            resource_definitions(group, Flavour::V2, version, r, &mut definitions);
        }
        all_paths.extend(paths(group, Flavour::V2, version, resources, at == 0));
    }
    json!({
        "swagger": "2.0",
        "info": title(identity),
        "paths": all_paths,
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"}},
        "security": [{"BearerToken": []}],
    })
}

/// The OpenAPI v3 document of the group at `version`.
pub fn v3_group_version_document(
    identity: &Identity,
    group: &str,
    version: &str,
    resources: &[ResourceDescriptor],
) -> Value {
    let mut schemas = meta_definitions(Flavour::V3);
    for r in resources {
        resource_definitions(group, Flavour::V3, version, r, &mut schemas);
    }
    json!({
        "openapi": "3.0.0",
        "info": title(identity),
        "paths": paths(group, Flavour::V3, version, resources, false),
        "components": {
            "schemas": schemas,
            "securitySchemes": {"BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"}},
        },
    })
}

/// The path of the group-version document of `version` in the v3 index (without the leading
/// slash): `apis/test.example.com/v1beta1`.
pub fn v3_group_version_path(group: &str, version: &str) -> String {
    format!("apis/{group}/{version}")
}

/// A served document: its bytes and their hash.
#[derive(Clone, Debug)]
pub struct Document {
    /// Pretty-printed JSON, as checked in under `openapi/` (protobuf for `Documents::v2_protobuf`).
    pub body: Bytes,
    /// Upper-case hex SHA-512 of `body`: the ETag and the v3 `hash` query value.
    pub hash: String,
}

impl Document {
    fn new(value: &Value) -> Self {
        let mut text = crate::machinery::json::to_vec_pretty(value)
            .ok()
            .and_then(|t| String::from_utf8(t).ok())
            .unwrap_or_default();
        text.push('\n');
        Self::of_bytes(text.into_bytes())
    }

    fn of_bytes(body: Vec<u8>) -> Self {
        let hash = hex::encode_upper(Sha512::digest(&body));
        Self { body: Bytes::from(body), hash }
    }

    /// The `ETag` header value (quoted).
    pub fn etag(&self) -> String {
        format!("\"{}\"", self.hash)
    }
}

/// Every OpenAPI document the server serves.
#[derive(Clone, Debug)]
pub struct Documents {
    /// `/openapi/v2`, of every version.
    pub v2: Document,
    /// `/openapi/v2` as protobuf (gnostic's `openapi.v2.Document`), for a client asking for it.
    pub v2_protobuf: Document,
    /// `/openapi/v3`
    pub v3_index: Document,
    /// `/openapi/v3/apis/<group>/<version>` by version, the preferred first.
    pub v3_group_versions: Vec<(&'static str, Document)>,
    /// The API group they describe.
    pub group: &'static str,
}

impl Documents {
    /// Builds every document for `group`'s `versions`.
    pub fn build(identity: &Identity, group: &'static str, versions: &GroupVersions) -> Self {
        let v2_value = v2_document(identity, group, versions);
        let v2 = Document::new(&v2_value);
        let v2_protobuf = Document::of_bytes(crate::api::openapi_protobuf::encode(&v2_value));
        let v3_group_versions: Vec<(&'static str, Document)> = versions
            .iter()
            .map(|(v, r)| (*v, Document::new(&v3_group_version_document(identity, group, v, r))))
            .collect();
        let index: Map<String, Value> = v3_group_versions
            .iter()
            .map(|(v, d)| {
                let path = v3_group_version_path(group, v);
                let url = format!("/openapi/v3/{path}?hash={}", d.hash);
                (path, json!({"serverRelativeURL": url}))
            })
            .collect();
        Self { v2, v2_protobuf, v3_index: Document::new(&json!({"paths": index})), v3_group_versions, group }
    }

    /// The v3 document of `version`, when it is served.
    pub fn v3_group_version(&self, version: &str) -> Option<&Document> {
        self.v3_group_versions.iter().find(|(v, _)| *v == version).map(|(_, d)| d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::resource::{ApiResource, Subresource};
    use crate::machinery::testing::{Widget, WidgetV1beta1};

    const IDENTITY: Identity = Identity::new("test-apiserver", "1.2.3");
    const GROUP: &str = "test.example.com";

    fn docs() -> (Value, Value) {
        let resources = vec![ResourceDescriptor::deprecated_for::<Widget, WidgetV1beta1>()];
        (
            v2_document(&IDENTITY, GROUP, &[("v1beta1", resources.clone())]),
            v3_group_version_document(&IDENTITY, GROUP, "v1beta1", &resources),
        )
    }

    #[test]
    fn the_schema_is_described_and_keyed_by_gvk() {
        let (v2, v3) = docs();
        assert_eq!(v2["info"], json!({"title": "test-apiserver", "version": "v1.2.3"}));
        let widget = &v2["definitions"]["com.example.test.v1beta1.Widget"];
        assert_eq!(
            widget["x-kubernetes-group-version-kind"][0],
            json!({"group": "test.example.com", "kind": "Widget", "version": "v1beta1"})
        );
        assert_eq!(
            widget["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        let size = &widget["properties"]["spec"]["properties"]["size"];
        assert!(size["description"].as_str().unwrap().contains("How big it is"));
        assert_eq!(size["type"], "number");
        assert_eq!(widget["properties"]["spec"]["properties"]["colour"]["type"], "string");
        assert!(v2["definitions"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object());
        assert!(v3["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.Time"].is_object());
    }

    #[test]
    fn the_root_validation_rules_are_published_with_the_schema() {
        let rules = json!([{"rule": "self.metadata.name != 'x'", "message": "not x"}]);
        let resources =
            vec![ResourceDescriptor { validations: Some(rules.clone()), ..ResourceDescriptor::of::<Widget>() }];
        let v2 = v2_document(&IDENTITY, GROUP, &[("v1", resources.clone())]);
        let v3 = v3_group_version_document(&IDENTITY, GROUP, "v1", &resources);
        assert_eq!(v2["definitions"]["com.example.test.v1.Widget"]["x-kubernetes-validations"], rules);
        assert_eq!(v3["components"]["schemas"]["com.example.test.v1.Widget"]["x-kubernetes-validations"], rules);
        let plain = v2_document(&IDENTITY, GROUP, &[("v1", vec![ResourceDescriptor::of::<Widget>()])]);
        assert!(plain["definitions"]["com.example.test.v1.Widget"].get("x-kubernetes-validations").is_none());
    }

    #[test]
    fn a_cluster_scoped_resource_has_paths_without_a_namespace_and_ids_without_namespaced() {
        let info = ResourceInfo { namespaced: false, subresources: &[Subresource::Status], ..*Widget::info() };
        let versions = [("v1", vec![ResourceDescriptor { info, ..ResourceDescriptor::of::<Widget>() }])];
        let v2 = v2_document(&IDENTITY, GROUP, &versions);
        let paths: Vec<String> =
            v2["paths"].as_object().unwrap().keys().filter(|p| p.contains("widgets")).cloned().collect();
        let base = "/apis/test.example.com/v1/widgets";
        assert_eq!(paths, [base.to_string(), format!("{base}/{{name}}"), format!("{base}/{{name}}/status")]);
        let id = |path: &str, method: &str| v2["paths"][path][method]["operationId"].as_str().unwrap().to_string();
        assert_eq!(id(base, "get"), "listTestExampleComV1Widget");
        assert_eq!(id(base, "post"), "createTestExampleComV1Widget");
        assert_eq!(id(base, "delete"), "deleteTestExampleComV1CollectionWidget");
        assert_eq!(id(&format!("{base}/{{name}}"), "get"), "readTestExampleComV1Widget");
        assert_eq!(id(&format!("{base}/{{name}}/status"), "patch"), "patchTestExampleComV1WidgetStatus");
        let params = v2["paths"][&format!("{base}/{{name}}")]["parameters"].to_string();
        assert!(params.contains(r#""name":"name""#) && !params.contains("namespace"), "{params}");
    }

    #[test]
    fn patch_never_offers_strategic_merge_so_kubectl_uses_merge_patch() {
        let (v2, v3) = docs();
        let path = "/apis/test.example.com/v1beta1/namespaces/{namespace}/widgets/{name}";
        let consumes = v2["paths"][path]["patch"]["consumes"].to_string();
        assert!(!consumes.contains("strategic"), "{consumes}");
        let content = v3["paths"][path]["patch"]["requestBody"]["content"].as_object().unwrap();
        assert!(content.contains_key("application/merge-patch+json"));
        assert!(!content.keys().any(|k| k.contains("strategic")));
        let params = v3["paths"][path]["patch"]["parameters"].to_string();
        assert!(params.contains("fieldValidation"), "kubectl checks for server-side field validation here");
    }

    #[test]
    fn documents_are_deterministic_and_hashed() {
        let versions = [
            ("v1", vec![ResourceDescriptor::of::<Widget>()]),
            ("v1beta1", vec![ResourceDescriptor::deprecated_for::<Widget, WidgetV1beta1>()]),
        ];
        let a = Documents::build(&IDENTITY, GROUP, &versions);
        let b = Documents::build(&IDENTITY, GROUP, &versions);
        assert_eq!(a.v2.body, b.v2.body);
        let index: Value = serde_json::from_slice(&a.v3_index.body).unwrap();
        for version in ["v1beta1", "v1"] {
            let document = a.v3_group_version(version).unwrap();
            assert_eq!(document.hash.len(), 128);
            assert_eq!(document.body, b.v3_group_version(version).unwrap().body);
            let url = index["paths"][v3_group_version_path(GROUP, version)]["serverRelativeURL"].as_str().unwrap();
            assert!(url.ends_with(&document.hash));
        }
        let v1: Value = serde_json::from_slice(&a.v3_group_version("v1").unwrap().body).unwrap();
        let size =
            &v1["components"]["schemas"]["com.example.test.v1.Widget"]["properties"]["spec"]["properties"]["size"];
        assert_eq!((&size["minimum"], &size["exclusiveMinimum"]), (&json!(0), &json!(true)));
        assert!(v1["paths"].get("/apis/test.example.com/v1/namespaces/{namespace}/widgets/{name}").is_some());
    }

    #[test]
    fn v2_references_carry_their_description_beside_ref_as_kubectl_reads_them() {
        let (v2, v3) = docs();
        assert!(!v2.to_string().contains("allOf"), "kube-openapi's v2 readers take an allOf for an untyped value");
        let meta = &v2["definitions"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"];
        assert_eq!(meta["creationTimestamp"]["$ref"], "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Time");
        assert_eq!(meta["ownerReferences"]["x-kubernetes-patch-merge-key"], "uid");
        assert!(v3["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.Status"].get("required").is_none());
    }

    #[test]
    fn parameters_every_operation_of_a_path_takes_are_listed_once_for_the_path_in_name_order() {
        let (v2, v3) = docs();
        let all = &v2["paths"]["/apis/test.example.com/v1beta1/widgets"];
        assert!(all["get"].get("parameters").is_none(), "the only operation's parameters are the path's");
        let names: Vec<&str> =
            all["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert!(names.is_sorted() && names.contains(&"labelSelector") && names.contains(&"pretty"), "{names:?}");
        for parameter in v3["paths"]["/apis/test.example.com/v1beta1/widgets"]["parameters"].as_array().unwrap() {
            assert!(parameter.get("uniqueItems").is_none(), "a v3 parameter says it in its schema: {parameter}");
            assert_eq!(parameter["schema"]["uniqueItems"], true);
        }
    }

    #[test]
    fn operations_offer_yaml_as_the_server_serves_it() {
        let (v2, _) = docs();
        let item = &v2["paths"]["/apis/test.example.com/v1beta1/namespaces/{namespace}/widgets/{name}"];
        assert_eq!(item["put"]["consumes"], json!(["application/json", "application/yaml"]));
        assert_eq!(item["get"]["produces"], json!(["application/json", "application/yaml"]));
        assert_eq!(
            item["delete"]["responses"]["202"]["schema"]["$ref"],
            "#/definitions/com.example.test.v1beta1.Widget"
        );
    }

    #[test]
    fn no_schema_uses_null_types() {
        let (v2, v3) = docs();
        for doc in [v2, v3] {
            let text = doc.to_string();
            assert!(!text.contains("\"null\""), "null type left in the document");
            assert!(!text.contains("nullable"));
        }
    }
}
