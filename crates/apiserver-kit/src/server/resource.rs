//! The resources a server is built with: a [`StoredResource`], kept in the server's storage, and
//! a [`MirroredView`], a read-only view of one kind of the cluster's objects fed by a mirror of
//! them. Each is served at the version it is stored at and at any others it converts to; when
//! the server starts, each is mounted: its store, its registry, its routes at every version, its
//! readiness checks and its metric sources.

use super::metric_sources as sources;
use super::storage::StorageFactory;
use crate::api::handlers;
use crate::api::registry::{Registry, WatchSettings};
use crate::health::Health;
use crate::machinery::admission::Admission;
use crate::machinery::resource::{ApiResource, ObjectScope, ResourceDescriptor};
use crate::machinery::strategy::{Strategy, column_problems};
use crate::machinery::version::Served;
use crate::metrics::Sources;
use crate::mirror::{self, SourceObject};
use crate::namespaces::NamespaceCache;
use crate::store::{Revision, memory::MemoryStore};
use axum::Router;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

/// Another version a resource stored as `K` is served at, converting to and from `K`.
struct OtherVersion<K: Strategy> {
    version: Cow<'static, str>,
    descriptor: fn() -> ResourceDescriptor,
    /// Tells the registry its objects are served at this version too.
    register: fn(Registry<K>) -> Registry<K>,
    routes: fn(Arc<Registry<K>>, Option<String>) -> Router,
}

impl<K: Strategy> OtherVersion<K> {
    fn of<V: Served<K>>(deprecated: bool) -> Self {
        const {
            assert!(
                <K::Scope as ObjectScope>::NAMESPACED == <V::Scope as ObjectScope>::NAMESPACED,
                "a resource has one scope at every version"
            );
        }
        Self {
            version: V::version(&()),
            descriptor: if deprecated { described::<K, V, true> } else { described::<K, V, false> },
            register: Registry::<K>::served_at::<V>,
            routes: handlers::routes::<K, V>,
        }
    }
}

/// The versions a resource stored as `K` is served at: `K`'s own, then the others in the order
/// they were added.
struct Versions<K: Strategy> {
    others: Vec<OtherVersion<K>>,
}

impl<K: Strategy> Versions<K> {
    fn new() -> Self {
        Self { others: Vec::new() }
    }

    fn descriptors(&self) -> Vec<(Cow<'static, str>, ResourceDescriptor)> {
        std::iter::once((K::version(&()), described::<K, K, false>()))
            .chain(self.others.iter().map(|o| (o.version.clone(), (o.descriptor)())))
            .collect()
    }
}

/// The descriptor of `V`, stored as `K` (deprecated in favour of `K`'s version or not), with the
/// problems of its table columns and of its validation rules (compiled here, once, for the
/// writes to come) among those of its definition.
fn described<K: Strategy, V: Served<K>, const DEPRECATED: bool>() -> ResourceDescriptor {
    let mut descriptor = match DEPRECATED {
        true => ResourceDescriptor::deprecated_for::<K, V>(),
        false => ResourceDescriptor::stored_as::<K, V>(),
    };
    descriptor.problems.extend(column_problems::<V>());
    descriptor.problems.extend_from_slice(crate::validation_rules::of::<V>().problems());
    descriptor
}

/// A resource whose objects the server keeps in its storage (memory or etcd), stored at the
/// version of `K` and served at it and at any others added.
///
/// With a cluster, creates obey its namespaces' lifecycle (nothing is created in a namespace
/// that is missing or being deleted) and, when the server is an aggregated one with admission
/// webhooks on, writes go through the cluster's admission webhooks.
pub struct StoredResource<K: Strategy> {
    versions: Versions<K>,
    managed_fields: bool,
}

impl<K: Strategy> Default for StoredResource<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Strategy> StoredResource<K> {
    /// The resource of `K`, stored at `K`'s version.
    pub fn new() -> Self {
        Self { versions: Versions::new(), managed_fields: true }
    }

    /// Serves the resource at `V`'s version too, converting with `V`'s [`Served`].
    pub fn served_at<V: Served<K>>(mut self) -> Self {
        self.versions.others.push(OtherVersion::of::<V>(false));
        self
    }

    /// Serves the resource at `V`'s version too, deprecated: every answer at it carries the
    /// `Warning` a CustomResourceDefinition gives for a deprecated version.
    pub fn deprecated_at<V: Served<K>>(mut self) -> Self {
        self.versions.others.push(OtherVersion::of::<V>(true));
        self
    }

    /// Whether writes record managedFields and server-side apply is served (the default);
    /// `false` is the kube-apiserver with its former `ServerSideApply` feature gate off.
    pub fn managed_fields(mut self, on: bool) -> Self {
        self.managed_fields = on;
        self
    }
}

/// A read-only resource whose objects are views of one kind of the cluster's objects, `S`: a
/// mirror lists and watches them and stores each as `project` makes it (an enriched view of a
/// Pod, say). Reads are served from the mirror's store; no request calls the cluster.
///
/// Without a cluster the resource is still served (listed in discovery, as kubectl expects),
/// and every read answers 503 with the message [`MirroredView::without_cluster`] sets.
pub struct MirroredView<K: Strategy, S> {
    versions: Versions<K>,
    mirror: &'static str,
    project: fn(&S) -> Option<K>,
    namespace: Option<String>,
    max_backoff: Duration,
    without_cluster: Option<String>,
}

impl<K: Strategy, S: SourceObject> MirroredView<K, S> {
    /// The view of `S` made by `project` (which keeps each object's namespace and name, or
    /// leaves the object out with `None`). `mirror` names the mirror in metrics
    /// (`<prefix>_<mirror>_cache_synced`), the readiness check (`<mirror>-cache`) and messages.
    pub fn new(mirror: &'static str, project: fn(&S) -> Option<K>) -> Self {
        Self {
            versions: Versions::new(),
            mirror,
            project,
            namespace: None,
            max_backoff: Duration::from_secs(30),
            without_cluster: None,
        }
    }

    /// Serves the view at `V`'s version too.
    pub fn served_at<V: Served<K>>(mut self) -> Self {
        self.versions.others.push(OtherVersion::of::<V>(false));
        self
    }

    /// Serves the view at `V`'s version too, deprecated.
    pub fn deprecated_at<V: Served<K>>(mut self) -> Self {
        self.versions.others.push(OtherVersion::of::<V>(true));
        self
    }

    /// Mirrors only the objects of `namespace` (a namespaced Role suffices), or of all
    /// namespaces with `None` (the default).
    pub fn in_namespace(mut self, namespace: Option<String>) -> Self {
        self.namespace = namespace;
        self
    }

    /// The longest wait between the mirror's retries after errors (the wait doubles from
    /// 200 ms); 30 seconds by default.
    pub fn max_backoff(mut self, max_backoff: Duration) -> Self {
        self.max_backoff = max_backoff;
        self
    }

    /// What a read answers (503) when the server has no cluster: say what the view needs and how
    /// to give it.
    pub fn without_cluster(mut self, message: impl Into<String>) -> Self {
        self.without_cluster = Some(message.into());
        self
    }
}

/// What the cluster gives the resources of a server that has one.
pub(super) struct ClusterServices {
    /// A client of the kube-apiserver.
    pub client: kube::Client,
    /// Its URL, for messages.
    pub server: String,
    /// Its namespaces, for the lifecycle of creates.
    pub namespaces: Arc<NamespaceCache>,
    /// Its admission webhooks, when writes call them.
    pub admission: Option<Arc<dyn Admission>>,
}

/// What every resource is mounted with.
pub(super) struct Mount<'a> {
    pub storage: &'a StorageFactory,
    pub settings: &'a WatchSettings,
    /// Events a mirror's store keeps.
    pub history: usize,
    pub cluster: Option<&'a ClusterServices>,
}

/// What the mounted resources add up to.
pub(super) struct Mounted {
    pub routes: Router,
    /// The versions of the group, in the builder's order, with the resources served at each.
    pub versions: Vec<(&'static str, Vec<ResourceDescriptor>)>,
    pub health: Health,
    pub sources: Sources,
}

impl Mounted {
    /// Nothing mounted yet at `versions`.
    pub fn new(versions: &[&'static str], health: Health) -> Self {
        let versions = versions.iter().map(|v| (*v, Vec::new())).collect();
        Self { routes: Router::new(), versions, health, sources: Sources::new() }
    }

    /// Serves `registry`'s resource at its storage version and at `versions`' others.
    fn serve<K: Strategy>(&mut self, registry: Registry<K>, versions: &Versions<K>) {
        self.sources.push(Arc::new(sources::StoreSize(registry.store())));
        let registry = Arc::new(versions.others.iter().fold(registry, |r, other| (other.register)(r)));
        self.add(&K::version(&()), ResourceDescriptor::of::<K>(), handlers::routes::<K, K>(registry.clone(), None));
        for other in &versions.others {
            let descriptor = (other.descriptor)();
            let routes = (other.routes)(registry.clone(), descriptor.deprecation.clone());
            self.add(&other.version, descriptor, routes);
        }
    }

    fn add(&mut self, version: &str, descriptor: ResourceDescriptor, routes: Router) {
        self.routes = std::mem::take(&mut self.routes).merge(routes);
        // The builder checked that every version of every resource is one of the group's.
        if let Some((_, descriptors)) = self.versions.iter_mut().find(|(v, _)| *v == version) {
            descriptors.push(descriptor);
        }
    }
}

/// A resource as the builder holds it, whatever its type.
pub(super) trait Mountable: Send {
    /// Its plural name.
    fn plural(&self) -> &'static str;
    /// Its descriptor at each version it is served at, the storage version first.
    fn descriptors(&self) -> Vec<(Cow<'static, str>, ResourceDescriptor)>;
    /// The name of the mirror feeding it, if it is a view.
    fn mirror(&self) -> Option<&'static str>;
    /// Makes its store and registry and serves them.
    fn mount(self: Box<Self>, mount: &Mount<'_>, into: &mut Mounted);
}

impl<K: Strategy> Mountable for StoredResource<K> {
    fn plural(&self) -> &'static str {
        K::info().plural
    }

    fn descriptors(&self) -> Vec<(Cow<'static, str>, ResourceDescriptor)> {
        self.versions.descriptors()
    }

    fn mirror(&self) -> Option<&'static str> {
        None
    }

    fn mount(self: Box<Self>, mount: &Mount<'_>, into: &mut Mounted) {
        let (store, readiness) = mount.storage.store::<K>();
        if let Some(check) = readiness {
            let health = std::mem::take(&mut into.health);
            into.health = health.with_required(format!("watch-cache-{}", K::info().plural), check);
        }
        let mut registry = Registry::new(store, mount.settings.clone());
        if !self.managed_fields {
            registry = registry.without_managed_fields();
        }
        if let Some(cluster) = mount.cluster {
            if let Some(admission) = &cluster.admission {
                registry = registry.with_admission(admission.clone());
            }
            registry = registry.with_namespaces(cluster.namespaces.clone());
        }
        into.serve(registry, &self.versions);
    }
}

impl<K: Strategy, S: SourceObject> Mountable for MirroredView<K, S> {
    fn plural(&self) -> &'static str {
        K::info().plural
    }

    fn descriptors(&self) -> Vec<(Cow<'static, str>, ResourceDescriptor)> {
        self.versions.descriptors()
    }

    fn mirror(&self) -> Option<&'static str> {
        Some(self.mirror)
    }

    fn mount(self: Box<Self>, mount: &Mount<'_>, into: &mut Mounted) {
        // The view carries its sources' resourceVersions, so its store has a revision of its own.
        let store = Arc::new(MemoryStore::<K>::new(Arc::new(Revision::default()), mount.history));
        let registry = Registry::new(store.clone(), mount.settings.clone());
        let Some(cluster) = mount.cluster else {
            let why = self.without_cluster.clone().unwrap_or_else(|| default_without_cluster::<K, S>());
            into.serve(registry.not_configured(why), &self.versions);
            return;
        };
        let source = mirror::Source {
            name: self.mirror.into(),
            project: self.project,
            client: cluster.client.clone(),
            server: cluster.server.clone(),
            namespace: self.namespace.clone(),
            max_backoff: self.max_backoff,
        };
        let cache = mirror::start(source, store.clone());
        into.sources.push(Arc::new(sources::MirrorCache {
            gauges: mount.settings.metrics.mirror(self.mirror),
            status: cache.status.clone(),
            store,
        }));
        into.serve(registry.with_readiness(cache.ready.clone()), &self.versions);
        let status = cache.status;
        let health = std::mem::take(&mut into.health);
        into.health = health.with_informational(format!("{}-cache", self.mirror), Arc::new(move || status.check()));
    }
}

/// What a view's reads answer without a cluster when the builder gave no message.
fn default_without_cluster<K: ApiResource, S: SourceObject>() -> String {
    format!(
        "{} are views of a cluster's {}, and this server was started without a cluster",
        K::info().plural,
        S::plural(&())
    )
}
