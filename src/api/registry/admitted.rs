//! The registry's writes through admission ([`crate::machinery::admission`]), at the points where
//! k8s.io/apiserver runs its admission chain:
//!
//! - a create's mutating webhooks see the object as the client sent it (with its managedFields,
//!   before the system fields are filled); its validating webhooks see it as it will be stored,
//!   after the strategy prepared and validated it;
//! - an update (PUT, patch, apply of an existing object) is decided on the current object as
//!   usual, the mutating webhooks see the decided object and may change it (their result is
//!   decoded, prepared and validated again), then the validating webhooks see it. Webhooks are
//!   called outside the store's write serialization, so the decision is stored only if the
//!   object has not changed meanwhile; otherwise the whole update runs again on the newer
//!   object, as `GuaranteedUpdate` retries;
//! - a delete's mutating webhooks are told about it (with no object, as the kube-apiserver does)
//!   and its validating webhooks see the stored object.
//!
//! What the mutating webhooks change is not attributed to any manager: the managedFields stay
//! as the write's own field manager left them.

use super::{Registry, Tracking, WriteContext, prepare_update, to_value};
use crate::api::decode::decode_object;
use crate::api::query::FieldValidation;
use crate::machinery::admission::{self, Admission, Call, Mutated, Operation};
use crate::machinery::error::{Error, Result};
use crate::machinery::resource::Subresource;
use crate::machinery::strategy::Strategy;
use crate::store::{Committed, Mutation, ObjectKey, Stored};
use serde_json::Value;
use std::sync::Arc;

/// How often an admitted update runs again when the object changed under it.
const ATTEMPTS: usize = 8;

/// One write's admission: the webhooks' caller and what they are told besides the objects.
pub(super) struct Admitting<'a> {
    admission: &'a dyn Admission,
    operation: Operation,
    subresource: Subresource,
    namespace: &'a str,
    ctx: &'a WriteContext,
    options: Value,
}

impl Admitting<'_> {
    fn call<'b>(&'b self, name: &'b str, resource: &'static crate::machinery::resource::ResourceInfo) -> Call<'b> {
        Call {
            resource,
            subresource: self.subresource,
            operation: self.operation,
            namespace: self.namespace,
            name,
            user: &self.ctx.user,
            dry_run: self.ctx.dry_run,
            options: &self.options,
        }
    }

    /// Runs the mutating webhooks on `object` (named `name`) over `old`.
    async fn mutate<K: Strategy>(&self, name: &str, object: Option<&K>, old: Option<&K>) -> Result<Mutated> {
        let object = object.map(to_value).transpose()?;
        let old = old.map(to_value).transpose()?;
        self.admission.mutate(&self.call(name, &K::INFO), object.as_ref(), old.as_ref()).await
    }

    /// Runs the validating webhooks on `object` over `old`; returns their warnings.
    pub(super) async fn validate<K: Strategy>(&self, object: Option<&K>, old: Option<&K>) -> Result<Vec<String>> {
        let name = object.or(old).and_then(|o| o.meta().name.clone()).unwrap_or_default();
        let object_value = object.map(to_value).transpose()?;
        let old_value = old.map(to_value).transpose()?;
        self.admission.validate(&self.call(&name, &K::INFO), object_value.as_ref(), old_value.as_ref()).await
    }
}

/// Decodes what the mutating webhooks made of `object`: into the resource's type, in its
/// namespace, with the managedFields the write's own field manager gave it.
fn decode_mutated<K: Strategy>(value: Value, object: &K, namespace: &str) -> Result<K> {
    let mut mutated = decode_object::<K>(value, namespace, FieldValidation::Ignore)?.object;
    super::check_namespace(&mut mutated, namespace)?;
    mutated.meta_mut().managed_fields = object.meta().managed_fields.clone();
    Ok(mutated)
}

impl<K: Strategy> Registry<K> {
    /// The admission of a write of `operation` on `name`, when a webhook may be called for it.
    pub(super) fn admission_of<'a>(
        &'a self,
        operation: Operation,
        subresource: Subresource,
        namespace: &'a str,
        name: &str,
        ctx: &'a WriteContext,
    ) -> Option<Admitting<'a>> {
        let admission = self.admission.as_deref()?;
        let options = admission::options(operation, ctx.dry_run, ctx.field_manager.as_deref());
        let admitting = Admitting { admission, operation, subresource, namespace, ctx, options };
        admission.may_call(&admitting.call(name, &K::INFO)).then_some(admitting)
    }

    /// Runs a create's mutating webhooks on `object`, replacing it with their result; returns
    /// their warnings.
    pub(super) async fn admit_create_mutation(
        &self,
        admitting: &Admitting<'_>,
        object: &mut K,
        namespace: &str,
    ) -> Result<Vec<String>> {
        let name = object.meta().name.clone().unwrap_or_default();
        let mutated = admitting.mutate(&name, Some(&*object), None).await?;
        if let Some(value) = mutated.object {
            *object = decode_mutated(value, object, namespace)?;
        }
        Ok(mutated.warnings)
    }

    /// Stores what `decide` makes of the current object at `key`, through admission when a
    /// webhook may be called for this update; returns the webhooks' warnings too.
    pub(super) async fn commit_update(
        &self,
        key: &ObjectKey,
        subresource: Subresource,
        ctx: &WriteContext,
        decide: &mut crate::store::UpdateFn<'_, K>,
    ) -> Result<(Committed<K>, Vec<String>)> {
        let Some(admitting) = self.admission_of(Operation::Update, subresource, &key.namespace, &key.name, ctx) else {
            return Ok((self.store.mutate(key, ctx.dry_run, decide).await?, Vec::new()));
        };
        for _ in 0..ATTEMPTS {
            let current = self.current(key).await?;
            let decision = decide(&current)?;
            let (decision, warnings) = self.admit_update(&admitting, &current, decision, subresource).await?;
            if let Some(committed) = self.commit_if_unchanged(key, ctx.dry_run, &current, decision).await? {
                return Ok((committed, warnings));
            }
        }
        Err(changed_meanwhile::<K>(&key.name))
    }

    /// Runs the admission of an update of `current` decided as `decision`: mutating webhooks
    /// (then the strategy again, on what they changed) and validating webhooks.
    async fn admit_update(
        &self,
        admitting: &Admitting<'_>,
        current: &Arc<Stored<K>>,
        decision: Mutation<K>,
        subresource: Subresource,
    ) -> Result<(Mutation<K>, Vec<String>)> {
        let name = current.meta().name.clone().unwrap_or_default();
        let candidate = match &decision {
            Mutation::Put(object) | Mutation::Delete(object) => object,
            Mutation::Unchanged => current.object(),
        };
        let mutated = admitting.mutate(&name, Some(candidate), Some(current.object())).await?;
        let mut warnings = mutated.warnings;
        let decision = match mutated.object {
            Some(value) => {
                let object = decode_mutated(value, candidate, &key_namespace(current))?;
                let managed_fields = object.meta().managed_fields.clone();
                warnings.extend(object.warnings());
                prepare_update(current, object, false, subresource, Tracking::Given(managed_fields))?
            }
            None => decision,
        };
        let stored = match &decision {
            Mutation::Put(object) | Mutation::Delete(object) => object,
            Mutation::Unchanged => current.object(),
        };
        warnings.extend(admitting.validate(Some(stored), Some(current.object())).await?);
        Ok((decision, warnings))
    }

    /// Deletes (or marks) the object at `key` as `decide` says, after its admission when a
    /// webhook may be called.
    pub(super) async fn commit_delete(
        &self,
        key: &ObjectKey,
        options: Value,
        ctx: &WriteContext,
        decide: &mut crate::store::UpdateFn<'_, K>,
    ) -> Result<Committed<K>> {
        let Some(mut admitting) =
            self.admission_of(Operation::Delete, Subresource::Main, &key.namespace, &key.name, ctx)
        else {
            return self.store.mutate(key, ctx.dry_run, decide).await;
        };
        admitting.options = options;
        // The kube-apiserver tells the mutating webhooks of a delete about it without objects.
        admitting.mutate::<K>(&key.name, None, None).await?;
        for _ in 0..ATTEMPTS {
            let current = self.current(key).await?;
            admitting.validate(None, Some(current.object())).await?;
            let decision = decide(&current)?;
            if let Some(committed) = self.commit_if_unchanged(key, ctx.dry_run, &current, decision).await? {
                return Ok(committed);
            }
        }
        Err(changed_meanwhile::<K>(&key.name))
    }

    /// The object at `key`; 404 when there is none.
    async fn current(&self, key: &ObjectKey) -> Result<Arc<Stored<K>>> {
        self.store.get(key).await?.ok_or_else(|| Self::not_found(&key.name))
    }

    /// Stores `decision`, made on `decided_on`, if the object at `key` is still that one;
    /// `None` when it has changed (or gone) meanwhile.
    async fn commit_if_unchanged(
        &self,
        key: &ObjectKey,
        dry_run: bool,
        decided_on: &Arc<Stored<K>>,
        decision: Mutation<K>,
    ) -> Result<Option<Committed<K>>> {
        let version = decided_on.meta().resource_version.as_deref();
        let mut moved = false;
        let committed = self
            .store
            .mutate(key, dry_run, &mut |now| {
                if now.meta().resource_version.as_deref() != version {
                    moved = true;
                    return Err(Error::Internal("the object changed during admission".into()));
                }
                Ok(decision.clone())
            })
            .await;
        match committed {
            Err(_) if moved => Ok(None),
            Err(Error::NotFound { .. }) => Ok(None),
            other => other.map(Some),
        }
    }
}

/// The 409 of an update that kept losing the race with other writers.
fn changed_meanwhile<K: Strategy>(name: &str) -> Error {
    super::conflict::<K>(
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

/// The namespace of a stored object.
fn key_namespace<K: Strategy>(current: &Arc<Stored<K>>) -> String {
    current.meta().namespace.clone().unwrap_or_default()
}
