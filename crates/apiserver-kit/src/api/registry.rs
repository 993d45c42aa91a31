//! The generic REST semantics of a resource, independent of HTTP: what create, update, patch,
//! delete and deletecollection do to objects, following the kube-apiserver's generic registry
//! (`k8s.io/apiserver/pkg/registry/generic/registry/store.go`) and the rules it applies to
//! custom resources:
//!
//! - create fills `uid`, `creationTimestamp`, `generation`, honours `generateName` and drops
//!   client-set read-only fields;
//! - update requires `metadata.resourceVersion` and answers 409 when it is stale; `generation`
//!   moves when the spec changes; an update that changes nothing writes nothing;
//! - delete follows the propagation policy ([`super::deletion`]): an object left with finalizers
//!   is only marked (`deletionTimestamp`); it goes when an update removes its last finalizer;
//! - create checks the namespace's lifecycle first when the registry knows the cluster's
//!   namespaces ([`crate::machinery::lifecycle`]);
//! - every write records who set which field in `metadata.managedFields`
//!   ([`crate::structured_merge::managed`]); server-side apply is [`Registry::apply`] (in `apply.rs`);
//! - `dryRun=All` runs every check and stores nothing.

use super::patch::Patch;
use super::query::{FieldValidation, ListOptions, ResourceVersionMatch};
use crate::machinery::admission::{Admission, Operation};
use crate::machinery::error::{Error, FieldError, Result};
use crate::machinery::lifecycle::{Namespaces, admit_create};
use crate::machinery::paging::Continue;
use crate::machinery::resource::{ApiResource, BodySchema, body_schema};
use crate::machinery::strategy::{Strategy, Subresource};
use crate::machinery::user::UserInfo;
use crate::machinery::validation;
use crate::machinery::version::{Conversion, Served};
use crate::store::{
    Committed, Current, Mutation, ObjectKey, PageRequest, ReadAt, Store, Stored, Subscription, WatchFrom,
};
use crate::structured_merge::managed::{self, Managed};
use crate::structured_merge::unmanaged_value;
use crate::validation_rules::{self, Rules};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, ManagedFieldsEntry, ObjectMeta, Time};
use serde_json::json;
use std::sync::Arc;

/// The registry of one resource: its semantics over a [`Store`].
pub struct Registry<K> {
    store: Arc<dyn Store<K>>,
    settings: WatchSettings,
    /// For stores filled from elsewhere (views of the cluster's objects): becomes true once they hold data.
    ready: Option<tokio::sync::watch::Receiver<bool>>,
    /// Why reads get a 503 at once, when the server lacks what feeds the store.
    not_configured: Option<String>,
    /// The cluster's namespaces, for the lifecycle check of creates (aggregated mode).
    namespaces: Option<Arc<dyn Namespaces>>,
    /// Whether writes record managedFields and server-side apply is served (the default).
    managed_fields: bool,
    /// The cluster's admission webhooks (aggregated mode), called by writes they match.
    admission: Option<Arc<dyn Admission>>,
    /// Every version the resource is served at, the stored one first: a webhook registered for
    /// another version than a write's is called with the objects at its own.
    versions: Vec<Conversion>,
}

/// Tunables of lists and watches.
#[derive(Clone, Debug)]
pub struct WatchSettings {
    /// Events a watcher may have waiting before it is dropped as too slow.
    pub buffer: usize,
    /// How often watches that allow bookmarks get one.
    pub bookmark_interval: std::time::Duration,
    /// Watches without `timeoutSeconds` last this long plus up to 100% jitter.
    pub min_request_timeout: std::time::Duration,
    /// How long a request for a resourceVersion newer than the store waits before 504.
    pub future_revision_wait: std::time::Duration,
    /// How long a read waits for a store that is not ready before 503.
    pub not_ready_wait: std::time::Duration,
    /// Cancelled when the server shuts down: watches send what they hold and end cleanly.
    pub stopping: tokio_util::sync::CancellationToken,
    /// Where watches count their events, drops and themselves.
    pub metrics: Arc<crate::metrics::Metrics>,
}

impl Default for WatchSettings {
    fn default() -> Self {
        Self {
            buffer: 1000,
            bookmark_interval: std::time::Duration::from_secs(60),
            min_request_timeout: std::time::Duration::from_secs(1800),
            future_revision_wait: std::time::Duration::from_secs(3),
            not_ready_wait: std::time::Duration::from_secs(1),
            stopping: tokio_util::sync::CancellationToken::new(),
            metrics: Arc::default(),
        }
    }
}

/// One page of a list.
#[derive(Debug)]
pub struct ListPage<K> {
    /// The objects of this page, sorted by namespace and name.
    pub items: Vec<Arc<Stored<K>>>,
    /// The revision the page was read at.
    pub revision: u64,
    /// The token for the next page, when there is one.
    pub continue_token: Option<String>,
    /// How many objects follow, when known (no selectors).
    pub remaining: Option<usize>,
}

/// Options of a create, update or patch.
#[derive(Clone, Debug, Default)]
pub struct WriteContext {
    /// Store nothing.
    pub dry_run: bool,
    /// How unknown fields in the (patched) body are treated.
    pub field_validation: FieldValidation,
    /// Who writes, for `metadata.managedFields` (`fieldManager`, or from the User-Agent).
    pub manager: String,
    /// The `fieldManager` the client named, if any (for admission's options).
    pub field_manager: Option<String>,
    /// Who asks, for admission webhooks.
    pub user: Arc<UserInfo>,
    /// The version the write was asked at, where its managers are computed.
    pub at: At,
    /// What strict decoding found in the request's body before it reached the registry (fields
    /// it repeats, `duplicate field "spec.weight"`; unknown fields inside the fields the write
    /// resets), warned of or refused by `field_validation` as other unknown fields are.
    pub strict_decoding: Vec<String>,
}

/// The version a write is asked at: its managers are computed on the objects converted to it,
/// with its schema, and record it as their `apiVersion` (as structured-merge-diff's field manager
/// works at the request's version). The default is the stored version itself.
#[derive(Clone, Debug, Default)]
pub struct At {
    version: Option<VersionAt>,
}

#[derive(Clone, Debug)]
struct VersionAt {
    api_version: String,
    schema: Arc<BodySchema>,
    from_hub: fn(serde_json::Value) -> Result<serde_json::Value>,
    /// The version's validation rules.
    rules: Arc<Rules>,
}

impl At {
    /// Version `V` of the resource stored as `K`.
    pub fn of<K: Strategy, V: Served<K>>() -> Self {
        if std::any::TypeId::of::<K>() == std::any::TypeId::of::<V>() {
            return At::default();
        }
        let api_version = <V as kube::Resource>::api_version(&()).into_owned();
        let (schema, from_hub, rules) = (body_schema::<V>(), V::value_from_hub, validation_rules::of::<V>());
        At { version: Some(VersionAt { api_version, schema, from_hub, rules }) }
    }

    /// The validation rules of objects at this version.
    fn rules<K: Strategy>(&self) -> Arc<Rules> {
        match &self.version {
            Some(v) => v.rules.clone(),
            None => validation_rules::of::<K>(),
        }
    }

    /// The version of writes at this version (`v1alpha`).
    fn version<K: Strategy>(&self) -> String {
        let api_version = self.api_version::<K>();
        api_version.rsplit_once('/').map_or(api_version.clone(), |(_, v)| v.to_string())
    }

    /// The `apiVersion` of writes at this version.
    fn api_version<K: Strategy>(&self) -> String {
        match &self.version {
            Some(v) => v.api_version.clone(),
            None => <K as kube::Resource>::api_version(&()).into_owned(),
        }
    }

    /// The schema of objects at this version.
    fn schema<K: Strategy>(&self) -> Arc<BodySchema> {
        match &self.version {
            Some(v) => v.schema.clone(),
            None => body_schema::<K>(),
        }
    }

    /// Whether an update from `old` to `new` changes the spec, which moves `generation`: at the
    /// stored version, as its strategy says; at another, as a custom resource's strategy decides
    /// it, on the objects at the request's version: anything but `metadata` and `status`.
    fn spec_changed<K: Strategy>(&self, new: &K, old: &K) -> Result<bool> {
        let Some(version) = &self.version else { return Ok(new.spec_changed(old)) };
        let content = |object: &K| -> Result<serde_json::Value> {
            let mut value = (version.from_hub)(to_value(object)?)?;
            if let Some(map) = value.as_object_mut() {
                map.remove("metadata");
                map.remove("status");
            }
            Ok(value)
        };
        Ok(content(new)? != content(old)?)
    }

    /// A stored object's JSON at this version.
    fn value(&self, hub: serde_json::Value) -> Result<serde_json::Value> {
        match &self.version {
            Some(v) => (v.from_hub)(hub),
            None => Ok(hub),
        }
    }
}

/// The outcome of a write: the object and the warnings to send back.
#[derive(Debug)]
pub struct Written<K> {
    /// The object as stored (or as it would be, for a dry run).
    pub object: Arc<Stored<K>>,
    /// `Warning` header texts.
    pub warnings: Vec<String>,
}

const GENERATE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
const GENERATE_SUFFIX_LEN: usize = 5;
const GENERATE_ATTEMPTS: usize = 8;

fn now() -> Time {
    // Kubernetes timestamps have second precision on the wire.
    let seconds = k8s_openapi::jiff::Timestamp::now().as_second();
    Time(k8s_openapi::jiff::Timestamp::from_second(seconds).unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH))
}

fn generated_name(prefix: &str) -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    let suffix: String = (0..GENERATE_SUFFIX_LEN)
        .map(|_| GENERATE_ALPHABET[rng.random_range(0..GENERATE_ALPHABET.len())] as char)
        .collect();
    format!("{prefix}{suffix}")
}

fn invalid<K: ApiResource>(name: &str, causes: Vec<FieldError>) -> Error {
    Error::Invalid { kind: K::info().kind, group: K::info().group, name: name.to_string(), causes }
}

fn conflict<K: ApiResource>(name: &str, detail: impl Into<String>) -> Error {
    Error::Conflict { resource: K::info().group_resource(), name: name.to_string(), detail: detail.into() }
}

/// The 400 of a body that names no object, where the URL names `name` (`checkName`).
fn name_undeterminable(name: &str) -> Error {
    Error::BadRequest(format!("the name of the object ({name} based on URL) was undeterminable: name must be provided"))
}

/// The 400 of a body that names `other`, where the URL names `name` (`checkName`).
fn other_name(other: &str, name: &str) -> Error {
    Error::BadRequest(format!("the name of the object ({other}) does not match the name on the URL ({name})"))
}

const NAMESPACE_MISMATCH: &str =
    "the namespace of the provided object does not match the namespace sent on the request";

/// Refuses an object whose namespace differs from the request's; sets it when it has none. The
/// request of a cluster-scoped resource has none (`""`): the object's is cleared, as the
/// kube-apiserver's `EnsureObjectNamespaceMatchesRequestNamespace` does.
pub fn check_namespace<K: ApiResource>(object: &mut K, namespace: &str) -> Result<()> {
    let meta = object.meta_mut();
    match meta.namespace.as_deref() {
        _ if namespace.is_empty() => {
            meta.namespace = None;
            Ok(())
        }
        Some(ns) if !ns.is_empty() && ns != namespace => Err(Error::BadRequest(NAMESPACE_MISMATCH.into())),
        _ => {
            meta.namespace = Some(namespace.to_string());
            Ok(())
        }
    }
}

/// Refuses a body that names no object or another than the URL's `name`, as the
/// kube-apiserver's `checkName` (400).
fn check_body_name(body: &serde_json::Value, name: &str) -> Result<()> {
    match body.get("metadata").and_then(|m| m.get("name")).and_then(serde_json::Value::as_str) {
        None | Some("") => Err(name_undeterminable(name)),
        Some(other) if other != name => Err(other_name(other, name)),
        Some(_) => Ok(()),
    }
}

/// [`check_namespace`] on a body not yet decoded, as the kube-apiserver checks it before it
/// validates the object (any namespace passes for a cluster-scoped resource: it is cleared).
pub fn check_body_namespace(body: &serde_json::Value, namespace: &str) -> Result<()> {
    match conflicting_namespace(body, namespace) {
        Some(_) => Err(Error::BadRequest(NAMESPACE_MISMATCH.into())),
        None => Ok(()),
    }
}

/// The namespace a body not yet decoded names when it is another than the request's: never for
/// a cluster-scoped request (`""`, whose objects' namespace is cleared) nor for a body naming none.
fn conflicting_namespace<'a>(body: &'a serde_json::Value, namespace: &str) -> Option<&'a str> {
    let named = body.get("metadata").and_then(|m| m.get("namespace")).and_then(serde_json::Value::as_str)?;
    (!namespace.is_empty() && !named.is_empty() && named != namespace).then_some(named)
}

/// Adds the metadata errors of `object` to `errors` and answers one 422 with all of them, or
/// nothing when there are none.
/// Refuses `object` (`old` before an update) with 422 when `errors` (the strategy's), its
/// metadata's or its validation rules' ([`validate_rules`]) say it is invalid; else the
/// warnings of the rules' failures ratcheting let pass, which a refusal carries too.
fn reject_invalid<K: Strategy>(
    object: &K,
    old: Option<&K>,
    at: &At,
    mut errors: Vec<FieldError>,
) -> Result<Vec<String>> {
    errors.extend(validation::object_meta(object.meta(), K::info().namespaced));
    let ratcheted = validate_rules(object, old, at, &mut errors)?;
    if errors.is_empty() {
        return Ok(ratcheted);
    }
    super::warning_recorder::record(&ratcheted);
    Err(invalid::<K>(object.meta().name.as_deref().unwrap_or_default(), errors))
}

/// Adds to `errors` those of the validation rules of the write's version, on `object` and `old`
/// converted to it, as a custom resource's strategy runs them after the validation before
/// (unless an error there blocks them: [`validation_rules::not_checked`]); returns the
/// warnings of the failures ratcheting lets pass.
fn validate_rules<K: Strategy>(
    object: &K,
    old: Option<&K>,
    at: &At,
    errors: &mut Vec<FieldError>,
) -> Result<Vec<String>> {
    let rules = at.rules::<K>();
    if rules.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(not_checked) = validation_rules::not_checked(errors) {
        errors.push(not_checked);
        return Ok(Vec::new());
    }
    let new = at.value(object_value(object)?)?;
    let old = old.map(|old| at.value(object_value(old)?)).transpose()?;
    let outcome = rules.validate(&new, old.as_ref());
    errors.extend(outcome.errors);
    Ok(outcome.warnings)
}

impl<K: Strategy> Registry<K> {
    /// A registry over `store`.
    pub fn new(store: Arc<dyn Store<K>>, settings: WatchSettings) -> Self {
        let versions = vec![Conversion::of::<K, K>()];
        Self {
            store,
            settings,
            ready: None,
            not_configured: None,
            namespaces: None,
            managed_fields: true,
            admission: None,
            versions,
        }
    }

    /// Tells the registry that its objects are served at version `V` too.
    pub fn served_at<V: Served<K>>(mut self) -> Self {
        self.versions.push(Conversion::of::<K, V>());
        self
    }

    /// Records no managedFields (client-set ones are dropped) and refuses server-side apply with
    /// 415, as the kube-apiserver did with its `ServerSideApply` feature gate off (before 1.22).
    pub fn without_managed_fields(mut self) -> Self {
        self.managed_fields = false;
        self
    }

    /// Whether this registry serves server-side apply.
    pub fn serves_apply(&self) -> bool {
        self.managed_fields
    }

    /// How a write by `manager` gets its managedFields.
    fn tracking<'a>(&'a self, ctx: &'a WriteContext) -> Tracking<'a> {
        if self.managed_fields { Tracking::Update(&ctx.manager, None, &ctx.at, &self.versions) } else { Tracking::Off }
    }

    /// Gates reads on `ready`: until it turns true, reads wait briefly, then get 503.
    pub fn with_readiness(mut self, ready: tokio::sync::watch::Receiver<bool>) -> Self {
        self.ready = Some(ready);
        self
    }

    /// Checks creates against the cluster's namespaces: nothing is created in a namespace that
    /// is missing or being deleted.
    pub fn with_namespaces(mut self, namespaces: Arc<dyn Namespaces>) -> Self {
        self.namespaces = Some(namespaces);
        self
    }

    /// Calls the cluster's admission webhooks on the writes they match.
    pub fn with_admission(mut self, admission: Arc<dyn Admission>) -> Self {
        self.admission = Some(admission);
        self
    }

    /// The namespace lifecycle check of a create of `name` (or its `generateName` prefix) in
    /// `namespace`, as admission runs it: after decoding, before validation. Nothing to check
    /// without a cluster.
    pub async fn admit_create(&self, namespace: &str, name: &str) -> Result<()> {
        match &self.namespaces {
            Some(namespaces) if K::info().namespaced => {
                admit_create(namespaces.as_ref(), namespace, K::info().group_resource(), name).await
            }
            _ => Ok(()),
        }
    }

    /// Answers every read with a 503 saying `why` (without Retry-After: the server lacks what
    /// feeds the store, e.g. a view of a cluster's objects started without a cluster).
    pub fn not_configured(mut self, why: impl Into<String>) -> Self {
        self.not_configured = Some(why.into());
        self
    }

    /// Waits (briefly) for the store to be ready; 503 with Retry-After when it is not, and
    /// without when it cannot be ([`Registry::not_configured`]).
    pub async fn ensure_ready(&self) -> Result<()> {
        if let Some(why) = &self.not_configured {
            return Err(Error::NotConfigured(why.clone()));
        }
        let Some(ready) = &self.ready else { return Ok(()) };
        let mut ready = ready.clone();
        match tokio::time::timeout(self.settings.not_ready_wait, ready.wait_for(|r| *r)).await {
            Ok(Ok(_)) => Ok(()),
            _ => Err(Error::Unavailable {
                message: format!(
                    "{} are not available yet: the server's cache has not synced with the cluster",
                    K::info().plural
                ),
                // client-go retries a 503 up to ten times, honouring Retry-After: keep it short.
                retry_after: 1,
            }),
        }
    }

    /// The store behind this registry.
    pub fn store(&self) -> Arc<dyn Store<K>> {
        self.store.clone()
    }

    /// The list and watch tunables.
    pub fn watch_settings(&self) -> &WatchSettings {
        &self.settings
    }

    /// The store's latest revision; every event up to it has been published.
    pub async fn revision(&self) -> Result<u64> {
        self.store.revision().await
    }

    /// Whether `object` passes the label and field selectors of `options`.
    pub fn selects(options: &ListOptions, object: &Stored<K>) -> bool {
        options.label_selector.matches_by(|key| object.label(key))
            && options.field_selector.matches(|path| object.field(path))
    }

    /// Waits until the store has reached `revision`; 504 when it does not in time.
    pub async fn wait_for_revision(&self, revision: u64) -> Result<()> {
        let deadline = tokio::time::Instant::now() + self.settings.future_revision_wait;
        loop {
            let current = self.store.revision().await?;
            if current >= revision {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::TooLargeResourceVersion { requested: revision, current });
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// One page of the objects of `namespace` (or all) selected by `options`, honouring
    /// `resourceVersion`, `resourceVersionMatch`, `limit` and `continue` as the kube-apiserver does.
    pub async fn list_page(&self, namespace: Option<&str>, options: &ListOptions) -> Result<ListPage<K>> {
        let (at, after) = match &options.continue_token {
            Some(raw) => {
                let token = Continue::decode(raw, namespace)?;
                (token.revision.map(ReadAt::Exact).unwrap_or(ReadAt::Latest), Some(token.after))
            }
            None => match (options.resource_version, options.resource_version_match) {
                (None, _) => (ReadAt::Latest, None),
                (Some(0), _) => (ReadAt::Any, None),
                (Some(rv), Some(ResourceVersionMatch::Exact)) => (ReadAt::Exact(rv), None),
                // Without a match, a paged list at a resourceVersion is exact (legacy semantics).
                (Some(rv), None) if options.limit.is_some() => (ReadAt::Exact(rv), None),
                (Some(rv), _) => {
                    self.wait_for_revision(rv).await?;
                    (ReadAt::Any, None)
                }
            },
        };
        if let ReadAt::Exact(rv) = at {
            self.wait_for_revision(rv).await?;
        }
        let selects = |o: &Stored<K>| Self::selects(options, o);
        let request = PageRequest {
            namespace,
            at,
            after: after.as_ref(),
            limit: options.limit,
            selects: &selects,
            count_remaining: !options.has_selectors(),
        };
        let page = match (self.store.list_page(request).await, &after) {
            (Err(Error::Expired(_)), Some(after)) => {
                return Err(Error::ExpiredContinue { token: Continue::encode(None, after) });
            }
            (other, _) => other?,
        };
        Ok(ListPage {
            items: page.items,
            revision: page.revision,
            continue_token: page.more_after.as_ref().map(|k| Continue::encode(Some(page.revision), k)),
            remaining: (page.more_after.is_some() && !options.has_selectors()).then_some(page.remaining),
        })
    }

    /// Subscribes to events of `namespace` (or all) from `from`.
    pub async fn subscribe(&self, namespace: Option<&str>, from: WatchFrom) -> Result<Subscription<K>> {
        self.store.subscribe(namespace, from, self.settings.buffer).await
    }

    fn not_found(name: &str) -> Error {
        Error::NotFound { resource: K::info().group_resource(), name: name.to_string() }
    }

    /// One object; 404 when absent.
    pub async fn get(&self, namespace: &str, name: &str) -> Result<Arc<Stored<K>>> {
        self.store.get(&ObjectKey::new(namespace, name)).await?.ok_or_else(|| Self::not_found(name))
    }

    /// One object as a GET with `resourceVersion` reads it: the latest state when unset, any
    /// state for "0", a state at least as new as the given one otherwise; 404 when absent.
    pub async fn get_at(&self, namespace: &str, name: &str, resource_version: Option<u64>) -> Result<Arc<Stored<K>>> {
        let key = ObjectKey::new(namespace, name);
        let found = match resource_version {
            None => self.store.get(&key).await?,
            Some(rv) => {
                if rv > 0 {
                    self.wait_for_revision(rv).await?;
                }
                self.store.get_any(&key).await?
            }
        };
        found.ok_or_else(|| Self::not_found(name))
    }

    /// Creates `object` in `namespace` (the request path's).
    pub async fn create(&self, namespace: &str, object: K, ctx: &WriteContext) -> Result<Written<K>> {
        self.create_tracked(namespace, object, ctx, self.tracking(ctx)).await
    }

    async fn create_tracked(
        &self,
        namespace: &str,
        mut object: K,
        ctx: &WriteContext,
        tracking: Tracking<'_>,
    ) -> Result<Written<K>> {
        check_namespace(&mut object, namespace)?;
        // The system's fields are wiped before managed fields are computed
        // (`WipeObjectMetaSystemFields` in the create handler): a deletionTimestamp sent is no
        // field of the writer's.
        let meta = object.meta_mut();
        (meta.creation_timestamp, meta.uid, meta.deletion_timestamp) = (None, None, None);
        (meta.deletion_grace_period_seconds, meta.self_link) = (None, None);
        object.meta_mut().managed_fields = tracking.managed_fields(None, &object, Subresource::Main)?;
        let requested = object.meta().name.as_deref().unwrap_or_default();
        let admission = self.admission_of(Operation::Create, Subresource::Main, namespace, requested, ctx);
        let mut warnings = match &admission {
            Some(admission) => self.admit_create_mutation(admission, &mut object, namespace).await?,
            None => Vec::new(),
        };
        let meta = object.meta_mut();
        // A numeric resourceVersion is refused after validation, where the kube-apiserver's
        // storage refuses it (with a 500); one that is no number it cannot read and ignores. A
        // dry run never reaches that storage: its answer is the object as it came, with the
        // resourceVersion sent (the kube-apiserver's DryRunnableStorage answers a copy of it).
        let resource_version_set =
            meta.resource_version.as_deref().is_some_and(|rv| rv.parse::<u64>().is_ok_and(|rv| rv != 0));
        meta.uid = Some(uuid::Uuid::new_v4().to_string());
        meta.creation_timestamp = Some(now());
        meta.generation = Some(1);
        // (An empty one is none, as Go writes it.)
        if !ctx.dry_run || meta.resource_version.as_deref() == Some("") {
            meta.resource_version = None;
        }
        meta.deletion_timestamp = None;
        meta.deletion_grace_period_seconds = None;
        meta.self_link = None;
        let generate = match (meta.name.as_deref(), meta.generate_name.as_deref()) {
            (None | Some(""), Some(prefix)) if !prefix.is_empty() => Some(prefix.to_string()),
            _ => None,
        };
        let mut object = with_reset_fields_of(object, None, Subresource::Main)?;
        object.prepare_for_create();
        warnings.extend(object.warnings());
        warnings.extend(validation::finalizer_warnings(object.meta(), None));
        let attempts = if generate.is_some() { GENERATE_ATTEMPTS } else { 1 };
        let mut recorded = 0;
        for attempt in 1..=attempts {
            if let Some(prefix) = &generate {
                object.meta_mut().name = Some(generated_name(prefix));
            }
            reject_invalid(&object, None, &ctx.at, object.validate())?;
            // The strategy's warnings (given once the object is valid) are the request's before
            // validating admission (a policy's denial) and storage answer (a name already taken).
            super::warning_recorder::record(&warnings[recorded..]);
            recorded = warnings.len();
            if let Some(admission) = &admission {
                warnings.extend(admission.validate(Some(&object), None).await?);
                super::warning_recorder::record(&warnings[recorded..]);
                recorded = warnings.len();
            }
            if resource_version_set && !ctx.dry_run {
                return Err(Error::BadRequest("resourceVersion should not be set on objects to be created".into()));
            }
            let key = ObjectKey::new(namespace, object.meta().name.as_deref().unwrap_or_default());
            if attempt >= attempts {
                let created = self.store.create(key, object, ctx.dry_run).await?;
                return Ok(Written { object: created, warnings });
            }
            // A generated name taken meanwhile is tried again with another.
            match self.store.create(key, object.clone(), ctx.dry_run).await {
                Err(Error::AlreadyExists { .. }) => continue,
                other => return other.map(|object| Written { object, warnings }),
            }
        }
        Err(Error::Internal("could not generate a unique name".into()))
    }

    /// Replaces the object `name` with `body` (PUT), or only what `subresource` may change. The
    /// checks run in the kube-apiserver's order: the body's name and namespace (400), then, on
    /// the stored object, existence (404), the resourceVersion (422 when missing, 409 when
    /// stale) and uid preconditions (409), and only then the body's validation (422).
    pub async fn update<V: Served<K>>(
        &self,
        namespace: &str,
        name: &str,
        body: &serde_json::Value,
        subresource: Subresource,
        ctx: &WriteContext,
    ) -> Result<Written<K>> {
        let metadata = |field: &str| body.get("metadata")?.get(field)?.as_str().filter(|v| !v.is_empty());
        check_body_name(body, name)?;
        check_body_namespace(body, namespace)?;
        let key = ObjectKey::new(namespace, name);
        let mut warnings = Vec::new();
        let (committed, admitted) = self
            .commit_update(&key, subresource, ctx, &mut |current| {
                check_resource_version::<K>(metadata("resourceVersion"), current.meta(), true)?;
                check_uid_precondition::<K>(metadata("uid"), current.meta())?;
                let stored = stored_reset_fields::<K, V>(current, subresource)?;
                let body = super::decode::with_fields(body, stored);
                let validation = (ctx.field_validation, ctx.strict_decoding.as_slice());
                let old = || V::value_from_hub(object_value(current.object())?);
                let decoded =
                    super::decode::decode_body_over::<V>(&body, namespace, validation, subresource, Some(&old))?;
                let mut object = V::object_to_hub(decoded.object)?;
                warnings = decoded.warnings;
                let decoded = warnings.len();
                warnings.extend(object.warnings());
                warnings.extend(added_finalizer_warnings(&object, current, subresource));
                // A cluster-scoped object has no namespace (not an empty one).
                object.meta_mut().namespace = (!namespace.is_empty()).then(|| namespace.to_string());
                object.meta_mut().name = Some(name.to_string());
                let (prepared, ratcheted) =
                    prepare_update(current, object, (true, &ctx.at), subresource, self.tracking(ctx))?;
                // The rules' warnings come before the strategy's, as the kube-apiserver's
                // validation records them before it asks the strategy for its warnings.
                warnings.splice(decoded..decoded, ratcheted);
                // The strategy's warnings, given once the object is valid, go out with a later
                // refusal (of admission, of storage) too; the answer drops repeated ones.
                super::warning_recorder::record(&warnings);
                Ok(prepared)
            })
            .await?;
        warnings.extend(admitted);
        Ok(Written { object: committed.written()?, warnings })
    }

    /// Applies `patch` to the current object and stores the result, re-validated; of the result,
    /// only what `subresource` may change is kept.
    pub async fn patch<V: Served<K>>(
        &self,
        namespace: &str,
        name: &str,
        patch: &Patch,
        subresource: Subresource,
        ctx: &WriteContext,
    ) -> Result<Written<K>> {
        let key = ObjectKey::new(namespace, name);
        let mut warnings = Vec::new();
        let (committed, admitted) = self
            .commit_update(&key, subresource, ctx, &mut |current| {
                // Without managedFields when the patch cannot touch them: their absence from the
                // result means "unchanged" to the field manager, and they are costly to copy.
                let keeps_managed_fields = patch.may_change_managed_fields();
                // The patch applies to the object at the request's version.
                let current_value =
                    if keeps_managed_fields { to_value(current.object())? } else { object_value(current.object())? };
                let document = V::value_from_hub(current_value)?;
                let mut patched = patch.apply(&document)?;
                // The unknown fields of what the write resets are warned of too: the
                // kube-apiserver decodes the whole patched object before its strategy resets them.
                let reset_unknown = super::decode::prepare_body::<V>(&mut patched, subresource);
                super::decode::set_fields(&mut patched, stored_reset_fields::<K, V>(current, subresource)?);
                let validation = (ctx.field_validation, reset_unknown.as_slice());
                // In the kube-apiserver's order: a result of another kind (422), name or namespace (400), then
                // the storage's precondition, then the validation.
                super::decode::check_patched_type::<V>(&patched)?;
                let checked = check_body_name(&patched, name)
                    .and_then(|()| check_patched_namespace(&patched, namespace))
                    .and_then(|()| check_resource_version::<K>(resource_version_in(&patched), current.meta(), true));
                if let Err(refused) = checked {
                    // (Decoded before its name, namespace and precondition are checked: its
                    // warnings go out with their refusal.)
                    if ctx.field_validation == FieldValidation::Warn {
                        drop(super::decode::decode_patched::<V>(&patched, namespace, validation, subresource, None));
                    }
                    return Err(refused);
                }
                let old = || Ok(document.clone());
                let decoded =
                    super::decode::decode_patched::<V>(&patched, namespace, validation, subresource, Some(&old))?;
                warnings = decoded.warnings;
                let mut object = V::object_to_hub(decoded.object)?;
                let decoded = warnings.len();
                warnings.extend(object.warnings());
                warnings.extend(added_finalizer_warnings(&object, current, subresource));
                same_name_and_namespace(&mut object, namespace, name)?;
                let tracking = match self.tracking(ctx) {
                    Tracking::Update(manager, None, at, versions) if !keeps_managed_fields => {
                        Tracking::Update(manager, Some(document), at, versions)
                    }
                    other => other,
                };
                let (prepared, ratcheted) = prepare_update(current, object, (true, &ctx.at), subresource, tracking)?;
                warnings.splice(decoded..decoded, ratcheted);
                // The strategy's warnings, given once the object is valid, go out with a later
                // refusal (of admission, of storage) too; the answer drops repeated ones.
                super::warning_recorder::record(&warnings);
                Ok(prepared)
            })
            .await?;
        warnings.extend(admitted);
        Ok(Written { object: committed.written()?, warnings })
    }

    /// Deletes `name`, or marks it for deletion when it has finalizers.
    pub async fn delete(
        &self,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
        ctx: &WriteContext,
    ) -> Result<Committed<K>> {
        super::deletion::validate_options(options)?;
        self.delete_validated(&ObjectKey::new(namespace, name), options, ctx).await
    }

    async fn delete_validated(
        &self,
        key: &ObjectKey,
        options: &DeleteOptions,
        ctx: &WriteContext,
    ) -> Result<Committed<K>> {
        let mut decide = |current: &Current<K>| super::deletion::prepare(current.object(), options, now());
        self.commit_delete(key, delete_options_value(options)?, ctx, &mut decide).await
    }

    /// Deletes every object of `namespace` (or all namespaces) that `keep` selects, returning
    /// them as they were listed before the deletion, as the kube-apiserver's `DeleteCollection`
    /// answers. Objects that disappear meanwhile are skipped.
    pub async fn delete_collection(
        &self,
        namespace: Option<&str>,
        options: &DeleteOptions,
        ctx: &WriteContext,
        keep: &(dyn Fn(&Stored<K>) -> bool + Sync),
    ) -> Result<Vec<Arc<Stored<K>>>> {
        super::deletion::validate_options(options)?;
        let listing = self.store.list(namespace).await?;
        let mut out = Vec::new();
        for object in listing.items.iter().filter(|o| keep(o)) {
            match self.delete_validated(&object.key(), options, ctx).await {
                Ok(_) => out.push(object.clone()),
                Err(Error::NotFound { .. }) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(out)
    }
}

/// Checks that a patched object still names the object of the URL, as the kube-apiserver's
/// patcher does (a 400 naming the mismatch); an emptied namespace is the URL's again (a
/// cluster-scoped object's is cleared).
fn same_name_and_namespace<K: Strategy>(object: &mut K, namespace: &str, name: &str) -> Result<()> {
    match object.meta().name.as_deref() {
        None | Some("") => {
            return Err(name_undeterminable(name));
        }
        Some(other) if other != name => {
            return Err(other_name(other, name));
        }
        Some(_) => {}
    }
    match object.meta().namespace.as_deref() {
        _ if namespace.is_empty() => object.meta_mut().namespace = None,
        None | Some("") => object.meta_mut().namespace = (!namespace.is_empty()).then(|| namespace.to_string()),
        Some(other) if other != namespace => return Err(other_namespace(other, namespace)),
        Some(_) => {}
    }
    Ok(())
}

/// The patcher's 400 for a patched object that names another namespace than the request's.
fn other_namespace(other: &str, namespace: &str) -> Error {
    Error::BadRequest(format!(
        "the namespace of the object ({other}) does not match the namespace on the request ({namespace})"
    ))
}

/// Refuses a patched object, not yet decoded, that names another namespace than the request's,
/// as the kube-apiserver's patcher does right after the patch, before it validates.
fn check_patched_namespace(body: &serde_json::Value, namespace: &str) -> Result<()> {
    match conflicting_namespace(body, namespace) {
        Some(other) => Err(other_namespace(other, namespace)),
        None => Ok(()),
    }
}

/// `options` as an admission review carries them.
fn delete_options_value(options: &DeleteOptions) -> Result<serde_json::Value> {
    let mut value =
        serde_json::to_value(options).map_err(|e| Error::Internal(format!("encoding DeleteOptions: {e}")))?;
    if let Some(map) = value.as_object_mut() {
        map.insert("kind".into(), "DeleteOptions".into());
        map.insert("apiVersion".into(), "meta.k8s.io/v1".into());
    }
    Ok(value)
}

/// Where a write's managedFields come from.
enum Tracking<'a> {
    /// Computed for an update by this manager ([`track_managers`]) at the write's version, from
    /// the live object's JSON (at that version) without its managedFields when the caller
    /// already has it.
    Update(&'a str, Option<serde_json::Value>, &'a At, &'a Vec<Conversion>),
    /// Already computed (by an apply).
    Given(Option<Vec<ManagedFieldsEntry>>),
    /// Not recorded: the registry tracks no managers.
    Off,
}

impl Tracking<'_> {
    fn managed_fields<K: Strategy>(
        self,
        live: Option<&K>,
        new: &K,
        subresource: Subresource,
    ) -> Result<Option<Vec<ManagedFieldsEntry>>> {
        match self {
            Self::Update(manager, live_value, at, versions) => {
                track_managers(live, live_value, new, subresource, (manager, at, versions))
            }
            Self::Given(fields) => Ok(fields),
            Self::Off => Ok(None),
        }
    }
}

/// The managedFields of `new`, written over `live` (`None` for a create) through `subresource` by
/// `manager` ([`crate::structured_merge::managed`]), computed where the kube-apiserver's field manager
/// runs: on the object as the client sent it, before the strategy prepares it. The managers start
/// from the request's valid `managedFields` (an empty list resets them), else the stored ones; a
/// subresource always starts from the stored ones.
fn track_managers<K: Strategy>(
    live: Option<&K>,
    live_value: Option<serde_json::Value>,
    new: &K,
    subresource: Subresource,
    (manager, at, versions): (&str, &At, &Vec<Conversion>),
) -> Result<Option<Vec<ManagedFieldsEntry>>> {
    let stored = || live.and_then(|l| Managed::decode(l.meta().managed_fields.as_deref().unwrap_or_default()));
    let requested = new.meta().managed_fields.as_deref();
    let base = if subresource != Subresource::Main {
        stored()
    } else if managed::is_reset(requested) {
        Some(Managed::default())
    } else {
        requested.and_then(Managed::decode).filter(|m| !m.is_empty()).or_else(stored)
    };
    let live_value = match live_value {
        Some(value) => Some(value),
        None => live.map(|live| at.value(object_value(live)?)).transpose()?,
    };
    let reset = managed_reset::<K>(subresource);
    let api_version = at.api_version::<K>();
    let write = write_of((manager, subresource), &reset, &api_version, versions);
    let schema = at.schema::<K>();
    let new = at.value(object_value(new)?)?;
    let managers = managed::update(
        live_value.as_ref(),
        &new,
        base.unwrap_or_default(),
        &write,
        &crate::structured_merge::shape::object_schema(&schema),
    );
    Ok(managers.encode())
}

/// `object` as JSON.
fn to_value<K: Strategy>(object: &K) -> Result<serde_json::Value> {
    crate::machinery::json::to_value(object).map_err(|e| Error::Internal(format!("encoding the object: {e}")))
}

/// `object` as JSON without its managedFields, for the field manager.
fn object_value<K: Strategy>(object: &K) -> Result<serde_json::Value> {
    unmanaged_value::to_value(object).map_err(|e| Error::Internal(format!("encoding the object: {e}")))
}

/// The field manager's view of a write by `manager` through `subresource` at `api_version`, now,
/// of a resource served at `versions`.
fn write_of<'a>(
    (manager, subresource): (&'a str, Subresource),
    reset: &'a managed::Set,
    api_version: &'a str,
    versions: &'a Vec<Conversion>,
) -> managed::Write<'a> {
    let subresource = subresource.name().unwrap_or_default();
    managed::Write { manager, subresource, api_version, reset, now: now(), versions }
}

/// The fields a write of `subresource` may not change ([`Strategy::reset_fields`]: the status,
/// for a write of the object; the spec, for one of `/status`), as `current` has them at `V`; a
/// field it does not have is left out. A write's body gets these in place of its own before it
/// is validated and decoded, which is how the status rules of the status subresource apply to
/// every write, as the kube-apiserver's custom resource strategies apply them.
pub(super) fn stored_reset_fields<K: Strategy, V: Served<K>>(
    current: &Current<K>,
    subresource: Subresource,
) -> Result<super::decode::Fields> {
    let fields = V::reset_fields(subresource);
    if fields.is_empty() {
        return Ok(Vec::new());
    }
    let mut stored = if std::any::TypeId::of::<K>() == std::any::TypeId::of::<V>() {
        // Only these fields are encoded.
        unmanaged_value::top_level(current.object(), fields)
            .map_err(|e| Error::Internal(format!("encoding the object: {e}")))?
    } else {
        V::value_from_hub(object_value(current.object())?)?
    };
    let mut taken = |field: &'static str| stored.get_mut(field).map(serde_json::Value::take).filter(|v| !v.is_null());
    Ok(fields.iter().map(|field| (*field, taken(field))).collect())
}

/// `new` with the fields a write of `subresource` may not change ([`Strategy::reset_fields`]) as
/// `stored` has them (none, for a create): the status rules of the status subresource, kept
/// on the object that is stored whatever path the write took (a body, a patch, an apply, a
/// conversion from another version, a webhook's mutation). Those paths put the stored fields in
/// place already; this only compares them (encoding those fields alone), and re-decodes `new`
/// when they differ.
pub(super) fn with_reset_fields_of<K: Strategy>(new: K, stored: Option<&K>, subresource: Subresource) -> Result<K> {
    let fields = K::reset_fields(subresource);
    if fields.is_empty() {
        return Ok(new);
    }
    let encode = |object: &K| {
        unmanaged_value::top_level(object, fields).map_err(|e| Error::Internal(format!("encoding the object: {e}")))
    };
    let kept = stored.map(encode).transpose()?.unwrap_or_else(|| serde_json::Value::Object(Default::default()));
    if encode(&new)? == kept {
        return Ok(new);
    }
    let mut value = to_value(&new)?;
    super::decode::set_fields(&mut value, fields.iter().map(|f| (*f, kept.get(*f).cloned())).collect());
    serde_json::from_value(value).map_err(|e| Error::Internal(format!("decoding the object: {e}")))
}

/// The `metadata.resourceVersion` of a body, when it is a string.
fn resource_version_in(body: &serde_json::Value) -> Option<&str> {
    body.get("metadata")?.get("resourceVersion")?.as_str()
}

/// The precondition a body's `metadata.uid` sets, as the kube-apiserver's update takes it from
/// the object: a 409 when the stored object has another uid.
fn check_uid_precondition<K: ApiResource>(uid: Option<&str>, old: &ObjectMeta) -> Result<()> {
    let stored = old.uid.as_deref().unwrap_or_default();
    match uid {
        Some(uid) if uid != stored => Err(conflict::<K>(
            old.name.as_deref().unwrap_or_default(),
            format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {stored}"),
        )),
        _ => Ok(()),
    }
}

/// The optimistic-concurrency precondition of an update: the new object's `resourceVersion`
/// must be the stored one. It is `required` for every write but a webhook's mutation: a PUT must
/// carry it, and a patch or apply keeps the stored one unless it empties it (a custom resource
/// allows no unconditional update).
fn check_resource_version<K: ApiResource>(new: Option<&str>, old: &ObjectMeta, required: bool) -> Result<()> {
    let name = old.name.as_deref().unwrap_or_default();
    match new {
        None | Some("") if required => {
            let mut missing =
                FieldError::invalid("metadata.resourceVersion", &json!(0), "must be specified for an update");
            // apimachinery shows the uint64 it read with Go's %#v, and the generic store names the
            // resource (`widgets.example.com`) where validation names the kind.
            missing.value = Some("0x0".into());
            Err(Error::Invalid {
                kind: K::info().plural,
                group: K::info().group,
                name: name.to_string(),
                causes: vec![missing],
            })
        }
        Some(rv) if !rv.is_empty() && Some(rv) != old.resource_version.as_deref() => Err(conflict::<K>(
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )),
        _ => Ok(()),
    }
}

/// What a write of `subresource` may not own in managed fields: its reset fields, and for
/// `/status` the whole metadata too, which the status strategy carries over from the stored
/// object (`statusStrategy.GetResetFields` of custom resources, Kubernetes 1.2x).
fn managed_reset<K: Strategy>(subresource: Subresource) -> crate::structured_merge::fieldpath::Set {
    let mut fields = K::reset_fields(subresource).to_vec();
    if subresource == Subresource::Status {
        fields.push("metadata");
    }
    managed::top_level(&fields)
}

/// The warnings of the finalizers a write of the object adds (none for a status write, which
/// keeps the stored metadata).
fn added_finalizer_warnings<K: Strategy>(object: &K, current: &Current<K>, subresource: Subresource) -> Vec<String> {
    match subresource {
        Subresource::Main => validation::finalizer_warnings(object.meta(), Some(current.meta())),
        Subresource::Status => Vec::new(),
    }
}

/// Decides an update of `current` to `new`, asked at version `at`: preconditions, system fields,
/// generation, validation, and whether the object can now go (last finalizer removed while
/// deleting). A write of [`Subresource::Status`] keeps all of the stored metadata, as the custom
/// resource status strategy does (`*new = *old.DeepCopy()`, then the new status). Also returns
/// the warnings of the validation rules' failures ratcheting let pass.
fn prepare_update<K: Strategy>(
    current: &Current<K>,
    mut new: K,
    (require_resource_version, at): (bool, &At),
    subresource: Subresource,
    tracking: Tracking,
) -> Result<(Mutation<K>, Vec<String>)> {
    let old = current.meta();
    check_resource_version::<K>(new.meta().resource_version.as_deref(), old, require_resource_version)?;
    let managed_fields = tracking.managed_fields(Some(current.object()), &new, subresource)?;
    if subresource == Subresource::Status {
        *new.meta_mut() = old.clone();
    }
    let mut errors = Vec::new();
    let uid_differs =
        matches!(new.meta().uid.as_deref(), Some(uid) if !uid.is_empty() && Some(uid) != old.uid.as_deref());
    if uid_differs {
        errors.push(FieldError::invalid("metadata.uid", &json!(new.meta().uid), "field is immutable"));
    }
    let deleting = old.deletion_timestamp.is_some();
    if deleting {
        let before: std::collections::HashSet<&String> = old.finalizers.iter().flatten().collect();
        let added: Vec<&String> = new.meta().finalizers.iter().flatten().filter(|f| !before.contains(f)).collect();
        if !added.is_empty() {
            errors.push(FieldError::forbidden(
                "metadata.finalizers",
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    crate::machinery::error::go_string_slice(&added)
                ),
            ));
        }
    }
    let meta = new.meta_mut();
    meta.uid = old.uid.clone();
    meta.creation_timestamp = old.creation_timestamp.clone();
    meta.deletion_timestamp = old.deletion_timestamp.clone();
    meta.deletion_grace_period_seconds = old.deletion_grace_period_seconds;
    meta.resource_version = old.resource_version.clone();
    meta.managed_fields = managed_fields;
    meta.self_link = None;
    let mut new = with_reset_fields_of(new, Some(current.object()), subresource)?;
    new.prepare_for_update(current, subresource);
    let generation = old.generation.unwrap_or(1);
    let generation = if at.spec_changed(&new, current)? { generation + 1 } else { generation };
    new.meta_mut().generation = Some(generation);
    errors.extend(new.validate_update(current));
    let ratcheted = reject_invalid(&new, Some(current.object()), at, errors)?;
    if deleting && new.meta().finalizers.as_ref().is_none_or(Vec::is_empty) {
        return Ok((Mutation::Delete(new), ratcheted));
    }
    if &new == current.object() {
        return Ok((Mutation::Unchanged, ratcheted));
    }
    Ok((Mutation::Put(new), ratcheted))
}

mod admitted;
mod apply;

#[cfg(test)]
mod tests {
    use super::*;

    /// `object` as a request body.
    pub(super) fn body<T: serde::Serialize>(object: &T) -> serde_json::Value {
        serde_json::to_value(object).unwrap()
    }
    use crate::machinery::testing::{Widget, widget};
    use crate::store::{Revision, memory::MemoryStore};

    #[test]
    fn the_request_namespace_is_set_checked_or_for_a_cluster_scoped_resource_cleared() {
        let mut object = widget("elsewhere", "w", 1.0);
        assert_eq!(check_namespace(&mut object, "default").unwrap_err().code(), 400);
        check_namespace(&mut object, "").unwrap();
        assert_eq!(object.metadata.namespace, None, "a cluster-scoped request has no namespace to keep");
        check_namespace(&mut object, "default").unwrap();
        assert_eq!(object.metadata.namespace.as_deref(), Some("default"));
        let placed = serde_json::json!({"metadata": {"namespace": "elsewhere"}});
        assert!(check_body_namespace(&placed, "").is_ok() && check_body_namespace(&placed, "default").is_err());
        assert!(check_patched_namespace(&placed, "").is_ok() && check_patched_namespace(&placed, "default").is_err());
    }

    fn registry() -> Registry<Widget> {
        Registry::new(Arc::new(MemoryStore::new(Arc::new(Revision::default()), 100)), WatchSettings::default())
    }

    fn object(name: &str, size: f64) -> Widget {
        let mut object = widget("", name, size);
        object.metadata.namespace = None;
        object
    }

    #[tokio::test]
    async fn create_fills_system_fields_and_ignores_client_set_ones() {
        let r = registry();
        let mut l = object("dolly", 1.0);
        l.metadata.uid = Some("mine".into());
        l.metadata.generation = Some(7);
        let mut with_rv = l.clone();
        with_rv.metadata.resource_version = Some("999".into());
        let err = r.create("default", with_rv.clone(), &WriteContext::default()).await.unwrap_err();
        assert_eq!(
            (err.code().as_u16(), err.to_string().as_str()),
            (400, "resourceVersion should not be set on objects to be created")
        );
        let dry_run = WriteContext { dry_run: true, ..WriteContext::default() };
        let tried = r.create("default", with_rv, &dry_run).await.unwrap().object.decode().unwrap();
        assert_eq!(
            tried.metadata.resource_version.as_deref(),
            Some("999"),
            "a dry run reaches no storage, which would refuse it, and answers the object as it came"
        );
        assert!(r.get("default", "dolly").await.is_err(), "a dry run stores nothing");
        let created = r.create("default", l, &WriteContext::default()).await.unwrap().object.decode().unwrap();
        assert_ne!(created.metadata.uid.as_deref(), Some("mine"));
        assert_eq!(created.metadata.resource_version.as_deref(), Some("1"));
        assert_eq!(created.metadata.generation, Some(1));
        assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
        assert!(created.metadata.creation_timestamp.is_some());
    }

    #[tokio::test]
    async fn generate_name_appends_five_characters() {
        let r = registry();
        let mut l = object("", 1.0);
        l.metadata.name = None;
        l.metadata.generate_name = Some("herd-".into());
        let created = r.create("default", l, &WriteContext::default()).await.unwrap().object.decode().unwrap();
        let name = created.metadata.name.clone().unwrap();
        assert!(name.starts_with("herd-") && name.len() == 10, "{name}");
    }

    #[tokio::test]
    async fn stale_update_conflicts_and_spec_change_bumps_generation() {
        let r = registry();
        let ctx = WriteContext::default();
        let created = r.create("default", object("dolly", 1.0), &ctx).await.unwrap().object.decode().unwrap();
        let mut next = created.clone();
        next.spec.size = 2.0;
        let updated = r
            .update::<Widget>("default", "dolly", &body(&next), Subresource::Main, &ctx)
            .await
            .unwrap()
            .object
            .decode()
            .unwrap();
        assert_eq!(updated.metadata.generation, Some(2));
        let err = r.update::<Widget>("default", "dolly", &body(&next), Subresource::Main, &ctx).await.unwrap_err();
        assert_eq!(err.code(), http::StatusCode::CONFLICT);
    }

    #[tokio::test]
    async fn an_update_that_changes_nothing_keeps_the_resource_version() {
        let r = registry();
        let ctx = WriteContext::default();
        let created = r.create("default", object("dolly", 1.0), &ctx).await.unwrap().object.decode().unwrap();
        let same = r
            .update::<Widget>("default", "dolly", &body(&created), Subresource::Main, &ctx)
            .await
            .unwrap()
            .object
            .decode()
            .unwrap();
        assert_eq!(same.metadata.resource_version, created.metadata.resource_version);
    }

    #[tokio::test]
    async fn finalizers_delay_deletion_until_the_last_one_is_removed() {
        let r = registry();
        let ctx = WriteContext::default();
        let mut l = object("dolly", 1.0);
        l.metadata.finalizers = Some(vec!["example.com/shear".into()]);
        r.create("default", l, &ctx).await.unwrap();
        let marked = r.delete("default", "dolly", &DeleteOptions::default(), &ctx).await.unwrap();
        assert!(!marked.deleted);
        assert!(marked.object.decode().unwrap().metadata.deletion_timestamp.is_some());
        let mut adding = marked.object.decode().unwrap();
        adding.metadata.finalizers = Some(vec!["example.com/shear".into(), "example.com/other".into()]);
        assert_eq!(
            r.update::<Widget>("default", "dolly", &body(&adding), Subresource::Main, &ctx).await.unwrap_err().code(),
            422
        );
        let mut cleared = marked.object.decode().unwrap();
        cleared.metadata.finalizers = None;
        let answered = r.update::<Widget>("default", "dolly", &body(&cleared), Subresource::Main, &ctx).await.unwrap();
        assert_eq!(r.get("default", "dolly").await.unwrap_err().code(), 404);
        // The object as the update made it, at the version it had (the kube-apiserver's answer),
        // not at the deletion's.
        let answered = answered.object.decode().unwrap();
        assert_eq!(answered.metadata.resource_version, cleared.metadata.resource_version);
        assert_eq!(answered.metadata.finalizers, None);
    }

    #[tokio::test]
    async fn delete_preconditions_are_checked() {
        let r = registry();
        r.create("default", object("dolly", 1.0), &WriteContext::default()).await.unwrap();
        let options = DeleteOptions {
            preconditions: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Preconditions {
                uid: Some("nope".into()),
                resource_version: None,
            }),
            ..Default::default()
        };
        assert_eq!(r.delete("default", "dolly", &options, &WriteContext::default()).await.unwrap_err().code(), 409);
        assert!(r.get("default", "dolly").await.is_ok());
    }
}

/// The registry calls each [`Strategy`] hook at its point of a write, shown with a resource that
/// has a status, an immutable field and a warning.
#[cfg(test)]
mod strategy_hooks {
    use super::tests::body;
    use super::*;
    use crate::machinery::resource::ApiResource;
    use crate::machinery::verb::Verb;
    use crate::store::{Revision, memory::MemoryStore};
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
    #[kube(group = "test.example.com", version = "v1", kind = "Ewe", namespaced)]
    #[kube(status = "EweStatus", derive = "PartialEq", doc = "A ewe, to test strategies.")]
    struct EweSpec {
        breed: String,
        fleece: u32,
    }

    #[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
    struct EweStatus {
        shorn: bool,
    }

    impl ApiResource for Ewe {
        const VERBS: &'static [Verb] = &[Verb::Create, Verb::Get, Verb::Update];
    }

    impl Strategy for Ewe {
        fn prepare_for_create(&mut self) {
            self.status = None;
        }

        fn validate_update(&self, old: &Self) -> Vec<FieldError> {
            if self.spec.breed == old.spec.breed {
                return Vec::new();
            }
            vec![FieldError::invalid("spec.breed", &json!(self.spec.breed), "field is immutable")]
        }

        fn warnings(&self) -> Vec<String> {
            (self.spec.fleece > 20).then(|| "spec.fleece: more than 20 kg of fleece".to_string()).into_iter().collect()
        }
    }

    fn ewe(breed: &str, fleece: u32, shorn: bool) -> Ewe {
        let mut ewe = Ewe::new("shaun", EweSpec { breed: breed.into(), fleece });
        ewe.status = Some(EweStatus { shorn });
        ewe
    }

    #[tokio::test]
    async fn create_and_update_keep_the_status_out_of_reach_and_check_transitions() {
        let r = Registry::new(Arc::new(MemoryStore::new(Arc::new(Revision::default()), 10)), WatchSettings::default());
        let ctx = WriteContext::default();
        let created = r.create("default", ewe("merino", 25, true), &ctx).await.unwrap();
        assert_eq!(created.object.decode().unwrap().status, None, "a create may not set the status");
        assert_eq!(created.warnings, ["spec.fleece: more than 20 kg of fleece"]);

        let mut next = ewe("merino", 5, true);
        next.metadata.resource_version = created.object.decode().unwrap().metadata.resource_version.clone();
        let updated = r.update::<Ewe>("default", "shaun", &body(&next), Subresource::Main, &ctx).await.unwrap();
        assert_eq!(
            updated.object.decode().unwrap().status,
            None,
            "an update of the main resource keeps the stored status"
        );
        assert_eq!(updated.object.decode().unwrap().spec.fleece, 5);
        assert!(updated.warnings.is_empty());

        let mut renamed = ewe("suffolk", 5, false);
        renamed.metadata.resource_version = updated.object.decode().unwrap().metadata.resource_version.clone();
        let error = r.update::<Ewe>("default", "shaun", &body(&renamed), Subresource::Main, &ctx).await.unwrap_err();
        assert_eq!(error.code(), 422);
        assert!(error.to_string().contains("spec.breed"), "{error}");
    }

    #[tokio::test]
    async fn a_status_write_changes_the_status_only_and_keeps_the_generation() {
        let r = Registry::new(Arc::new(MemoryStore::new(Arc::new(Revision::default()), 10)), WatchSettings::default());
        let ctx = WriteContext::default();
        let created = r.create("default", ewe("merino", 5, false), &ctx).await.unwrap().object.decode().unwrap();
        let mut next = ewe("suffolk", 9, true);
        next.metadata.resource_version = created.metadata.resource_version.clone();
        next.metadata.labels = Some([("shorn".to_string(), "yes".to_string())].into());
        let written = r
            .update::<Ewe>("default", "shaun", &body(&next), Subresource::Status, &ctx)
            .await
            .unwrap()
            .object
            .decode()
            .unwrap();
        assert_eq!(written.status, Some(EweStatus { shorn: true }));
        assert_eq!(written.spec, created.spec, "a status write keeps the spec");
        assert_eq!(written.metadata.labels, None, "and the metadata");
        assert_eq!(written.metadata.generation, Some(1));
        assert_ne!(written.metadata.resource_version, created.metadata.resource_version);

        let stale = r.update::<Ewe>("default", "shaun", &body(&next), Subresource::Status, &ctx).await.unwrap_err();
        assert_eq!(stale.code(), 409, "the body's resourceVersion is a precondition");
    }
}

/// The validation rules of a resource's schema run on every write after the strategy's own
/// validation, shown with a resource whose spec, status and root have rules.
#[cfg(test)]
mod validation_rules_on_writes {
    use super::tests::body;
    use super::*;
    use crate::machinery::resource::ApiResource;
    use crate::store::{Revision, Store, memory::MemoryStore};
    use kube::{CustomResource, KubeSchema};
    use serde::{Deserialize, Serialize};

    #[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
    #[kube(group = "test.example.com", version = "v1", kind = "Ram", namespaced)]
    #[kube(status = "RamStatus", derive = "PartialEq")]
    #[kube(validation = Rule::new("self.metadata.name != 'lamb'").message("a ram is no lamb"))]
    #[x_kube(validation = Rule::new("self.breed == oldSelf.breed").message("breed is immutable"))]
    struct RamSpec {
        breed: String,
        #[x_kube(validation = Rule::new("self <= 4").message("at most four horns"))]
        #[schemars(range(max = 10))]
        horns: u32,
    }

    #[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
    struct RamStatus {
        #[x_kube(validation = Rule::new("self < 200").reason(Reason::FieldValueForbidden))]
        weight: u32,
    }

    impl ApiResource for Ram {}

    impl Strategy for Ram {
        fn validate(&self) -> Vec<FieldError> {
            match self.spec.breed.is_empty() {
                true => vec![FieldError::required("spec.breed", "")],
                false => Vec::new(),
            }
        }
    }

    fn ram(name: &str, breed: &str, horns: u32) -> Ram {
        Ram::new(name, RamSpec { breed: breed.into(), horns })
    }

    fn causes(error: &Error) -> Vec<String> {
        let Error::Invalid { causes, .. } = error else { panic!("{error:?}") };
        causes.iter().map(ToString::to_string).collect()
    }

    #[tokio::test]
    async fn creates_updates_and_status_writes_are_refused_by_the_rules() {
        let store: Arc<MemoryStore<Ram>> = Arc::new(MemoryStore::new(Arc::new(Revision::default()), 10));
        let r = Registry::new(store.clone(), WatchSettings::default());
        let ctx = WriteContext::default();
        let error = r.create("default", ram("lamb", "jacob", 6), &ctx).await.unwrap_err();
        assert_eq!(
            causes(&error),
            ["<nil>: Invalid value: a ram is no lamb", "spec.horns: Invalid value: 6: at most four horns"],
            "a node's own rules before those below it"
        );
        let error = r.create("default", ram("lamb", "", 6), &ctx).await.unwrap_err();
        assert_eq!(
            causes(&error),
            [
                "spec.breed: Required value",
                "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; \
                 correct the existing errors to complete validation"
            ],
            "a blocking error leaves the rules out"
        );
        let created = r.create("default", ram("rammy", "jacob", 4), &ctx).await.unwrap().object.decode().unwrap();
        let mut next = ram("rammy", "soay", 4);
        next.metadata.resource_version = created.metadata.resource_version.clone();
        let error = r.update::<Ram>("default", "rammy", &body(&next), Subresource::Main, &ctx).await.unwrap_err();
        assert_eq!(causes(&error), ["spec: Invalid value: breed is immutable"]);
        next.spec.horns = 12;
        let error = r.update::<Ram>("default", "rammy", &body(&next), Subresource::Main, &ctx).await.unwrap_err();
        assert_eq!(
            causes(&error),
            [
                "spec.horns: Invalid value: 12: spec.horns in body should be less than or equal to 10",
                "spec: Invalid value: breed is immutable",
                "spec.horns: Invalid value: 12: at most four horns"
            ],
            "the rules run beside the schema's errors, which do not block them"
        );
        let mut status = created.clone();
        status.status = Some(RamStatus { weight: 250 });
        let error = r.update::<Ram>("default", "rammy", &body(&status), Subresource::Status, &ctx).await.unwrap_err();
        assert_eq!(causes(&error), ["status.weight: Forbidden: failed rule: self < 200"]);
        status.status = Some(RamStatus { weight: 150 });
        r.update::<Ram>("default", "rammy", &body(&status), Subresource::Status, &ctx).await.unwrap();
    }

    #[tokio::test]
    async fn a_failure_on_what_a_write_left_as_it_was_is_a_warning() {
        let store: Arc<MemoryStore<Ram>> = Arc::new(MemoryStore::new(Arc::new(Revision::default()), 10));
        let r = Registry::new(store.clone(), WatchSettings::default());
        let ctx = WriteContext::default();
        // Stored before the rule existed, say.
        let mut old = ram("rammy", "jacob", 6);
        old.metadata.namespace = Some("default".into());
        let stored = Store::create(&*store, ObjectKey::new("default", "rammy"), old, false).await.unwrap();
        let mut status = stored.decode().unwrap();
        status.status = Some(RamStatus { weight: 10 });
        let written = r.update::<Ram>("default", "rammy", &body(&status), Subresource::Status, &ctx).await.unwrap();
        assert_eq!(written.warnings, ["spec.horns: Invalid value: 6: at most four horns"]);
        let mut next = written.object.decode().unwrap();
        next.metadata.labels = Some([("four".to_string(), "legs".to_string())].into());
        let written = r.update::<Ram>("default", "rammy", &body(&next), Subresource::Main, &ctx).await.unwrap();
        assert_eq!(written.warnings, ["spec.horns: Invalid value: 6: at most four horns"]);
        let mut more = written.object.decode().unwrap();
        more.spec.horns = 7;
        let error = r.update::<Ram>("default", "rammy", &body(&more), Subresource::Main, &ctx).await.unwrap_err();
        assert_eq!(causes(&error), ["spec.horns: Invalid value: 7: at most four horns"]);
    }
}
