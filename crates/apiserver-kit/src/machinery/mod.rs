//! The bottom layer: what every other layer speaks, importing nothing of the crate. Errors and
//! their `Status` bodies, field errors, object keys, label and field selectors, the continue
//! token and the page cut, table columns, JSON schemas, the description of a resource, who made a
//! request and what admission is asked about a write, JSON patches as admission policies apply
//! them. Named after k8s.io/apimachinery, which plays this part in the kube-apiserver;
//! server-side apply and managed fields stand beside it in [`crate::structured_merge`], as
//! structured-merge-diff does.

pub mod admission;
pub mod columns;
pub mod conditions;
pub mod cpu_bound;
pub mod definition;
pub mod error;
pub mod identity;
pub mod json;
pub mod json_depth;
pub mod json_duplicates;
pub mod json_patch_v4;
pub mod json_scan;
pub mod key;
pub mod lifecycle;
pub mod number;
pub mod paging;
pub mod recorded_warnings;
pub mod resource;
pub mod schema;
pub mod schema_validation;
pub mod selector;
pub mod status_json;
pub mod stored;
pub mod strategy;
#[cfg(test)]
pub mod testing;
pub mod user;
pub mod validation;
pub mod verb;
pub mod version;
