//! # apiserver-kit
//!
//! The machinery of a Kubernetes API server, to build an aggregated API server (one the
//! kube-apiserver proxies an API group to, through an APIService) in Rust: describe each
//! resource as a Rust type with a [`Strategy`](machinery::strategy::Strategy), add it to an
//! [`ApiServerBuilder`](server::ApiServerBuilder), and the server serves every verb, error,
//! header and lifecycle rule kubectl, client-go and kube-rs expect: get, list (paged, with
//! label and field selectors, as Tables), watch (with bookmarks and WatchList), create, update,
//! JSON, merge and server-side apply patches, delete and deletecollection, the status
//! subresource, dry runs, field validation, discovery and OpenAPI documents made from the types,
//! and several versions of a resource converting through the one it is stored at.
//!
//! Objects are kept in memory, or in etcd behind a watch cache (several replicas share it); a
//! resource may also be a read-only view of one kind of the cluster's objects, fed by a mirror
//! of them. In a cluster, callers are authenticated and authorized by the cluster (front-proxy
//! certificates, TokenReview, SubjectAccessReview), writes go through the cluster's admission
//! webhooks and obey its namespaces' lifecycle, and requests may be audited; standalone, the
//! server protects itself with a generated token and writes a kubeconfig for kubectl.
//!
//! ## Example
//!
//! A standalone server of one resource, Widgets of `example.com/v1`, kept in memory; it stops
//! at once here, where a program would pass its shutdown signal. With
//! [`Authentication::Delegated`](server::Authentication) and a cluster it is an aggregated API
//! server; the repository's `examples/` has a whole one.
//!
//! ```
//! use apiserver_kit::prelude::*;
//!
//! /// A widget: how big it is.
//! #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, derive = "PartialEq")]
//! #[kube(shortname = "wd", printcolumn(name = "Size", type_ = "number", json_path = ".spec.size"))]
//! pub struct WidgetSpec {
//!     /// Its size, greater than 0.
//!     #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
//!     pub size: f64,
//! }
//!
//! impl ApiResource for Widget {}
//! impl Strategy for Widget {}
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let options = ServerOptions {
//!     authentication: Authentication::Standalone { write_kubeconfig: None },
//!     cluster: ClusterConnection::None,
//!     ..ServerOptions::default()
//! };
//! let server = ApiServerBuilder::new(Identity::new("widget-apiserver", "0.1.0"), "example.com", &["v1"])
//!     .stored(StoredResource::<Widget>::new())
//!     .options(options)
//!     .build()?;
//! let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
//! // A program passes its shutdown signal (SIGTERM, say); this one stops at once.
//! server.serve(listener, async {}).await?;
//! # Ok(())
//! # }
//! ```
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
//!    [`structured_merge`] (server-side apply and managed fields: field sets, typed comparison
//!    and merge, the managers of each field) also imports only [`machinery`], as
//!    structured-merge-diff stands beside k8s.io/apimachinery. [`metrics`] (the Prometheus
//!    registry) imports nothing of the crate. [`validation_rules`] (the CEL rules of schemas,
//!    `x-kubernetes-validations`, as apiextensions-apiserver enforces them) imports
//!    [`machinery`] and [`cel`] (the expression language, which imports only [`machinery`]).
//! 3. [`api`]: the resource-agnostic Kubernetes REST machinery over HTTP: negotiation, query
//!    options, decoding and patching, registry semantics, handlers, watch streams, tables,
//!    discovery and OpenAPI; imports [`machinery`], [`structured_merge`], [`store`] and
//!    [`metrics`].
//! 4. Request plumbing beside it: [`auth`] (the standalone bearer token, or delegation to the
//!    cluster: front-proxy certificates and headers, client certificates, TokenReview,
//!    SubjectAccessReview), [`audit`] (the audit policy and log, and the middleware that runs
//!    authentication, auditing and authorization in the kube-apiserver's order), [`observe`]
//!    (counts, times and logs every request), [`panics`] (a handler's panic answered as a 500
//!    Status), [`limits`] (requests in flight, timeouts, the size of request heads),
//!    [`kept_bodies`] (a request's body outlives an early answer), [`health`]; [`admission`] (the cluster's admission webhooks: their configurations, which
//!    ones a write calls, and the calls, behind the registry's
//!    [`machinery::admission::Admission`]); [`mirror`] (a mirror of a kind of the cluster's
//!    objects feeding a read-only view); [`namespaces`] (the Namespace cache behind the
//!    lifecycle of creates and the webhooks' `namespaceSelector`); [`tls`], [`kubeconfig`];
//!    [`certificates`] (a serving certificate the server keeps in a Secret, renews and publishes
//!    in its APIServices).
//! 5. [`server`] wires everything: the builder, TLS, authentication and audit, the storage
//!    factory (the configured backend, a store per resource), each resource's routes, the metric
//!    sources, graceful shutdown; [`server::ApiServer::serve`] takes its listener so tests can
//!    bind port 0.
//!
//! ## Adding a resource or a subresource
//!
//! A resource is a Rust type (kube's `CustomResource` derive makes one) with its
//! [`ResourceInfo`](machinery::resource::ResourceInfo) (names, verbs, selectable fields and
//! `subresources`) and its [`Strategy`](machinery::strategy::Strategy); the builder mounts it
//! ([`server::StoredResource`], [`server::MirroredView`]). A subresource the machinery knows
//! ([`Subresource`](machinery::resource::Subresource), today `status`) is one entry in
//! `subresources` plus what the strategy's `prepare_for_update` keeps for it: routes, discovery,
//! OpenAPI, authorization attributes and the registry's write rules follow from the list.

#![deny(missing_docs)]

pub mod admission;
pub mod api;
pub mod audit;
pub mod auth;
pub mod cel;
pub mod certificates;
pub mod health;
pub mod kept_bodies;
pub mod kubeconfig;
pub mod limits;
pub mod machinery;
pub mod metrics;
pub mod mirror;
pub mod namespaces;
pub mod observe;
pub mod panics;
pub mod prelude;
pub mod reflect;
pub mod server;
pub mod store;
pub mod structured_merge;
pub mod tls;
pub mod validation_rules;
