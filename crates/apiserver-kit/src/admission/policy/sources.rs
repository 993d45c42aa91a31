//! The cluster's admission policies of one kind ([`PolicyKind`]: validating or mutating) and
//! their bindings, watched by two kube-rs reflectors, and what requests evaluate, rebuilt on
//! every change of either (never per request): each policy that some binding names, compiled
//! once per `resourceVersion`, with its bindings and the source of its params. The server's
//! ServiceAccount needs list and watch on both, and on the kinds policies name as `paramKind`
//! (`manifests/base/rbac.yaml`).

use super::super::WAITING;
use super::kind::PolicyKind;
use super::params::{ParamSource, ParamSources};
use crate::reflect::reflect;
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::Store;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

/// How soon a param kind the cluster did not serve is looked for again.
const RETRY: Duration = Duration::from_secs(10);
/// How soon a policy kind the cluster did not serve is looked for again.
const DISCOVERY_RETRY: Duration = Duration::from_secs(60);

/// A policy some binding names, ready to evaluate.
pub struct Hook<K: PolicyKind> {
    /// The policy as last seen.
    pub policy: Arc<K::Policy>,
    /// Its expressions, compiled.
    pub compiled: Arc<K::Compiled>,
    /// The bindings that name it.
    pub bindings: Vec<Arc<K::Binding>>,
    /// The source of its params when it has a `paramKind`; the configuration error when that
    /// kind cannot be watched.
    pub params: Option<Result<Arc<ParamSource>, String>>,
}

/// What requests evaluate: every bound policy, by name.
pub struct Snapshot<K: PolicyKind> {
    /// The hooks.
    pub hooks: Vec<Hook<K>>,
}

impl<K: PolicyKind> Default for Snapshot<K> {
    fn default() -> Self {
        Snapshot { hooks: Vec::new() }
    }
}

/// The policies and bindings of the cluster, and their latest snapshot.
pub struct PolicySources<K: PolicyKind> {
    snapshot: Arc<RwLock<Arc<Snapshot<K>>>>,
    /// Becomes true once a snapshot was built from both kinds listed.
    synced: watch::Receiver<bool>,
}

impl<K: PolicyKind> Clone for PolicySources<K> {
    fn clone(&self) -> Self {
        PolicySources { snapshot: self.snapshot.clone(), synced: self.synced.clone() }
    }
}

/// The state the rebuilding task keeps between changes.
struct Builder<K: PolicyKind> {
    policies: Store<K::Policy>,
    bindings: Store<K::Binding>,
    params: ParamSources,
    /// Compiled policies by name, with the resourceVersion they were compiled at.
    compiled: HashMap<String, (Option<String>, Arc<K::Compiled>)>,
}

impl<K: PolicyKind> PolicySources<K> {
    /// Starts watching policies and bindings, and rebuilding on their changes, until `stopping`
    /// is cancelled. While the cluster does not serve the kind (MutatingAdmissionPolicies before
    /// Kubernetes 1.36), there are none, and it is looked for again every minute.
    pub fn start(client: kube::Client, stopping: CancellationToken) -> Self {
        let snapshot = Arc::new(RwLock::new(Arc::new(Snapshot::default())));
        let (synced_sender, synced) = watch::channel(false);
        tokio::spawn(run::<K>(client, stopping, snapshot.clone(), synced_sender));
        Self { snapshot, synced }
    }

    /// The latest snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot<K>> {
        self.snapshot.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Whether a snapshot of both kinds listed was built.
    pub fn synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits until [`Self::synced`].
    pub async fn wait_synced(&self) {
        let mut synced = self.synced.clone();
        let _ = synced.wait_for(|synced| *synced).await;
    }
}

/// Watches the policies and bindings once the cluster serves them, and publishes a snapshot
/// after each change.
async fn run<K: PolicyKind>(
    client: kube::Client,
    stopping: CancellationToken,
    published: Arc<RwLock<Arc<Snapshot<K>>>>,
    synced: watch::Sender<bool>,
) {
    let mut logged = false;
    while !serves::<K::Policy>(&client).await {
        if !std::mem::replace(&mut logged, true) {
            tracing::info!("the cluster does not serve {}s: none are enforced until it does", K::KIND);
        }
        synced.send_if_modified(|synced| !std::mem::replace(synced, true));
        tokio::select! {
            () = stopping.cancelled() => return,
            () = tokio::time::sleep(DISCOVERY_RETRY) => {}
        }
    }
    let changed = Arc::new(Notify::new());
    let notify = |changed: &Arc<Notify>| {
        let changed = changed.clone();
        move || changed.notify_one()
    };
    let policies = reflect(Api::all(client.clone()), (), stopping.clone(), WAITING, notify(&changed));
    let bindings = reflect(Api::all(client.clone()), (), stopping.clone(), WAITING, notify(&changed));
    let params = ParamSources::new(client, stopping.clone());
    let mut builder = Builder::<K> { policies, bindings, params, compiled: HashMap::new() };
    let mut retry = false;
    loop {
        // A param kind the cluster did not serve may be served later (its CRD created after the
        // policy): tried again while some is missing.
        let later = tokio::time::sleep(if retry { RETRY } else { Duration::MAX });
        tokio::select! {
            () = stopping.cancelled() => return,
            () = changed.notified() => {}
            () = later => {}
        }
        let ready = builder.ready();
        let built = Arc::new(builder.build().await);
        retry = built.hooks.iter().any(|hook| matches!(hook.params, Some(Err(_))));
        *published.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = built;
        if ready {
            synced.send_if_modified(|synced| !std::mem::replace(synced, true));
        }
    }
}

/// Whether the cluster serves `R` (its discovery lists it); when it cannot tell, it is
/// assumed to (the reflector then says what fails).
async fn serves<R: kube::Resource<DynamicType = ()>>(client: &kube::Client) -> bool {
    match client.list_api_group_resources(&R::api_version(&())).await {
        Ok(list) => list.resources.iter().any(|r| r.name == R::plural(&())),
        Err(kube::Error::Api(status)) if status.code == 404 => false,
        Err(_) => true,
    }
}

impl<K: PolicyKind> Builder<K> {
    fn ready(&self) -> bool {
        use futures::FutureExt;
        let listed = |ready: Option<Result<(), _>>| ready.is_some_and(|r| r.is_ok());
        listed(self.policies.wait_until_ready().now_or_never())
            && listed(self.bindings.wait_until_ready().now_or_never())
    }

    /// The snapshot of the stores as they are now.
    async fn build(&mut self) -> Snapshot<K> {
        let mut bound: BTreeMap<String, Vec<Arc<K::Binding>>> = BTreeMap::new();
        for binding in self.bindings.state() {
            let name = K::policy_name(&binding).unwrap_or_default().to_string();
            bound.entry(name).or_default().push(binding);
        }
        let mut hooks = Vec::new();
        let mut used = Vec::new();
        for (name, mut bindings) in bound {
            let Some(policy) = self.policies.get(&kube::runtime::reflector::ObjectRef::new(&name)) else { continue };
            bindings.sort_by(|a, b| a.meta().name.cmp(&b.meta().name));
            let compiled = self.compiled(&name, &policy);
            let params = match K::param_kind(&policy) {
                Some(kind) => {
                    used.push((kind.api_version.clone().unwrap_or_default(), kind.kind.clone().unwrap_or_default()));
                    Some(self.params.ensure(kind).await)
                }
                None => None,
            };
            hooks.push(Hook { policy, compiled, bindings, params });
        }
        self.compiled.retain(|name, _| hooks.iter().any(|h: &Hook<K>| h.policy.meta().name.as_deref() == Some(name)));
        self.params.retain(&used);
        Snapshot { hooks }
    }

    /// `policy` compiled, from the cache when its resourceVersion did not change.
    fn compiled(&mut self, name: &str, policy: &K::Policy) -> Arc<K::Compiled> {
        let version = policy.meta().resource_version.clone();
        if let Some((seen, compiled)) = self.compiled.get(name)
            && *seen == version
        {
            return compiled.clone();
        }
        let compiled = Arc::new(K::compile(policy));
        self.compiled.insert(name.to_string(), (version, compiled.clone()));
        compiled
    }
}
