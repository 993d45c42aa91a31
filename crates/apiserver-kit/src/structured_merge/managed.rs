//! `metadata.managedFields` on writes that are not applies (create, update, patch, their
//! `/status` forms), as the kube-apiserver's field manager keeps them
//! (`k8s.io/apimachinery/pkg/util/managedfields/internal`: `FieldManager.Update`,
//! `managedFieldsUpdater`, `stripMetaManager`, `buildManagerInfoManager`, `capManagersManager`,
//! `skipNonAppliedManager`, and structured-merge-diff's `Updater.Update` with `force`):
//!
//! 1. The managers come from the request's `managedFields` when it sets valid ones (an empty list,
//!    or one empty entry, resets them), else from the stored object; a subresource always uses
//!    the stored ones.
//! 2. An object that exists but has no managers is not tracked (objects from before tracking).
//! 3. The fields the write adds or modifies ([`crate::structured_merge::typed::compare`], without the
//!    fields the subresource resets) leave every other manager; fields it removes leave everyone.
//! 4. The writer's entry (`manager`, `Update`, the API version, the subresource) gains what it
//!    added or modified, minus the metadata nobody manages, and the current time when it gained
//!    anything. Entries left empty go; more than ten `Update` entries fold the oldest into
//!    `ancient-changes`.
//!
//! A manager keeps the version of its request (`apiVersion`), and its fields are named at that
//! version: what a write changes and removes is compared, for each manager, on the objects
//! converted to the manager's version ([`Versions`]), as structured-merge-diff's `Updater`
//! compares them. A manager of a version no longer served is dropped.

use super::fieldpath::PathElement;
pub use super::fieldpath::Set;
use super::shape::Schema;
use super::typed::{Comparison, compare};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry, Time};
use litemap::LiteMap;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// The most `Update` entries an object keeps.
const MAX_UPDATE_MANAGERS: usize = 10;
/// Where the oldest `Update` entries are folded.
const ANCIENT_CHANGES: &str = "ancient-changes";

/// The metadata no manager owns (`stripMetaManager`).
fn stripped() -> &'static Set {
    static STRIPPED: std::sync::LazyLock<Set> = std::sync::LazyLock::new(stripped_fields);
    &STRIPPED
}

fn stripped_fields() -> Set {
    let mut set = Set::new();
    set.insert(&[PathElement::Field("apiVersion".into())]);
    set.insert(&[PathElement::Field("kind".into())]);
    set.insert(&[PathElement::Field("metadata".into())]);
    for field in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[PathElement::Field("metadata".into()), PathElement::Field(field.into())]);
    }
    set
}

/// The set holding each of `fields` (top-level), e.g. what a subresource resets.
pub fn top_level(fields: &[&str]) -> Set {
    let mut set = Set::new();
    for field in fields {
        set.insert(&[PathElement::Field(field.to_string())]);
    }
    set
}

/// One manager's entry, as the kube-apiserver identifies it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Manager {
    name: String,
    operation: String,
    api_version: String,
    subresource: String,
}

impl Manager {
    /// `BuildManagerIdentifier`: the entry's JSON without fields and time (nor apiVersion for an
    /// Apply), which orders ties as the kube-apiserver orders them.
    fn identifier(&self) -> String {
        let mut fields = vec![("manager", &self.name), ("operation", &self.operation)];
        if self.operation != "Apply" {
            fields.push(("apiVersion", &self.api_version));
        }
        if !self.subresource.is_empty() {
            fields.push(("subresource", &self.subresource));
        }
        let written: Vec<String> =
            fields.into_iter().map(|(key, value)| format!("{}:{}", json!(key), json!(value))).collect();
        format!("{{{}}}", written.join(","))
    }
}

/// An object's managers: who owns which fields, and since when.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Managed {
    entries: LiteMap<Manager, (Set, Option<Time>)>,
}

impl Managed {
    /// Reads `managedFields`; `None` when an entry cannot be read (the kube-apiserver then falls
    /// back to the stored managers).
    pub fn decode(entries: &[ManagedFieldsEntry]) -> Option<Managed> {
        let mut read = Vec::with_capacity(entries.len());
        for entry in entries {
            let operation = entry.operation.clone().filter(|o| o == "Apply" || o == "Update")?;
            let api_version = entry.api_version.clone().filter(|v| !v.is_empty())?;
            if entry.fields_type.as_deref() != Some("FieldsV1") {
                return None;
            }
            let set = match &entry.fields_v1 {
                Some(FieldsV1(fields)) => Set::from_fields_v1(fields).ok()?,
                None => Set::new(),
            };
            let manager = Manager {
                name: entry.manager.clone().unwrap_or_default(),
                operation,
                api_version,
                subresource: entry.subresource.clone().unwrap_or_default(),
            };
            read.push((manager, (set, entry.time.clone())));
        }
        // Inserted in order, each is appended; of two entries of one manager, the last wins.
        read.sort_by(|(a, _), (b, _)| a.cmp(b));
        let mut managed = Managed::default();
        for (manager, entry) in read {
            managed.entries.insert(manager, entry);
        }
        Some(managed)
    }

    /// Whether nobody manages anything.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `managedFields`, sorted as the kube-apiserver sorts them (operation, time, manager,
    /// apiVersion, subresource); `None` when there is no manager.
    pub fn encode(&self) -> Option<Vec<ManagedFieldsEntry>> {
        if self.entries.is_empty() {
            return None;
        }
        let seconds = |t: &Option<Time>| t.as_ref().map(|t| t.0.as_second()).unwrap_or(0);
        let mut entries: Vec<(&Manager, &(Set, Option<Time>))> = self.entries.iter().collect();
        entries.sort_by(|(a, (_, ta)), (b, (_, tb))| {
            (&a.operation, seconds(ta), &a.name, &a.api_version, &a.subresource).cmp(&(
                &b.operation,
                seconds(tb),
                &b.name,
                &b.api_version,
                &b.subresource,
            ))
        });
        let encoded = entries
            .into_iter()
            .map(|(m, (set, time))| ManagedFieldsEntry {
                api_version: Some(m.api_version.clone()),
                fields_type: Some("FieldsV1".into()),
                fields_v1: Some(FieldsV1(set.to_fields_v1())),
                manager: Some(m.name.clone()),
                operation: Some(m.operation.clone()),
                subresource: (!m.subresource.is_empty()).then(|| m.subresource.clone()),
                time: time.clone(),
            })
            .collect();
        Some(encoded)
    }
}

/// How a write's objects convert to the versions its managers wrote at (structured-merge-diff's
/// `Converter`).
pub trait Versions: Sync {
    /// `object`, at `from` (`group/version`), at `to`, with the schema there; `None` when `to` is
    /// not served.
    fn convert(&self, object: &Value, from: &str, to: &str) -> Option<(Value, std::sync::Arc<Schema>)>;
}

/// The versions of a resource as server-side apply converts between them: through the stored
/// version, from one `group/version` to another.
impl Versions for Vec<crate::machinery::version::Conversion> {
    fn convert(&self, object: &Value, from: &str, to: &str) -> Option<(Value, std::sync::Arc<Schema>)> {
        let from = self.iter().find(|c| c.api_version == from)?;
        let to = self.iter().find(|c| c.api_version == to)?;
        let hub = (from.to_hub)(object.clone()).ok()?;
        Some(((to.from_hub)(hub).ok()?, super::shape::object_schema(&(to.schema)())))
    }
}

/// A resource served at one version: no manager is of another.
pub struct OneVersion;

impl Versions for OneVersion {
    fn convert(&self, _: &Value, _: &str, _: &str) -> Option<(Value, std::sync::Arc<Schema>)> {
        None
    }
}

/// What one write is: who writes, through which subresource, at what API version, what that
/// subresource resets, when, and how its objects convert to its managers' versions.
pub struct Write<'a> {
    /// `fieldManager`, or the User-Agent's product (see [`manager_name`]).
    pub manager: &'a str,
    /// `status`, or empty for the object itself.
    pub subresource: &'a str,
    /// `group/version` of the request.
    pub api_version: &'a str,
    /// Fields this write may not change (the strategy resets them), left out of every set.
    pub reset: &'a Set,
    /// The entry's time.
    pub now: Time,
    /// The versions the resource is served at.
    pub versions: &'a dyn Versions,
}

/// What a write from `live` (`None` for a create) to `new` (both at the write's version) changed
/// and removed, at each version a manager wrote at, each computed once.
struct ChangesByVersion<'a> {
    live: Option<&'a Value>,
    new: &'a Value,
    write: &'a Write<'a>,
    schema: &'a Schema,
    by_version: BTreeMap<String, Option<(Set, Set)>>,
}

impl<'a> ChangesByVersion<'a> {
    fn new(live: Option<&'a Value>, new: &'a Value, write: &'a Write<'a>, schema: &'a Schema) -> Self {
        Self { live, new, write, schema, by_version: BTreeMap::new() }
    }

    /// The changed and removed fields at `api_version`; `None` when it is not served.
    fn at(&mut self, api_version: &str) -> Option<&(Set, Set)> {
        if !self.by_version.contains_key(api_version) {
            let computed = self.compute(api_version);
            self.by_version.insert(api_version.to_string(), computed);
        }
        self.by_version.get(api_version).and_then(Option::as_ref)
    }

    fn compute(&self, api_version: &str) -> Option<(Set, Set)> {
        let (write, reset) = (self.write, self.write.reset);
        if api_version == write.api_version {
            return Some(changes_of(self.live, self.new, reset, self.schema));
        }
        let (new, schema) = write.versions.convert(self.new, write.api_version, api_version)?;
        let live = match self.live {
            Some(live) => Some(write.versions.convert(live, write.api_version, api_version)?.0),
            None => None,
        };
        Some(changes_of(live.as_ref(), &new, reset, &schema))
    }
}

/// [`changes`] from `live`, or everything `new` holds for a create.
fn changes_of(live: Option<&Value>, new: &Value, reset: &Set, schema: &Schema) -> (Set, Set) {
    match live {
        Some(live) => changes(live, new, reset, schema),
        None => {
            let mut added = super::typed::added(new, schema);
            added.remove_recursive(reset);
            (added, Set::new())
        }
    }
}

/// The manager of a write: `fieldManager` when given, else the User-Agent up to its first `/`
/// (`kubectl/v1.32.0 …` is `kubectl`), else `unknown`.
pub fn manager_name(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    let name = match field_manager {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => user_agent.unwrap_or_default().split('/').next().unwrap_or_default().to_string(),
    };
    if name.is_empty() { "unknown".into() } else { name }
}

/// Whether `entries` asks to reset the managers: an empty list, or one empty entry.
pub fn is_reset(entries: Option<&[ManagedFieldsEntry]>) -> bool {
    match entries {
        Some([]) => true,
        Some([only]) => only == &ManagedFieldsEntry::default(),
        _ => false,
    }
}

/// The managers after a write of `new` over `live` (`None` for a create), starting from
/// `managed` (see the module documentation for where they come from).
pub fn update(live: Option<&Value>, new: &Value, managed: Managed, write: &Write, schema: &Schema) -> Managed {
    if live.is_some() && managed.is_empty() {
        return managed;
    }
    let mut by_version = ChangesByVersion::new(live, new, write, schema);
    let mut managed = managed;
    let mut unserved = BTreeSet::new();
    for (manager, (set, _)) in managed.entries.iter_mut() {
        match by_version.at(&manager.api_version) {
            Some((changed, removed)) => {
                set.remove(changed);
                set.remove(removed);
            }
            None => {
                unserved.insert(manager.clone());
            }
        }
    }
    managed.entries.retain(|manager, _| !unserved.contains(manager));
    let Some((changed, removed)) = by_version.at(write.api_version).cloned() else { return managed };
    let mut mine = changed;
    mine.remove(&removed);
    mine.remove(stripped());
    managed.entries.retain(|_, (set, _)| !set.is_empty());
    if !mine.is_empty() {
        let key = Manager {
            name: write.manager.to_string(),
            operation: "Update".into(),
            api_version: write.api_version.to_string(),
            subresource: write.subresource.to_string(),
        };
        let previous = managed.entries.remove(&key).map(|(set, _)| set).unwrap_or_default();
        managed.entries.insert(key, (mine.union(&previous), Some(write.now.clone())));
    }
    cap_updates(&mut managed);
    managed
}

/// The manager that owns the fields an object had before its first apply.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// A field another manager owns that an apply would change: the manager's entry as the
/// kube-apiserver prints it (`"kubectl-patch" using example.com/v1beta1`) and the field's
/// path (`.spec.weight`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The owner, printed.
    pub manager: String,
    /// The field, printed.
    pub field: String,
    /// The field.
    pub path: super::fieldpath::Path,
}

impl Manager {
    /// Whether `self` and `other` are the same applier, whatever versions they applied at.
    fn same_applier(&self, other: &Manager) -> bool {
        self.operation == "Apply"
            && other.operation == "Apply"
            && self.name == other.name
            && self.subresource == other.subresource
    }

    /// `printManager` of the manager's identifier: the name, its subresource, and for an Update
    /// its API version. The identifier never holds the entry's time (`BuildManagerIdentifier`),
    /// so the kube-apiserver never prints one, though `printManager` could.
    fn printed(&self) -> String {
        let mut out = format!("{:?}", self.name);
        if !self.subresource.is_empty() {
            out = format!("{out} with subresource {:?}", self.subresource);
        }
        if self.operation == "Update" {
            out = format!("{out} using {}", self.api_version);
        }
        out
    }
}

/// The outcome of an apply: the new object (`None` when nothing changed) and the managers.
#[derive(Debug)]
pub struct Applied {
    /// The object after the apply, or `None` when it equals the live one.
    pub object: Option<Value>,
    /// The managers after the apply.
    pub managed: Managed,
}

/// Server-side apply of `config` over `live` (`None` to create) by `write.manager`, as
/// apimachinery's field manager and structured-merge-diff's `Updater.Apply` do it: the
/// configuration is merged in, the applier's entry becomes exactly the fields it sent (fields it
/// sent last time and no longer sends are removed unless another manager owns them), and fields
/// other managers own that the apply changes are conflicts unless `force` takes them over.
///
/// An apply by `kubectl` also takes over, without a conflict, what client-side `kubectl apply`
/// recorded in `live` (see [`super::last_applied`]), and records `as_sent` (the configuration as
/// the client sent it) in that record.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    as_sent: &Value,
    managed: Managed,
    write: &Write,
    force: bool,
    schema: &Schema,
) -> Result<Applied, Vec<Conflict>> {
    use super::last_applied::{KUBECTL, allowed_conflicts};
    let by_kubectl = write.manager == KUBECTL;
    let retry = (by_kubectl && !force).then(|| managed.clone());
    let conflicts = match apply_once(live, (config, as_sent), managed, write, force, schema) {
        Err(conflicts) => conflicts,
        Ok(applied) => return Ok(recorded(applied, live, as_sent, by_kubectl)),
    };
    let allowed = live.and_then(|live| allowed_conflicts(live, write.api_version, schema));
    let (Some(managed), Some(allowed)) = (retry, allowed) else { return Err(conflicts) };
    let left: Vec<Conflict> = conflicts.into_iter().filter(|c| !allowed.has(&c.path)).collect();
    if !left.is_empty() {
        return Err(left);
    }
    let applied = apply_once(live, (config, as_sent), managed, write, true, schema)?;
    Ok(recorded(applied, live, as_sent, by_kubectl))
}

/// `applied` with kubectl's client-side record of `as_sent` kept current when `by_kubectl`.
fn recorded(mut applied: Applied, live: Option<&Value>, as_sent: &Value, by_kubectl: bool) -> Applied {
    if !by_kubectl {
        return applied;
    }
    let empty = json!({});
    let live = live.unwrap_or(&empty);
    let mut object = applied.object.take().unwrap_or_else(|| live.clone());
    super::last_applied::record(&mut object, as_sent);
    applied.object = (!super::typed::values_equal(&object, live)).then_some(object);
    applied
}

/// One apply, with or without `force` (structured-merge-diff's `Updater.Apply`), of `config`,
/// the configuration `as_sent` without the fields the write resets.
fn apply_once(
    live: Option<&Value>,
    (config, as_sent): (&Value, &Value),
    managed: Managed,
    write: &Write,
    force: bool,
    schema: &Schema,
) -> Result<Applied, Vec<Conflict>> {
    let empty = json!({});
    let live_value = live.unwrap_or(&empty);
    let mut managed = managed;
    if managed.is_empty() && live.is_some() {
        let before = Write { manager: BEFORE_FIRST_APPLY, now: write.now.clone(), ..*write };
        managed = update(None, live_value, managed, &before, schema);
    }
    let key = Manager {
        name: write.manager.to_string(),
        operation: "Apply".into(),
        api_version: write.api_version.to_string(),
        subresource: write.subresource.to_string(),
    };
    let merged = super::merge::merge(live_value, config, schema);
    // The applier's entry is one whatever version it applied at last (an Apply's identifier
    // has no apiVersion); what it owned is named at that version.
    let previous = managed.entries.iter().find(|(m, _)| m.same_applier(&key)).map(|(m, _)| m.clone());
    let previous = previous.and_then(|m| managed.entries.remove(&m).map(|(set, time)| (m.api_version, set, time)));
    let mine = super::typed::to_field_set(config, schema).recursive_difference(write.reset);
    let previous_time = previous.as_ref().and_then(|(_, _, t)| t.clone());
    managed.entries.insert(key.clone(), (mine, previous_time));
    let object = match &previous {
        Some((version, last, _)) if !last.is_empty() => {
            let last = LastApplied { version, set: last };
            prune(&merged, &managed, &last, write, schema)
        }
        _ => merged,
    };
    take_over(live_value, &object, &mut managed, &key, write, force, schema)?;
    if let Some((set, _)) = managed.entries.get_mut(&key) {
        *set = set.difference(stripped());
    }
    managed.entries.retain(|_, (set, _)| !set.is_empty());
    // The applier's entry is stamped only when the object changes (`managedFieldsUpdater.Apply`:
    // structured-merge-diff returns no object for a no-op); a new applier's entry of a no-op
    // apply has no time (kube-apiserver 1.20 stamped it). structured-merge-diff merges the whole
    // configuration, the fields the write then resets included: a status the applier sends to
    // the object is a change there, which stamps the time though the object stays as it was.
    let changed = !super::typed::values_equal(&object, live_value);
    let stamped = changed || resets_change(live_value, as_sent, config, schema);
    if let Some((_, time)) = managed.entries.get_mut(&key)
        && stamped
    {
        *time = Some(write.now.clone());
    }
    Ok(Applied { object: changed.then_some(object), managed })
}

/// Whether the top-level fields of `as_sent` that `config` lacks (the fields the write resets),
/// merged into `live`, change it.
fn resets_change(live: &Value, as_sent: &Value, config: &Value, schema: &Schema) -> bool {
    let Value::Object(sent) = as_sent else { return false };
    let dropped: serde_json::Map<String, Value> = sent
        .iter()
        .filter(|(field, _)| config.get(field.as_str()).is_none())
        .map(|(f, v)| (f.clone(), v.clone()))
        .collect();
    if dropped.is_empty() {
        return false;
    }
    let merged = super::merge::merge(live, &Value::Object(dropped), schema);
    !super::typed::values_equal(&merged, live)
}

/// A schema: the write's own, or another version's.
enum Shaped<'s> {
    Same(&'s Schema),
    Other(std::sync::Arc<Schema>),
}

impl std::ops::Deref for Shaped<'_> {
    type Target = Schema;

    fn deref(&self) -> &Schema {
        match self {
            Self::Same(schema) => schema,
            Self::Other(schema) => schema,
        }
    }
}

/// What an applier owned after its previous apply, named at that apply's version.
struct LastApplied<'a> {
    version: &'a str,
    set: &'a Set,
}

/// Removes from `merged` (at the write's version) what the applier owned last time and no
/// longer sends, unless another manager owns it (structured-merge-diff's `prune`,
/// `addBackOwnedItems`, `addBackDanglingItems`): at the version of the last apply, the owned
/// items of each version's managers added back at their version, that version first.
fn prune(merged: &Value, managed: &Managed, last: &LastApplied, write: &Write, schema: &Schema) -> Value {
    use super::merge::{ensure_named_fields_are_members as ensure, remove_items};
    use super::typed::to_field_set;
    let to = |object: &Value, from: &str, to: &str| -> Option<(Value, Shaped)> {
        if from == to {
            return Some((object.clone(), Shaped::Same(schema)));
        }
        write.versions.convert(object, from, to).map(|(object, schema)| (object, Shaped::Other(schema)))
    };
    let Some((merged_at, at_schema)) = to(merged, write.api_version, last.version) else { return merged.clone() };
    let mut pruned = remove_items(&merged_at, &ensure(last.set, &at_schema), &at_schema);
    let mut owned: BTreeMap<&str, Set> = BTreeMap::new();
    for (manager, (set, _)) in &managed.entries {
        let all = owned.entry(manager.api_version.as_str()).or_default();
        *all = all.union(set);
    }
    let mut order: Vec<&str> = owned.keys().copied().filter(|v| *v != last.version).collect();
    order.insert(0, last.version);
    let (mut merged_now, mut version) = (merged_at, last.version);
    for next in order {
        let (Some((m, sc)), Some((p, _))) = (to(&merged_now, version, next), to(&pruned, version, next)) else {
            continue;
        };
        let owned_here = owned.get(next).cloned().unwrap_or_default();
        let keep = ensure(&to_field_set(&p, &sc), &sc).union(&ensure(&owned_here, &sc));
        pruned = remove_items(&m, &ensure(&to_field_set(&m, &sc), &sc).difference(&keep), &sc);
        (merged_now, version) = (m, next);
    }
    let (Some((m, sc)), Some((p, _))) = (to(&merged_now, version, last.version), to(&pruned, version, last.version))
    else {
        return merged.clone();
    };
    let dangling = ensure(&to_field_set(&m, &sc), &sc).difference(&ensure(&to_field_set(&p, &sc), &sc));
    let pruned = remove_items(&m, &dangling.intersection(&ensure(last.set, &sc)), &sc);
    to(&pruned, last.version, write.api_version).map_or_else(|| merged.clone(), |(p, _)| p)
}

/// The other managers' side of an apply (structured-merge-diff's `update` with the applier as
/// the workflow): what the apply changes that they own are conflicts, refused unless `force`
/// moves them to the applier; what it removes leaves them.
fn take_over(
    live: &Value,
    object: &Value,
    managed: &mut Managed,
    applier: &Manager,
    write: &Write,
    force: bool,
    schema: &Schema,
) -> Result<(), Vec<Conflict>> {
    let mut by_version = ChangesByVersion::new(Some(live), object, write, schema);
    let mut conflicts = Vec::new();
    for (manager, (set, _)) in managed.entries.iter().filter(|(m, _)| *m != applier) {
        let Some((changed, _)) = by_version.at(&manager.api_version) else { continue };
        for path in set.intersection(changed).paths() {
            let field = super::fieldpath::path_string(&path);
            conflicts.push(Conflict { manager: manager.printed(), field, path });
        }
    }
    if !force && !conflicts.is_empty() {
        conflicts.sort_by(|a, b| (&a.manager, &a.field).cmp(&(&b.manager, &b.field)));
        return Err(conflicts);
    }
    let mut unserved = BTreeSet::new();
    for (manager, (set, _)) in managed.entries.iter_mut().filter(|(m, _)| *m != applier) {
        match by_version.at(&manager.api_version) {
            Some((changed, removed)) => {
                set.remove(changed);
                set.remove(removed);
            }
            None => {
                unserved.insert(manager.clone());
            }
        }
    }
    managed.entries.retain(|manager, (set, _)| !set.is_empty() && !unserved.contains(manager));
    Ok(())
}

/// The 409 of `conflicts`, as the kube-apiserver's `NewConflictError` builds it.
pub fn conflict_error(conflicts: &[Conflict]) -> crate::machinery::error::Error {
    let causes = conflicts
        .iter()
        .map(|c| k8s_openapi::apimachinery::pkg::apis::meta::v1::StatusCause {
            reason: Some("FieldManagerConflict".into()),
            message: Some(format!("conflict with {}", c.manager)),
            field: Some(c.field.clone()),
        })
        .collect();
    crate::machinery::error::Error::ApplyConflict { message: conflict_message(conflicts), causes }
}

/// The 409 message of `conflicts`, as the kube-apiserver words it.
pub fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!("Apply failed with 1 conflict: conflict with {}: {}", only.manager, only.field);
    }
    let mut fields_by_manager: BTreeMap<&String, Vec<String>> = BTreeMap::new();
    for conflict in conflicts {
        fields_by_manager.entry(&conflict.manager).or_default().push(format!("- {}", conflict.field));
    }
    let mut lines = Vec::new();
    let mut managers: Vec<&String> = conflicts.iter().map(|c| &c.manager).collect();
    managers.dedup();
    for manager in managers {
        lines.push(format!("conflicts with {manager}:"));
        lines.extend(fields_by_manager.get(manager).into_iter().flatten().cloned());
    }
    format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
}

/// What a write from `old` to `new` changed (added or modified) and removed, without the fields
/// its subresource resets (structured-merge-diff's `Compare`, then `FilterFields`).
fn changes(old: &Value, new: &Value, reset: &Set, schema: &Schema) -> (Set, Set) {
    let Comparison { added: mut changed, modified, mut removed } = compare(old, new, schema);
    changed.merge(modified);
    changed.remove_recursive(reset);
    removed.remove_recursive(reset);
    (changed, removed)
}

/// Folds the oldest `Update` entries of each API version into `ancient-changes` until at most
/// [`MAX_UPDATE_MANAGERS`] remain.
fn cap_updates(managed: &mut Managed) {
    if managed.entries.iter().filter(|(m, _)| m.operation == "Update").count() <= MAX_UPDATE_MANAGERS {
        return;
    }
    let seconds = |t: &Option<Time>| t.as_ref().map(|t| t.0.as_second()).unwrap_or(0);
    let mut updaters: Vec<(i64, String, Manager)> = managed
        .entries
        .iter()
        .filter(|(m, _)| m.operation == "Update")
        .map(|(m, (_, t))| (seconds(t), m.identifier(), m.clone()))
        .collect();
    updaters.sort();
    let mut length = updaters.len();
    let mut first_of_version: BTreeMap<String, Manager> = BTreeMap::new();
    for (_, _, manager) in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let bucket = Manager {
            name: ANCIENT_CHANGES.into(),
            operation: "Update".into(),
            api_version: manager.api_version.clone(),
            subresource: String::new(),
        };
        let Some(first) = first_of_version.get(&manager.api_version).cloned() else {
            first_of_version.insert(manager.api_version.clone(), manager);
            continue;
        };
        if !managed.entries.contains_key(&bucket)
            && let Some(moved) = managed.entries.remove(&first)
        {
            managed.entries.insert(bucket.clone(), moved);
        }
        if let Some((set, time)) = managed.entries.remove(&manager) {
            let folded = managed.entries.get(&bucket).map(|(s, _)| set.union(s)).unwrap_or(set);
            managed.entries.insert(bucket, (folded, time));
            length -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structured_merge::last_applied::ANNOTATION;
    use k8s_openapi::jiff::Timestamp;

    fn schema() -> Schema {
        Schema::compile(&json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            }},
            "spec": {"type": "object", "properties": {"weight": {"type": "number"}, "height": {"type": "number"}}},
            "status": {"type": "object", "properties": {"observedGeneration": {"type": "integer"}}},
        }}))
    }

    /// An apply whose configuration is sent as it is applied.
    fn apply(
        live: Option<&Value>,
        config: &Value,
        managed: Managed,
        write: &Write,
        force: bool,
        schema: &Schema,
    ) -> Result<Applied, Vec<Conflict>> {
        super::apply(live, config, config, managed, write, force, schema)
    }

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap())
    }

    fn write<'a>(manager: &'a str, subresource: &'a str, reset: &'a Set, second: i64) -> Write<'a> {
        Write {
            manager,
            subresource,
            api_version: "test.example.com/v1alpha",
            reset,
            now: at(second),
            versions: &OneVersion,
        }
    }

    fn fields(managed: &Managed) -> Vec<(String, Value)> {
        managed
            .encode()
            .unwrap_or_default()
            .into_iter()
            .map(|e| (e.manager.unwrap_or_default(), e.fields_v1.map(|f| f.0).unwrap_or_default()))
            .collect()
    }

    fn object(weight: f64, labels: Value) -> Value {
        json!({"apiVersion": "test.example.com/v1alpha", "kind": "Widget",
            "metadata": {"name": "dolly", "namespace": "default", "labels": labels},
            "spec": {"weight": weight, "height": 2.0}, "status": {"observedGeneration": 1}})
    }

    #[test]
    fn a_create_gives_its_manager_every_field_but_the_reset_and_system_ones() {
        let reset = top_level(&["status"]);
        let created = update(
            None,
            &object(1.0, json!({"a": "b"})),
            Managed::default(),
            &write("kubectl-create", "", &reset, 10),
            &schema(),
        );
        assert_eq!(
            fields(&created),
            [(
                "kubectl-create".to_string(),
                json!({"f:metadata": {"f:labels": {".": {}, "f:a": {}}}, "f:spec": {".": {}, "f:height": {}, "f:weight": {}}})
            )]
        );
        let entry = &created.encode().unwrap()[0];
        assert_eq!((entry.operation.as_deref(), entry.time.clone()), (Some("Update"), Some(at(10))));
        assert_eq!(entry.subresource, None);
    }

    #[test]
    fn an_update_takes_what_it_changes_from_the_others_and_removals_leave_everyone() {
        let reset = top_level(&["status"]);
        let v1 = object(1.0, json!({"a": "b", "c": "d"}));
        let created = update(None, &v1, Managed::default(), &write("alice", "", &reset, 10), &schema());
        let v2 = object(5.0, json!({"a": "b"}));
        let updated = update(Some(&v1), &v2, created.clone(), &write("bob", "", &reset, 20), &schema());
        assert_eq!(
            fields(&updated),
            [
                (
                    "alice".to_string(),
                    json!({"f:metadata": {"f:labels": {".": {}, "f:a": {}}}, "f:spec": {".": {}, "f:height": {}}})
                ),
                ("bob".to_string(), json!({"f:spec": {"f:weight": {}}})),
            ]
        );
        let same = update(Some(&v2), &v2, updated.clone(), &write("carol", "", &reset, 30), &schema());
        assert_eq!(same, updated, "a write that changes nothing changes no manager");
        let untracked = update(Some(&v1), &v2, Managed::default(), &write("bob", "", &reset, 20), &schema());
        assert!(untracked.is_empty(), "an object without managers stays untracked");
    }

    #[test]
    fn a_status_write_is_its_own_entry_and_ignores_the_spec() {
        let spec_reset = top_level(&["spec"]);
        let v1 = object(1.0, json!({}));
        let base = update(None, &v1, Managed::default(), &write("alice", "", &top_level(&["status"]), 10), &schema());
        let mut v2 = object(9.0, json!({}));
        v2["status"]["observedGeneration"] = json!(2);
        let status = update(Some(&v1), &v2, base, &write("controller", "status", &spec_reset, 20), &schema());
        let entries = status.encode().unwrap();
        let controller = entries.iter().find(|e| e.manager.as_deref() == Some("controller")).unwrap();
        assert_eq!(controller.subresource.as_deref(), Some("status"));
        assert_eq!(controller.fields_v1.as_ref().unwrap().0, json!({"f:status": {"f:observedGeneration": {}}}));
    }

    #[test]
    fn more_than_ten_updaters_fold_the_oldest_into_ancient_changes() {
        let reset = Set::new();
        let mut managed = Managed::default();
        let mut live = json!({"spec": {}});
        for i in 0..12 {
            let mut next = live.clone();
            next["spec"][format!("f{i}")] = json!(i);
            managed = update(
                Some(&live).filter(|_| i > 0),
                &next,
                managed,
                &write(&format!("m{i:02}"), "", &reset, i),
                &schema(),
            );
            live = next;
        }
        let names: Vec<String> = fields(&managed).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names.len(), 10);
        assert_eq!(names[0], "ancient-changes", "{names:?}");
        assert!(!names.contains(&"m00".to_string()) && names.contains(&"m11".to_string()), "{names:?}");
    }

    #[test]
    fn managers_are_identified_as_build_manager_identifier_writes_them() {
        let update = Manager {
            name: "a".into(),
            operation: "Update".into(),
            api_version: "v".into(),
            subresource: "status".into(),
        };
        assert_eq!(
            update.identifier(),
            r#"{"manager":"a","operation":"Update","apiVersion":"v","subresource":"status"}"#
        );
        let apply = Manager { operation: "Apply".into(), subresource: String::new(), ..update };
        assert_eq!(apply.identifier(), r#"{"manager":"a","operation":"Apply"}"#);
    }

    #[test]
    fn managers_come_from_the_field_manager_or_the_user_agent() {
        assert_eq!(manager_name(Some("flux"), Some("kubectl/v1.32")), "flux");
        assert_eq!(manager_name(None, Some("kubectl/v1.32.0 (linux/amd64) kubernetes/abc")), "kubectl");
        assert_eq!(manager_name(Some(""), None), "unknown");
        assert!(is_reset(Some(&[])) && is_reset(Some(&[ManagedFieldsEntry::default()])) && !is_reset(None));
        let read = Managed::decode(&[ManagedFieldsEntry { operation: Some("Patch".into()), ..Default::default() }]);
        assert_eq!(read, None, "an entry with an unknown operation cannot be read");
    }

    fn applied(manager: &str, managed: &Managed) -> Option<Value> {
        managed
            .encode()
            .unwrap_or_default()
            .into_iter()
            .find(|e| e.manager.as_deref() == Some(manager) && e.operation.as_deref() == Some("Apply"))
            .map(|e| e.fields_v1.map(|f| f.0).unwrap_or_default())
    }

    fn spec(fields: Value) -> Value {
        json!({"apiVersion": "test.example.com/v1alpha", "kind": "Widget", "metadata": {"name": "dolly"}, "spec": fields})
    }

    #[test]
    fn an_apply_creates_and_owns_exactly_what_it_sent() {
        let reset = top_level(&["status"]);
        let config = spec(json!({"weight": 1, "height": 2}));
        let out = apply(None, &config, Managed::default(), &write("a", "", &reset, 10), false, &schema()).unwrap();
        assert_eq!(out.object, Some(config.clone()));
        assert_eq!(applied("a", &out.managed), Some(json!({"f:spec": {"f:height": {}, "f:weight": {}}})));
        let again = apply(Some(&config), &config, out.managed.clone(), &write("a", "", &reset, 20), false, &schema());
        let again = again.unwrap();
        assert_eq!(again.object, None, "the same apply again changes nothing");
        assert_eq!(again.managed, out.managed, "not even the time");
    }

    #[test]
    fn a_status_sent_with_a_no_op_apply_stamps_its_time_but_changes_nothing() {
        let reset = top_level(&["status"]);
        let config = spec(json!({"weight": 1, "height": 2}));
        let out = apply(None, &config, Managed::default(), &write("a", "", &reset, 10), false, &schema()).unwrap();
        let time = |applied: &Applied| applied.managed.encode().unwrap_or_default()[0].time.clone();
        let mut sent = config.clone();
        sent["status"] = json!({"observedGeneration": 3});
        let with_status = super::apply(
            Some(&config),
            &config,
            &sent,
            out.managed.clone(),
            &write("a", "", &reset, 20),
            false,
            &schema(),
        );
        let with_status = with_status.unwrap();
        assert_eq!(with_status.object, None, "the status is reset: the object stays as it was");
        assert_eq!(time(&with_status), Some(at(20)), "structured-merge-diff merged a status that changed it");
        let kept = super::apply(
            Some(&sent),
            &config,
            &sent,
            out.managed.clone(),
            &write("a", "", &reset, 30),
            false,
            &schema(),
        );
        assert_eq!(time(&kept.unwrap()), Some(at(10)), "a status the object already has changes nothing");
    }

    #[test]
    fn changing_another_manager_s_field_is_a_conflict_unless_forced() {
        let reset = top_level(&["status"]);
        let created = spec(json!({"weight": 1, "height": 2}));
        let mine =
            apply(None, &created, Managed::default(), &write("a", "", &reset, 10), false, &schema()).unwrap().managed;
        let patched = spec(json!({"weight": 7, "height": 2}));
        let both = update(Some(&created), &patched, mine, &write("b", "", &reset, 20), &schema());
        let config = spec(json!({"weight": 3, "height": 2}));
        let refused =
            apply(Some(&patched), &config, both.clone(), &write("a", "", &reset, 30), false, &schema()).unwrap_err();
        let expected = Conflict {
            manager: "\"b\" using test.example.com/v1alpha".into(),
            field: ".spec.weight".into(),
            path: vec![PathElement::Field("spec".into()), PathElement::Field("weight".into())],
        };
        assert_eq!(refused, std::slice::from_ref(&expected));
        assert_eq!(
            conflict_message(&refused),
            "Apply failed with 1 conflict: conflict with \"b\" using test.example.com/v1alpha: .spec.weight"
        );
        let forced =
            apply(Some(&patched), &config, both.clone(), &write("a", "", &reset, 30), true, &schema()).unwrap();
        assert_eq!(forced.object.unwrap()["spec"]["weight"], 3);
        assert!(fields(&forced.managed).iter().all(|(m, _)| m != "b"), "b lost its only field");
        let agreeing = apply(
            Some(&patched),
            &spec(json!({"weight": 7, "height": 2})),
            both,
            &write("a", "", &reset, 30),
            false,
            &schema(),
        );
        assert!(agreeing.is_ok(), "setting the value another manager set is shared ownership, not a conflict");
    }

    #[test]
    fn a_field_the_applier_stops_sending_goes_unless_someone_else_owns_it() {
        let reset = top_level(&["status"]);
        let with_height = spec(json!({"weight": 1, "height": 2}));
        let first =
            apply(None, &with_height, Managed::default(), &write("a", "", &reset, 10), false, &schema()).unwrap();
        let without = spec(json!({"weight": 1}));
        let pruned =
            apply(Some(&with_height), &without, first.managed.clone(), &write("a", "", &reset, 20), false, &schema());
        assert_eq!(pruned.unwrap().object.unwrap()["spec"], json!({"weight": 1}));

        let shared = update(
            Some(&with_height),
            &spec(json!({"weight": 1, "height": 5})),
            first.managed,
            &write("b", "", &reset, 15),
            &schema(),
        );
        let live = spec(json!({"weight": 1, "height": 5}));
        let kept = apply(Some(&live), &without, shared, &write("a", "", &reset, 20), false, &schema()).unwrap();
        assert_eq!(kept.object, None, "b still owns the height, so it stays");
    }

    #[test]
    fn the_first_apply_to_an_untracked_object_leaves_the_rest_to_before_first_apply() {
        let reset = top_level(&["status"]);
        let live = spec(json!({"weight": 1, "height": 2}));
        let config = spec(json!({"weight": 4}));
        let refused = apply(Some(&live), &config, Managed::default(), &write("a", "", &reset, 10), false, &schema());
        let refused = refused.unwrap_err();
        assert_eq!(refused.len(), 1);
        assert!(refused[0].manager.starts_with("\"before-first-apply\" using "), "{refused:?}");
        assert_eq!(refused[0].field, ".spec.weight");
        let forced = apply(
            Some(&live),
            &spec(json!({"weight": 4})),
            Managed::default(),
            &write("a", "", &reset, 10),
            true,
            &schema(),
        )
        .unwrap();
        let names: Vec<String> = fields(&forced.managed).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["a", "before-first-apply"]);
    }

    /// A widget as client-side `kubectl apply` leaves it: its annotation records `recorded`, and
    /// `kubectl-client-side-apply` owns what it wrote; then `edits` by `kubectl-edit`.
    fn client_side_applied(recorded: Value, edits: Option<Value>) -> (Value, Managed) {
        let reset = top_level(&["status"]);
        let mut live = recorded.clone();
        live["metadata"]["annotations"] = json!({(ANNOTATION): format!("{recorded}\n")});
        let csa = write("kubectl-client-side-apply", "", &reset, 10);
        let managed = update(None, &live, Managed::default(), &csa, &schema());
        let Some(spec) = edits else { return (live, managed) };
        let mut edited = live.clone();
        edited["spec"] = spec;
        let managed = update(Some(&live), &edited, managed, &write("kubectl-edit", "", &reset, 20), &schema());
        (edited, managed)
    }

    #[test]
    fn kubectl_takes_over_what_client_side_apply_recorded_without_a_conflict() {
        let reset = top_level(&["status"]);
        let (live, managed) = client_side_applied(spec(json!({"weight": 5, "height": 2})), None);
        let config = spec(json!({"weight": 6, "height": 2}));
        let out = apply(Some(&live), &config, managed.clone(), &write("kubectl", "", &reset, 30), false, &schema());
        let out = out.unwrap();
        let object = out.object.unwrap();
        assert_eq!(object["spec"]["weight"], 6);
        assert_eq!(applied("kubectl", &out.managed), Some(json!({"f:spec": {"f:height": {}, "f:weight": {}}})));
        let annotation = object["metadata"]["annotations"][ANNOTATION].as_str().unwrap();
        assert_eq!(serde_json::from_str::<Value>(annotation).unwrap(), config, "the record follows the apply");

        let flux = apply(Some(&live), &config, managed, &write("flux", "", &reset, 30), false, &schema());
        let refused = flux.unwrap_err();
        assert_eq!(refused.len(), 1, "only kubectl's applies read the record: {refused:?}");
        assert_eq!(refused[0].manager, "\"kubectl-client-side-apply\" using test.example.com/v1alpha");
    }

    #[test]
    fn a_field_changed_since_or_never_recorded_still_conflicts() {
        let reset = top_level(&["status"]);
        let recorded = spec(json!({"weight": 5, "height": 2}));
        let (live, managed) = client_side_applied(recorded, Some(json!({"weight": 9, "height": 2, "color": "white"})));
        let config = spec(json!({"weight": 6, "height": 3, "color": "black"}));
        let out = apply(Some(&live), &config, managed, &write("kubectl", "", &reset, 30), false, &schema());
        let refused: Vec<(String, String)> = out.unwrap_err().into_iter().map(|c| (c.manager, c.field)).collect();
        let edit = "\"kubectl-edit\" using test.example.com/v1alpha".to_string();
        assert_eq!(
            refused,
            [(edit.clone(), ".spec.color".into()), (edit, ".spec.weight".into())],
            "the height, recorded with its value, is no conflict; the edited weight and the colour are"
        );
    }

    #[test]
    fn a_kubectl_apply_rewrites_the_client_side_annotation_when_there_is_one() {
        let reset = top_level(&["status"]);
        let mut live = spec(json!({"weight": 1, "height": 2}));
        live["metadata"]["annotations"] = json!({(ANNOTATION): "{\"old\":true}\n"});
        let config = spec(json!({"weight": 4, "height": 2}));
        let out = apply(Some(&live), &config, Managed::default(), &write("kubectl", "", &reset, 10), true, &schema());
        let object = out.unwrap().object.unwrap();
        let annotation = object["metadata"]["annotations"][ANNOTATION].as_str().unwrap();
        assert_eq!(serde_json::from_str::<Value>(annotation).unwrap(), config);
        assert!(annotation.ends_with('\n'));
        let other = apply(Some(&live), &config, Managed::default(), &write("flux", "", &reset, 10), true, &schema());
        let object = other.unwrap().object.unwrap();
        assert_eq!(object["metadata"]["annotations"][ANNOTATION], "{\"old\":true}\n", "only kubectl's applies");
    }

    /// [`conflict_message`] as it was: each manager's fields found by a search of all conflicts.
    fn conflict_message_by_search(conflicts: &[Conflict]) -> String {
        if let [only] = conflicts {
            return format!("Apply failed with 1 conflict: conflict with {}: {}", only.manager, only.field);
        }
        let mut lines = Vec::new();
        let mut managers: Vec<&String> = conflicts.iter().map(|c| &c.manager).collect();
        managers.dedup();
        for manager in managers {
            lines.push(format!("conflicts with {manager}:"));
            lines.extend(conflicts.iter().filter(|c| &c.manager == manager).map(|c| format!("- {}", c.field)));
        }
        format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
    }

    proptest::proptest! {
        /// Conflicts are worded as before, in whatever order they come.
        #[test]
        fn conflict_messages_are_worded_as_by_a_search(picks in proptest::collection::vec((0..3u8, 0..4u8), 0..8)) {
            let conflicts: Vec<Conflict> = picks
                .iter()
                .map(|(m, f)| Conflict { manager: format!("\"m{m}\""), field: format!(".spec.f{f}"), path: Vec::new() })
                .collect();
            proptest::prop_assert_eq!(conflict_message(&conflicts), conflict_message_by_search(&conflicts));
        }

        /// Entries read in the kube-apiserver's order (not the managers') give the managers that
        /// inserting them in turn gave; of two entries of one manager, the last one counts.
        #[test]
        fn managers_decode_as_when_inserted_in_turn(picks in proptest::collection::vec((0..3u8, any_bool(), any_bool()), 0..8)) {
            let entries: Vec<ManagedFieldsEntry> = picks
                .iter()
                .enumerate()
                .map(|(i, (m, apply, v1))| ManagedFieldsEntry {
                    manager: Some(format!("m{m}")),
                    operation: Some(if *apply { "Apply" } else { "Update" }.into()),
                    api_version: Some(if *v1 { "t/v1" } else { "t/v2" }.into()),
                    fields_type: Some("FieldsV1".into()),
                    fields_v1: Some(FieldsV1(json!({"f:spec": {format!("f:f{i}"): {}}}))),
                    time: Some(at(i as i64)),
                    ..Default::default()
                })
                .collect();
            let mut in_turn = Managed::default();
            for entry in &entries {
                let one = Managed::decode(std::slice::from_ref(entry)).unwrap();
                for (manager, fields) in one.entries {
                    in_turn.entries.insert(manager, fields);
                }
            }
            proptest::prop_assert_eq!(Managed::decode(&entries).unwrap(), in_turn);
        }
    }

    fn any_bool() -> impl proptest::strategy::Strategy<Value = bool> {
        proptest::bool::ANY
    }
}
