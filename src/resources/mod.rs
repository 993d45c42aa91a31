//! The resources this server serves, one file each: its Rust type, schema, table columns and
//! validation, described through [`crate::machinery::resource::ApiResource`] so the generic
//! machinery can serve it. Nothing here knows HTTP.
//!
//! Adding a third resource means one new file here and one line in `crate::server` that mounts it.

pub mod farmpod;
pub mod llama;

/// The API group of every resource this server serves.
pub const GROUP: &str = "farm.example.com";
