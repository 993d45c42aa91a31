//! Server-side apply and managed fields, beside [`crate::machinery`] as structured-merge-diff
//! stands beside k8s.io/apimachinery: field paths and their sets ([`fieldpath`]), the shapes a
//! schema gives values ([`shape`]), typed comparison ([`typed`]), merging and removing fields
//! ([`merge`]), the managers of each field and the apply itself ([`managed`]), kubectl's
//! last-applied annotation ([`last_applied`]) and the encoding of objects without their managed
//! fields ([`unmanaged_value`]). It imports only `crate::machinery` (errors, numbers, the
//! annotation limit, the resources' schemas); the API layer calls it.

pub mod fieldpath;
pub mod last_applied;
pub mod managed;
pub mod merge;
pub mod shape;
pub mod typed;
pub mod unmanaged_value;
pub mod validate;
