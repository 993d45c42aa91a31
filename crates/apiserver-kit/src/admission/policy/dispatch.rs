//! One write against every bound policy, as k8s.io/apiserver's validating policy dispatcher
//! runs them: a policy whose `matchConstraints` match, then each of its bindings whose
//! `matchResources` match, evaluated once per param the binding selects, with the objects at
//! the version the policy matched. A failed validation does what the binding's
//! `validationActions` say: `Deny` fails the write with the first denial's `Status` (`422
//! Invalid` unless the validation names another reason), worded as the kube-apiserver words it;
//! `Warn` adds a `Warning` header; `Audit` adds the
//! `validation.policy.admission.k8s.io/validation_failure` audit annotation. A policy or
//! binding that cannot be evaluated (no match constraints, params missing or not found under
//! `parameterNotFoundAction: Deny`, a param kind the cluster does not serve) denies under
//! `failurePolicy: Fail` and is skipped under `Ignore`.

use super::matching::{Config, matches, rules_may_match};
use super::sources::{Hook, PolicySources};
use super::validator::{Annotation, Validated, validate};
use crate::admission::review;
use crate::admission::webhooks::{attributes, labels_of, review_request, user_info};
use crate::cel::Value;
use crate::cel::authz::{Authorizer, ResourceCheck, User};
use crate::machinery::admission::Call;
use crate::machinery::error::{Error, GroupResource, Result};
use crate::machinery::version::Conversion;
use crate::namespaces::NamespaceCache;
use k8s_openapi::api::admissionregistration::v1::{MatchResources, ValidatingAdmissionPolicyBinding};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Status, StatusCause};
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// How long a write waits for the policies to be listed at start.
const SYNC_WAIT: Duration = Duration::from_secs(5);
/// k8s.io/apiserver's `maxAuditAnnotationValueLength`.
const MAX_ANNOTATION: usize = 10 * 1024;
/// k8s.io/apiserver's `maxValidationFailures`.
const MAX_FAILURES: usize = 50;
/// The audit annotation of `Audit` actions.
const VALIDATION_FAILURE: &str = "validation.policy.admission.k8s.io/validation_failure";

/// The cluster's ValidatingAdmissionPolicies, enforced for this server's writes.
pub struct ValidatingPolicies {
    sources: PolicySources,
    namespaces: Arc<NamespaceCache>,
    namespace_values: NamespaceValues,
    authorizer: Option<Arc<dyn Authorizer>>,
}

/// The `namespaceObject` of each namespace, made once per resourceVersion of its Namespace.
#[derive(Default)]
struct NamespaceValues(std::sync::Mutex<HashMap<String, (Option<String>, Value)>>);

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

/// A denial, before it becomes the write's `Status`.
struct Denied {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: Option<String>,
}

/// One `Audit` action's record (`ValidationFailureValue`).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Failure {
    message: String,
    policy: String,
    binding: String,
    expression_index: usize,
    validation_actions: Vec<String>,
}

/// What the policies decided about one write so far.
#[derive(Default)]
struct Outcome {
    denied: Vec<Denied>,
    warnings: Vec<String>,
    failures: Vec<Failure>,
}

/// One write as the policies see it, with what is computed once for all of them.
struct Write<'c, 'v> {
    call: &'c Call<'c>,
    object: Option<&'v Json>,
    old: Option<&'v Json>,
    labels: (Option<ObjectMeta>, Option<ObjectMeta>),
    namespace: Option<Arc<Namespace>>,
    /// The variables at each version a policy matched.
    inputs: HashMap<String, Arc<Vec<(&'static str, Value)>>>,
}

impl ValidatingPolicies {
    /// The policies of `sources`, with namespaces from `namespaces` and the authorizer
    /// library's checks answered by `authorizer` (without one, a check is an error decision).
    pub fn new(
        sources: PolicySources,
        namespaces: Arc<NamespaceCache>,
        authorizer: Option<Arc<dyn Authorizer>>,
    ) -> Self {
        Self { sources, namespaces, namespace_values: NamespaceValues::default(), authorizer }
    }

    /// Whether some bound policy's rules may match `call` (selectors and names aside); `true`
    /// until the policies are listed.
    pub fn may_apply(&self, call: &Call) -> bool {
        if !self.sources.synced() {
            return true;
        }
        let attr = attributes(call, None, None);
        let versions: Vec<&str> = call.versions.iter().map(|c| c.version.as_str()).collect();
        self.sources.snapshot().hooks.iter().any(|hook| {
            let constraints = hook.policy.spec.as_ref().and_then(|s| s.match_constraints.as_ref());
            constraints.is_none_or(|constraints| rules_may_match(constraints, &attr, &versions))
        })
    }

    /// Evaluates every bound policy for `call` on `object` over `old` (stored objects); the
    /// warnings of `Warn` actions, or the denial.
    pub async fn validate(&self, call: &Call<'_>, object: Option<&Json>, old: Option<&Json>) -> Result<Vec<String>> {
        if !self.sources.synced() && tokio::time::timeout(SYNC_WAIT, self.sources.wait_synced()).await.is_err() {
            return Err(Error::Forbidden("not yet ready to handle request".into()));
        }
        let snapshot = self.sources.snapshot();
        if snapshot.hooks.is_empty() {
            return Ok(Vec::new());
        }
        let labels = (labels_of(object), labels_of(old));
        let mut write = Write { call, object, old, labels, namespace: None, inputs: HashMap::new() };
        let mut outcome = Outcome::default();
        for hook in &snapshot.hooks {
            self.dispatch(hook, &mut write, &mut outcome).await?;
        }
        outcome.finish(call, object)
    }

    /// Evaluates one policy and its bindings.
    async fn dispatch(&self, hook: &Hook, write: &mut Write<'_, '_>, outcome: &mut Outcome) -> Result<()> {
        let policy = hook.policy.metadata.name.clone().unwrap_or_default();
        let failure = &hook.compiled.failure_policy;
        let constraints = hook.policy.spec.as_ref().and_then(|s| s.match_constraints.as_ref());
        let Some(constraints) = constraints else {
            let message = "policy contained no match constraints, a required field".to_string();
            outcome.configuration_error(failure, &policy, None, message);
            return Ok(());
        };
        let version = match self.criteria(constraints, write).await {
            Ok(Some(version)) => version,
            Ok(None) => return Ok(()),
            Err(Config::Error(message)) => {
                outcome.configuration_error(failure, &policy, None, message);
                return Ok(());
            }
            Err(Config::Failed(error)) => return Err(error),
        };
        if let Some(Err(message)) = &hook.params {
            outcome.configuration_error(failure, &policy, None, message.clone());
            return Ok(());
        }
        let mut annotations = Annotations::default();
        for binding in &hook.bindings {
            let Some(params) = self.binding_params(hook, binding, write, outcome).await? else { continue };
            let inputs = self.inputs(write, &version).await?;
            for param in params {
                let mut all: Vec<(&str, Value)> = inputs.iter().cloned().collect();
                all.push(("params", param));
                let validated = validate(&hook.compiled, &all, self.authorizer.as_deref());
                outcome.record(&policy, binding, validated, &mut annotations);
            }
        }
        annotations.publish(&policy);
        Ok(())
    }

    /// The params `binding` evaluates its policy with, when its `matchResources` match the
    /// write (a `null` param when the policy or the binding names none); `None` when it does
    /// not apply or cannot (a configuration error, recorded in `outcome`).
    async fn binding_params(
        &self,
        hook: &Hook,
        binding: &ValidatingAdmissionPolicyBinding,
        write: &mut Write<'_, '_>,
        outcome: &mut Outcome,
    ) -> Result<Option<Vec<Value>>> {
        let policy = hook.policy.metadata.name.as_deref().unwrap_or_default();
        let name = binding.metadata.name.as_deref();
        let failure = &hook.compiled.failure_policy;
        if let Some(resources) = &binding.spec.match_resources {
            match self.criteria(resources, write).await {
                Ok(Some(_)) => {}
                Ok(None) => return Ok(None),
                Err(Config::Error(m)) => {
                    outcome.configuration_error(failure, policy, name.or(Some("")), m);
                    return Ok(None);
                }
                Err(Config::Failed(error)) => return Err(error),
            }
        }
        let (Some(Ok(source)), Some(reference)) = (&hook.params, &binding.spec.param_ref) else {
            return Ok(Some(vec![Value::Null]));
        };
        match source.collect(reference, write.call.namespace).await {
            Ok(params) => Ok(Some(params.iter().map(Value::from_json).collect())),
            Err(m) => {
                outcome.configuration_error(failure, policy, name.or(Some("")), m);
                Ok(None)
            }
        }
    }

    /// [`matches`] for `write`, the namespace looked up when a selector needs it.
    async fn criteria(
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

    /// The request's Namespace, looked up once.
    async fn namespace(&self, write: &mut Write<'_, '_>) -> Result<Arc<Namespace>> {
        if let Some(known) = &write.namespace {
            return Ok(known.clone());
        }
        let found = self.namespaces.namespace(write.call.namespace).await?;
        write.namespace = Some(found.clone());
        Ok(found)
    }

    /// The variables of `write` at `version` (`params` aside).
    async fn inputs(&self, write: &mut Write<'_, '_>, version: &str) -> Result<Arc<Vec<(&'static str, Value)>>> {
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
        let Some(at) = call.versions.iter().find(|c| c.version == version) else {
            return Err(Error::Internal(format!("no conversion to version {version}")));
        };
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
fn write_name(call: &Call, object: Option<&Json>) -> String {
    let field = |name: &str| object?.pointer(&format!("/metadata/{name}"))?.as_str().filter(|n| !n.is_empty());
    let name = Some(call.name).filter(|n| !n.is_empty()).or_else(|| field("name")).or_else(|| field("generateName"));
    name.unwrap_or("Unknown").to_string()
}

impl Outcome {
    /// A policy or binding that cannot be evaluated (`addConfigError`).
    fn configuration_error(
        &mut self,
        failure: &super::compiled::FailurePolicy,
        policy: &str,
        binding: Option<&str>,
        message: String,
    ) {
        use super::compiled::FailurePolicy;
        let message = match (failure, binding) {
            (FailurePolicy::Ignore, _) => return,
            (FailurePolicy::Fail, None) => format!("failed to configure policy: {message}"),
            (FailurePolicy::Fail, Some(_)) => format!("failed to configure binding: {message}"),
            (FailurePolicy::Unrecognized(other), _) => format!("unrecognized failure policy: '{other}'"),
        };
        let binding = binding.map(str::to_string);
        self.denied.push(Denied { policy: policy.to_string(), binding, message, reason: None });
    }

    /// What one binding's evaluation decided, by its `validationActions`.
    fn record(
        &mut self,
        policy: &str,
        binding: &ValidatingAdmissionPolicyBinding,
        validated: Validated,
        annotations: &mut Annotations,
    ) {
        let name = binding.metadata.name.clone().unwrap_or_default();
        let actions = binding.spec.validation_actions.clone();
        for (index, decision) in validated.decisions.into_iter().enumerate().filter(|(_, d)| d.deny) {
            for action in &actions {
                match action.as_str() {
                    "Deny" => self.denied.push(Denied {
                        policy: policy.to_string(),
                        binding: Some(name.clone()),
                        message: decision.message.clone(),
                        reason: decision.reason.clone(),
                    }),
                    "Warn" => self.warnings.push(format!(
                        "Validation failed for ValidatingAdmissionPolicy '{policy}' with binding '{name}': {}",
                        decision.message
                    )),
                    "Audit" => self.failures.push(Failure {
                        message: decision.message.clone(),
                        policy: policy.to_string(),
                        binding: name.clone(),
                        expression_index: index,
                        validation_actions: actions.clone(),
                    }),
                    _ => {}
                }
            }
        }
        for annotation in validated.annotations {
            match annotation {
                Annotation::Publish { key, value } => annotations.add(key, value),
                Annotation::Error(message) => {
                    let binding = Some(name.clone());
                    self.denied.push(Denied { policy: policy.to_string(), binding, message, reason: None });
                }
                Annotation::Exclude => {}
            }
        }
    }

    /// The write's end: the `Audit` annotation, then the first denial, else the warnings.
    fn finish(mut self, call: &Call, object: Option<&Json>) -> Result<Vec<String>> {
        if !self.failures.is_empty() {
            self.failures.truncate(MAX_FAILURES);
            let value = serde_json::to_string(&self.failures).unwrap_or_default();
            crate::audit::annotate(VALIDATION_FAILURE.into(), go_html_escaped(&value));
        }
        match self.denied.first() {
            Some(denied) => {
                // The `Warn` actions' warnings go out with the denial.
                crate::machinery::recorded_warnings::record(&self.warnings);
                Err(Error::Refused(Box::new(denial(call, object, denied))))
            }
            None => Ok(self.warnings),
        }
    }
}

/// JSON as Go's `encoding/json` writes it: `<`, `>` and `&` escaped (they only occur in
/// strings).
fn go_html_escaped(json: &str) -> String {
    json.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
}

/// The `Status` of a denial (`admission.NewForbidden` with the denial's reason and code).
fn denial(call: &Call, object: Option<&Json>, denied: &Denied) -> Status {
    let said = match &denied.binding {
        Some(binding) => format!(
            "ValidatingAdmissionPolicy '{}' with binding '{binding}' denied request: {}",
            denied.policy, denied.message
        ),
        None => format!("ValidatingAdmissionPolicy '{}' denied request: {}", denied.policy, denied.message),
    };
    let resource = GroupResource { group: call.resource.group, resource: call.resource.plural };
    let name = write_name(call, object);
    let causes = vec![StatusCause { message: Some(said.clone()), ..Default::default() }];
    // `admission.NewForbidden`, its reason and code then replaced by the validation's.
    let mut status = Error::ForbiddenObject { resource, name, detail: said, causes }.to_status();
    let reason = denied.reason.clone().filter(|r| !r.is_empty()).unwrap_or_else(|| "Invalid".into());
    status.code = Some(match reason.as_str() {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    });
    status.reason = Some(reason);
    status
}

/// A policy's published audit annotations (`auditAnnotationCollector`): each key's distinct
/// values, joined.
#[derive(Default)]
struct Annotations(BTreeMap<String, Vec<String>>);

impl Annotations {
    fn add(&mut self, key: String, mut value: String) {
        if value.len() > MAX_ANNOTATION {
            let mut end = MAX_ANNOTATION;
            while !value.is_char_boundary(end) {
                end -= 1;
            }
            value.truncate(end);
        }
        let values = self.0.entry(key).or_default();
        if !values.contains(&value) {
            values.push(value);
        }
    }

    fn publish(self, policy: &str) {
        for (key, values) in self.0 {
            crate::audit::annotate(format!("{policy}/{key}"), values.join(", "));
        }
    }
}
