//! # farm-apiserver
//!
//! A Kubernetes aggregated API server for the group `farm.example.com` (v1, and the deprecated
//! v1alpha), also able to run standalone so kubectl talks to it directly; built on
//! [`apiserver_kit`], the generic machinery, whose modules are re-exported here.
//!
//! This crate holds what is about farms: the resources ([`resources`]: Llama, stored, and
//! FarmPod, a view of the cluster's Pods), the server made of them ([`app`]), its command line
//! ([`config`]) and the certificates and manifests of its installation ([`certs`]).

pub mod app;
pub mod certs;
pub mod config;
pub mod etcd_secrets;
pub mod resources;

pub use apiserver_kit::{
    admission, api, audit, auth, cel, certificates, health, kept_bodies, kubeconfig, limits, machinery, metrics,
    mirror, namespaces, observe, panics, server, store, structured_merge, tls, validation_rules,
};
pub use app::run;
