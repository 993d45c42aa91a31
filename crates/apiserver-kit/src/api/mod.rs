//! The HTTP layer: resource-agnostic Kubernetes REST over axum. Content negotiation (and YAML
//! answers, compressed answers), query options, extractors whose rejections are `Status` bodies, body decoding and
//! patching, the generic registry (the metadata rules every object shares, calling each resource's
//! [`crate::machinery::strategy::Strategy`] at fixed points), handlers, watch streams, Table
//! rendering, discovery and OpenAPI, and the CRD conversion webhook. It imports `crate::machinery`, `crate::store` and
//! `crate::metrics`, and holds no rule particular to one resource.

pub mod compression;
pub mod conversion_webhook;
pub mod decode;
pub mod deletion;
pub mod discovery;
pub mod extract;
pub mod handlers;
pub mod list_body;
pub mod negotiate;
pub mod openapi;
pub mod openapi_protobuf;
pub mod patch;
pub mod pretty_answers;
pub mod query;
pub mod registry;
pub mod table;
pub mod warning_recorder;
pub mod warnings;
pub mod watch;
pub mod yaml;
pub mod yaml_answers;
