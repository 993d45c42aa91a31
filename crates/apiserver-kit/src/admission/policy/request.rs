//! One write as the policies of either kind see it (k8s.io/apiserver's generic policy
//! dispatcher): whether a policy's `matchConstraints` and a binding's `matchResources` match it
//! and at which version, the params a binding selects, and the variables its expressions read
//! (`object`, `oldObject`, `request`, `namespaceObject`, `authorizer`), with the request's
//! Namespace looked up once and only when something needs it.

use super::kind::PolicyKind;
use super::matching::{Config, matches, rules_may_match};
use super::sources::Hook;
use crate::admission::review;
use crate::admission::webhooks::{attributes, labels_of, review_request, user_info};
use crate::cel::Value;
use crate::cel::authz::{Authorizer, ResourceCheck, User};
use crate::machinery::admission::Call;
use crate::machinery::error::{Error, Result};
use crate::machinery::version::Conversion;
use crate::namespaces::NamespaceCache;
use k8s_openapi::api::admissionregistration::v1::MatchResources;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The variables of a write at one version (`params` aside).
pub type Inputs = Arc<Vec<(&'static str, Value)>>;

/// What policies of either kind share: the namespaces and the authorizer.
pub struct Context {
    namespaces: Arc<NamespaceCache>,
    namespace_values: NamespaceValues,
    /// Answers the authorizer library's checks (without one, a check is an error decision).
    pub authorizer: Option<Arc<dyn Authorizer>>,
}

/// One write, with what is computed once for all policies.
pub struct Write<'c, 'v> {
    /// The write.
    pub call: &'c Call<'c>,
    /// The object it would store (at the stored version).
    pub object: Option<&'v Json>,
    /// The object stored before it.
    pub old: Option<&'v Json>,
    labels: (Option<ObjectMeta>, Option<ObjectMeta>),
    namespace: Option<Arc<Namespace>>,
    /// The variables at each version a policy matched.
    inputs: HashMap<String, Inputs>,
}

impl<'c, 'v> Write<'c, 'v> {
    /// `call` writing `object` over `old`.
    pub fn new(call: &'c Call<'c>, object: Option<&'v Json>, old: Option<&'v Json>) -> Self {
        let labels = (labels_of(object), labels_of(old));
        Write { call, object, old, labels, namespace: None, inputs: HashMap::new() }
    }
}

/// What a binding does for a write.
pub enum Bound {
    /// Its `matchResources` do not match: nothing.
    Skipped,
    /// It cannot be evaluated: a configuration error, with its message.
    Misconfigured(String),
    /// It applies, once per param (a `null` one when the policy or the binding names none).
    Params(Vec<Value>),
}

impl Context {
    /// Namespaces from `namespaces`, the authorizer library's checks answered by `authorizer`.
    pub fn new(namespaces: Arc<NamespaceCache>, authorizer: Option<Arc<dyn Authorizer>>) -> Self {
        Context { namespaces, namespace_values: NamespaceValues::default(), authorizer }
    }

    /// Whether `constraints` (a policy's, `None` when it has none) may match `call`, selectors
    /// and names aside.
    pub fn may_match(constraints: Option<&MatchResources>, call: &Call) -> bool {
        let attr = attributes(call, None, None);
        let versions: Vec<&str> = call.versions.iter().map(|c| c.version.as_str()).collect();
        constraints.is_none_or(|constraints| rules_may_match(constraints, &attr, &versions))
    }

    /// [`matches()`] for `write`, the namespace looked up when a selector needs it.
    pub async fn criteria(
        &self,
        criteria: &MatchResources,
        write: &mut Write<'_, '_>,
    ) -> std::result::Result<Option<String>, Config> {
        let selects_all = criteria.namespace_selector.as_ref().is_none_or(|s| *s == Default::default());
        let lookup = match selects_all || write.call.namespace.is_empty() {
            true => Ok(()),
            false => self.namespace(write).await.map(|_| ()),
        };
        let labels = write.namespace.as_ref().and_then(|n| n.metadata.labels.clone()).unwrap_or_default();
        let (object, old) = (write.labels.0.as_ref(), write.labels.1.as_ref());
        let attr = attributes(write.call, object, old);
        let versions: Vec<&str> = write.call.versions.iter().map(|c| c.version.as_str()).collect();
        let name = write_name(write.call, write.object);
        let found = matches(criteria, &attr, &versions, &name, |_| lookup.map(|()| labels));
        found.map(|version| version.map(str::to_string))
    }

    /// What `binding` of `hook` does for `write` (`CollectParams` after the binding matched).
    pub async fn bound<K: PolicyKind>(
        &self,
        hook: &Hook<K>,
        binding: &K::Binding,
        write: &mut Write<'_, '_>,
    ) -> Result<Bound> {
        if let Some(resources) = K::match_resources(binding) {
            match self.criteria(resources, write).await {
                Ok(Some(_)) => {}
                Ok(None) => return Ok(Bound::Skipped),
                Err(Config::Error(message)) => return Ok(Bound::Misconfigured(message)),
                Err(Config::Failed(error)) => return Err(error),
            }
        }
        let (Some(Ok(source)), Some(reference)) = (&hook.params, K::param_ref(binding)) else {
            return Ok(Bound::Params(vec![Value::Null]));
        };
        Ok(match source.collect(reference, write.call.namespace).await {
            Ok(params) => Bound::Params(params.iter().map(Value::from_json).collect()),
            Err(message) => Bound::Misconfigured(message),
        })
    }

    /// The request's Namespace, looked up once.
    pub async fn namespace(&self, write: &mut Write<'_, '_>) -> Result<Arc<Namespace>> {
        if let Some(known) = &write.namespace {
            return Ok(known.clone());
        }
        let found = self.namespaces.namespace(write.call.namespace).await?;
        write.namespace = Some(found.clone());
        Ok(found)
    }

    /// The variables of `write` at `version` (`params` aside), made once per version.
    pub async fn inputs(&self, write: &mut Write<'_, '_>, version: &str) -> Result<Inputs> {
        if let Some(known) = write.inputs.get(version) {
            return Ok(known.clone());
        }
        let namespace = match write.call.namespace.is_empty() {
            true => Value::Null,
            false => {
                let namespace = self.namespace(write).await?;
                self.namespace_values.value(&namespace)
            }
        };
        let call = write.call;
        let at = conversion_at(call, version)?;
        let convert = |object| object_variable(call, at, object);
        let inputs = Arc::new(vec![
            ("object", convert(write.object)?),
            ("oldObject", convert(write.old)?),
            ("request", request_variable(call, version)),
            ("namespaceObject", namespace),
            ("authorizer", authorizer_of(call)),
        ]);
        write.inputs.insert(version.to_string(), inputs.clone());
        Ok(inputs)
    }
}

/// The conversion of `call`'s objects to `version`.
pub(crate) fn conversion_at<'c>(call: &Call<'c>, version: &str) -> Result<&'c Conversion> {
    call.versions
        .iter()
        .find(|c| c.version == version)
        .ok_or_else(|| Error::Internal(format!("no conversion to version {version}")))
}

/// The `namespaceObject` of each namespace, made once per resourceVersion of its Namespace.
#[derive(Default)]
struct NamespaceValues(Mutex<HashMap<String, (Option<String>, Value)>>);

/// How many namespaces' values are kept before they are all made again.
const NAMESPACE_VALUES: usize = 10_000;

impl NamespaceValues {
    fn value(&self, namespace: &Namespace) -> Value {
        let name = namespace.metadata.name.clone().unwrap_or_default();
        let version = &namespace.metadata.resource_version;
        let mut values = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((seen, value)) = values.get(&name)
            && seen == version
        {
            return value.clone();
        }
        if values.len() >= NAMESPACE_VALUES {
            values.clear();
        }
        let value = Value::from_json(&namespace_object(namespace));
        values.insert(name, (version.clone(), value.clone()));
        value
    }
}

/// The `object` or `oldObject` variable: `object` (stored) as seen at version `at` of `call`'s
/// resource, null for none. Objects are stored at the first version: seen there, they need no
/// conversion.
pub(crate) fn object_variable(call: &Call, at: &Conversion, object: Option<&Json>) -> Result<Value> {
    let stored = call.versions.first().is_some_and(|first| first.version == at.version);
    Ok(match object {
        None => Value::Null,
        Some(object) if stored => Value::from_json(object),
        Some(object) => Value::from_json(&(at.from_hub)(object.clone())?),
    })
}

/// The `request` variable of `call` whose objects are seen at `version`
/// (`CreateAdmissionRequest`).
pub(crate) fn request_variable(call: &Call, version: &str) -> Value {
    let user = user_info(call);
    let request = review_request(call, version, "", &user, (None, None));
    Value::from_json(&review::policy_request(&request))
}

/// The `authorizer` variable of `call`: checks for its user, `requestResource` its resource.
pub(crate) fn authorizer_of(call: &Call) -> Value {
    let user = User::from(call.user);
    let check = ResourceCheck {
        group: call.resource.group.to_string(),
        resource: call.resource.plural.to_string(),
        subresource: call.subresource.name().unwrap_or_default().to_string(),
        namespace: call.namespace.to_string(),
        name: call.name.to_string(),
        ..Default::default()
    };
    crate::cel::authz::authorizer(user, Some(check))
}

/// The Namespace as policies read it (`CreateNamespaceObject`): its spec, status and metadata
/// but its managed fields and owners.
fn namespace_object(namespace: &Namespace) -> Json {
    let meta = &namespace.metadata;
    let metadata = ObjectMeta {
        name: meta.name.clone(),
        generate_name: meta.generate_name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        generation: meta.generation,
        creation_timestamp: meta.creation_timestamp.clone(),
        deletion_timestamp: meta.deletion_timestamp.clone(),
        deletion_grace_period_seconds: meta.deletion_grace_period_seconds,
        labels: meta.labels.clone(),
        annotations: meta.annotations.clone(),
        finalizers: meta.finalizers.clone(),
        ..Default::default()
    };
    let namespace = Namespace { metadata, spec: namespace.spec.clone(), status: namespace.status.clone() };
    let mut value = serde_json::to_value(namespace).unwrap_or_default();
    if let Some(fields) = value.as_object_mut() {
        // A typed Namespace, as Go's structs hold it, has no type fields.
        fields.remove("apiVersion");
        fields.remove("kind");
    }
    value
}

/// The name a write is known by (`extractResourceName`): the request's, the object's, its
/// `generateName`, or `Unknown`.
pub(crate) fn write_name(call: &Call, object: Option<&Json>) -> String {
    let field = |name: &str| object?.pointer(&format!("/metadata/{name}"))?.as_str().filter(|n| !n.is_empty());
    let name = Some(call.name).filter(|n| !n.is_empty()).or_else(|| field("name")).or_else(|| field("generateName"));
    name.unwrap_or("Unknown").to_string()
}
