//! The cluster's ValidatingAdmissionPolicies and their bindings, watched by two kube-rs
//! reflectors, and what requests evaluate, rebuilt on every change of either (never per
//! request): each policy that some binding names, compiled once per `resourceVersion`, with
//! its bindings and the source of its params. The server's ServiceAccount needs list and
//! watch on both, and on the kinds policies name as `paramKind` (`manifests/base/rbac.yaml`).

use super::super::WAITING;
use super::compiled::CompiledPolicy;
use super::params::{ParamSource, ParamSources};
use crate::reflect::reflect;
use k8s_openapi::api::admissionregistration::v1::{ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding};
use kube::api::Api;
use kube::runtime::reflector::Store;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

/// How soon a param kind the cluster did not serve is looked for again.
const RETRY: Duration = Duration::from_secs(10);

/// A policy some binding names, ready to evaluate.
pub struct Hook {
    /// The policy as last seen.
    pub policy: Arc<ValidatingAdmissionPolicy>,
    /// Its expressions, compiled.
    pub compiled: Arc<CompiledPolicy>,
    /// The bindings that name it.
    pub bindings: Vec<Arc<ValidatingAdmissionPolicyBinding>>,
    /// The source of its params when it has a `paramKind`; the configuration error when that
    /// kind cannot be watched.
    pub params: Option<Result<Arc<ParamSource>, String>>,
}

/// What requests evaluate: every bound policy, by name.
#[derive(Default)]
pub struct Snapshot {
    /// The hooks.
    pub hooks: Vec<Hook>,
}

/// The policies and bindings of the cluster, and their latest snapshot.
#[derive(Clone)]
pub struct PolicySources {
    snapshot: Arc<RwLock<Arc<Snapshot>>>,
    /// Becomes true once a snapshot was built from both kinds listed.
    synced: watch::Receiver<bool>,
}

/// The state the rebuilding task keeps between changes.
struct Builder {
    policies: Store<ValidatingAdmissionPolicy>,
    bindings: Store<ValidatingAdmissionPolicyBinding>,
    params: ParamSources,
    /// Compiled policies by name, with the resourceVersion they were compiled at.
    compiled: HashMap<String, (Option<String>, Arc<CompiledPolicy>)>,
}

impl PolicySources {
    /// Starts watching policies and bindings, and rebuilding on their changes, until `stopping`
    /// is cancelled.
    pub fn start(client: kube::Client, stopping: CancellationToken) -> Self {
        let changed = Arc::new(Notify::new());
        let notify = |changed: &Arc<Notify>| {
            let changed = changed.clone();
            move || changed.notify_one()
        };
        let policies = reflect(Api::all(client.clone()), (), stopping.clone(), WAITING, notify(&changed));
        let bindings = reflect(Api::all(client.clone()), (), stopping.clone(), WAITING, notify(&changed));
        let params = ParamSources::new(client, stopping.clone());
        let snapshot = Arc::new(RwLock::new(Arc::new(Snapshot::default())));
        let (synced_sender, synced) = watch::channel(false);
        let mut builder = Builder { policies, bindings, params, compiled: HashMap::new() };
        let published = snapshot.clone();
        tokio::spawn(async move {
            let mut retry = false;
            loop {
                // A param kind the cluster did not serve may be served later (its CRD created
                // after the policy): tried again while some is missing.
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
                    synced_sender.send_if_modified(|synced| !std::mem::replace(synced, true));
                }
            }
        });
        Self { snapshot, synced }
    }

    /// The latest snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
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

impl Builder {
    fn ready(&self) -> bool {
        use futures::FutureExt;
        let listed = |ready: Option<Result<(), _>>| ready.is_some_and(|r| r.is_ok());
        listed(self.policies.wait_until_ready().now_or_never())
            && listed(self.bindings.wait_until_ready().now_or_never())
    }

    /// The snapshot of the stores as they are now.
    async fn build(&mut self) -> Snapshot {
        let mut bound: BTreeMap<String, Vec<Arc<ValidatingAdmissionPolicyBinding>>> = BTreeMap::new();
        for binding in self.bindings.state() {
            let name = binding.spec.policy_name.clone();
            bound.entry(name).or_default().push(binding);
        }
        let mut hooks = Vec::new();
        let mut used = Vec::new();
        for (name, mut bindings) in bound {
            let Some(policy) = self.policies.get(&kube::runtime::reflector::ObjectRef::new(&name)) else { continue };
            bindings.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
            let compiled = self.compiled(&name, &policy);
            let kind = policy.spec.as_ref().and_then(|s| s.param_kind.as_ref());
            let params = match kind {
                Some(kind) => {
                    used.push((kind.api_version.clone().unwrap_or_default(), kind.kind.clone().unwrap_or_default()));
                    Some(self.params.ensure(kind).await)
                }
                None => None,
            };
            hooks.push(Hook { policy, compiled, bindings, params });
        }
        self.compiled.retain(|name, _| hooks.iter().any(|h| h.policy.metadata.name.as_deref() == Some(name)));
        self.params.retain(&used);
        Snapshot { hooks }
    }

    /// `policy` compiled, from the cache when its resourceVersion did not change.
    fn compiled(&mut self, name: &str, policy: &ValidatingAdmissionPolicy) -> Arc<CompiledPolicy> {
        let version = policy.metadata.resource_version.clone();
        if let Some((seen, compiled)) = self.compiled.get(name)
            && *seen == version
        {
            return compiled.clone();
        }
        let compiled = Arc::new(CompiledPolicy::compile(policy));
        self.compiled.insert(name.to_string(), (version, compiled.clone()));
        compiled
    }
}
