//! The cluster's MutatingWebhookConfigurations and ValidatingWebhookConfigurations, kept in
//! memory by two kube-rs reflectors, and the webhooks they hold in the order the kube-apiserver
//! calls them: configurations sorted by name, each one's webhooks in their listed order. The
//! server's ServiceAccount needs list and watch on both (`manifests/base/rbac.yaml`).

use futures::FutureExt;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhook,
    ValidatingWebhookConfiguration,
};
use kube::api::Api;
use kube::runtime::reflector::Store;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A webhook and the name of the configuration that holds it.
#[derive(Clone, Debug)]
pub struct Listed<W> {
    /// The webhook.
    pub webhook: W,
    /// Its configuration's name (two configurations may hold webhooks of the same name).
    pub configuration: String,
}

/// The webhook configurations of the cluster, as last seen.
#[derive(Clone)]
pub struct Configurations {
    mutating: Store<MutatingWebhookConfiguration>,
    validating: Store<ValidatingWebhookConfiguration>,
}

/// Starts a reflector over every `K` until `stopping` is cancelled.
fn reflect<K>(client: kube::Client, stopping: CancellationToken) -> Store<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    crate::reflect::reflect(Api::<K>::all(client), (), stopping, super::WAITING, || {})
}

/// `items` sorted by name, each with its webhooks in order.
fn in_order<C, W: Clone>(
    mut items: Vec<Arc<C>>,
    name: impl Fn(&C) -> &str,
    webhooks: impl Fn(&C) -> &[W],
) -> Vec<Listed<W>> {
    items.sort_by(|a, b| name(a).cmp(name(b)));
    items
        .iter()
        .flat_map(|c| webhooks(c).iter().map(|w| Listed { webhook: w.clone(), configuration: name(c).to_string() }))
        .collect()
}

impl Configurations {
    /// Starts watching both kinds of configuration until `stopping` is cancelled.
    pub fn start(client: kube::Client, stopping: CancellationToken) -> Self {
        Self { mutating: reflect(client.clone(), stopping.clone()), validating: reflect(client, stopping) }
    }

    /// Whether both reflectors have listed once.
    pub fn synced(&self) -> bool {
        self.mutating.wait_until_ready().now_or_never().is_some_and(|r| r.is_ok())
            && self.validating.wait_until_ready().now_or_never().is_some_and(|r| r.is_ok())
    }

    /// Waits until both reflectors have listed once.
    pub async fn wait_synced(&self) {
        let _ = self.mutating.wait_until_ready().await;
        let _ = self.validating.wait_until_ready().await;
    }

    /// The mutating webhooks, in calling order.
    pub fn mutating(&self) -> Vec<Listed<MutatingWebhook>> {
        in_order(
            self.mutating.state(),
            |c| c.metadata.name.as_deref().unwrap_or_default(),
            |c| c.webhooks.as_deref().unwrap_or_default(),
        )
    }

    /// The validating webhooks, in order.
    pub fn validating(&self) -> Vec<Listed<ValidatingWebhook>> {
        in_order(
            self.validating.state(),
            |c| c.metadata.name.as_deref().unwrap_or_default(),
            |c| c.webhooks.as_deref().unwrap_or_default(),
        )
    }

    /// Whether the rules of some webhook satisfy `matches`, without copying any: every write
    /// asks, to skip admission when no webhook can match it.
    pub fn any_rules(&self, matches: impl Fn(&[RuleWithOperations]) -> bool) -> bool {
        let rules = |r: &Option<Vec<RuleWithOperations>>| matches(r.as_deref().unwrap_or_default());
        self.mutating.state().iter().flat_map(|c| c.webhooks.iter().flatten()).any(|w| rules(&w.rules))
            || self.validating.state().iter().flat_map(|c| c.webhooks.iter().flatten()).any(|w| rules(&w.rules))
    }
}
