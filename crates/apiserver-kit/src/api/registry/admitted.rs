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
use crate::machinery::version::Conversion;
use crate::store::{Committed, Current, Mutation, ObjectKey};
use serde_json::Value;

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
    /// The version the write was asked at (`v1alpha`).
    version: String,
    /// Every version the resource is served at, the stored one first.
    versions: &'a [Conversion],
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
            version: &self.version,
            versions: self.versions,
        }
    }

    /// Runs the mutating webhooks on `object` (named `name`) over `old`.
    async fn mutate<K: Strategy>(&self, name: &str, object: Option<&K>, old: Option<&K>) -> Result<Mutated> {
        if !self.admission.may_mutate(&self.call(name, K::info())) {
            return Ok(Mutated::default());
        }
        let object = object.map(to_value).transpose()?;
        let old = old.map(to_value).transpose()?;
        self.admission.mutate(&self.call(name, K::info()), object.as_ref(), old.as_ref()).await
    }

    /// Runs the validating webhooks on `object` over `old`; returns their warnings.
    pub(super) async fn validate<K: Strategy>(&self, object: Option<&K>, old: Option<&K>) -> Result<Vec<String>> {
        let name = object.or(old).and_then(|o| o.meta().name.clone()).unwrap_or_default();
        let object_value = object.map(to_value).transpose()?;
        let old_value = old.map(to_value).transpose()?;
        self.admission.validate(&self.call(&name, K::info()), object_value.as_ref(), old_value.as_ref()).await
    }
}

/// Decodes what the mutating webhooks made of `object`: into the resource's type, in its
/// namespace, with the managedFields the write's own field manager gave it, and the status rules
/// applied again (as the kube-apiserver's strategy runs after the webhooks): without the fields
/// a write of `subresource` resets, or with `stored`'s (those of the object updated).
fn decode_mutated<K: Strategy>(
    mut value: Value,
    object: &K,
    namespace: &str,
    subresource: Subresource,
    stored: crate::api::decode::Fields,
) -> Result<K> {
    crate::api::decode::drop_reset_fields::<K>(&mut value, subresource);
    crate::api::decode::set_fields(&mut value, stored);
    let mut mutated = decode_object::<K>(&value, namespace, FieldValidation::Ignore)?.object;
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
        let version = ctx.at.version::<K>();
        let versions = &self.versions;
        let admitting = Admitting { admission, operation, subresource, namespace, ctx, options, version, versions };
        admission.may_call(&admitting.call(name, K::info())).then_some(admitting)
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
            *object = decode_mutated(value, object, namespace, Subresource::Main, Vec::new())?;
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
        current: &Current<K>,
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
                let stored = super::stored_reset_fields::<K, K>(current, subresource)?;
                let object = decode_mutated(value, candidate, &key_namespace(current), subresource, stored)?;
                let managed_fields = object.meta().managed_fields.clone();
                let strategy = object.warnings();
                let at = (false, &admitting.ctx.at);
                let (decision, ratcheted) =
                    prepare_update(current, object, at, subresource, Tracking::Given(managed_fields))?;
                warnings.extend(ratcheted);
                warnings.extend(strategy);
                decision
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
    async fn current(&self, key: &ObjectKey) -> Result<Current<K>> {
        Current::decode(self.store.get(key).await?.ok_or_else(|| Self::not_found(&key.name))?)
    }

    /// Stores `decision`, made on `decided_on`, if the object at `key` is still that one;
    /// `None` when it has changed (or gone) meanwhile.
    async fn commit_if_unchanged(
        &self,
        key: &ObjectKey,
        dry_run: bool,
        decided_on: &Current<K>,
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
fn key_namespace<K: Strategy>(current: &Current<K>) -> String {
    current.meta().namespace.clone().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::{Registry, WatchSettings, WriteContext};
    use crate::api::patch::{Patch, PatchType};
    use crate::api::query::FieldValidation;
    use crate::machinery::admission::{Admission, Call, Mutated, Operation};
    use crate::machinery::error::{Error, Result};
    use crate::machinery::resource::Subresource;
    use crate::machinery::testing::{Widget, widget};
    use crate::store::{Revision, memory::MemoryStore};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, Status};
    use parking_lot::Mutex;
    use serde_json::{Value, json};
    use std::sync::Arc;

    /// One call: which kind of webhook, the operation, the object and the old object.
    type Recorded = (&'static str, Operation, Option<Value>, Option<Value>);

    /// Webhooks in memory: the mutating one labels every object `checked=yes` (and, once, lets
    /// `during_mutation` write meanwhile); the validating one refuses sizes over 500 and
    /// deletes of objects labelled `protected`. Every call is recorded.
    #[derive(Default)]
    struct Webhooks {
        matches: bool,
        calls: Mutex<Vec<Recorded>>,
        during_mutation: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    }

    fn refusal(message: &str) -> Error {
        Error::Refused(Box::new(Status { code: Some(403), message: Some(message.into()), ..Default::default() }))
    }

    #[async_trait::async_trait]
    impl Admission for Webhooks {
        fn may_call(&self, _call: &Call) -> bool {
            self.matches
        }

        async fn mutate(&self, call: &Call, object: Option<&Value>, old: Option<&Value>) -> Result<Mutated> {
            self.calls.lock().push(("mutate", call.operation, object.cloned(), old.cloned()));
            if let Some(write) = self.during_mutation.lock().take() {
                write();
            }
            let Some(mut object) = object.cloned() else { return Ok(Mutated::default()) };
            object["metadata"]["labels"]["checked"] = json!("yes");
            Ok(Mutated { object: Some(object), warnings: vec!["labelled".into()] })
        }

        async fn validate(&self, call: &Call, object: Option<&Value>, old: Option<&Value>) -> Result<Vec<String>> {
            self.calls.lock().push(("validate", call.operation, object.cloned(), old.cloned()));
            if object.is_some_and(|o| o["spec"]["size"].as_f64() > Some(500.0)) {
                return Err(refusal("too heavy"));
            }
            if object.is_none() && old.is_some_and(|o| o["metadata"]["labels"]["protected"] == "true") {
                return Err(refusal("protected"));
            }
            Ok(vec!["validated".into()])
        }
    }

    fn registry(webhooks: Arc<Webhooks>) -> Arc<Registry<Widget>> {
        let store = Arc::new(MemoryStore::new(Arc::new(Revision::default()), 100));
        Arc::new(Registry::new(store, WatchSettings::default()).with_admission(webhooks))
    }

    fn object(name: &str, size: f64) -> Widget {
        let mut object = widget("", name, size);
        object.metadata.namespace = None;
        object
    }

    fn size(patch: f64) -> Patch {
        Patch::parse(PatchType::Merge, format!(r#"{{"spec":{{"size":{patch}}}}}"#).as_bytes(), FieldValidation::Warn)
            .unwrap()
    }

    #[tokio::test]
    async fn a_create_is_mutated_then_validated_as_it_will_be_stored() {
        let webhooks = Arc::new(Webhooks { matches: true, ..Default::default() });
        let r = registry(webhooks.clone());
        let created = r.create("default", object("dolly", 1.0), &WriteContext::default()).await.unwrap();
        assert_eq!(created.object.decode().unwrap().metadata.labels.as_ref().unwrap()["checked"], "yes");
        assert_eq!(created.warnings, ["labelled", "validated"]);
        let calls = webhooks.calls.lock().clone();
        let (_, operation, mutated, old) = &calls[0];
        assert_eq!((*operation, old), (Operation::Create, &None));
        let mutated = mutated.as_ref().unwrap();
        assert!(mutated["metadata"]["uid"].is_null(), "mutating webhooks see the object as sent");
        assert!(mutated["metadata"]["managedFields"].is_array(), "with its managedFields");
        let validated = calls[1].2.as_ref().unwrap();
        assert!(validated["metadata"]["uid"].is_string(), "validating webhooks see it as stored");
        assert_eq!(validated["metadata"]["labels"]["checked"], "yes");

        let refused = r.create("default", object("heavy", 600.0), &WriteContext::default()).await.unwrap_err();
        assert_eq!((refused.code(), refused.to_string().as_str()), (http::StatusCode::FORBIDDEN, "too heavy"));
        assert_eq!(r.get("default", "heavy").await.unwrap_err().code(), 404, "nothing was stored");
    }

    #[tokio::test]
    async fn an_update_is_admitted_and_a_refused_one_changes_nothing() {
        let webhooks = Arc::new(Webhooks { matches: true, ..Default::default() });
        let r = registry(webhooks.clone());
        let ctx = WriteContext::default();
        let created = r.create("default", object("dolly", 1.0), &ctx).await.unwrap().object.decode().unwrap();
        webhooks.calls.lock().clear();
        let patched = r.patch::<Widget>("default", "dolly", &size(2.0), Subresource::Main, &ctx).await.unwrap();
        assert_eq!(patched.object.decode().unwrap().spec.size, 2.0);
        assert_eq!(patched.warnings, ["labelled", "validated"]);
        let calls = webhooks.calls.lock().clone();
        assert!(calls.iter().all(|(_, operation, _, old)| *operation == Operation::Update && old.is_some()));
        assert_eq!(calls[0].3.as_ref().unwrap()["spec"]["size"], 1.0, "the old object is the stored one");

        let refused = r.patch::<Widget>("default", "dolly", &size(700.0), Subresource::Main, &ctx).await.unwrap_err();
        assert_eq!(refused.code(), 403);
        let stored = r.get("default", "dolly").await.unwrap().decode().unwrap();
        assert_eq!(stored.spec.size, 2.0);
        assert_ne!(stored.metadata.resource_version, created.metadata.resource_version);
    }

    #[tokio::test]
    async fn an_update_decides_again_when_the_object_changed_during_admission() {
        let webhooks = Arc::new(Webhooks { matches: true, ..Default::default() });
        let r = registry(webhooks.clone());
        let ctx = WriteContext::default();
        r.create("default", object("dolly", 1.0), &ctx).await.unwrap();
        let store = r.store();
        *webhooks.during_mutation.lock() = Some(Box::new(move || {
            // Another writer changes the height while the webhooks are being called.
            let key = crate::store::ObjectKey::new("default", "dolly");
            let write = async move {
                store
                    .mutate(&key, false, &mut |current| {
                        let mut next = (**current).clone();
                        next.spec.color = Some("red".into());
                        Ok(crate::store::Mutation::Put(next))
                    })
                    .await
                    .unwrap();
            };
            futures::executor::block_on(write);
        }));
        webhooks.calls.lock().clear();
        let patched = r
            .patch::<Widget>("default", "dolly", &size(3.0), Subresource::Main, &ctx)
            .await
            .unwrap()
            .object
            .decode()
            .unwrap();
        assert_eq!((patched.spec.size, patched.spec.color.as_deref()), (3.0, Some("red")), "neither write is lost");
        let mutations = webhooks.calls.lock().iter().filter(|c| c.0 == "mutate").count();
        assert_eq!(mutations, 2, "the update was admitted again on the newer object");
    }

    #[tokio::test]
    async fn a_delete_is_validated_against_the_stored_object() {
        let webhooks = Arc::new(Webhooks { matches: true, ..Default::default() });
        let r = registry(webhooks.clone());
        let ctx = WriteContext::default();
        let mut guarded = object("guarded", 1.0);
        guarded.metadata.labels = Some([("protected".to_string(), "true".to_string())].into());
        r.create("default", guarded, &ctx).await.unwrap();
        let refused = r.delete("default", "guarded", &DeleteOptions::default(), &ctx).await.unwrap_err();
        assert_eq!(refused.to_string(), "protected");
        assert!(r.get("default", "guarded").await.is_ok());
        let calls = webhooks.calls.lock().clone();
        let deletes: Vec<_> = calls.iter().filter(|c| c.1 == Operation::Delete).collect();
        assert_eq!(deletes[0].2, None, "mutating webhooks of a delete get no object");
        assert_eq!(deletes[1].3.as_ref().unwrap()["metadata"]["name"], "guarded");
        r.create("default", object("free", 1.0), &ctx).await.unwrap();
        assert!(r.delete("default", "free", &DeleteOptions::default(), &ctx).await.unwrap().deleted);
    }

    #[tokio::test]
    async fn writes_no_webhook_can_match_skip_admission() {
        let webhooks = Arc::new(Webhooks::default());
        let r = registry(webhooks.clone());
        let ctx = WriteContext::default();
        let created = r.create("default", object("heavy", 600.0), &ctx).await.unwrap();
        assert!(created.warnings.is_empty());
        r.patch::<Widget>("default", "heavy", &size(700.0), Subresource::Main, &ctx).await.unwrap();
        r.delete("default", "heavy", &DeleteOptions::default(), &ctx).await.unwrap();
        assert!(webhooks.calls.lock().is_empty());
    }
}
