//! One write against every bound MutatingAdmissionPolicy, as k8s.io/apiserver's mutating
//! policy dispatcher runs them (creates, updates and connects; never deletes): a policy whose
//! `matchConstraints` match, then each of its bindings whose `matchResources` match, once per
//! param, in order of policy and binding names. Its match conditions decide whether it applies;
//! then each mutation, on the object as the earlier ones left it, seen at the version the policy
//! matched: an `ApplyConfiguration` merged as server-side apply merges ([`super::patches`]), a
//! `JSONPatch` applied (a failed `test` leaves the object as it was).
//!
//! A policy or binding that cannot be evaluated, or a mutation that fails, is an error under
//! `failurePolicy: Fail` (skipped under `Ignore`): the write is refused with 403 and the first
//! error, worded as the generic policy dispatcher words it (`policy 'p' with binding 'b' denied
//! request: …`). Reinvocation follows `reinvocationPolicy` ([`crate::admission::reinvocation`]).

use super::compiled::{CompiledMutations, FailurePolicy};
use super::evaluate::{BUDGET, Outcome, for_input};
use super::kind::{Mutating, PolicyKind};
use super::matching::Config;
use super::request::{Bound, Context, Inputs, Write, conversion_at, object_variable, write_name};
use super::sources::{Hook, PolicySources};
use super::validator::match_conditions;
use crate::admission::reinvocation::{Reinvocation, Round};
use crate::cel::Value;
use crate::cel::authz::Authorizer;
use crate::machinery::admission::{Call, Operation};
use crate::machinery::error::{Error, GroupResource, Result};
use crate::namespaces::NamespaceCache;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::StatusCause;
use kube::Resource;
use serde_json::Value as Json;
use std::sync::Arc;
use std::time::Duration;

/// How long a write waits for the policies to be listed at start.
const SYNC_WAIT: Duration = Duration::from_secs(5);

/// The cluster's MutatingAdmissionPolicies, applied to this server's writes.
pub struct MutatingPolicies {
    sources: PolicySources<Mutating>,
    context: Context,
}

/// What names one invocation across the rounds: the policy, the binding and the param.
pub type Key = (String, String, Option<(String, String)>);

/// One policy error (`PolicyError`), before it becomes the write's refusal.
struct PolicyError {
    policy: String,
    binding: Option<String>,
    message: String,
    /// `Invalid` for errors of evaluation; none (the refusal's `Forbidden`) for configuration.
    invalid: bool,
    failure: FailurePolicy,
}

/// One round of the policies so far: the chain's round, the policies' reinvocation state, the
/// errors, and whether some mutation was applied (`VersionedAttributes.Dirty`).
struct Progress<'r> {
    round: &'r mut Round,
    state: &'r mut Reinvocation<Key>,
    errors: Vec<PolicyError>,
    dirty: bool,
}

/// One invocation: a policy, one of its bindings, one param, at the version it matched.
struct Invocation<'h> {
    hook: &'h Hook<Mutating>,
    binding: String,
    param: (Value, Option<(String, String)>),
    version: String,
}

impl MutatingPolicies {
    /// The policies of `sources`, with namespaces from `namespaces` and the authorizer
    /// library's checks answered by `authorizer`.
    pub fn new(
        sources: PolicySources<Mutating>,
        namespaces: Arc<NamespaceCache>,
        authorizer: Option<Arc<dyn Authorizer>>,
    ) -> Self {
        Self { sources, context: Context::new(namespaces, authorizer) }
    }

    /// Whether some bound policy's rules may match `call` (selectors and names aside); `true`
    /// until the policies are listed. Deletes never match.
    pub fn may_apply(&self, call: &Call) -> bool {
        if call.operation == Operation::Delete {
            return false;
        }
        if !self.sources.synced() {
            return true;
        }
        let snapshot = self.sources.snapshot();
        snapshot.hooks.iter().any(|hook| Context::may_match(Mutating::match_constraints(&hook.policy), call))
    }

    /// One round of the policies on `object` (stored objects, mutated in place) over `old`.
    pub async fn mutate(
        &self,
        call: &Call<'_>,
        object: &mut Option<Json>,
        old: Option<&Json>,
        round: &mut Round,
        state: &mut Reinvocation<Key>,
    ) -> Result<()> {
        if !self.sources.synced() && tokio::time::timeout(SYNC_WAIT, self.sources.wait_synced()).await.is_err() {
            return Err(Error::Forbidden("not yet ready to handle request".into()));
        }
        let snapshot = self.sources.snapshot();
        if snapshot.hooks.is_empty() || call.operation == Operation::Delete {
            return Ok(());
        }
        state.start(round, object.as_ref());
        // Policies and bindings are matched against the object as the round found it.
        let found = object.clone();
        let mut write = Write::new(call, found.as_ref(), old);
        let mut progress = Progress { round, state, errors: Vec::new(), dirty: false };
        let mut invocations = Vec::new();
        for hook in &snapshot.hooks {
            self.invocations(hook, &mut write, &mut invocations, &mut progress.errors).await?;
        }
        for invocation in &invocations {
            self.invoke(invocation, &mut write, object, &mut progress).await?;
        }
        if progress.dirty {
            progress.state.changed(progress.round);
        }
        progress.state.finish(object.as_ref());
        refusal(call, object.as_ref(), progress.errors)
    }

    /// The invocations of `hook` for `write`; its configuration errors go to `errors`.
    async fn invocations<'h>(
        &self,
        hook: &'h Hook<Mutating>,
        write: &mut Write<'_, '_>,
        invocations: &mut Vec<Invocation<'h>>,
        errors: &mut Vec<PolicyError>,
    ) -> Result<()> {
        let policy = hook.policy.meta().name.clone().unwrap_or_default();
        let failure = hook.compiled.failure_policy.clone();
        let configuration = |binding: Option<&str>, message: String| {
            let message = match binding {
                None => format!("failed to configure policy: {message}"),
                Some(_) => format!("failed to configure binding: {message}"),
            };
            let (policy, binding, failure) = (policy.clone(), binding.map(str::to_string), failure.clone());
            PolicyError { policy, binding, message, invalid: false, failure }
        };
        let Some(constraints) = Mutating::match_constraints(&hook.policy) else {
            let message = "policy contained no match constraints, a required field".to_string();
            errors.push(configuration(None, message));
            return Ok(());
        };
        let version = match self.context.criteria(constraints, write).await {
            Ok(Some(version)) => version,
            Ok(None) => return Ok(()),
            Err(Config::Error(message)) => {
                errors.push(configuration(None, message));
                return Ok(());
            }
            Err(Config::Failed(error)) => return Err(error),
        };
        if let Some(Err(message)) = &hook.params {
            errors.push(configuration(None, message.clone()));
            return Ok(());
        }
        for binding in &hook.bindings {
            let name = binding.meta().name.clone().unwrap_or_default();
            match self.context.bound(hook, binding, write).await? {
                Bound::Skipped => {}
                Bound::Misconfigured(message) => errors.push(configuration(Some(&name), message)),
                Bound::Params(params) => {
                    for param in params {
                        let named = param_name(&param);
                        let (binding, version) = (name.clone(), version.clone());
                        invocations.push(Invocation { hook, binding, param: (param, named), version });
                    }
                }
            }
        }
        Ok(())
    }

    /// Runs one invocation's mutations on `object` (`dispatchInvocations`' loop body).
    async fn invoke(
        &self,
        invocation: &Invocation<'_>,
        write: &mut Write<'_, '_>,
        object: &mut Option<Json>,
        progress: &mut Progress<'_>,
    ) -> Result<()> {
        let compiled = &invocation.hook.compiled;
        let policy = invocation.hook.policy.meta().name.clone().unwrap_or_default();
        let error = |message: String| PolicyError {
            policy: policy.clone(),
            binding: Some(invocation.binding.clone()),
            message,
            invalid: true,
            failure: compiled.failure_policy.clone(),
        };
        if compiled.mutations.iter().any(Option::is_none) {
            let expected = compiled.mutations.len();
            let got = compiled.mutations.iter().flatten().count();
            return Err(Error::Internal(format!(
                "expected {expected} compiled evaluators for policy {policy}, got {got}"
            )));
        }
        let authorizer = self.context.authorizer.as_deref();
        if !compiled.match_conditions.is_empty() {
            let inputs = self.inputs(invocation, write, object.as_ref(), false).await?;
            let conditions: Vec<_> = compiled.match_conditions.iter().map(|(_, e)| e).collect();
            match match_conditions(&conditions, &compiled.variables, &inputs, authorizer) {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(message) => {
                    progress.errors.push(error(message));
                    return Ok(());
                }
            }
        }
        let key: Key = (policy.clone(), invocation.binding.clone(), invocation.param.1.clone());
        if progress.state.skips(progress.round, &key) {
            return Ok(());
        }
        let before = object.clone();
        for mutation in compiled.mutations.iter().flatten() {
            let Some(current) = object.as_ref() else { continue };
            let inputs = self.inputs(invocation, write, Some(current), true).await?;
            let at = conversion_at(write.call, &invocation.version)?;
            let outcome = evaluate(&mutation.expression, &inputs, compiled, authorizer);
            let seen = (at.from_hub)(current.clone())?;
            match super::patches::patch(mutation.patch_type, outcome, seen, &(at.schema)())? {
                Ok(patched) => {
                    *object = Some((at.to_hub)(patched)?);
                    progress.dirty = true;
                }
                Err(message) => progress.errors.push(error(message)),
            }
        }
        progress.state.invoked(progress.round, key, *object != before, compiled.reinvoked);
        Ok(())
    }

    /// The variables of `invocation` with `object` as the object written (the write's others
    /// made once per version; without the Namespace for match conditions, which k8s.io/apiserver
    /// gives none), its param among them.
    async fn inputs(
        &self,
        invocation: &Invocation<'_>,
        write: &mut Write<'_, '_>,
        object: Option<&Json>,
        namespaced: bool,
    ) -> Result<Vec<(&'static str, Value)>> {
        let inputs: Inputs = self.context.inputs(write, &invocation.version).await?;
        let object = object_variable(write.call, conversion_at(write.call, &invocation.version)?, object)?;
        let mut all: Vec<(&str, Value)> = inputs
            .iter()
            .map(|(name, value)| match (*name, namespaced) {
                ("object", _) => (*name, object.clone()),
                ("namespaceObject", false) => (*name, Value::Null),
                _ => (*name, value.clone()),
            })
            .collect();
        all.push(("params", invocation.param.0.clone()));
        Ok(all)
    }
}

/// Evaluates one mutation's expression with the policy's variables, within the runtime budget.
fn evaluate(
    expression: &super::compiled::Expression,
    inputs: &[(&str, Value)],
    compiled: &CompiledMutations,
    authorizer: Option<&dyn Authorizer>,
) -> std::result::Result<Value, String> {
    if let Err(error) = &expression.program {
        // A patcher's compilation errors are its error, unwrapped.
        return Err(error.clone());
    }
    let (mut outcomes, _) = for_input(&[Some(expression)], inputs, &compiled.variables, authorizer, BUDGET)?;
    let outcome: Option<Outcome> = outcomes.pop().flatten();
    outcome.unwrap_or_else(|| Err("unexpected internal error compiling expression".into()))
}

/// The namespace and name of a param (`keyFor`), none for the `null` one.
fn param_name(param: &Value) -> Option<(String, String)> {
    let Value::Map(map) = param else { return None };
    let metadata = map.get_str("metadata")?;
    let field = |name: &str| match metadata {
        Value::Map(m) => match m.get_str(name) {
            Some(Value::String(s)) => s.to_string(),
            _ => String::new(),
        },
        _ => String::new(),
    };
    Some((field("namespace"), field("name")))
}

/// The write's end: the first error under `failurePolicy: Fail` refuses it (`admission
/// request denied by policy`, its message replaced by the error's, its reason `Invalid` for
/// an error of evaluation, every error a cause).
fn refusal(call: &Call, object: Option<&Json>, errors: Vec<PolicyError>) -> Result<()> {
    let failing: Vec<PolicyError> = errors.into_iter().filter(|e| e.failure != FailurePolicy::Ignore).collect();
    let Some(first) = failing.first() else { return Ok(()) };
    let said = |e: &PolicyError| match &e.binding {
        Some(binding) => format!("policy '{}' with binding '{binding}' denied request: {}", e.policy, e.message),
        None => format!("policy {} denied request: {}", crate::machinery::error::go_quote(&e.policy), e.message),
    };
    let causes = failing.iter().map(|e| StatusCause { message: Some(said(e)), ..Default::default() }).collect();
    let resource = GroupResource { group: call.resource.group, resource: call.resource.plural };
    let name = write_name(call, object);
    let detail = "admission request denied by policy".to_string();
    let mut status = Error::ForbiddenObject { resource, name, detail, causes }.to_status();
    status.message = Some(said(first));
    if first.invalid {
        status.reason = Some("Invalid".into());
    }
    Err(Error::Refused(Box::new(status)))
}
