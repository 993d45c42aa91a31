//! What a server's resources and its `main` name, in one import, as kube's and tokio's preludes
//! do: `use apiserver_kit::prelude::*;`. With it come the derives kube-rs resources are made
//! with (`CustomResource`, `JsonSchema`, `KubeSchema` for a schema with validation rules,
//! `Serialize`, `Deserialize`); they expand to paths of their own crates, which the server's
//! `Cargo.toml` lists (kube, k8s-openapi, schemars, serde, serde_json). `Error` and `Result` are
//! the library's (`Result<T, E = Error>`, so `Result<(), Box<dyn std::error::Error>>` still
//! names any error), what a version's conversion ([`Served`]) returns.

pub use crate::machinery::columns::{Column, ColumnType};
pub use crate::machinery::error::{Error, FieldError, Result};
pub use crate::machinery::identity::Identity;
pub use crate::machinery::resource::{ApiResource, Subresource};
pub use crate::machinery::strategy::Strategy;
pub use crate::machinery::verb::Verb;
pub use crate::machinery::version::Served;
pub use crate::server::{
    ApiServerBuilder, Authentication, ClusterConnection, MirroredView, ServerOptions, StoredResource, shutdown_signal,
};
pub use kube::{CustomResource, KubeSchema};
pub use schemars::JsonSchema;
pub use serde::{Deserialize, Serialize};
