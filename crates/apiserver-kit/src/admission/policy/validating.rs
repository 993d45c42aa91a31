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

use super::kind::{PolicyKind, Validating};
use super::matching::Config;
use super::request::{Bound, Context, Write, write_name};
use super::sources::{Hook, PolicySources};
use super::validator::{Annotation, Validated, validate};
use crate::cel::Value;
use crate::cel::authz::Authorizer;
use crate::machinery::admission::Call;
use crate::machinery::error::{Error, GroupResource, Result};
use crate::namespaces::NamespaceCache;
use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusCause};
use serde_json::Value as Json;
use std::collections::BTreeMap;
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
    sources: PolicySources<Validating>,
    context: Context,
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

impl ValidatingPolicies {
    /// The policies of `sources`, with namespaces from `namespaces` and the authorizer
    /// library's checks answered by `authorizer` (without one, a check is an error decision).
    pub fn new(
        sources: PolicySources<Validating>,
        namespaces: Arc<NamespaceCache>,
        authorizer: Option<Arc<dyn Authorizer>>,
    ) -> Self {
        Self { sources, context: Context::new(namespaces, authorizer) }
    }

    /// Whether some bound policy's rules may match `call` (selectors and names aside); `true`
    /// until the policies are listed.
    pub fn may_apply(&self, call: &Call) -> bool {
        if !self.sources.synced() {
            return true;
        }
        let snapshot = self.sources.snapshot();
        snapshot.hooks.iter().any(|hook| Context::may_match(Validating::match_constraints(&hook.policy), call))
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
        let mut write = Write::new(call, object, old);
        let mut outcome = Outcome::default();
        for hook in &snapshot.hooks {
            self.dispatch(hook, &mut write, &mut outcome).await?;
        }
        outcome.finish(call, object)
    }

    /// Evaluates one policy and its bindings.
    async fn dispatch(&self, hook: &Hook<Validating>, write: &mut Write<'_, '_>, outcome: &mut Outcome) -> Result<()> {
        let policy = hook.policy.metadata.name.clone().unwrap_or_default();
        let failure = &hook.compiled.failure_policy;
        let Some(constraints) = Validating::match_constraints(&hook.policy) else {
            let message = "policy contained no match constraints, a required field".to_string();
            outcome.configuration_error(failure, &policy, None, message);
            return Ok(());
        };
        let version = match self.context.criteria(constraints, write).await {
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
            let params = match self.context.bound(hook, binding, write).await? {
                Bound::Skipped => continue,
                Bound::Misconfigured(message) => {
                    let name = binding.metadata.name.as_deref().unwrap_or_default();
                    outcome.configuration_error(failure, &policy, Some(name), message);
                    continue;
                }
                Bound::Params(params) => params,
            };
            let inputs = self.context.inputs(write, &version).await?;
            for param in params {
                let mut all: Vec<(&str, Value)> = inputs.iter().cloned().collect();
                all.push(("params", param));
                let validated = validate(&hook.compiled, &all, self.context.authorizer.as_deref());
                outcome.record(&policy, binding, validated, &mut annotations);
            }
        }
        annotations.publish(&policy);
        Ok(())
    }
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
