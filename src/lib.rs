//! # farm-apiserver
//!
//! A Kubernetes aggregated API server for the group `farm.example.com/v1alpha`, also able to run
//! standalone so kubectl talks to it directly.
//!
//! ## Layers
//!
//! Imports point one way, down this list; no module imports one above it (the unit tests of the
//! generic layers use `machinery::testing`'s Widget, in two versions, as their fixture):
//!
//! 1. [`machinery`], the bottom layer, importing nothing of the crate: errors and their `Status`
//!    bodies, field errors, object keys, label and field selectors, metadata validation, the
//!    continue token, table columns, schemas, the API verbs ([`machinery::verb::Verb`]), the
//!    description of a resource ([`machinery::resource::ApiResource`]) and its behaviour on
//!    writes ([`machinery::strategy::Strategy`], modelled on the kube-apiserver's REST
//!    strategies).
//! 2. [`store`]: storage behind a trait, in memory or in etcd; imports only [`machinery`].
//! 3. [`resources`]: one file per resource (Llama, FarmPod); imports only [`machinery`], nothing
//!    of HTTP. [`metrics`] (the Prometheus registry) imports nothing of the crate either.
//! 4. [`api`]: the resource-agnostic Kubernetes REST machinery over HTTP: negotiation, query
//!    options, decoding and patching, registry semantics, handlers, watch streams, tables,
//!    discovery and OpenAPI; imports [`machinery`], [`store`] and [`metrics`].
//! 5. Request plumbing beside it: [`auth`] (the standalone bearer token, or delegation to the
//!    cluster: front-proxy certificates and headers, client certificates, TokenReview,
//!    SubjectAccessReview), [`audit`] (the audit policy and log, and the middleware that runs
//!    authentication, auditing and authorization in the kube-apiserver's order), [`observe`]
//!    (counts, times and logs every request), [`limits`] (requests in flight and timeouts),
//!    [`health`]; [`admission`] (the cluster's
//!    admission webhooks: their configurations, which ones a write calls, and the calls, behind
//!    the registry's [`machinery::admission::Admission`]); [`mirror`] (a mirror of a kind of the
//!    cluster's objects feeding a read-only view: the Pod cache that feeds
//!    FarmPods); [`namespaces`] (the Namespace cache behind the lifecycle of creates and the
//!    webhooks' `namespaceSelector`); [`tls`], [`kubeconfig`], [`certs`], [`config`].
//! 6. [`server`] wires everything: TLS, authentication and audit, the storage factory (the
//!    configured backend, a store per mounted resource), each resource's routes, the metric
//!    sources, graceful shutdown; [`server::run`] takes its listener so tests can bind port 0.
//!
//! ## Adding a resource or a subresource
//!
//! A resource is a file in [`resources`]: its type, its
//! [`ResourceInfo`](machinery::resource::ResourceInfo) (names, verbs, selectable fields and
//! `subresources`) and its [`Strategy`](machinery::strategy::Strategy); then one line in
//! `server::resources` mounts it from the configured storage. A subresource the machinery knows
//! ([`Subresource`](machinery::resource::Subresource), today `status`) is one entry in
//! `subresources` plus what the strategy's `prepare_for_update` keeps for it: routes, discovery,
//! OpenAPI, authorization attributes and the registry's write rules follow from the list.

pub mod admission;
pub mod api;
pub mod app;
pub mod audit;
pub mod auth;
pub mod certs;
pub mod config;
pub mod health;
pub mod kubeconfig;
pub mod limits;
pub mod machinery;
pub mod metrics;
pub mod mirror;
pub mod namespaces;
pub mod observe;
pub mod resources;
pub mod server;
pub mod store;
pub mod tls;

pub use app::run;
