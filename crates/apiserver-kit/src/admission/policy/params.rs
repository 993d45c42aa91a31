//! The params of policies: for each `paramKind` a policy names, a reflector over that resource
//! of the cluster (ConfigMaps, a CRD's objects, this server's own resources through the
//! aggregator), started when a policy first names it and stopped when none does any more, and
//! the lookup of a binding's `paramRef` in it as k8s.io/apiserver's `CollectParams` does: by
//! name (a miss is looked up once in the cluster, as it may have been created a moment ago) or
//! by selector, in the request's namespace unless the ref names one, with
//! `parameterNotFoundAction: Deny` failing the binding when none is found.

use super::super::WAITING;
use crate::reflect::{Purpose, reflect};
use k8s_openapi::api::admissionregistration::v1::{ParamKind, ParamRef};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, TypeMeta};
use kube::core::{Selector, SelectorExt};
use kube::discovery::Scope;
use kube::runtime::reflector::{ObjectRef, Store};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long a lookup waits for a new reflector's first list, as k8s.io/apiserver waits.
const SYNC_WAIT: Duration = Duration::from_secs(1);

/// The objects of one param kind.
pub struct ParamSource {
    store: Store<DynamicObject>,
    resource: ApiResource,
    namespaced: bool,
    kind: ParamKind,
    client: kube::Client,
    stopping: CancellationToken,
}

/// Every param kind some policy names, by `apiVersion` and `kind`.
pub struct ParamSources {
    client: kube::Client,
    stopping: CancellationToken,
    sources: Mutex<HashMap<(String, String), Arc<ParamSource>>>,
}

/// `ParamKind.String()` of Go's generated code.
fn go_string(kind: &ParamKind) -> String {
    let field = |v: &Option<String>| v.clone().unwrap_or_default();
    format!("&ParamKind{{APIVersion:{},Kind:{},}}", field(&kind.api_version), field(&kind.kind))
}

/// The group, version and kind of `kind`, as `schema.ParseGroupVersion` reads it.
fn group_version_kind(kind: &ParamKind) -> Result<GroupVersionKind, String> {
    let api_version = kind.api_version.as_deref().unwrap_or_default();
    let (group, version) = match api_version.split('/').collect::<Vec<_>>()[..] {
        [version] => ("", version),
        [group, version] => (group, version),
        _ => {
            let error = format!("unexpected GroupVersion string: {api_version}");
            return Err(format!("failed to parse paramKind APIVersion: {error}"));
        }
    };
    Ok(GroupVersionKind::gvk(group, version, kind.kind.as_deref().unwrap_or_default()))
}

impl ParamSources {
    /// No param kind watched yet.
    pub fn new(client: kube::Client, stopping: CancellationToken) -> Self {
        Self { client, stopping, sources: Mutex::new(HashMap::new()) }
    }

    /// The source of `kind`, started now if no policy named it before; the configuration error
    /// of a policy naming a kind the cluster does not serve.
    pub async fn ensure(&self, kind: &ParamKind) -> Result<Arc<ParamSource>, String> {
        let key = (kind.api_version.clone().unwrap_or_default(), kind.kind.clone().unwrap_or_default());
        if let Some(known) = self.lock().get(&key) {
            return Ok(known.clone());
        }
        let gvk = group_version_kind(kind)?;
        let (resource, capabilities) = kube::discovery::pinned_kind(&self.client, &gvk).await.map_err(|_| {
            format!(
                "failed to find resource referenced by paramKind: '{}/{}, Kind={}'",
                gvk.group, gvk.version, gvk.kind
            )
        })?;
        let stopping = self.stopping.child_token();
        let api = Api::<DynamicObject>::all_with(self.client.clone(), &resource);
        let purpose = Purpose { keep_managed_fields: true, ..WAITING };
        let store = reflect(api, resource.clone(), stopping.clone(), purpose, || {});
        tracing::info!(param_kind = %go_string(kind), "watching the params of admission policies");
        let source = Arc::new(ParamSource {
            store,
            namespaced: capabilities.scope == Scope::Namespaced,
            resource,
            kind: kind.clone(),
            client: self.client.clone(),
            stopping,
        });
        Ok(self.lock().entry(key).or_insert(source).clone())
    }

    /// Stops watching the kinds no policy names any more (`used`: `apiVersion` and `kind`).
    pub fn retain(&self, used: &[(String, String)]) {
        self.lock().retain(|key, source| {
            let keep = used.contains(key);
            if !keep {
                source.stopping.cancel();
            }
            keep
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Arc<ParamSource>>> {
        self.sources.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl ParamSource {
    /// The params `reference` selects for a request in `namespace` (`CollectParams`): the
    /// configuration error's message when it cannot.
    pub async fn collect(&self, reference: &ParamRef, namespace: &str) -> Result<Vec<serde_json::Value>, String> {
        let scope = match (self.namespaced, reference.namespace.as_deref().filter(|n| !n.is_empty())) {
            (true, Some(named)) => Some(named),
            (true, None) if namespace.is_empty() => {
                return Err(
                    "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into()
                );
            }
            (true, None) => Some(namespace),
            (false, Some(_)) => {
                return Err("paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into());
            }
            (false, None) => None,
        };
        if tokio::time::timeout(SYNC_WAIT, self.store.wait_until_ready()).await.is_err() {
            return Err(format!("paramKind kind `{}` not yet synced to use for admission", go_string(&self.kind)));
        }
        let name = reference.name.as_deref().filter(|n| !n.is_empty());
        let found = match (name, &reference.selector) {
            (Some(_), Some(_)) => return Err("paramRef.name and paramRef.selector are mutually exclusive".into()),
            (Some(name), None) => self.named(name, scope).await?.into_iter().collect(),
            (None, Some(selector)) => self.selected(selector, scope)?,
            (None, None) => return Err("one of name or selector must be provided".into()),
        };
        if found.is_empty() && reference.parameter_not_found_action.as_deref() == Some("Deny") {
            return Err("no params found for policy binding with `Deny` parameterNotFoundAction".into());
        }
        Ok(found.into_iter().map(|object| self.typed(object)).collect())
    }

    /// The object `name`, from the store or, when it holds none, from the cluster.
    async fn named(&self, name: &str, namespace: Option<&str>) -> Result<Option<DynamicObject>, String> {
        let mut reference = ObjectRef::new_with(name, self.resource.clone());
        if let Some(namespace) = namespace {
            reference = reference.within(namespace);
        }
        if let Some(cached) = self.store.get(&reference) {
            return Ok(Some((*cached).clone()));
        }
        let api = match namespace {
            Some(namespace) => Api::<DynamicObject>::namespaced_with(self.client.clone(), namespace, &self.resource),
            None => Api::<DynamicObject>::all_with(self.client.clone(), &self.resource),
        };
        api.get_opt(name).await.map_err(|e| e.to_string())
    }

    /// The objects `selector` selects.
    fn selected(
        &self,
        selector: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
        namespace: Option<&str>,
    ) -> Result<Vec<DynamicObject>, String> {
        let selector = Selector::try_from(selector.clone()).map_err(|e| e.0.to_string())?;
        let empty = Default::default();
        let selected = self.store.state().into_iter().filter(|object| {
            namespace.is_none_or(|n| object.metadata.namespace.as_deref() == Some(n))
                && selector.matches(object.metadata.labels.as_ref().unwrap_or(&empty))
        });
        Ok(selected.map(|object| (*object).clone()).collect())
    }

    /// `object` as a policy reads it, with the `apiVersion` and `kind` of its `paramKind` when
    /// it came without them.
    fn typed(&self, mut object: DynamicObject) -> serde_json::Value {
        if object.types.is_none() {
            object.types = Some(TypeMeta {
                api_version: self.kind.api_version.clone().unwrap_or_default(),
                kind: self.kind.kind.clone().unwrap_or_default(),
            });
        }
        serde_json::to_value(object).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_kinds_are_parsed_and_written_as_go_does() {
        let kind = ParamKind { api_version: Some("farm.example.com/v1".into()), kind: Some("Llama".into()) };
        assert_eq!(go_string(&kind), "&ParamKind{APIVersion:farm.example.com/v1,Kind:Llama,}");
        let gvk = group_version_kind(&kind).unwrap();
        assert_eq!((gvk.group.as_str(), gvk.version.as_str(), gvk.kind.as_str()), ("farm.example.com", "v1", "Llama"));
        let core = group_version_kind(&ParamKind { api_version: Some("v1".into()), kind: Some("ConfigMap".into()) });
        assert_eq!(core.unwrap().group, "");
        let bad = ParamKind { api_version: Some("a/b/c".into()), kind: None };
        assert_eq!(
            group_version_kind(&bad).unwrap_err(),
            "failed to parse paramKind APIVersion: unexpected GroupVersion string: a/b/c"
        );
    }
}
