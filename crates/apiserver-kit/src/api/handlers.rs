//! HTTP handlers for any resource with a [`Strategy`]: get, list, create, update, patch, delete and
//! deletecollection on `/apis/<group>/<version>/namespaces/{namespace}/<plural>[/{name}]` and
//! list on the all-namespaces path `/apis/<group>/<version>/<plural>` for a namespaced resource,
//! on `/apis/<group>/<version>/<plural>[/{name}]` for a cluster-scoped one (whose requests carry
//! the empty namespace); get, update and patch on `…/<plural>/{name}/status` for a resource with
//! a status subresource.
//!
//! Handlers only translate HTTP to [`Registry`] calls and render the answer in the negotiated
//! representation; a verb the resource lacks is a 405 `Status`.

use super::decode::{
    check_kind, check_media_type, check_metadata, decode_body, parse_body, parse_body_with_duplicates, prepare_body,
    read_body,
};
use super::extract::{CollectionPath, ObjectPath, PathParams, Requester};
use super::negotiate::{MetaVersion, Representation, Target, negotiate, partial_metadata_in};
use super::patch::{Patch, PatchType};
use super::query::{FieldValidation, ListOptions, OptionsKind, Query, WriteOptions};
use super::registry::{At, Registry, WriteContext};
use super::table;
use crate::machinery::cpu_bound;
use crate::machinery::error::{Error, FieldError, Result};
use crate::machinery::json;
use crate::machinery::strategy::{Strategy, Subresource};
use crate::machinery::verb::Verb;
use crate::machinery::version::{Served, hub_field};
use crate::store::Stored;
use axum::Router;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, ListMeta};
use kube::core::{ObjectList, TypeMeta};
use serde::Serialize;
use std::borrow::Cow;
use std::sync::Arc;

/// Routes for resource `K` served at version `V` (`K` itself for its own version), backed by
/// `registry`; when the version is deprecated, every answer carries `deprecation` as its first
/// `Warning`, errors included, as the kube-apiserver warns before it serves a deprecated version.
pub fn routes<K: Strategy, V: Served<K>>(registry: Arc<Registry<K>>, deprecation: Option<String>) -> Router {
    let info = V::info();
    let base = format!("/apis/{}", <V as kube::Resource>::api_version(&()));
    let allowed = |verb: Verb| info.allows(verb);

    let mut collection: MethodRouter<Arc<Registry<K>>> = MethodRouter::new();
    if allowed(Verb::List) {
        collection = collection.get(list::<K, V>);
    }
    if allowed(Verb::Create) {
        collection = collection.post(create::<K, V>);
    }
    if allowed(Verb::DeleteCollection) {
        collection = collection.delete(delete_collection::<K, V>);
    }
    let item = object_routes::<K, V>(Subresource::Main);
    let finish = |m: MethodRouter<Arc<Registry<K>>>| m.fallback(method_not_allowed);
    // A namespaced resource: its objects under `namespaces/{namespace}/`, and a list of every
    // namespace's at `<plural>`; a cluster-scoped one: its collection at `<plural>`.
    let (collection_path, mut router) = if info.namespaced {
        let path = format!("{base}/namespaces/{{namespace}}/{}", info.plural);
        let mut all_namespaces: MethodRouter<Arc<Registry<K>>> = MethodRouter::new();
        if allowed(Verb::List) {
            all_namespaces = all_namespaces.get(list::<K, V>);
        }
        (path, Router::new().route(&format!("{base}/{}", info.plural), finish(all_namespaces)))
    } else {
        (format!("{base}/{}", info.plural), Router::new())
    };
    let item_path = format!("{collection_path}/{{name}}");
    router = router.route(&collection_path, finish(collection)).route(&item_path, finish(item));
    for &subresource in info.subresources {
        if let Some(segment) = subresource.name() {
            router = router.route(&format!("{item_path}/{segment}"), finish(object_routes::<K, V>(subresource)));
        }
    }
    let router = router.with_state(registry);
    match deprecation.as_deref().and_then(super::warnings::header) {
        None => router,
        Some(warning) => router.layer(axum::middleware::map_response(move |response| {
            let warning = warning.clone();
            async move { warned_first(response, warning) }
        })),
    }
}

/// `response` with `warning` before the warnings it has.
fn warned_first(mut response: Response, warning: HeaderValue) -> Response {
    let headers = response.headers_mut();
    let others: Vec<HeaderValue> = headers.get_all(header::WARNING).iter().cloned().collect();
    headers.insert(header::WARNING, warning);
    for other in others {
        headers.append(header::WARNING, other);
    }
    response
}

/// The methods on one object (`/…/{name}`) or one of its subresources (`/…/{name}/status`), by the
/// verbs each serves.
fn object_routes<K: Strategy, V: Served<K>>(subresource: Subresource) -> MethodRouter<Arc<Registry<K>>> {
    let verbs = V::info().verbs_of(subresource);
    let mut item = MethodRouter::new();
    if verbs.contains(&Verb::Get) {
        item = item.get(get::<K, V>);
    }
    if verbs.contains(&Verb::Update) {
        item = item.put(move |s, p, q, u, h, b| update::<K, V>(subresource, s, p, q, u, h, b));
    }
    if verbs.contains(&Verb::Patch) {
        item = item.on(MethodFilter::PATCH, move |s, p, q, u, h, b| patch::<K, V>(subresource, s, p, q, u, h, b));
    }
    if verbs.contains(&Verb::Delete) && subresource == Subresource::Main {
        item = item.delete(delete::<K, V>);
    }
    item
}

async fn method_not_allowed() -> Error {
    Error::MethodNotAllowed
}

/// Serializes `value` as JSON, indented when the client asked `pretty=true`.
fn encode<T: Serialize + ?Sized>(value: &T, pretty: bool) -> Result<Vec<u8>> {
    let out = if pretty { json::to_vec_pretty(value) } else { json::to_vec(value) };
    out.map_err(|e| Error::Internal(format!("encoding the response: {e}")))
}

/// `objects` as a Table, encoded; pretty output indents the rows' objects too.
fn encode_table<'a, K: Strategy>(
    objects: impl IntoIterator<Item = &'a Stored<K>>,
    metadata: ListMeta,
    version: MetaVersion,
    query: &Query,
) -> Result<Vec<u8>> {
    let now = k8s_openapi::jiff::Timestamp::now();
    let mut t = table::render(objects, metadata, query.include_object()?, version, now)?;
    if query.pretty() {
        t.indent_objects()?;
    }
    encode(&t, query.pretty())
}

/// A JSON response with the given content type and warnings.
fn respond(code: StatusCode, content_type: &str, body: impl Into<Body>, warnings: &[String]) -> Response {
    let mut response = (code, body.into()).into_response();
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(content_type) {
        headers.insert(header::CONTENT_TYPE, v);
    }
    for w in super::warnings::headers(warnings) {
        headers.append(header::WARNING, w);
    }
    response
}

/// Renders one stored object at version `V` in the representation the client negotiated; the
/// plain compact form at the stored version is the stored object's own encoding, written as it is.
fn render_object<K: Strategy, V: Served<K>>(
    object: &Arc<Stored<K>>,
    representation: Representation,
    query: &Query,
    code: StatusCode,
    warnings: &[String],
) -> Result<Response> {
    let pretty = query.pretty();
    if representation == Representation::Object && !pretty {
        // The common answer: written from the stored bytes, converted as they are copied.
        let mut body = Vec::with_capacity(object.json_len() + 64);
        V::write_from_hub(object, &mut body)?;
        return Ok(respond(code, &representation.content_type(Target::Object), body, warnings));
    }
    let object = V::stored_from_hub(object)?;
    let object = object.as_ref();
    let body: bytes::Bytes = match representation {
        Representation::Object => encode(&object.decode()?, pretty)?.into(),
        Representation::Metadata(version) => encode(&partial_metadata_in(&object.metadata()?, version), pretty)?.into(),
        Representation::Table(version) => {
            let metadata =
                ListMeta { resource_version: Some(object.resource_version().to_string()), ..Default::default() };
            encode_table(std::iter::once(object), metadata, version, query)?.into()
        }
    };
    Ok(respond(code, &representation.content_type(Target::Object), body, warnings))
}

/// The items decoded, for the representations built from objects (pretty JSON, Table).
fn decode_all<K: Strategy>(items: &[Arc<Stored<K>>]) -> Result<Vec<K>> {
    items.iter().map(|o| o.decode()).collect()
}

/// Renders a list of hub objects at version `V` in the representation the client negotiated.
/// Compact lists (every answer but `pretty=true`) are written item by item, streamed when large
/// and then gzipped for a client that accepts it ([`compact_list`]); pretty ones are encoded
/// whole, indented.
fn render_list<K: Strategy, V: Served<K>>(
    hub_items: Vec<Arc<Stored<K>>>,
    metadata: ListMeta,
    representation: Representation,
    query: &Query,
    headers: &HeaderMap,
) -> Result<Response> {
    if !query.pretty() {
        let gzip = super::compression::accepts_gzip(headers);
        let listed = compact_list::<K, V>(hub_items, metadata, representation, query, gzip)?;
        let mut response = respond(StatusCode::OK, &representation.content_type(Target::List), listed.body, &[]);
        if listed.gzipped {
            super::compression::mark_gzipped(response.headers_mut());
        }
        return Ok(response);
    }
    let items = &*served::<K, V>(&hub_items)?;
    let body = match representation {
        Representation::Object => {
            let list = ObjectList {
                types: TypeMeta { api_version: V::api_version(&()).into(), kind: V::info().list_kind.into() },
                metadata,
                items: decode_all(items)?,
            };
            encode(&list, true)?
        }
        Representation::Metadata(version) => {
            let metadata_of = |o: &Arc<Stored<V>>| Ok(partial_metadata_in(&o.metadata()?, version));
            let list = ObjectList {
                types: TypeMeta { api_version: version.api_version().into(), kind: "PartialObjectMetadataList".into() },
                metadata,
                items: items.iter().map(metadata_of).collect::<Result<_>>()?,
            };
            encode(&list, true)?
        }
        Representation::Table(version) => encode_table(items.iter().map(|o| &**o), metadata, version, query)?,
    };
    Ok(respond(StatusCode::OK, &representation.content_type(Target::List), body, &[]))
}

/// The compact body of a list of hub objects at version `V` in `representation`, streamed when
/// large (see [`super::list_body`]): the objects, their metadata, or their Table rows.
fn compact_list<K: Strategy, V: Served<K>>(
    hub_items: Vec<Arc<Stored<K>>>,
    metadata: ListMeta,
    representation: Representation,
    query: &Query,
    gzip: bool,
) -> Result<super::list_body::ListBody> {
    use super::list_body::{list_head, streamed};
    match representation {
        Representation::Object => super::list_body::list_body::<K, V>(&metadata, hub_items, gzip),
        Representation::Metadata(version) => {
            let head = list_head(version.api_version(), "PartialObjectMetadataList", &metadata)?;
            let write = move |hub: &Arc<Stored<K>>, out: &mut Vec<u8>| {
                let partial = partial_metadata_in(&V::stored_from_hub(hub)?.metadata()?, version);
                serde_json::to_writer(out, &partial).map_err(|e| Error::Internal(format!("encoding metadata: {e}")))
            };
            streamed(head, hub_items, write, gzip)
        }
        Representation::Table(version) => {
            let (include, now) = (query.include_object()?, k8s_openapi::jiff::Timestamp::now());
            let write = move |hub: &Arc<Stored<K>>, out: &mut Vec<u8>| {
                table::write_row(&*V::stored_from_hub(hub)?, include, version, now, out)
            };
            streamed(table::head::<V>(&metadata, version)?, hub_items, write, gzip)
        }
    }
}

async fn get<K: Strategy, V: Served<K>>(
    State(registry): State<Arc<Registry<K>>>,
    PathParams(ObjectPath { namespace, name }): PathParams<ObjectPath>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Result<Response> {
    let query = Query::of_request(raw.as_deref(), &headers);
    let accept = headers.get(header::ACCEPT);
    // A list's representation asked of one object (`as=PartialObjectMetadataList`): the
    // kube-apiserver negotiates it and fails only once it has the object, so the request's
    // other mistakes and a missing object are answered first; any other unacceptable type first.
    let negotiated = negotiate(accept, Target::Object);
    let list_only = negotiated.is_err() && negotiate(accept, Target::List).is_ok();
    let representation = if list_only { None } else { Some(negotiated?) };
    super::query::refuse_export(&query)?;
    let resource_version = super::query::resource_version(&query)?;
    registry.ensure_ready().await?;
    let object = registry.get_at(&namespace, &name, resource_version).await?;
    let representation = match representation {
        Some(representation) => representation,
        None => negotiate(accept, Target::Object)?,
    };
    render_object::<K, V>(&object, representation, &query, StatusCode::OK, &[])
}

/// LIST (or WATCH) of one namespace's objects, or of all.
async fn list<K: Strategy, V: Served<K>>(
    State(registry): State<Arc<Registry<K>>>,
    PathParams(CollectionPath { namespace }): PathParams<CollectionPath>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Result<Response> {
    list_objects::<K, V>(registry, namespace, raw, headers).await
}

/// The list options of `query` at version `V`, their field selector naming the hub's fields.
fn list_options<K: Strategy, V: Served<K>>(query: &Query) -> Result<ListOptions> {
    let mut options = ListOptions::parse(query, V::info().selectable_fields)?;
    options.field_selector = options.field_selector.rename_fields(hub_field::<K, V>);
    Ok(options)
}

/// Hub objects at version `V`: the same list, not copied, at the hub's own version (which is
/// why it takes the `Vec`: the type it is recognised by).
#[allow(clippy::ptr_arg)]
fn served<K: Strategy, V: Served<K>>(items: &Vec<Arc<Stored<K>>>) -> Result<Cow<'_, [Arc<Stored<V>>]>> {
    if let Some(same) = (items as &dyn std::any::Any).downcast_ref::<Vec<Arc<Stored<V>>>>() {
        return Ok(Cow::Borrowed(same.as_slice()));
    }
    items.iter().map(V::stored_from_hub).collect::<Result<Vec<_>>>().map(Cow::Owned)
}

async fn list_objects<K: Strategy, V: Served<K>>(
    registry: Arc<Registry<K>>,
    namespace: Option<String>,
    raw: Option<String>,
    headers: HeaderMap,
) -> Result<Response> {
    let query = Query::of_request(raw.as_deref(), &headers);
    let options = list_options::<K, V>(&query)?;
    registry.ensure_ready().await?;
    if options.watch {
        let representation = negotiate(headers.get(header::ACCEPT), Target::Watch)?;
        let accepts_gzip = super::compression::accepts_gzip(&headers);
        let writing = super::watch::Writing { representation, accepts_gzip };
        return super::watch::serve::<K, V>(registry, namespace, options, writing, &query).await;
    }
    let representation = negotiate(headers.get(header::ACCEPT), Target::List)?;
    let page = registry.list_page(namespace.as_deref(), &options).await?;
    let metadata = ListMeta {
        resource_version: Some(page.revision.to_string()),
        continue_: page.continue_token,
        remaining_item_count: page.remaining.map(|r| r as i64),
        ..Default::default()
    };
    render_list::<K, V>(page.items, metadata, representation, &query, &headers)
}

/// What every create, update and patch reads first: query, write options, response representation.
struct WriteRequest {
    query: Query,
    options: WriteOptions,
    representation: Representation,
    /// Who writes: `fieldManager`, or the User-Agent's product.
    manager: String,
}

impl WriteRequest {
    /// Reads the request in the kube-apiserver's order: the answer's media type (406), the
    /// body's (415, by `body_type`, whose answer is returned too), then the options (400, 422),
    /// `options_of` giving the causes that come first for that body type.
    fn parse<T>(
        raw: Option<&str>,
        headers: &HeaderMap,
        kind: OptionsKind,
        body_type: impl FnOnce(&HeaderMap) -> Result<T>,
        options_of: impl FnOnce(&T, &Query) -> Vec<FieldError>,
    ) -> Result<(Self, T)> {
        let representation = negotiate(headers.get(header::ACCEPT), Target::Object)?;
        let body_type = body_type(headers)?;
        let query = Query::of_request(raw, headers);
        let options = WriteOptions::parse(&query, kind, options_of(&body_type, &query))?;
        let user_agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok());
        let manager = crate::structured_merge::managed::manager_name(options.field_manager.as_deref(), user_agent);
        Ok((Self { query, options, representation, manager }, body_type))
    }

    /// The context of a write at version `V` of `K`.
    fn context<K: Strategy, V: Served<K>>(&self, Requester(user): Requester) -> WriteContext {
        WriteContext {
            dry_run: self.options.dry_run,
            field_validation: self.options.field_validation,
            manager: self.manager.clone(),
            field_manager: self.options.field_manager.clone(),
            user,
            at: At::of::<K, V>(),
            strict_decoding: Vec::new(),
        }
    }
}

async fn create<K: Strategy, V: Served<K>>(
    State(registry): State<Arc<Registry<K>>>,
    PathParams(CollectionPath { namespace }): PathParams<CollectionPath>,
    RawQuery(raw): RawQuery,
    requester: Requester,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    let namespace = namespace.unwrap_or_default();
    let (request, ()) =
        WriteRequest::parse(raw.as_deref(), &headers, OptionsKind::Create, check_media_type, no_causes)?;
    let bytes = read_body(body).await?;
    super::warning_recorder::answered(cpu_bound::run_async(bytes.len(), async {
        let (mut value, mut strict) = parse_body_with_duplicates(&headers, &bytes, V::info().kind)?;
        strict.extend(prepare_body::<V>(&mut value, Subresource::Main));
        let validation = (request.options.field_validation, strict.as_slice());
        let checked = async {
            check_kind::<V>(&value)?;
            check_metadata::<V>(&value)?;
            // Admission (the namespace lifecycle) sees the decoded object, before its validation.
            let name = ["name", "generateName"]
                .iter()
                .find_map(|field| value["metadata"].get(*field)?.as_str().filter(|n| !n.is_empty()))
                .unwrap_or_default();
            registry.admit_create(&namespace, name).await?;
            super::registry::check_body_namespace(&value, &namespace)
        };
        if let Err(refused) = checked.await {
            return Err(refused_after_decoding::<V>(refused, &value, &namespace, validation, Subresource::Main));
        }
        let decoded = decode_body::<V>(&value, &namespace, validation, Subresource::Main)?;
        let object = V::object_to_hub(decoded.object)?;
        let created = registry.create(&namespace, object, &request.context::<K, V>(requester)).await?;
        let warnings = [decoded.warnings, created.warnings].concat();
        render_object::<K, V>(&created.object, request.representation, &request.query, StatusCode::CREATED, &warnings)
    }))
    .await
}

/// PUT of the object, or of its `subresource`.
async fn update<K: Strategy, V: Served<K>>(
    subresource: Subresource,
    State(registry): State<Arc<Registry<K>>>,
    PathParams(ObjectPath { namespace, name }): PathParams<ObjectPath>,
    RawQuery(raw): RawQuery,
    requester: Requester,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    // An update reads its options before its body's media type (a create the other way round).
    let (request, ()) = WriteRequest::parse(raw.as_deref(), &headers, OptionsKind::Update, |_| Ok(()), no_causes)?;
    let bytes = read_body(body).await?;
    super::warning_recorder::answered(cpu_bound::run_async(bytes.len(), async {
        let (mut value, mut strict) = parse_body_with_duplicates(&headers, &bytes, V::info().kind)?;
        strict.extend(prepare_body::<V>(&mut value, subresource));
        let ctx = WriteContext { strict_decoding: strict, ..request.context::<K, V>(requester) };
        // Another kind is refused before the object is looked up, as by a built-in resource's
        // decoder; the rest of the body is decoded and validated once the stored object is read.
        let checked = check_kind::<V>(&value).and_then(|_| check_metadata::<V>(&value));
        let updated = match checked {
            Ok(()) => registry.update::<V>(&namespace, &name, &value, subresource, &ctx).await,
            Err(refused) => Err(refused),
        };
        let updated = updated.map_err(|refused| {
            let validation = (ctx.field_validation, ctx.strict_decoding.as_slice());
            refused_after_decoding::<V>(refused, &value, &namespace, validation, subresource)
        })?;
        let (representation, query) = (request.representation, &request.query);
        render_object::<K, V>(&updated.object, representation, query, StatusCode::OK, &updated.warnings)
    }))
    .await
}

/// `refused`, once the body's unknown and duplicate fields are recorded as warnings
/// (`fieldValidation=Warn`): the kube-apiserver decodes a custom resource's body (an object
/// whose metadata decodes) before anything else looks at it (its kind, its namespace,
/// admission, the stored object), so whatever it then refuses still warns of them. Decoding it
/// again costs the refusal alone; the warnings recorded twice (when the refusal came after
/// decoding) are written once.
fn refused_after_decoding<V: Strategy>(
    refused: Error,
    value: &serde_json::Value,
    namespace: &str,
    validation: (FieldValidation, &[String]),
    subresource: Subresource,
) -> Error {
    if validation.0 == FieldValidation::Warn && check_metadata::<V>(value).is_ok() {
        drop(decode_body::<V>(value, namespace, validation, subresource));
    }
    refused
}

/// PATCH of the object, or of its `subresource`.
async fn patch<K: Strategy, V: Served<K>>(
    subresource: Subresource,
    State(registry): State<Arc<Registry<K>>>,
    PathParams(ObjectPath { namespace, name }): PathParams<ObjectPath>,
    RawQuery(raw): RawQuery,
    requester: Requester,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    let (request, patch_type) = WriteRequest::parse(
        raw.as_deref(),
        &headers,
        OptionsKind::Patch,
        |headers| PatchType::from_headers(headers, registry.serves_apply()),
        patch_options,
    )?;
    let force = request.query.flag("force");
    let bytes = read_body(body).await?;
    let ctx = request.context::<K, V>(requester);
    super::warning_recorder::answered(cpu_bound::run_async(bytes.len(), async {
        let (written, code) = if patch_type == PatchType::Apply {
            let config = super::patch::apply_configuration(&bytes)?;
            super::patch::check_apply_type::<V>(&config)?;
            let (written, created) = registry.apply::<V>(&namespace, &name, &config, subresource, force, &ctx).await?;
            (written, if created { StatusCode::CREATED } else { StatusCode::OK })
        } else {
            let patch = Patch::parse(patch_type, &bytes, request.options.field_validation)?;
            (registry.patch::<V>(&namespace, &name, &patch, subresource, &ctx).await?, StatusCode::OK)
        };
        render_object::<K, V>(&written.object, request.representation, &request.query, code, &written.warnings)
    }))
    .await
}

/// No option causes of a body type's own.
fn no_causes<T>(_: &T, _: &Query) -> Vec<FieldError> {
    Vec::new()
}

/// The options only an apply takes, checked first as `ValidatePatchOptions` checks them: an
/// apply needs `fieldManager`; `force` (whatever its value) is for applies only.
fn patch_options(patch_type: &PatchType, query: &Query) -> Vec<FieldError> {
    match patch_type {
        PatchType::Apply if query.get("fieldManager").is_none_or(str::is_empty) => {
            vec![FieldError::required("fieldManager", "is required for apply patch")]
        }
        PatchType::Merge | PatchType::Json if query.get("force").is_some() => {
            vec![FieldError::forbidden("force", "may not be specified for non-apply patch")]
        }
        _ => Vec::new(),
    }
}

/// Refuses a delete body that names another kind or version than `DeleteOptions` of
/// `meta.k8s.io/v1` (or its older names); one naming neither is read as `DeleteOptions`.
fn check_delete_options_type(value: &serde_json::Value) -> Result<()> {
    let field = |name: &str| value.get(name).and_then(serde_json::Value::as_str).unwrap_or_default();
    let (kind, version) = (field("kind"), field("apiVersion"));
    let known_version = ["", "v1", "meta.k8s.io/v1", "meta.k8s.io/v1beta1"].contains(&version);
    if (kind.is_empty() || kind == "DeleteOptions") && known_version {
        return Ok(());
    }
    Err(Error::BadRequest(format!("no kind {kind:?} is registered for version {version:?}")))
}

/// Reads `DeleteOptions` from the query and, when present, the body (which takes precedence).
async fn delete_options(query: &Query, headers: &HeaderMap, body: Body) -> Result<(DeleteOptions, bool)> {
    let bytes = read_body(body).await?;
    // A body, when there is one, is all the options: the query's are then not read.
    let options = if bytes.iter().all(u8::is_ascii_whitespace) {
        delete_options_of(query)?
    } else {
        let value = parse_body(headers, &bytes, "DeleteOptions")?;
        check_delete_options_type(&value)?;
        serde_json::from_value::<DeleteOptions>(value).map_err(|e| {
            Error::BadRequest(format!("the body of the request could not be decoded as DeleteOptions: {e}"))
        })?
    };
    let dry_run = options.dry_run.iter().flatten().any(|v| v == "All");
    Ok((options, dry_run))
}

/// `DeleteOptions` from the query parameters, read but not yet validated (400 for a number that
/// does not parse).
fn delete_options_of(query: &Query) -> Result<DeleteOptions> {
    let grace_period_seconds = match query.get("gracePeriodSeconds") {
        Some(raw) => {
            Some(raw.parse().map_err(|_| Error::BadRequest(format!("invalid value for gracePeriodSeconds: {raw:?}")))?)
        }
        None => None,
    };
    let dry_run: Vec<String> = query.all("dryRun").map(str::to_string).collect();
    Ok(DeleteOptions {
        dry_run: (!dry_run.is_empty()).then_some(dry_run),
        grace_period_seconds,
        orphan_dependents: query.get("orphanDependents").map(|_| query.flag("orphanDependents")),
        propagation_policy: query.get("propagationPolicy").map(str::to_string),
        ..DeleteOptions::default()
    })
}

/// The context of a delete at version `V`: only whether it is a dry run, who asks, and at which
/// version (what admission webhooks are told).
fn delete_context<K: Strategy, V: Served<K>>(dry_run: bool, Requester(user): Requester) -> WriteContext {
    WriteContext { dry_run, user, at: At::of::<K, V>(), ..WriteContext::default() }
}

async fn delete<K: Strategy, V: Served<K>>(
    State(registry): State<Arc<Registry<K>>>,
    PathParams(ObjectPath { namespace, name }): PathParams<ObjectPath>,
    RawQuery(raw): RawQuery,
    requester: Requester,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    let query = Query::of_request(raw.as_deref(), &headers);
    let representation = negotiate(headers.get(header::ACCEPT), Target::Object)?;
    let (options, dry_run) = delete_options(&query, &headers, body).await?;
    let committed = registry.delete(&namespace, &name, &options, &delete_context::<K, V>(dry_run, requester)).await?;
    // As the kube-apiserver: 202 when the object stays and the client asked, the legacy way,
    // for its dependents to be deleted (`orphanDependents=false`).
    let code = if !committed.deleted && options.orphan_dependents == Some(false) {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    render_object::<K, V>(&committed.object, representation, &query, code, &[])
}

async fn delete_collection<K: Strategy, V: Served<K>>(
    State(registry): State<Arc<Registry<K>>>,
    PathParams(CollectionPath { namespace }): PathParams<CollectionPath>,
    RawQuery(raw): RawQuery,
    requester: Requester,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    let query = Query::of_request(raw.as_deref(), &headers);
    let representation = negotiate(headers.get(header::ACCEPT), Target::List)?;
    let selection = list_options::<K, V>(&query)?;
    let (options, dry_run) = delete_options(&query, &headers, body).await?;
    let deleted = registry
        .delete_collection(namespace.as_deref(), &options, &delete_context::<K, V>(dry_run, requester), &|o| {
            Registry::<K>::selects(&selection, o)
        })
        .await?;
    let metadata = ListMeta { resource_version: Some(registry.revision().await?.to_string()), ..Default::default() };
    render_list::<K, V>(deleted, metadata, representation, &query, &headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::testing::{Widget, WidgetSpec, WidgetV1beta1};

    fn object(name: &str, size: f64) -> Arc<Stored<Widget>> {
        let mut object = Widget::new(name, WidgetSpec { size, color: Some("white \"snow\"".into()) });
        object.metadata.namespace = Some("shop".into());
        object.metadata.labels = Some([("line".to_string(), "a".to_string())].into());
        Arc::new(Stored::new(object).unwrap())
    }

    /// The compact JSON list of `items` at version `V`, as an answer's body holds it.
    async fn list_json<K: Strategy, V: Served<K>>(items: &[Arc<Stored<K>>], metadata: &ListMeta) -> Result<Vec<u8>> {
        let listed = super::super::list_body::list_body::<K, V>(metadata, items.to_vec(), false)?;
        Ok(axum::body::to_bytes(listed.body, usize::MAX).await.unwrap().to_vec())
    }

    #[tokio::test]
    async fn a_list_of_stored_encodings_is_byte_for_byte_the_list_serde_writes() {
        let metadata = ListMeta {
            resource_version: Some("42".into()),
            continue_: Some("token".into()),
            remaining_item_count: Some(3),
            ..Default::default()
        };
        for items in [vec![], vec![object("a", 1.0)], vec![object("a", 1.5), object("b", 300.0), object("c", 0.0)]] {
            let expected = json::to_vec(&ObjectList {
                types: TypeMeta { api_version: "test.example.com/v1".into(), kind: "WidgetList".into() },
                metadata: metadata.clone(),
                items: items.iter().map(|o| o.decode().unwrap()).collect(),
            })
            .unwrap();
            let written = list_json::<Widget, Widget>(&items, &metadata).await.unwrap();
            assert_eq!(String::from_utf8(written).unwrap(), String::from_utf8(expected).unwrap());
        }
    }

    #[tokio::test]
    async fn a_list_at_another_version_is_the_list_of_the_converted_objects() {
        // (A product's own conversion that splices bytes is checked against its conversion of
        // values by that product's tests.)
        let mut plain = Widget::new("b", WidgetSpec { size: 1.0, color: None });
        plain.metadata.namespace = Some("shop".into());
        let items = vec![object("a", 1.5), Arc::new(Stored::new(plain).unwrap()), object("c", 2.0)];
        let metadata = ListMeta { resource_version: Some("7".into()), ..Default::default() };
        let written = list_json::<Widget, WidgetV1beta1>(&items, &metadata).await.unwrap();
        let converted: Vec<Arc<Stored<WidgetV1beta1>>> =
            items.iter().map(|o| WidgetV1beta1::stored_from_hub(o).unwrap()).collect();
        let expected = list_json::<WidgetV1beta1, WidgetV1beta1>(&converted, &metadata).await.unwrap();
        assert_eq!(String::from_utf8(written.clone()).unwrap(), String::from_utf8(expected).unwrap());
        let list: serde_json::Value = serde_json::from_slice(&written).unwrap();
        assert_eq!(list["apiVersion"], "test.example.com/v1beta1");
        assert_eq!(list["items"][0]["spec"]["colour"], "white \"snow\"");
    }

    /// A compact list in `representation`, streamed or whole as [`compact_list`] writes it.
    async fn compact(items: &[Arc<Stored<Widget>>], metadata: &ListMeta, representation: Representation) -> Vec<u8> {
        let query = Query::parse(None);
        let listed = compact_list::<Widget, Widget>(items.to_vec(), metadata.clone(), representation, &query, false);
        axum::body::to_bytes(listed.unwrap().body, usize::MAX).await.unwrap().to_vec()
    }

    #[tokio::test]
    async fn tables_and_metadata_lists_written_row_by_row_are_those_encoded_whole() {
        let metadata = ListMeta { resource_version: Some("42".into()), ..Default::default() };
        let version = MetaVersion::V1;
        // Small enough to be written whole, and large enough to be streamed in chunks.
        for count in [0, 1, 3, 2_000] {
            let items: Vec<_> = (0..count).map(|i| object(&format!("l{i:04}"), f64::from(i))).collect();
            let table = compact(&items, &metadata, Representation::Table(version)).await;
            let now = k8s_openapi::jiff::Timestamp::now();
            let whole = table::render(items.iter().map(|o| &**o), metadata.clone(), Default::default(), version, now);
            assert_eq!(
                serde_json::from_slice::<serde_json::Value>(&table).unwrap(),
                json::to_value(&whole.unwrap()).unwrap(),
                "{count} rows"
            );
            let partial = compact(&items, &metadata, Representation::Metadata(version)).await;
            let whole = ObjectList {
                types: TypeMeta { api_version: "meta.k8s.io/v1".into(), kind: "PartialObjectMetadataList".into() },
                metadata: metadata.clone(),
                items: items.iter().map(|o| partial_metadata_in(&o.metadata().unwrap(), version)).collect(),
            };
            assert_eq!(String::from_utf8(partial).unwrap(), serde_json::to_string(&whole).unwrap(), "{count} items");
        }
    }
}
