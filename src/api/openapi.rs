//! OpenAPI v2 (`/openapi/v2`) and v3 (`/openapi/v3`, `/openapi/v3/apis/<group>/<version>`)
//! documents, built once at start-up from the resources' descriptors.
//!
//! Schemas come from the Rust types: resource properties through `schemars`, and the
//! `meta.k8s.io` types (ObjectMeta, ListMeta, Status, DeleteOptions, ...) through k8s-openapi's
//! `JsonSchema` implementations, under their canonical Kubernetes names. Each operation carries
//! `x-kubernetes-action` and `x-kubernetes-group-version-kind`, and PATCH lists only the patch
//! types served (JSON patch and merge patch), so kubectl computes merge patches as it does for
//! custom resources. Bodies are served with strong ETags; v3 group-version documents are
//! addressed by a content hash, as the kube-apiserver does.

use crate::machinery::resource::{API_VERSION, GROUP, ResourceDescriptor, ResourceInfo, VERSION};
use crate::machinery::schema::strip_nulls;
use crate::machinery::verb::Verb;
use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};

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
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// `com.example.farm.v1alpha.Llama`: the definition name Kubernetes gives a group's kind.
pub fn definition_name(kind: &str) -> String {
    let reversed: Vec<&str> = GROUP.split('.').rev().collect();
    format!("{}.{VERSION}.{kind}", reversed.join("."))
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// `FarmExampleCom`: the group as operation IDs spell it.
fn group_camel() -> String {
    GROUP.split('.').map(capitalize).collect()
}

/// `farmExampleCom_v1alpha`: the tag of the group-version's operations.
fn version_tag() -> String {
    let camel = group_camel();
    let mut chars = camel.chars();
    let lower: String = chars.next().map(|c| c.to_lowercase().chain(chars).collect()).unwrap_or_default();
    format!("{lower}_{VERSION}")
}

fn gvk(kind: &str) -> Value {
    json!({"group": GROUP, "kind": kind, "version": VERSION})
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

fn resource_definitions(flavour: Flavour, resource: &ResourceDescriptor, into: &mut Map<String, Value>) {
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
    into.insert(
        definition_name(info.kind),
        json!({
            "description": info.description,
            "type": "object",
            "required": resource.required,
            "properties": properties,
            "x-kubernetes-group-version-kind": [gvk(info.kind)],
        }),
    );
    let mut list_properties = Map::new();
    list_properties.insert("apiVersion".into(), properties["apiVersion"].clone());
    list_properties.insert("kind".into(), properties["kind"].clone());
    list_properties.insert(
        "items".into(),
        json!({"description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", info.plural), "type": "array", "items": flavour.reference(&definition_name(info.kind))}),
    );
    list_properties.insert(
        "metadata".into(),
        with_description(flavour, &format!("{META}.ListMeta"), "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"),
    );
    into.insert(
        definition_name(info.list_kind),
        json!({
            "description": format!("{} is a list of {}", info.list_kind, info.kind),
            "type": "object",
            "required": ["items"],
            "properties": list_properties,
            "x-kubernetes-group-version-kind": [gvk(info.list_kind)],
        }),
    );
}

/// A query or path parameter: name, location, type, description.
#[derive(Clone, Copy)]
struct Param(&'static str, &'static str, &'static str, &'static str);

const P_NAMESPACE: Param =
    Param("namespace", "path", "string", "object name and auth scope, such as for teams and projects");
const P_PRETTY: Param = Param("pretty", "query", "string", "If 'true', then the output is pretty printed.");
const P_DRY_RUN: Param = Param(
    "dryRun",
    "query",
    "string",
    "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
);
const P_FIELD_MANAGER: Param = Param(
    "fieldManager",
    "query",
    "string",
    "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.",
);
const P_FIELD_VALIDATION: Param = Param(
    "fieldValidation",
    "query",
    "string",
    "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: unknown fields are dropped silently. - Warn: unknown fields are dropped and a Warning header names each (the default). - Strict: the request fails with BadRequest naming every unknown field.",
);
const P_GRACE: Param = Param(
    "gracePeriodSeconds",
    "query",
    "integer",
    "The duration in seconds before the object should be deleted. Value must be non-negative integer.",
);
const P_ORPHAN: Param = Param(
    "orphanDependents",
    "query",
    "boolean",
    "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned.",
);
const P_PROPAGATION: Param = Param(
    "propagationPolicy",
    "query",
    "string",
    "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. Acceptable values are: 'Orphan', 'Background' and 'Foreground'.",
);
const P_LABEL_SELECTOR: Param = Param(
    "labelSelector",
    "query",
    "string",
    "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
);
const P_FIELD_SELECTOR: Param = Param(
    "fieldSelector",
    "query",
    "string",
    "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
);
const P_LIMIT: Param = Param(
    "limit",
    "query",
    "integer",
    "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results.",
);
const P_CONTINUE: Param = Param(
    "continue",
    "query",
    "string",
    "The continue option should be set when retrieving more results from the server.",
);
const P_RV: Param = Param(
    "resourceVersion",
    "query",
    "string",
    "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.",
);
const P_RV_MATCH: Param = Param(
    "resourceVersionMatch",
    "query",
    "string",
    "resourceVersionMatch determines how resourceVersion is applied to list calls.",
);
const P_WATCH: Param = Param(
    "watch",
    "query",
    "boolean",
    "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.",
);
const P_BOOKMARKS: Param = Param(
    "allowWatchBookmarks",
    "query",
    "boolean",
    "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion.",
);
const P_SEND_INITIAL: Param = Param(
    "sendInitialEvents",
    "query",
    "boolean",
    "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation.",
);
const P_TIMEOUT: Param = Param(
    "timeoutSeconds",
    "query",
    "integer",
    "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.",
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
    /// `FarmExampleComV1alpha`, between the action and the kind in operation ids.
    suffix: String,
    /// The definition of the object, and of its list.
    object: String,
    list: String,
}

/// Whether an operation is on every namespace's objects at once, or on one namespace's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    AllNamespaces,
    Namespaced,
}

const JSON: &[&str] = &["application/json"];
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
    let delete_options = || Some((JSON, format!("{META}.DeleteOptions")));
    let (method, id, description, params, body, responses) = match verb {
        Verb::List | Verb::Watch => {
            let id = match scope {
                Scope::AllNamespaces => format!("list{suffix}{kind}ForAllNamespaces"),
                Scope::Namespaced => format!("list{suffix}Namespaced{kind}"),
            };
            let description = format!("list or watch objects of kind {kind}");
            ("get", id, description, list_params(names.info), None, vec![("200", list.clone())])
        }
        Verb::Create => {
            let responses = vec![("200", object.clone()), ("201", object.clone()), ("202", object.clone())];
            let id = format!("create{suffix}Namespaced{kind}");
            ("post", id, format!("create a {kind}"), write_params(), Some((JSON, object.clone())), responses)
        }
        Verb::DeleteCollection => {
            let mut params = delete_params();
            params.extend(list_params(names.info));
            let id = format!("delete{suffix}CollectionNamespaced{kind}");
            let description = format!("delete collection of {kind}");
            ("delete", id, description, params, delete_options(), vec![("200", list.clone())])
        }
        Verb::Get => {
            let id = format!("read{suffix}Namespaced{kind}");
            ("get", id, format!("read the specified {kind}"), vec![], None, vec![("200", object.clone())])
        }
        Verb::Update => {
            let responses = vec![("200", object.clone()), ("201", object.clone())];
            let id = format!("replace{suffix}Namespaced{kind}");
            (
                "put",
                id,
                format!("replace the specified {kind}"),
                write_params(),
                Some((JSON, object.clone())),
                responses,
            )
        }
        Verb::Patch => {
            let body = Some((PATCH_TYPES, format!("{META}.Patch")));
            let id = format!("patch{suffix}Namespaced{kind}");
            let description = format!("partially update the specified {kind}");
            ("patch", id, description, write_params(), body, vec![("200", object.clone())])
        }
        Verb::Delete => {
            let responses = vec![("200", object.clone()), ("202", format!("{META}.Status"))];
            let id = format!("delete{suffix}Namespaced{kind}");
            ("delete", id, format!("delete a {kind}"), delete_params(), delete_options(), responses)
        }
    };
    Operation { method, id, action: verb.openapi_action(), kind, description, params, body, responses }
}

/// The operation of `verb` on the subresource `segment` (`status`): the object's operation with
/// the subresource in its id and description, as the kube-apiserver names them
/// (`readFarmExampleComV1alphaNamespacedLlamaStatus`, "read status of the specified Llama").
fn subresource_operation(verb: Verb, segment: &str, names: &Names) -> Operation {
    let mut op = operation(verb, Scope::Namespaced, names);
    op.id = format!("{}{}", op.id, capitalize(segment));
    let kind = names.info.kind;
    op.description =
        op.description.replace(&format!("the specified {kind}"), &format!("{segment} of the specified {kind}"));
    op
}

/// Every path of one resource with its operations and the parameters common to the path.
fn resource_paths(resource: &ResourceDescriptor) -> Vec<(String, Vec<Param>, Vec<Operation>)> {
    let info = &resource.info;
    let names = Names {
        info,
        suffix: format!("{}{}", group_camel(), capitalize(VERSION)),
        object: definition_name(info.kind),
        list: definition_name(info.list_kind),
    };
    let operations = |verbs: &[Verb], scope: Scope| -> Vec<Operation> {
        verbs.iter().filter(|v| info.allows(**v)).map(|v| operation(*v, scope, &names)).collect()
    };
    let base = format!("/apis/{API_VERSION}");
    let name_description = match info.kind {
        "Llama" => "name of the Llama",
        _ => "name of the object",
    };
    let mut paths = Vec::new();
    if info.allows(Verb::List) {
        let all = operations(&[Verb::List], Scope::AllNamespaces);
        paths.push((format!("{base}/{}", info.plural), vec![P_PRETTY], all));
    }
    let collection = operations(&[Verb::List, Verb::Create, Verb::DeleteCollection], Scope::Namespaced);
    paths.push((format!("{base}/namespaces/{{namespace}}/{}", info.plural), vec![P_NAMESPACE, P_PRETTY], collection));
    let item = operations(&[Verb::Get, Verb::Update, Verb::Patch, Verb::Delete], Scope::Namespaced);
    let item_path = format!("{base}/namespaces/{{namespace}}/{}/{{name}}", info.plural);
    let item_params = vec![Param("name", "path", "string", name_description), P_NAMESPACE, P_PRETTY];
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
    } else {
        v["uniqueItems"] = json!(true);
    }
    match flavour {
        Flavour::V2 => v["type"] = json!(kind),
        Flavour::V3 => v["schema"] = json!({"type": kind, "uniqueItems": true}),
    }
    v
}

fn render_operation(flavour: Flavour, op: &Operation) -> Value {
    let tag = version_tag();
    let mut params: Vec<Value> = op.params.iter().map(|p| render_param(flavour, p)).collect();
    let mut v = json!({
        "description": op.description,
        "operationId": op.id,
        "tags": [tag],
        "x-kubernetes-action": op.action,
        "x-kubernetes-group-version-kind": gvk(op.kind),
    });
    let produces: &[&str] = if op.action == Verb::List.openapi_action() && op.params.iter().any(|p| p.0 == "watch") {
        &["application/json", "application/json;stream=watch"]
    } else {
        &["application/json"]
    };
    match flavour {
        Flavour::V2 => {
            if let Some((types, schema)) = &op.body {
                params.insert(0, json!({"name": "body", "in": "body", "required": op.method != "delete", "schema": flavour.reference(schema)}));
                v["consumes"] = json!(types);
            } else {
                v["consumes"] = json!(["*/*"]);
            }
            v["produces"] = json!(produces);
            v["schemes"] = json!(["https"]);
            let mut responses = Map::new();
            for (code, schema) in &op.responses {
                responses.insert(
                    code.to_string(),
                    json!({"description": describe(code), "schema": flavour.reference(schema)}),
                );
            }
            responses.insert("401".into(), json!({"description": "Unauthorized"}));
            v["responses"] = Value::Object(responses);
        }
        Flavour::V3 => {
            if let Some((types, schema)) = &op.body {
                let mut content = Map::new();
                for t in *types {
                    content.insert(t.to_string(), json!({"schema": flavour.reference(schema)}));
                }
                v["requestBody"] = json!({"content": content, "required": op.method != "delete"});
            }
            let mut responses = Map::new();
            for (code, schema) in &op.responses {
                let mut content = Map::new();
                for t in produces {
                    content.insert(t.to_string(), json!({"schema": flavour.reference(schema)}));
                }
                responses.insert(code.to_string(), json!({"description": describe(code), "content": content}));
            }
            responses.insert("401".into(), json!({"description": "Unauthorized"}));
            v["responses"] = Value::Object(responses);
        }
    }
    if !params.is_empty() {
        v["parameters"] = Value::Array(params);
    }
    v
}

fn describe(code: &str) -> &'static str {
    match code {
        "200" => "OK",
        "201" => "Created",
        "202" => "Accepted",
        _ => "",
    }
}

fn discovery_paths(flavour: Flavour) -> Vec<(String, Value)> {
    let produce = |schema: &str| match flavour {
        Flavour::V2 => {
            json!({"consumes": ["application/json"], "produces": ["application/json"], "schemes": ["https"], "responses": {"200": {"description": "OK", "schema": flavour.reference(schema)}, "401": {"description": "Unauthorized"}}})
        }
        Flavour::V3 => {
            json!({"responses": {"200": {"description": "OK", "content": {"application/json": {"schema": flavour.reference(schema)}}}, "401": {"description": "Unauthorized"}}})
        }
    };
    let mut group = produce(&format!("{META}.APIGroup"));
    group["description"] = json!("get information of a group");
    group["operationId"] = json!(format!("get{}APIGroup", group_camel()));
    let tag = version_tag();
    group["tags"] = json!([tag.trim_end_matches(&format!("_{VERSION}"))]);
    let mut resources = produce(&format!("{META}.APIResourceList"));
    resources["description"] = json!("get available resources");
    resources["operationId"] = json!(format!("get{}{}APIResources", group_camel(), capitalize(VERSION)));
    resources["tags"] = json!([tag]);
    vec![
        (format!("/apis/{GROUP}/"), json!({"get": group})),
        (format!("/apis/{API_VERSION}/"), json!({"get": resources})),
    ]
}

fn paths(flavour: Flavour, resources: &[ResourceDescriptor], include_group: bool) -> Map<String, Value> {
    let mut out = Map::new();
    for (path, item) in discovery_paths(flavour) {
        if include_group || path.ends_with(&format!("{VERSION}/")) {
            out.insert(path, item);
        }
    }
    for resource in resources {
        for (path, common, operations) in resource_paths(resource) {
            let mut item = Map::new();
            for op in &operations {
                item.insert(op.method.to_string(), render_operation(flavour, op));
            }
            item.insert("parameters".into(), Value::Array(common.iter().map(|p| render_param(flavour, p)).collect()));
            out.insert(path, Value::Object(item));
        }
    }
    out
}

fn title() -> Value {
    json!({"title": "farm-apiserver", "version": concat!("v", env!("CARGO_PKG_VERSION"))})
}

/// The OpenAPI v2 document.
pub fn v2_document(resources: &[ResourceDescriptor]) -> Value {
    let mut definitions = meta_definitions(Flavour::V2);
    for r in resources {
        resource_definitions(Flavour::V2, r, &mut definitions);
    }
    json!({
        "swagger": "2.0",
        "info": title(),
        "paths": paths(Flavour::V2, resources, true),
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"}},
        "security": [{"BearerToken": []}],
    })
}

/// The OpenAPI v3 document of the group-version.
pub fn v3_group_version_document(resources: &[ResourceDescriptor]) -> Value {
    let mut schemas = meta_definitions(Flavour::V3);
    for r in resources {
        resource_definitions(Flavour::V3, r, &mut schemas);
    }
    json!({
        "openapi": "3.0.0",
        "info": title(),
        "paths": paths(Flavour::V3, resources, false),
        "components": {
            "schemas": schemas,
            "securitySchemes": {"BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"}},
        },
    })
}

/// The path of the group-version document in the v3 index (without the leading slash).
pub const V3_GROUP_VERSION_PATH: &str = "apis/farm.example.com/v1alpha";

/// A served document: its bytes and their hash.
#[derive(Clone, Debug)]
pub struct Document {
    /// Pretty-printed JSON, as checked in under `openapi/`.
    pub body: Bytes,
    /// Upper-case hex SHA-512 of `body`: the ETag and the v3 `hash` query value.
    pub hash: String,
}

impl Document {
    fn new(value: &Value) -> Self {
        let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
        text.push('\n');
        let hash = hex::encode_upper(Sha512::digest(text.as_bytes()));
        Self { body: Bytes::from(text), hash }
    }

    /// The `ETag` header value (quoted).
    pub fn etag(&self) -> String {
        format!("\"{}\"", self.hash)
    }
}

/// Every OpenAPI document the server serves.
#[derive(Clone, Debug)]
pub struct Documents {
    /// `/openapi/v2`
    pub v2: Document,
    /// `/openapi/v3`
    pub v3_index: Document,
    /// `/openapi/v3/apis/farm.example.com/v1alpha`
    pub v3_group_version: Document,
}

impl Documents {
    /// Builds every document for `resources`.
    pub fn build(resources: &[ResourceDescriptor]) -> Self {
        let v2 = Document::new(&v2_document(resources));
        let v3_group_version = Document::new(&v3_group_version_document(resources));
        let index = json!({"paths": {V3_GROUP_VERSION_PATH: {"serverRelativeURL": format!("/openapi/v3/{V3_GROUP_VERSION_PATH}?hash={}", v3_group_version.hash)}}});
        Self { v2, v3_index: Document::new(&index), v3_group_version }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::llama::Llama;

    fn docs() -> (Value, Value) {
        let resources = [ResourceDescriptor::of::<Llama>()];
        (v2_document(&resources), v3_group_version_document(&resources))
    }

    #[test]
    fn llama_schema_is_described_and_keyed_by_gvk() {
        let (v2, v3) = docs();
        let llama = &v2["definitions"]["com.example.farm.v1alpha.Llama"];
        assert_eq!(llama["x-kubernetes-group-version-kind"][0]["kind"], "Llama");
        assert_eq!(
            llama["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        let weight = &llama["properties"]["spec"]["properties"]["weight"];
        assert!(weight["description"].as_str().unwrap().contains("kilograms"));
        assert_eq!(weight["type"], "number");
        assert_eq!(llama["properties"]["spec"]["properties"]["color"]["type"], "string");
        assert!(v2["definitions"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object());
        assert!(v3["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.Time"].is_object());
    }

    #[test]
    fn patch_never_offers_strategic_merge_so_kubectl_uses_merge_patch() {
        let (v2, v3) = docs();
        let path = "/apis/farm.example.com/v1alpha/namespaces/{namespace}/llamas/{name}";
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
        let resources = [ResourceDescriptor::of::<Llama>()];
        let a = Documents::build(&resources);
        let b = Documents::build(&resources);
        assert_eq!(a.v2.body, b.v2.body);
        assert_eq!(a.v3_group_version.hash.len(), 128);
        let index: Value = serde_json::from_slice(&a.v3_index.body).unwrap();
        let url = index["paths"][V3_GROUP_VERSION_PATH]["serverRelativeURL"].as_str().unwrap();
        assert!(url.ends_with(&a.v3_group_version.hash));
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
