//! Resource-agnostic Kubernetes REST machinery: errors as `Status`, content negotiation, query
//! options, body decoding and patching, metadata validation, the generic registry semantics,
//! HTTP handlers, Table rendering, discovery and OpenAPI.

pub mod decode;
pub mod discovery;
pub mod extract;
pub mod handlers;
pub mod negotiate;
pub mod openapi;
pub mod patch;
pub mod query;
pub mod registry;
pub mod table;
pub mod watch;
