//! What a resource does on every write, modelled on the kube-apiserver's REST strategies
//! (`k8s.io/apiserver/pkg/registry/rest`: `RESTCreateStrategy`, `RESTUpdateStrategy`, and for
//! custom resources `customresource.strategy` and `statusStrategy`). The generic registry
//! (`crate::api::registry`) fills and checks the metadata every object shares, and calls these
//! hooks at fixed points; everything particular to a resource lives in its `Strategy`, so
//! `crate::api` holds no resource-specific rule.
//!
//! Order on create: metadata filled → [`Strategy::prepare_for_create`] → metadata validation and
//! [`Strategy::validate`] → stored; [`Strategy::warnings`] go back as `Warning` headers. On
//! update (and patch): metadata carried over from the stored object →
//! [`Strategy::prepare_for_update`] → `generation` moves when [`Strategy::spec_changed`] →
//! metadata validation and [`Strategy::validate_update`] → stored.

use super::columns::Column;
use super::error::FieldError;
use super::resource::ApiResource;
pub use super::resource::Subresource;

/// A resource's behaviour on writes, in tables and in field selectors.
pub trait Strategy: ApiResource {
    /// Clears what a create may not set, after the generic metadata is filled (for a resource
    /// with a status: the status, which only its controller writes through `/status`).
    fn prepare_for_create(&mut self) {}

    /// Copies from `old` what a write of `subresource` may not change: for [`Subresource::Main`]
    /// the status, for [`Subresource::Status`] everything but the status. The generic metadata
    /// (uid, creationTimestamp, resourceVersion, deletion fields) is already carried over.
    fn prepare_for_update(&mut self, _old: &Self, _subresource: Subresource) {}

    /// The top-level fields a write of `subresource` may not change, which managed fields leave
    /// out: for the object, its status when it has a status subresource; for `/status`, the
    /// spec (the custom resource strategies' `GetResetFields`).
    fn reset_fields(subresource: Subresource) -> &'static [&'static str] {
        match subresource {
            Subresource::Main if Self::INFO.has(Subresource::Status) => &["status"],
            Subresource::Main => &[],
            Subresource::Status => &["spec"],
        }
    }

    /// Semantic validation of the resource's own fields (not metadata), collecting every error.
    fn validate(&self) -> Vec<FieldError>;

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

    /// Whether the desired state changed between `old` and `self`; a change bumps `generation`.
    fn spec_changed(&self, old: &Self) -> bool;

    /// Table columns besides NAME and AGE, which every resource gets.
    fn columns() -> &'static [Column];

    /// Cells for [`Strategy::columns`], in the same order.
    fn cells(&self) -> Vec<serde_json::Value>;
}

/// The write rules of a resource with a status subresource, for its [`Strategy`] to call, on
/// any type with a spec and a status (kube's `CustomResource` derive implements both traits
/// when given `status = "…"`), as the kube-apiserver's custom resource strategy applies them.
pub mod status_subresource {
    use super::Subresource;
    use kube::core::object::{HasSpec, HasStatus};

    /// [`super::Strategy::prepare_for_create`]: a create may not set the status (only the
    /// controller writes it, through `/status`).
    pub fn prepare_for_create<K: HasStatus>(object: &mut K) {
        *object.status_mut() = None;
    }

    /// [`super::Strategy::prepare_for_update`]: a write of the object keeps the stored status,
    /// one of `/status` keeps the stored spec.
    pub fn prepare_for_update<K>(object: &mut K, old: &K, subresource: Subresource)
    where
        K: HasSpec + HasStatus,
        K::Spec: Clone,
        K::Status: Clone,
    {
        match subresource {
            Subresource::Main => *object.status_mut() = old.status().cloned(),
            Subresource::Status => *object.spec_mut() = old.spec().clone(),
        }
    }
}
