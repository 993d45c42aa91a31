//! What a delete does to an object, as the kube-apiserver's generic store does it for a resource
//! without graceful deletion, such as a custom resource (`k8s.io/apiserver/pkg/registry/generic/
//! registry/store.go`: `Delete`, `deletionFinalizersForGarbageCollection`, `markAsDeleting`, and
//! `rest.BeforeDelete`):
//!
//! 1. `DeleteOptions` are validated, and the preconditions (uid, resourceVersion) checked: 409
//!    when they no longer match, and nothing changes.
//! 2. The propagation policy decides the garbage collector's finalizers: `Orphan` adds `orphan`,
//!    `Foreground` adds `foregroundDeletion`, `Background` neither (and removes both). The legacy
//!    `orphanDependents` counts as `Orphan` (true) or `Background` (false). Without either, a
//!    finalizer already on the object keeps its policy, else the resource's default, Background.
//!    The policy of an object already being deleted may still change.
//! 3. With no finalizer left the object goes now; otherwise it is only marked: `deletionTimestamp`
//!    (kept if already set), `deletionGracePeriodSeconds: 0`, and `generation` + 1 the first time.
//!    The garbage collector (or whoever owns the other finalizers) removes them, and the update
//!    that removes the last one deletes the object.

use super::query::OptionsKind;
use crate::machinery::error::{Error, FieldError, GroupResource, Result};
use crate::machinery::resource::ApiResource;
use crate::store::Mutation;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, Time};
use serde_json::json;

/// The garbage collector's finalizer: orphan the dependents, then let the object go.
pub const ORPHAN_FINALIZER: &str = "orphan";
/// The garbage collector's finalizer: delete the dependents first, then the object.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// How the dependents of a deleted object are treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents are kept; their ownerReferences to the object are removed.
    Orphan,
    /// The object stays (marked) until the dependents that block it are gone.
    Foreground,
    /// The object goes now; the garbage collector deletes the dependents afterwards.
    Background,
}

/// Checks `DeleteOptions` as `ValidateDeleteOptions` does: one 422 naming every bad option.
/// `gracePeriodSeconds` is not checked: a resource without graceful deletion ignores it, even
/// when negative.
pub fn validate_options(options: &DeleteOptions) -> Result<()> {
    let mut causes = Vec::new();
    if let Some(policy) = options.propagation_policy.as_deref() {
        if options.orphan_dependents.is_some() {
            causes.push(FieldError::invalid(
                "propagationPolicy",
                &json!(policy),
                "orphanDependents and deletionPropagation cannot be both set",
            ));
        }
        if !["Orphan", "Background", "Foreground"].contains(&policy) {
            causes.push(FieldError::not_supported(
                "propagationPolicy",
                &json!(policy),
                &["Foreground", "Background", "Orphan", "nil"],
            ));
        }
    }
    if let Some(values) = &options.dry_run
        && values.iter().any(|value| value != "All")
    {
        // One cause for the whole list, as apimachinery's `ValidateDryRun`.
        let mut cause = FieldError::not_supported("dryRun", &serde_json::Value::Null, &["All"]);
        cause.value = Some(crate::machinery::error::go_string_slice(values));
        causes.push(cause);
    }
    if causes.is_empty() { Ok(()) } else { Err(OptionsKind::Delete.invalid(causes)) }
}

/// The policy `options` ask for, if any (validated: at most one of the two is set).
fn requested(options: &DeleteOptions) -> Option<Propagation> {
    if let Some(orphan) = options.orphan_dependents {
        return Some(if orphan { Propagation::Orphan } else { Propagation::Background });
    }
    match options.propagation_policy.as_deref() {
        Some("Orphan") => Some(Propagation::Orphan),
        Some("Foreground") => Some(Propagation::Foreground),
        Some("Background") => Some(Propagation::Background),
        _ => None,
    }
}

/// The finalizers an object has once a delete with `options` has been applied to `current`:
/// the garbage collector's finalizer of the policy in force, the others untouched. The same
/// list (in its order) when the set does not change.
pub fn finalizers_after_delete(current: &[String], options: &DeleteOptions) -> Vec<String> {
    let from_finalizers = || {
        current.iter().find_map(|f| match f.as_str() {
            ORPHAN_FINALIZER => Some(Propagation::Orphan),
            FOREGROUND_FINALIZER => Some(Propagation::Foreground),
            _ => None,
        })
    };
    let policy = requested(options).or_else(from_finalizers).unwrap_or(Propagation::Background);
    let mut next: Vec<String> =
        current.iter().filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER).cloned().collect();
    match policy {
        Propagation::Orphan => next.push(ORPHAN_FINALIZER.into()),
        Propagation::Foreground => next.push(FOREGROUND_FINALIZER.into()),
        Propagation::Background => {}
    }
    let same_set = next.iter().all(|f| current.contains(f)) && current.iter().all(|f| next.contains(f));
    if same_set { current.to_vec() } else { next }
}

/// The 409 of a precondition that no longer holds, worded as `rest.BeforeDelete` words it (the
/// kube-apiserver names the kind there, not the resource).
fn precondition_failed<K: ApiResource>(name: &str, detail: String) -> Error {
    Error::Conflict {
        resource: GroupResource { group: K::info().group, resource: K::info().kind },
        name: name.into(),
        detail,
    }
}

fn check_preconditions<K: ApiResource>(current: &K, options: &DeleteOptions) -> Result<()> {
    let meta = current.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    let Some(pre) = &options.preconditions else { return Ok(()) };
    let uid = meta.uid.as_deref().unwrap_or_default();
    if let Some(wanted) = pre.uid.as_deref()
        && wanted != uid
    {
        return Err(precondition_failed::<K>(
            name,
            format!(
                "the UID in the precondition ({wanted}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
            ),
        ));
    }
    let rv = meta.resource_version.as_deref().unwrap_or_default();
    if let Some(wanted) = pre.resource_version.as_deref()
        && wanted != rv
    {
        return Err(precondition_failed::<K>(
            name,
            format!(
                "the ResourceVersion in the precondition ({wanted}) does not match the ResourceVersion in record ({rv}). The object might have been modified"
            ),
        ));
    }
    Ok(())
}

/// Decides what a delete with `options` does to `current` (see the module documentation); `now`
/// becomes the `deletionTimestamp` of an object marked for the first time.
pub fn prepare<K: ApiResource>(current: &K, options: &DeleteOptions, now: Time) -> Result<Mutation<K>> {
    check_preconditions(current, options)?;
    let finalizers = finalizers_after_delete(current.meta().finalizers.as_deref().unwrap_or_default(), options);
    if finalizers.is_empty() {
        return Ok(Mutation::Delete(current.clone()));
    }
    let mut marked = current.clone();
    let meta = marked.meta_mut();
    meta.finalizers = Some(finalizers);
    if meta.deletion_timestamp.is_none() {
        meta.generation = meta.generation.filter(|g| *g > 0).map(|g| g + 1).or(meta.generation);
        meta.deletion_timestamp = Some(now);
    }
    meta.deletion_grace_period_seconds = Some(0);
    if &marked == current { Ok(Mutation::Unchanged) } else { Ok(Mutation::Put(marked)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::testing::{Widget, widget};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Preconditions;
    use k8s_openapi::jiff::Timestamp;

    fn object(finalizers: &[&str]) -> Widget {
        let mut l = widget("shop", "dolly", 1.0);
        l.metadata.finalizers = (!finalizers.is_empty()).then(|| finalizers.iter().map(|f| f.to_string()).collect());
        l.metadata.generation = Some(1);
        l.metadata.uid = Some("u1".into());
        l.metadata.resource_version = Some("7".into());
        l
    }

    fn policy(p: &str) -> DeleteOptions {
        DeleteOptions { propagation_policy: Some(p.into()), ..Default::default() }
    }

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap())
    }

    fn marked(mutation: Mutation<Widget>) -> Widget {
        match mutation {
            Mutation::Put(object) => object,
            other => panic!("expected the object to be marked, got {other:?}"),
        }
    }

    #[test]
    fn the_policy_comes_from_the_options_then_the_finalizers_then_background() {
        let none = DeleteOptions::default();
        let keep = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(finalizers_after_delete(&[], &none), Vec::<String>::new());
        assert_eq!(finalizers_after_delete(&[], &policy("Orphan")), ["orphan"]);
        assert_eq!(finalizers_after_delete(&keep(&["a"]), &policy("Foreground")), ["a", "foregroundDeletion"]);
        assert_eq!(finalizers_after_delete(&keep(&["orphan", "a"]), &none), ["orphan", "a"], "kept, in order");
        assert_eq!(finalizers_after_delete(&keep(&["orphan", "a"]), &policy("Background")), ["a"]);
        assert_eq!(finalizers_after_delete(&keep(&["foregroundDeletion"]), &policy("Orphan")), ["orphan"]);
        let legacy = |orphan| DeleteOptions { orphan_dependents: Some(orphan), ..Default::default() };
        assert_eq!(finalizers_after_delete(&[], &legacy(true)), ["orphan"]);
        assert_eq!(finalizers_after_delete(&keep(&["orphan"]), &legacy(false)), Vec::<String>::new());
    }

    #[test]
    fn background_deletes_now_and_orphan_marks_once() {
        assert!(matches!(prepare(&object(&[]), &DeleteOptions::default(), at(10)).unwrap(), Mutation::Delete(_)));
        let first = marked(prepare(&object(&[]), &policy("Orphan"), at(10)).unwrap());
        assert_eq!(first.metadata.finalizers.as_deref(), Some(&["orphan".to_string()][..]));
        assert_eq!(first.metadata.deletion_timestamp, Some(at(10)));
        assert_eq!(first.metadata.deletion_grace_period_seconds, Some(0));
        assert_eq!(first.metadata.generation, Some(2), "the first mark moves the generation");
        let again = prepare(&first, &policy("Orphan"), at(20)).unwrap();
        assert!(matches!(again, Mutation::Unchanged), "{again:?}");
        let switched = marked(prepare(&first, &policy("Foreground"), at(20)).unwrap());
        assert_eq!(switched.metadata.finalizers.as_deref(), Some(&["foregroundDeletion".to_string()][..]));
        assert_eq!((switched.metadata.deletion_timestamp, switched.metadata.generation), (Some(at(10)), Some(2)));
        assert!(matches!(prepare(&first, &policy("Background"), at(20)).unwrap(), Mutation::Delete(_)));
    }

    #[test]
    fn other_finalizers_keep_the_object_whatever_the_policy() {
        let kept = marked(prepare(&object(&["example.com/keep"]), &policy("Background"), at(10)).unwrap());
        assert_eq!(kept.metadata.finalizers.as_deref(), Some(&["example.com/keep".to_string()][..]));
        assert_eq!(kept.metadata.deletion_timestamp, Some(at(10)));
    }

    #[test]
    fn stale_preconditions_are_a_conflict_in_the_kube_apiserver_s_words() {
        let stale = |uid: Option<&str>, rv: Option<&str>| DeleteOptions {
            preconditions: Some(Preconditions { uid: uid.map(Into::into), resource_version: rv.map(Into::into) }),
            ..Default::default()
        };
        let err = prepare(&object(&[]), &stale(Some("u2"), None), at(1)).unwrap_err();
        assert_eq!(err.code(), 409);
        assert_eq!(
            err.to_string(),
            r#"Operation cannot be fulfilled on Widget.test.example.com "dolly": the UID in the precondition (u2) does not match the UID in record (u1). The object might have been deleted and then recreated"#
        );
        let err = prepare(&object(&[]), &stale(None, Some("6")), at(1)).unwrap_err();
        assert!(err.to_string().ends_with("the ResourceVersion in the precondition (6) does not match the ResourceVersion in record (7). The object might have been modified"), "{err}");
        assert!(matches!(prepare(&object(&[]), &stale(Some("u1"), Some("7")), at(1)).unwrap(), Mutation::Delete(_)));
    }
}
