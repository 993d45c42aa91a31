//! # farm-apiserver
//!
//! A Kubernetes aggregated API server for the group `farm.example.com/v1alpha`, also able to run
//! standalone so kubectl talks to it directly.
//!
//! ## Layout
//!
//! - [`config`]: the command line; every `serve` flag is also an `FARM_*` environment variable.
//! - [`server`]: builds TLS, authentication, stores, registries and the router, and serves them
//!   with graceful shutdown; [`server::run`] takes its listener so tests can bind port 0.
//! - [`tls`]: serving certificates from PEM files or generated with rcgen; requesting client
//!   certificates and handing them to each request.
//! - [`auth`]: authentication and authorization: the standalone bearer token, or delegation to
//!   the cluster (front-proxy certificates and headers, client certificates, TokenReview,
//!   SubjectAccessReview).
//! - [`kubeconfig`]: the kubeconfig a standalone server writes for kubectl.
//! - [`certs`]: `farm-apiserver certs`: the CA, serving certificate and `manifests/app.yaml`.
//! - [`pods`]: the Pod cache (list + watch of the cluster's Pods) that feeds FarmPods.
//! - [`health`]: `/healthz`, `/livez`, `/readyz`.
//! - [`limits`]: requests in flight and request timeout (watches exempt).
//! - [`metrics`]: the Prometheus metrics behind `/metrics`; [`observe`]: the middleware that
//!   counts, times and logs every request.
//! - [`api`]: the resource-agnostic Kubernetes REST machinery: `Status` errors, negotiation,
//!   query options, selectors, paging, decoding and patching, validation, registry semantics,
//!   handlers, watch streams, tables, discovery and OpenAPI.
//! - [`store`]: storage behind a trait (objects, event history, subscriptions), in memory or
//!   in etcd.
//! - [`resources`]: one file per resource (Llama, FarmPod), describing itself to the machinery.

pub mod api;
pub mod auth;
pub mod certs;
pub mod config;
pub mod health;
pub mod kubeconfig;
pub mod limits;
pub mod metrics;
pub mod observe;
pub mod pods;
pub mod resources;
pub mod server;
pub mod store;
pub mod tls;

pub use server::run;
