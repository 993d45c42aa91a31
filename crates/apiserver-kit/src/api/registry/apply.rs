//! Server-side apply on the registry (`PATCH` with `application/apply-patch+yaml`), as the
//! kube-apiserver's apply patcher runs it: the configuration is applied to the stored object by
//! [`crate::structured_merge::managed::apply`] inside the store's read-modify-write, then decoded,
//! prepared and validated like any update; an object that does not exist is created from the
//! configuration (after the namespace lifecycle check). A `resourceVersion` in the configuration
//! is a precondition; `dryRun` stores nothing.

use super::{Registry, Tracking, WriteContext, Written, object_value, prepare_update, write_of};
use crate::api::decode;
use crate::machinery::error::{Error, Result};
use crate::machinery::resource::body_schema;
use crate::machinery::strategy::{Strategy, Subresource};
use crate::machinery::version::Served;
use crate::store::ObjectKey;
use crate::structured_merge::managed::{self, Managed};
use crate::structured_merge::shape::object_schema;
use serde_json::Value;

/// One apply's configuration: as the client sent it (what kubectl's client-side record keeps),
/// as it is applied, and whether it takes fields over from their managers.
struct Configuration<'a> {
    sent: &'a Value,
    applied: &'a Value,
    force: bool,
}

/// How often an apply retries when the object appears or disappears under it.
const ATTEMPTS: usize = 4;

/// Refuses a configuration whose resourceVersion is not a number, which the kube-apiserver fails
/// to parse (a 500) once it has applied it: the client's mistake, said as such.
fn check_resource_version_syntax(config: &Value) -> Result<()> {
    match super::resource_version_in(config) {
        Some(rv) if !rv.is_empty() && rv.parse::<u64>().is_err() => {
            Err(Error::BadRequest(format!("invalid resourceVersion {rv:?}: not a number")))
        }
        _ => Ok(()),
    }
}

/// Refuses a configuration whose name or namespace differs from the request's, or whose name is empty.
fn check_target(config: &Value, namespace: &str, name: &str) -> Result<()> {
    let meta = &config["metadata"];
    // An explicit empty name would empty the object's: the kube-apiserver refuses it.
    if meta["name"].as_str() == Some("") {
        return Err(super::name_undeterminable(name));
    }
    if let Some(other) = meta["name"].as_str().filter(|n| !n.is_empty() && *n != name) {
        return Err(super::other_name(other, name));
    }
    super::check_body_namespace(config, namespace)
}

/// Names the object to create as the URL does when its configuration names nothing; a name
/// that is not a string (or metadata that is not a map) is left for the decoder to refuse, as
/// an update's is.
fn name_from_url(object: &mut Value, name: &str) {
    let Some(metadata) = decode::metadata_map(object) else { return };
    let given = metadata.entry("name").or_insert(Value::Null);
    if given.is_null() {
        *given = Value::String(name.to_string());
    }
}

impl<K: Strategy> Registry<K> {
    /// Applies `config` (the parsed body) to `name` through `subresource` for `ctx.manager`;
    /// `force` takes over fields other managers own instead of answering 409. Also says whether
    /// the apply created the object.
    pub async fn apply<V: Served<K>>(
        &self,
        namespace: &str,
        name: &str,
        config: &Value,
        subresource: Subresource,
        force: bool,
        ctx: &WriteContext,
    ) -> Result<(Written<K>, bool)> {
        // What this write resets (the status, applied to the object itself) is not applied: the
        // applier neither sets nor owns it, and it is not validated. A label or annotation applied
        // as `null` is applied as an empty string, which the applier owns: Go reads `null` into a
        // string so, and the kube-apiserver's apply of a custom resource stores it so.
        let sent = config;
        let prepared;
        let resets = V::reset_fields(subresource).iter().any(|field| config.get(field).is_some());
        let config = if resets || decode::has_null_labels(config) {
            let mut copy = config.clone();
            decode::drop_reset_fields::<V>(&mut copy, subresource);
            decode::null_labels_as_empty(&mut copy);
            prepared = copy;
            &prepared
        } else {
            config
        };
        let config = Configuration { sent, applied: config, force };
        let key = ObjectKey::new(namespace, name);
        for _ in 0..ATTEMPTS {
            if self.store.get(&key).await?.is_none() {
                match self.apply_create::<V>(namespace, name, &config, subresource, ctx).await {
                    Err(Error::AlreadyExists { .. }) => continue,
                    other => return other.map(|written| (written, true)),
                }
            }
            match self.apply_update::<V>(&key, namespace, &config, subresource, ctx).await {
                Err(Error::NotFound { .. }) => continue,
                other => return other.map(|written| (written, false)),
            }
        }
        Err(Error::Internal(format!("{name} kept appearing and disappearing during the apply")))
    }

    /// Creates `name` from `config`: the applier owns what it sent.
    async fn apply_create<V: Served<K>>(
        &self,
        namespace: &str,
        name: &str,
        configuration: &Configuration<'_>,
        subresource: Subresource,
        ctx: &WriteContext,
    ) -> Result<Written<K>> {
        let config = configuration.applied;
        if subresource != Subresource::Main {
            return Err(Self::not_found(name));
        }
        check_target(config, namespace, name)?;
        check_resource_version_syntax(config)?;
        self.admit_create(namespace, name).await?;
        let reset = super::managed_reset::<V>(subresource);
        let api_version = <V as kube::Resource>::api_version(&());
        let write = write_of((&ctx.manager, subresource), &reset, &api_version, &self.versions);
        let schema = body_schema::<V>();
        let (sent, force) = (configuration.sent, configuration.force);
        let applied = managed::apply(None, config, sent, Managed::default(), &write, force, &object_schema(&schema))
            .map_err(|conflicts| managed::conflict_error(&conflicts))?;
        let mut object = applied.object.unwrap_or_else(|| config.clone());
        name_from_url(&mut object, name);
        let decoded = decode::decode_object::<V>(&object, namespace, ctx.field_validation)?;
        // An apply that creates ignores the resourceVersion its configuration may carry; a dry
        // run answers it as sent, as the kube-apiserver's dry-run storage answers the object.
        let mut object = V::object_to_hub(decoded.object)?;
        if !ctx.dry_run {
            object.meta_mut().resource_version = None;
        }
        let created = self.create_tracked(namespace, object, ctx, Tracking::Given(applied.managed.encode())).await?;
        Ok(Written { object: created.object, warnings: [decoded.warnings, created.warnings].concat() })
    }

    /// Applies `config` to the stored object in one read-modify-write.
    async fn apply_update<V: Served<K>>(
        &self,
        key: &ObjectKey,
        namespace: &str,
        configuration: &Configuration<'_>,
        subresource: Subresource,
        ctx: &WriteContext,
    ) -> Result<Written<K>> {
        let Configuration { sent, applied: config, force } = *configuration;
        decode::check_applied_types::<V>(config)?;
        let reset = super::managed_reset::<V>(subresource);
        let schema = body_schema::<V>();
        let api_version = <V as kube::Resource>::api_version(&());
        let mut warnings = Vec::new();
        let (committed, admitted) = self
            .commit_update(key, subresource, ctx, &mut |current| {
                let write = write_of((&ctx.manager, subresource), &reset, &api_version, &self.versions);
                // The apply works at the request's version, on the object converted to it.
                let live = V::value_from_hub(object_value(current.object())?)?;
                let stored = current.meta().managed_fields.as_deref().unwrap_or_default();
                let managers = Managed::decode(stored).unwrap_or_default();
                let applied =
                    managed::apply(Some(&live), config, sent, managers, &write, force, &object_schema(&schema))
                        .map_err(|conflicts| managed::conflict_error(&conflicts))?;
                // After the conflicts, as the kube-apiserver's patcher checks the applied object,
                // and its storage the resourceVersion the configuration may carry.
                check_target(config, namespace, &key.name)?;
                check_resource_version_syntax(config)?;
                super::check_resource_version::<K>(super::resource_version_in(config), current.meta(), false)?;
                let object = match applied.object {
                    Some(value) => {
                        super::check_resource_version::<K>(super::resource_version_in(&value), current.meta(), true)?;
                        let old = || Ok(live.clone());
                        let validation = (ctx.field_validation, &[][..]);
                        let decoded =
                            decode::decode_body_over::<V>(&value, namespace, validation, subresource, Some(&old))?;
                        warnings = decoded.warnings;
                        // An emptied namespace is the request's, as for a patch.
                        let mut object = V::object_to_hub(decoded.object)?;
                        super::check_namespace(&mut object, namespace)?;
                        object
                    }
                    None => (**current).clone(),
                };
                let decoded = warnings.len();
                warnings.extend(object.warnings());
                warnings.extend(super::added_finalizer_warnings(&object, current, subresource));
                let tracking = Tracking::Given(applied.managed.encode());
                let (prepared, ratcheted) = prepare_update(current, object, (true, &ctx.at), subresource, tracking)?;
                warnings.splice(decoded..decoded, ratcheted);
                // The strategy's warnings, given once the object is valid, go out with a later
                // refusal (of admission, of storage) too; the answer drops repeated ones.
                crate::api::warning_recorder::record(&warnings);
                Ok(prepared)
            })
            .await?;
        warnings.extend(admitted);
        Ok(Written { object: committed.written()?, warnings })
    }
}
