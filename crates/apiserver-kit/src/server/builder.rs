//! The builder of a server: its identity, its API group with the versions it serves, its
//! resources ([`StoredResource`], [`MirroredView`]) and its [`ServerOptions`]; [`ApiServer::serve`]
//! starts it on a listener and returns once it has shut down.

use super::StartError;
use super::options::{Authentication, ClusterConnection, ServerOptions};
use super::resource::{ClusterServices, MirroredView, Mount, Mountable, Mounted, StoredResource};
use super::storage::StorageFactory;
use crate::admission::chain::Chain;
use crate::admission::policy::{
    MutatingPolicies, ValidatingPolicies, authorizer::DelegatedChecks, sources::PolicySources,
};
use crate::admission::{client::Caller, configurations::Configurations, webhooks::Webhooks};
use crate::api::conversion_webhook::Converter;
use crate::api::openapi::Documents;
use crate::api::registry::WatchSettings;
use crate::audit::Auditor;
use crate::auth::delegated::Delegated;
use crate::auth::{self, Authenticator};
use crate::health::Health;
use crate::machinery::identity::Identity;
use crate::machinery::resource::ResourceDescriptor;
use crate::machinery::strategy::Strategy;
use crate::metrics::Metrics;
use crate::mirror::SourceObject;
use crate::namespaces::NamespaceCache;
use crate::{kubeconfig, tls};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Why a builder's server cannot be built: what it was given does not describe an API.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BuildError {
    /// The group is not a DNS subdomain with at least one dot (as an APIService's group must be).
    #[error("the group {0:?} is not a DNS subdomain with a dot, such as example.com")]
    Group(String),
    /// No version, or a version twice.
    #[error("the versions must be listed once each, at least one: {0:?}")]
    Versions(Vec<&'static str>),
    /// A resource is served at a version the group does not list.
    #[error("{plural} is served at {version}, which is not one of the group's versions")]
    UnlistedVersion {
        /// The resource.
        plural: &'static str,
        /// Its version.
        version: String,
    },
    /// A resource of another group.
    #[error("{plural} is in the group {group}, not {expected}")]
    OtherGroup {
        /// The resource.
        plural: &'static str,
        /// Its group.
        group: &'static str,
        /// The server's.
        expected: &'static str,
    },
    /// A version without resources.
    #[error("no resource is served at {0}")]
    EmptyVersion(&'static str),
    /// A resource's definition says what the server cannot serve, or a version of it disagrees
    /// with its storage version on its names or scope.
    #[error("{plural} at {version}: {}", problems.join("; "))]
    Definition {
        /// The resource.
        plural: &'static str,
        /// The version.
        version: String,
        /// Each problem, naming its field of the CustomResourceDefinition kube's derive writes.
        problems: Vec<String>,
    },
    /// Two resources with one name at one version.
    #[error("{plural} is added twice at {version}")]
    Duplicate {
        /// The resource.
        plural: &'static str,
        /// The version.
        version: String,
    },
}

/// Builds an [`ApiServer`]: the group and its versions, the resources, the options.
pub struct ApiServerBuilder {
    identity: Identity,
    group: &'static str,
    versions: Vec<&'static str>,
    resources: Vec<Box<dyn Mountable>>,
    converter: Option<Converter>,
    options: ServerOptions,
}

impl ApiServerBuilder {
    /// A server named by `identity` serving the API group `group` with `versions`, the
    /// preferred first (discovery lists them in this order).
    pub fn new(identity: Identity, group: &'static str, versions: &[&'static str]) -> Self {
        Self {
            identity,
            group,
            versions: versions.to_vec(),
            resources: Vec::new(),
            converter: None,
            options: ServerOptions::default(),
        }
    }

    /// Adds a resource kept in the server's storage.
    pub fn stored<K: Strategy>(mut self, resource: StoredResource<K>) -> Self {
        self.resources.push(Box::new(resource));
        self
    }

    /// Adds a read-only view of the cluster's objects `S`.
    pub fn view<K: Strategy, S: SourceObject>(mut self, view: MirroredView<K, S>) -> Self {
        self.resources.push(Box::new(view));
        self
    }

    /// Serves a CustomResourceDefinition conversion webhook at `/convert`, converting with
    /// `converter`, for users who keep the resources as CRDs: without authentication (the
    /// kube-apiserver calls webhooks without credentials) unless
    /// [`TlsOptions::conversion_webhook_client_ca`](super::TlsOptions) names the CA of the client
    /// certificate it presents; within the server's in-flight limit and request timeout.
    pub fn conversion_webhook(mut self, converter: Converter) -> Self {
        self.converter = Some(converter);
        self
    }

    /// The options (the defaults: an aggregated server of the cluster it runs in, in memory).
    pub fn options(mut self, options: ServerOptions) -> Self {
        self.options = options;
        self
    }

    /// Checks that the group, versions and resources describe an API.
    pub fn build(self) -> Result<ApiServer, BuildError> {
        let versions = self.check()?;
        Ok(ApiServer { builder: self, versions })
    }

    /// Each version with the descriptors of the resources served at it, in order.
    fn check(&self) -> Result<Vec<(&'static str, Vec<ResourceDescriptor>)>, BuildError> {
        if self.group.split('.').count() < 2 || !crate::machinery::validation::dns1123_subdomain(self.group).is_empty()
        {
            return Err(BuildError::Group(self.group.into()));
        }
        let mut unique = self.versions.clone();
        unique.sort_unstable();
        unique.dedup();
        if self.versions.is_empty() || unique.len() != self.versions.len() {
            return Err(BuildError::Versions(self.versions.clone()));
        }
        let mut versions: Vec<(&'static str, Vec<ResourceDescriptor>)> =
            self.versions.iter().map(|v| (*v, Vec::new())).collect();
        for resource in &self.resources {
            for (version, descriptor) in resource.descriptors() {
                let plural = resource.plural();
                if !descriptor.problems.is_empty() {
                    let problems = descriptor.problems.clone();
                    return Err(BuildError::Definition { plural, version: version.into_owned(), problems });
                }
                if descriptor.info.group != self.group {
                    return Err(BuildError::OtherGroup { plural, group: descriptor.info.group, expected: self.group });
                }
                let Some((_, served)) = versions.iter_mut().find(|(v, _)| *v == version) else {
                    return Err(BuildError::UnlistedVersion { plural, version: version.into_owned() });
                };
                if served.iter().any(|d| d.info.plural == plural) {
                    return Err(BuildError::Duplicate { plural, version: version.into_owned() });
                }
                served.push(descriptor);
            }
        }
        match versions.iter().find(|(_, served)| served.is_empty()) {
            Some((version, _)) => Err(BuildError::EmptyVersion(version)),
            None => Ok(versions),
        }
    }
}

/// A server ready to serve: [`ApiServer::serve`] runs it.
pub struct ApiServer {
    builder: ApiServerBuilder,
    /// Each version with the descriptors of its resources.
    versions: Vec<(&'static str, Vec<ResourceDescriptor>)>,
}

impl ApiServer {
    /// The OpenAPI documents the server serves (v2, the v3 index, v3 of each version).
    pub fn openapi(&self) -> Documents {
        Documents::build(&self.builder.identity, self.builder.group, &self.versions)
    }

    /// Serves on `listener` until `shutdown` completes, then shuts down gracefully: readiness
    /// fails for the shutdown delay, the listener closes, requests in flight finish, watches
    /// send what was committed and end; returns once every connection is closed.
    pub async fn serve(
        self,
        listener: impl Listener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), StartError> {
        let listener = listener.into_std().map_err(StartError::Listener)?;
        let ApiServer { builder, versions } = self;
        let options = builder.options;
        let certs = match &options.tls.files {
            Some(files) => tls::load(&files.certificate.to_string_lossy(), &files.private_key.to_string_lossy())?,
            None => tls::generate(&builder.identity.ca_name(), &options.tls.extra_sans)?,
        };
        let config = cluster_config(&options).await?;
        let local = listener.local_addr().map_err(StartError::Listener)?;
        let url = super::client_url(local);
        let mirrors: Vec<&str> = match config {
            Some(_) => builder.resources.iter().filter_map(|r| r.mirror()).collect(),
            None => Vec::new(),
        };
        let metrics = Arc::new(Metrics::new(&builder.identity.metric_prefix(), &mirrors));
        let client = match &config {
            Some(config) => {
                Some(kube::Client::try_from(config.clone()).map_err(|e| StartError::Cluster(e.to_string()))?)
            }
            None => None,
        };
        let authenticator = authenticator(&builder.identity, &options, client.as_ref(), &url, &certs.ca_pem, &metrics)?;
        let stopping = tokio_util::sync::CancellationToken::new();
        let certificate = tls::ReloadingCertificate::new(&certs)?;
        let served = Served { group: builder.group, versions: versions.iter().map(|(v, _)| *v).collect() };
        let certificate_check = serving_certificate(
            &options,
            config.as_ref().zip(client.as_ref()),
            &certificate,
            (&served, builder.identity.name, &stopping),
        );
        let delegated = match &authenticator {
            crate::auth::Authenticator::Delegated(delegated) => Some(delegated.clone()),
            crate::auth::Authenticator::BearerToken(_) => None,
        };
        let cluster = config
            .zip(client)
            .map(|(config, client)| cluster_services(&options, (config, client), delegated, &stopping));
        let settings = watch_settings(&options, &stopping, &metrics);
        let health = match certificate_check {
            Some(check) => Health::default().with_required("serving-certificate", check),
            None => Health::default(),
        };
        let storage = options.storage.with_default_prefix(builder.group);
        let (storage, health) = StorageFactory::new(&storage, options.watch.history_size, &stopping, health).await?;
        let mount = Mount {
            storage: &storage,
            settings: &settings,
            history: options.watch.history_size,
            cluster: cluster.as_ref(),
        };
        let mut mounted = Mounted::new(&builder.versions, health);
        for resource in builder.resources {
            resource.mount(&mount, &mut mounted);
        }
        debug_assert_eq!(mounted.versions.len(), versions.len());
        let auditor = auditor(&options, &metrics)?;
        let started = super::Started {
            identity: builder.identity,
            group: builder.group,
            converter: builder.converter,
            url,
            certificate,
            metrics,
            authenticator,
            auditor,
            stopping,
        };
        super::serve(started, mounted, options, listener, shutdown).await
    }
}

/// The API group and versions a server serves.
struct Served {
    group: &'static str,
    versions: Vec<&'static str>,
}

/// Keeps `certificate` current: reloads the certificate files when they change, or, with
/// managed certificates and a cluster, starts their manager and returns its readiness check.
/// `managing` is what the manager is told: what is served, the program's name (its field
/// manager) and when to stop.
fn serving_certificate(
    options: &ServerOptions,
    cluster: Option<(&kube::Config, &kube::Client)>,
    certificate: &Arc<tls::ReloadingCertificate>,
    managing: (&Served, &str, &tokio_util::sync::CancellationToken),
) -> Option<crate::health::Check> {
    if let Some(files) = &options.tls.files {
        let (cert, key) = (files.certificate.to_string_lossy(), files.private_key.to_string_lossy());
        let interval = options.tls.reload_interval.max(Duration::from_secs(1));
        certificate.watch_files(cert.into_owned(), key.into_owned(), interval);
    }
    let managed = options.tls.managed.as_ref()?;
    let Some((config, client)) = cluster else {
        tracing::warn!("managed serving certificates need a cluster: serving a self-signed certificate");
        return None;
    };
    let (served, program, stopping) = managing;
    let context = crate::certificates::Context {
        client: client.clone(),
        default_namespace: &config.default_namespace,
        group: served.group,
        versions: served.versions.clone(),
        program,
        certificate: certificate.clone(),
        stopping: stopping.clone(),
    };
    Some(crate::certificates::start(managed, context))
}

/// The configuration of the cluster `options` name, if any.
async fn cluster_config(options: &ServerOptions) -> Result<Option<kube::Config>, StartError> {
    let config = match &options.cluster {
        ClusterConnection::None => return Ok(None),
        ClusterConnection::Kubeconfig(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| StartError::Cluster(format!("{}: {e}", path.display())))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| StartError::Cluster(e.to_string()))?
        }
        ClusterConnection::InCluster => kube::Config::incluster().map_err(|e| StartError::Cluster(e.to_string()))?,
    };
    Ok(Some(config))
}

/// The namespaces of the cluster and, for an aggregated server with admission on, its
/// admission policies and webhooks.
fn cluster_services(
    options: &ServerOptions,
    (config, client): (kube::Config, kube::Client),
    delegated: Option<Arc<Delegated>>,
    stopping: &tokio_util::sync::CancellationToken,
) -> ClusterServices {
    let namespaces = Arc::new(NamespaceCache::start(client.clone(), stopping.clone()));
    // A standalone server, even with a cluster for its views, is not part of the cluster's API.
    let aggregated = !options.authentication.is_standalone();
    let checks = delegated.map(|d| Arc::new(DelegatedChecks(d)) as Arc<dyn crate::cel::authz::Authorizer>);
    let webhooks = (options.admission_webhooks && aggregated).then(|| {
        let configurations = Configurations::start(client.clone(), stopping.clone());
        Webhooks::new(configurations, Caller::new(client.clone()), namespaces.clone(), checks.clone())
    });
    let policies = options.admission_policies && aggregated;
    let mutating_policies = policies.then(|| {
        let sources = PolicySources::start(client.clone(), stopping.clone());
        MutatingPolicies::new(sources, namespaces.clone(), checks.clone())
    });
    let validating_policies = policies.then(|| {
        ValidatingPolicies::new(PolicySources::start(client.clone(), stopping.clone()), namespaces.clone(), checks)
    });
    let admission = (webhooks.is_some() || policies).then(|| {
        let chain = Chain { mutating_policies, validating_policies, webhooks };
        Arc::new(chain) as Arc<dyn crate::machinery::admission::Admission>
    });
    ClusterServices { client, server: config.cluster_url.to_string(), namespaces, admission }
}

fn watch_settings(
    options: &ServerOptions,
    stopping: &tokio_util::sync::CancellationToken,
    metrics: &Arc<Metrics>,
) -> WatchSettings {
    WatchSettings {
        stopping: stopping.clone(),
        metrics: metrics.clone(),
        buffer: options.watch.buffer_size,
        bookmark_interval: options.watch.bookmark_interval.max(Duration::from_secs(1)),
        min_request_timeout: options.watch.min_request_timeout.max(Duration::from_secs(1)),
        ..WatchSettings::default()
    }
}

/// The audit log, when the options ask for one.
fn auditor(options: &ServerOptions, metrics: &Arc<Metrics>) -> Result<Option<Arc<Auditor>>, StartError> {
    let Some(audit) = &options.audit else { return Ok(None) };
    let auditor = Auditor::start(&audit.policy_file, &audit.log_path, audit.rotation, metrics.clone())
        .map_err(StartError::Audit)?;
    tracing::info!(policy = %audit.policy_file.display(), path = audit.log_path, "writing the audit log");
    Ok(Some(Arc::new(auditor)))
}

/// Who may call: the standalone bearer token (written into a kubeconfig when asked), or
/// delegation to the cluster.
fn authenticator(
    identity: &Identity,
    options: &ServerOptions,
    client: Option<&kube::Client>,
    url: &str,
    ca_pem: &str,
    metrics: &Arc<Metrics>,
) -> Result<Authenticator, StartError> {
    let settings = match &options.authentication {
        Authentication::Standalone { write_kubeconfig } => {
            let token = auth::random_token();
            if let Some(path) = write_kubeconfig {
                kubeconfig::write(path, &kubeconfig::build(identity.name, url, ca_pem, &token))
                    .map_err(|source| StartError::Kubeconfig { path: path.display().to_string(), source })?;
                tracing::info!(path = %path.display(), "wrote kubeconfig");
            }
            return Ok(Authenticator::BearerToken(token.into()));
        }
        Authentication::Delegated(settings) => settings,
    };
    let client = client.cloned().ok_or_else(|| {
        StartError::Cluster("delegated authentication needs a cluster, and the options name none".into())
    })?;
    let delegated = Delegated::new(client, settings.clone(), metrics.clone());
    delegated.watch_config();
    Ok(Authenticator::Delegated(delegated))
}

/// A bound TCP socket [`ApiServer::serve`] accepts connections on: tokio's (as `axum::serve`
/// takes) or std's.
pub trait Listener {
    /// The socket as std's listener.
    fn into_std(self) -> std::io::Result<std::net::TcpListener>;
}

impl Listener for std::net::TcpListener {
    fn into_std(self) -> std::io::Result<std::net::TcpListener> {
        Ok(self)
    }
}

impl Listener for tokio::net::TcpListener {
    fn into_std(self) -> std::io::Result<std::net::TcpListener> {
        tokio::net::TcpListener::into_std(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::testing::{Widget, WidgetV1beta1};

    const IDENTITY: Identity = Identity::new("widget-apiserver", "0.1.0");

    fn widgets() -> StoredResource<Widget> {
        StoredResource::<Widget>::new().deprecated_at::<WidgetV1beta1>()
    }

    #[test]
    fn the_versions_list_each_resource_served_at_them_in_order() {
        let server = ApiServerBuilder::new(IDENTITY, "test.example.com", &["v1", "v1beta1"]).stored(widgets()).build();
        let server = server.unwrap();
        let listed: Vec<_> =
            server.versions.iter().map(|(v, d)| (*v, d.iter().map(|d| d.info.plural).collect::<Vec<_>>())).collect();
        assert_eq!(listed, [("v1", vec!["widgets"]), ("v1beta1", vec!["widgets"])]);
        assert!(server.versions[1].1[0].deprecation.is_some());
        assert!(server.versions[0].1[0].deprecation.is_none());
    }

    /// A gadget whose definition has a scale subresource and a field selector on a list, and
    /// whose strategy a column of a field it does not have.
    mod gadget {
        use crate::machinery::columns::{Column, ColumnType};
        use crate::machinery::resource::ApiResource;
        use crate::machinery::strategy::Strategy;
        use kube::CustomResource;
        use schemars::JsonSchema;
        use serde::{Deserialize, Serialize};

        #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
        #[kube(group = "test.example.com", version = "v1", kind = "Gadget", namespaced, derive = "PartialEq")]
        #[kube(status = "GadgetStatus", selectable = ".spec.parts")]
        #[kube(scale(spec_replicas_path = ".spec.replicas", status_replicas_path = ".status.replicas"))]
        pub struct GadgetSpec {
            replicas: i32,
            parts: Vec<String>,
        }

        #[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
        pub struct GadgetStatus {
            replicas: i32,
        }

        impl ApiResource for Gadget {}

        impl Strategy for Gadget {
            fn columns() -> Vec<Column<Self>> {
                vec![Column::path("Colour", ColumnType::String, "Its colour.", ".spec.colour")]
            }
        }
    }

    #[test]
    fn a_definition_the_server_cannot_serve_is_refused_naming_each_field() {
        let built = ApiServerBuilder::new(IDENTITY, "test.example.com", &["v1"])
            .stored(StoredResource::<gadget::Gadget>::new())
            .build();
        let Err(BuildError::Definition { plural, version, problems }) = built else { panic!("refused") };
        assert_eq!((plural, version.as_str()), ("gadgets", "v1"));
        assert_eq!(
            problems,
            [
                "subresources.scale: the scale subresource is not served (only status)",
                "selectableFields: spec.parts is not a string, integer or boolean",
                "columns: Colour's jsonPath .spec.colour is not in the schema",
            ]
        );
    }

    /// A sheep whose spec has a validation rule that does not compile.
    mod sheep {
        use crate::machinery::resource::ApiResource;
        use crate::machinery::strategy::Strategy;
        use kube::{CustomResource, KubeSchema};
        use serde::{Deserialize, Serialize};

        #[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
        #[kube(group = "test.example.com", version = "v1", kind = "Sheep", namespaced, derive = "PartialEq")]
        #[x_kube(validation = Rule::new("self.nope > 0").message("wool grows"))]
        pub struct SheepSpec {
            wool: i64,
        }

        impl ApiResource for Sheep {}
        impl Strategy for Sheep {}
    }

    #[test]
    fn a_validation_rule_that_does_not_compile_is_refused_naming_it() {
        let built = ApiServerBuilder::new(IDENTITY, "test.example.com", &["v1"])
            .stored(StoredResource::<sheep::Sheep>::new())
            .build();
        let Err(BuildError::Definition { plural, version, problems }) = built else { panic!("refused") };
        assert_eq!((plural, version.as_str()), ("sheeps", "v1"));
        assert_eq!(
            problems,
            ["spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: \
              {\"Rule\":\"self.nope \\u003e 0\",\"Message\":\"wool grows\",\"MessageExpression\":\"\",\"Reason\":null,\
              \"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: \
              ERROR: <input>:1:5: undefined field 'nope'\n | self.nope > 0\n | ....^"]
        );
    }

    #[test]
    fn what_does_not_describe_an_api_is_refused() {
        let build = |group, versions: &[&'static str], widgets: Option<StoredResource<Widget>>| {
            let builder = ApiServerBuilder::new(IDENTITY, group, versions);
            match widgets {
                Some(w) => builder.stored(w).build().err(),
                None => builder.build().err(),
            }
        };
        assert_eq!(build("widgets", &["v1"], Some(widgets())), Some(BuildError::Group("widgets".into())));
        assert_eq!(build("test.example.com", &[], None), Some(BuildError::Versions(vec![])));
        assert_eq!(build("test.example.com", &["v1", "v1"], None), Some(BuildError::Versions(vec!["v1", "v1"])));
        assert_eq!(
            build("test.example.com", &["v1"], Some(widgets())),
            Some(BuildError::UnlistedVersion { plural: "widgets", version: "v1beta1".into() })
        );
        assert_eq!(
            build("test.example.com", &["v1", "v2"], Some(StoredResource::new())),
            Some(BuildError::EmptyVersion("v2"))
        );
        assert_eq!(
            build("other.example.com", &["v1"], Some(StoredResource::new())),
            Some(BuildError::OtherGroup {
                plural: "widgets",
                group: "test.example.com",
                expected: "other.example.com"
            })
        );
        let twice = ApiServerBuilder::new(IDENTITY, "test.example.com", &["v1"])
            .stored(StoredResource::<Widget>::new())
            .stored(StoredResource::<Widget>::new())
            .build();
        assert_eq!(twice.err(), Some(BuildError::Duplicate { plural: "widgets", version: "v1".into() }));
    }
}
