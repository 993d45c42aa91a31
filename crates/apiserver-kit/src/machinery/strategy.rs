//! What a resource does on every write, modelled on the kube-apiserver's REST strategies
//! (`k8s.io/apiserver/pkg/registry/rest`: `RESTCreateStrategy`, `RESTUpdateStrategy`, and for
//! custom resources `customresource.strategy` and `statusStrategy`). The generic registry
//! (`crate::api::registry`) fills and checks the metadata every object shares, and calls these
//! hooks at fixed points; everything particular to a resource lives in its `Strategy`, so
//! `crate::api` holds no resource-specific rule.
//!
//! Order on create: metadata filled, status dropped → [`Strategy::prepare_for_create`] →
//! metadata validation and [`Strategy::validate`] → stored; [`Strategy::warnings`] go back as
//! `Warning` headers. On update (and patch): metadata and the reset fields
//! ([`Strategy::reset_fields`]) carried over from the stored object →
//! [`Strategy::prepare_for_update`] → `generation` moves when [`Strategy::spec_changed`] →
//! metadata validation and [`Strategy::validate_update`] → stored.

use super::columns::{Cell, Column};
use super::error::FieldError;
use super::resource::ApiResource;
pub use super::resource::Subresource;

/// A resource's behaviour on writes, in tables and in field selectors. Every hook has a default,
/// so a resource that needs nothing more than its schema writes `impl Strategy for Widget {}`:
///
/// - the status rules of a resource with a status subresource apply whatever the strategy says
///   (the kube-apiserver's custom resource strategies): a create or a write of the object keeps
///   the status it had (none, for a create), a write of `/status` keeps everything else of the
///   stored object ([`Strategy::reset_fields`]);
/// - `generation` moves when the spec changes ([`Strategy::spec_changed`]);
/// - nothing is checked beyond the schema ([`Strategy::validate`]);
/// - the table's columns are the definition's printer columns ([`Strategy::columns`]).
pub trait Strategy: ApiResource {
    /// Clears or fills what a create may not set or must have, after the generic metadata is
    /// filled and the status rules applied.
    fn prepare_for_create(&mut self) {}

    /// Copies from `old` what a write of `subresource` may not change beyond the status rules
    /// (which already kept the status, or the spec for `/status`); the generic metadata (uid,
    /// creationTimestamp, resourceVersion, deletion fields) is already carried over.
    fn prepare_for_update(&mut self, _old: &Self, _subresource: Subresource) {}

    /// The top-level fields a write of `subresource` may not change, which a write keeps as
    /// stored and managed fields leave out: for the object, its status when it has a status
    /// subresource; for `/status`, the spec (the custom resource strategies' `GetResetFields`).
    fn reset_fields(subresource: Subresource) -> &'static [&'static str] {
        match subresource {
            Subresource::Main if Self::info().has(Subresource::Status) => &["status"],
            Subresource::Main => &[],
            Subresource::Status => &["spec"],
        }
    }

    /// The rules of the resource's own fields that its schema cannot state (not metadata), every
    /// error found; none by default. It runs once the body has passed the schema (types,
    /// `required`, bounds, patterns, `enum`), which the server checks as a CRD's.
    fn validate(&self) -> Vec<FieldError> {
        Vec::new()
    }

    /// Validation of an update from `old`: [`Strategy::validate`] unless the resource has rules
    /// about transitions (immutable fields).
    fn validate_update(&self, _old: &Self) -> Vec<FieldError> {
        self.validate()
    }

    /// Warnings about an object about to be written, sent back as `Warning` headers (deprecated
    /// fields, odd values that are still valid).
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether the desired state changed between `old` and `self`, which moves `generation`:
    /// whether the specs differ.
    fn spec_changed(&self, old: &Self) -> bool {
        self.spec() != old.spec()
    }

    /// The table's columns besides NAME and AGE, which every resource gets: the printer columns
    /// of the definition (`#[kube(printcolumn(...))]`) unless the resource declares its own.
    /// Read once per type.
    fn columns() -> Vec<Column<Self>> {
        Column::of_definition(&super::resource::definition::<Self>())
    }
}

/// What the builder refuses in `K`'s table columns, each named: a [`Cell::Path`] column whose
/// JSONPath is not in `K`'s schema.
pub fn column_problems<K: Strategy>() -> Vec<String> {
    let definition = super::resource::definition::<K>();
    let path_problem = |column: &Column<K>| match column.cell {
        Cell::Path(path) => super::definition::column_problem(&definition, column.name, path),
        Cell::Computed(_) => None,
    };
    K::columns().iter().filter_map(path_problem).collect()
}
