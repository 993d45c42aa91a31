//! The cluster's admission webhooks as this server's writes meet them (the registry's
//! [`Admission`]), as k8s.io/apiserver's webhook dispatchers call them:
//!
//! - **mutating** webhooks one after the other, in calling order ([`super::configurations`]),
//!   each on the object as the previous ones left it, their JSONPatch applied as they answer;
//!   when one changes the object, the earlier ones with `reinvocationPolicy: IfNeeded` are
//!   called once more in the chain's second round (never a webhook that was not called in the
//!   first round; [`super::reinvocation`]);
//! - **validating** webhooks all at once; the first refusal, in calling order, wins.
//!
//! A webhook that refuses (`allowed: false`) fails the write with its `Status`
//! ([`super::review::refusal`]). One that cannot be called, or answers with something that is not
//! a valid review, fails it with a 500 `failed calling webhook` under `failurePolicy: Fail` (the
//! default) and is skipped, with a log line, under `Ignore`. A dry run refuses to call a webhook
//! with side effects (400). `timeoutSeconds` defaults to 10. Until both configuration kinds have
//! been listed once, writes wait for them briefly, then are refused with 403, so no policy is
//! bypassed while the server starts.
//!
//! A webhook whose rules name another version than the request's (`matchPolicy: Equivalent`)
//! receives the objects converted to that version, and its patch is applied to them there
//! before the result is converted back, as k8s.io/apiserver's `VersionedAttributes` do.

use super::client::Caller;
use super::configurations::{Configurations, Listed};
use super::match_conditions::MatchConditions;
use super::matching::{Attributes, Matching, invoked_version, rule_matches, should_call};
use super::reinvocation::{Reinvocation, Round};
use super::review::{self, GroupVersionKind, GroupVersionResource, Request};
use crate::machinery::admission::{Admission, Call, Mutated};
use crate::machinery::error::{Error, Result};
use crate::machinery::json_patch_v4;
use crate::machinery::version::Conversion;
use crate::namespaces::NamespaceCache;
use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, MutatingWebhook, ValidatingWebhook, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How long a write waits for the configurations to be listed at start.
const SYNC_WAIT: Duration = Duration::from_secs(5);

/// The cluster's webhooks and how to call them.
pub struct Webhooks {
    configurations: Configurations,
    caller: Caller,
    namespaces: Arc<NamespaceCache>,
    match_conditions: MatchConditions,
}

/// What one webhook call needs to know of its webhook, mutating or validating.
struct Hook<'w> {
    name: &'w str,
    client: &'w WebhookClientConfig,
    matching: Matching<'w>,
    failure_policy: Option<&'w str>,
    side_effects: &'w str,
    timeout_seconds: Option<i32>,
    match_conditions: &'w [MatchCondition],
}

macro_rules! hook_from {
    ($($webhook:ty),*) => {$(
        impl<'w> From<&'w $webhook> for Hook<'w> {
            fn from(webhook: &'w $webhook) -> Self {
                Hook {
                    name: &webhook.name,
                    client: &webhook.client_config,
                    matching: Matching::from(webhook),
                    failure_policy: webhook.failure_policy.as_deref(),
                    side_effects: &webhook.side_effects,
                    timeout_seconds: webhook.timeout_seconds,
                    match_conditions: webhook.match_conditions.as_deref().unwrap_or_default(),
                }
            }
        }
    )*};
}

hook_from!(MutatingWebhook, ValidatingWebhook);

/// The metadata of an object as the selectors read it (its labels).
pub(super) fn labels_of(object: Option<&Value>) -> Option<ObjectMeta> {
    let labels = object?.pointer("/metadata/labels").and_then(|l| serde_json::from_value(l.clone()).ok());
    Some(ObjectMeta { labels, ..Default::default() })
}

/// The request attributes of `call` that rules and selectors match.
pub(super) fn attributes<'a>(
    call: &'a Call,
    object: Option<&'a ObjectMeta>,
    old: Option<&'a ObjectMeta>,
) -> Attributes<'a> {
    Attributes {
        group: call.resource.group,
        version: call.version,
        resource: call.resource.plural,
        subresource: call.subresource.name().unwrap_or_default(),
        operation: call.operation,
        namespace: call.namespace,
        object,
        old_object: old,
    }
}

/// The review request of `call` at `version` (where `objects`, the new and the old, are), named
/// `uid`, for `user`.
pub(super) fn review_request<'a>(
    call: &'a Call,
    version: &'a str,
    uid: &'a str,
    user: &'a k8s_openapi::api::authentication::v1::UserInfo,
    (object, old_object): (Option<&'a Value>, Option<&'a Value>),
) -> Request<'a> {
    Request {
        uid,
        kind: GroupVersionKind { group: call.resource.group, version, kind: call.resource.kind },
        resource: GroupVersionResource { group: call.resource.group, version, resource: call.resource.plural },
        request_version: call.version,
        subresource: call.subresource.name().unwrap_or_default(),
        name: call.name,
        namespace: call.namespace,
        operation: call.operation.as_str(),
        user,
        object,
        old_object,
        dry_run: call.dry_run,
        options: Some(call.options),
    }
}

/// The review user of `call`.
pub(super) fn user_info(call: &Call) -> k8s_openapi::api::authentication::v1::UserInfo {
    let user = call.user;
    k8s_openapi::api::authentication::v1::UserInfo {
        username: Some(user.name.clone()).filter(|n| !n.is_empty()),
        uid: user.uid.clone(),
        groups: Some(user.groups.clone()).filter(|g| !g.is_empty()),
        extra: Some(user.extra.clone()).filter(|e| !e.is_empty()),
    }
}

impl Webhooks {
    /// Webhooks from `configurations`, called by `caller`, with namespaces' labels from
    /// `namespaces` and their match conditions' authorizer checks answered by `authorizer`.
    pub fn new(
        configurations: Configurations,
        caller: Caller,
        namespaces: Arc<NamespaceCache>,
        authorizer: Option<Arc<dyn crate::cel::authz::Authorizer>>,
    ) -> Self {
        Self { configurations, caller, namespaces, match_conditions: MatchConditions::new(authorizer) }
    }

    /// Waits for the configurations to be listed; 403 when they are not in time.
    async fn ready(&self) -> Result<()> {
        match tokio::time::timeout(SYNC_WAIT, self.configurations.wait_synced()).await {
            Ok(()) => Ok(()),
            Err(_) => Err(Error::Forbidden("not yet ready to handle request".into())),
        }
    }

    /// The version at which `call` on `object` over `old` calls `hook`, if it does; the
    /// namespace's labels are looked up (once per write) only when a selector needs them.
    async fn matches<'c>(
        &self,
        hook: &Hook<'_>,
        call: &Call<'c>,
        object: Option<&Value>,
        old: Option<&Value>,
        namespace_labels: &mut Option<BTreeMap<String, String>>,
    ) -> Result<Option<&'c Conversion>> {
        let (object_meta, old_meta) = (labels_of(object), labels_of(old));
        let attr = attributes(call, object_meta.as_ref(), old_meta.as_ref());
        let versions: Vec<&str> = call.versions.iter().map(|c| c.version.as_str()).collect();
        let Some(version) = invoked_version(&hook.matching, &attr, &versions) else { return Ok(None) };
        let Some(at) = call.versions.iter().find(|c| c.version == version) else { return Ok(None) };
        let attr = Attributes { version, ..attr };
        let selects_all = hook.matching.namespace_selector.is_none_or(|s| *s == Default::default());
        if namespace_labels.is_none() && !selects_all && !call.namespace.is_empty() {
            *namespace_labels = Some(self.namespaces.labels(call.namespace).await?);
        }
        let labels = namespace_labels.clone().unwrap_or_default();
        if !should_call(hook.matching, &attr, |_| Ok(labels))? {
            return Ok(None);
        }
        let conditions = (hook.match_conditions, hook.failure_policy);
        Ok(self.match_conditions.admit(conditions, call, at, object, old)?.then_some(at))
    }

    /// Calls `hook` about `call` with `object` and `old` (stored objects) converted to version
    /// `at`; its checked answer, `None` when the call failed under `failurePolicy: Ignore`.
    async fn review(
        &self,
        hook: &Hook<'_>,
        mutating: bool,
        call: &Call<'_>,
        at: &Conversion,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<Option<review::Answer>> {
        if call.dry_run && !matches!(hook.side_effects, "None" | "NoneOnDryRun") {
            return Err(Error::BadRequest(format!("admission webhook {:?} does not support dry run", hook.name)));
        }
        let object = object.map(|o| (at.from_hub)(o.clone())).transpose()?;
        let old = old.map(|o| (at.from_hub)(o.clone())).transpose()?;
        let (object, old) = (object.as_ref(), old.as_ref());
        let uid = uuid::Uuid::new_v4().to_string();
        let user = user_info(call);
        let request = review_request(call, &at.version, &uid, &user, (object, old));
        let body = review::encode(&request).map_err(|e| Error::Internal(format!("encoding the review: {e}")))?;
        let timeout = Duration::from_secs(hook.timeout_seconds.unwrap_or(10).clamp(1, 30) as u64);
        let answer = match self.caller.call(hook.client, timeout, body).await {
            Ok(bytes) => {
                review::verify(&uid, mutating, &bytes).map_err(|e| format!("received invalid webhook response: {e}"))
            }
            Err(reason) => Err(format!("failed to call webhook: {reason}")),
        };
        match answer {
            Ok(answer) if answer.allowed => Ok(Some(answer)),
            Ok(answer) => Err(Error::Refused(Box::new(review::refusal(hook.name, answer.result.as_ref())))),
            Err(reason) => hook.failed(&reason).map(|()| None),
        }
    }

    /// Calls the mutating webhook `hook` with the objects at version `at` and applies its patch
    /// to `object` there; whether it changed.
    async fn mutate_once(
        &self,
        hook: &Hook<'_>,
        call: &Call<'_>,
        at: &Conversion,
        object: &mut Option<Value>,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<bool> {
        let Some(answer) = self.review(hook, true, call, at, object.as_ref(), old).await? else {
            return Ok(false);
        };
        warnings.extend(answer.warnings);
        let Some(patch) = answer.patch.filter(|p| !p.is_empty()) else { return Ok(false) };
        let operations = match decode_patch(&patch) {
            Ok(operations) if operations.is_empty() => return Ok(false),
            Ok(operations) => operations,
            Err(e) => {
                let reason = format!("received undecodable patch in webhook response: {e}");
                return hook.failed(&reason).map(|()| false);
            }
        };
        let Some(current) = object.as_mut() else {
            return Err(Error::Internal(format!(
                "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                hook.name
            )));
        };
        if answer.patch_type.as_deref() != Some("JSONPatch") {
            let kind = answer.patch_type.unwrap_or_default();
            return hook.failed(&format!("unsupported patch type {kind:?}")).map(|()| false);
        }
        // As k8s.io/apiserver applies it (evanphx/json-patch v4): any failure is a 500.
        let seen = (at.from_hub)(current.clone())?;
        let patched = json_patch_v4::apply(&seen, &operations).map_err(|e| Error::Internal(e.message))?;
        let patched = (at.to_hub)(patched)?;
        let changed = patched != *current;
        *current = patched;
        Ok(changed)
    }
}

/// One write's mutating webhooks across the admission chain's rounds: the configurations as
/// the write found them, and what their reinvocation needs.
pub struct MutatingRun {
    listed: Vec<Listed<MutatingWebhook>>,
    state: Reinvocation<usize>,
    namespace_labels: Option<BTreeMap<String, String>>,
}

impl Webhooks {
    /// Starts a write's mutating webhooks, once the configurations are listed.
    pub async fn start_mutating(&self) -> Result<MutatingRun> {
        self.ready().await?;
        Ok(MutatingRun {
            listed: self.configurations.mutating(),
            state: Reinvocation::default(),
            namespace_labels: None,
        })
    }

    /// One round of the mutating webhooks `call` matches on `object` (mutated in place) over
    /// `old`, one after the other in calling order; in the second round only those to invoke
    /// again.
    pub async fn mutate_round(
        &self,
        run: &mut MutatingRun,
        call: &Call<'_>,
        object: &mut Option<Value>,
        old: Option<&Value>,
        round: &mut Round,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        run.state.start(round, object.as_ref());
        for (i, listed) in run.listed.iter().enumerate() {
            let hook = Hook::from(&listed.webhook);
            let Some(at) = self.matches(&hook, call, object.as_ref(), old, &mut run.namespace_labels).await? else {
                continue;
            };
            if run.state.skips(round, &i) {
                continue;
            }
            let changed = self.mutate_once(&hook, call, at, object, old, warnings).await?;
            let reinvocable = listed.webhook.reinvocation_policy.as_deref() == Some("IfNeeded");
            run.state.invoked(round, i, changed, reinvocable);
        }
        run.state.finish(object.as_ref());
        Ok(())
    }
}

/// A webhook's patch as `jsonpatch.DecodePatch` reads it: a JSON array of objects, each an
/// operation (checked when applied); Go's words when it is not.
fn decode_patch(patch: &[u8]) -> std::result::Result<Vec<Value>, String> {
    use json_patch_v4::go_json_kind as go_kind;
    let decoded: Value = serde_json::from_slice(patch).map_err(|e| e.to_string())?;
    let Value::Array(operations) = decoded else {
        return Err(format!("json: cannot unmarshal {} into Go value of type jsonpatch.Patch", go_kind(&decoded)));
    };
    match operations.iter().find(|op| !op.is_object() && !op.is_null()) {
        Some(op) => Err(format!("json: cannot unmarshal {} into Go value of type jsonpatch.Operation", go_kind(op))),
        None => Ok(operations),
    }
}

impl Hook<'_> {
    /// What a failed call to this webhook does (`ErrCallingWebhook`): nothing but a log line
    /// under `failurePolicy: Ignore`; else the write fails with a 500.
    fn failed(&self, reason: &str) -> Result<()> {
        if self.failure_policy == Some("Ignore") {
            tracing::warn!(webhook = self.name, %reason, "failed calling webhook, failing open");
            return Ok(());
        }
        Err(Error::Internal(format!("failed calling webhook {:?}: {reason}", self.name)))
    }
}

#[async_trait::async_trait]
impl Admission for Webhooks {
    fn may_call(&self, call: &Call) -> bool {
        if !self.configurations.synced() {
            return true;
        }
        // Every served version, for a webhook of `matchPolicy: Equivalent` that names another.
        let attr = attributes(call, None, None);
        self.configurations.any_rules(|rules| {
            let at = |version: &str| rules.iter().any(|r| rule_matches(r, &Attributes { version, ..attr }));
            call.versions.iter().any(|c| at(&c.version))
        })
    }

    async fn mutate(&self, call: &Call, object: Option<&Value>, old: Option<&Value>) -> Result<Mutated> {
        let mut run = self.start_mutating().await?;
        let (mut current, mut round, mut warnings) = (object.cloned(), Round::default(), Vec::new());
        self.mutate_round(&mut run, call, &mut current, old, &mut round, &mut warnings).await?;
        if round.wanted {
            round.reinvoking = true;
            self.mutate_round(&mut run, call, &mut current, old, &mut round, &mut warnings).await?;
        }
        let changed = current.as_ref() != object;
        Ok(Mutated { object: current.filter(|_| changed), warnings })
    }

    async fn validate(&self, call: &Call, object: Option<&Value>, old: Option<&Value>) -> Result<Vec<String>> {
        self.ready().await?;
        let listed = self.configurations.validating();
        let mut namespace_labels = None;
        let mut called = Vec::new();
        for listed in &listed {
            let hook = Hook::from(&listed.webhook);
            if let Some(at) = self.matches(&hook, call, object, old, &mut namespace_labels).await? {
                called.push((hook, at));
            }
        }
        let reviews = called.iter().map(|(h, at)| self.review(h, false, call, at, object, old));
        let answers = futures::future::join_all(reviews).await;
        let mut warnings = Vec::new();
        for answer in answers {
            warnings.extend(answer?.map(|a| a.warnings).unwrap_or_default());
        }
        Ok(warnings)
    }
}
