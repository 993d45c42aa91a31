//! Discovery: `/apis` (legacy `APIGroupList`, or aggregated discovery `APIGroupDiscoveryList` in
//! `apidiscovery.k8s.io/v2` and `v2beta1` when the `Accept` header asks for it),
//! `/apis/<group>` (`APIGroup`), `/apis/<group>/<version>` (`APIResourceList`), `/api` and
//! `/version`, answered as a kube-apiserver answers them.

use super::negotiate::parse_accept;
use crate::machinery::error::{Error, Result};
use crate::machinery::identity::Identity;
use crate::machinery::resource::{GroupVersions, ResourceDescriptor};
use crate::machinery::verb::Verb;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, header};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIGroup, APIGroupList, APIResource, APIResourceList, APIVersions, GroupVersionForDiscovery, ObjectMeta,
    ServerAddressByClientCIDR,
};
use k8s_openapi::apimachinery::pkg::version::Info;
use kube::core::TypeMeta;
use kube::core::discovery::v2::{
    APIGroupDiscovery, APIGroupDiscoveryList, APIResourceDiscovery, APISubresourceDiscovery, APIVersionDiscovery,
    GroupVersionKind,
};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// The Kubernetes API level this server's types follow (k8s-openapi feature `v1_37`), reported
/// by `/version` so that kubectl's version-skew check compares against it.
pub const KUBERNETES_MINOR: &str = "37";

/// The discovery documents, computed once from the served resources: each version of the
/// group with its resources, the preferred version first.
#[derive(Clone, Debug)]
pub struct Discovery {
    group: &'static str,
    versions: Vec<(&'static str, Vec<ResourceDescriptor>)>,
}

/// Aggregated discovery versions a client may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Aggregated {
    V2,
    V2Beta1,
}

impl Aggregated {
    fn version(self) -> &'static str {
        match self {
            Self::V2 => "v2",
            Self::V2Beta1 => "v2beta1",
        }
    }
}

/// What the client asked `/apis` or `/api` for.
fn negotiate_discovery(headers: &HeaderMap) -> Result<Option<Aggregated>> {
    for range in parse_accept(headers.get(header::ACCEPT)) {
        if !range.accepts_json() {
            continue;
        }
        match range.param("as") {
            None => return Ok(None),
            Some("APIGroupDiscoveryList") if range.param("g") == Some("apidiscovery.k8s.io") => {
                match range.param("v") {
                    Some("v2") => return Ok(Some(Aggregated::V2)),
                    Some("v2beta1") => return Ok(Some(Aggregated::V2Beta1)),
                    _ => continue,
                }
            }
            Some(_) => continue,
        }
    }
    Err(Error::NotAcceptable(
        "only the following media types are accepted: application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList, application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList".into(),
    ))
}

/// `storageVersionHash`: base64 of the first 8 bytes of SHA-256 of `group/version/kind` of the
/// version objects are stored at, the same at every version served.
fn storage_version_hash(group: &str, storage_version: &str, kind: &str) -> String {
    use base64::Engine;
    let digest = Sha256::digest(format!("{group}/{storage_version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

fn to_strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn verb_names(verbs: &[Verb]) -> Vec<String> {
    verbs.iter().map(|v| v.as_str().to_string()).collect()
}

fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind { group: Some(group.into()), version: Some(version.into()), kind: Some(kind.into()) }
}

fn json_response<T: Serialize>(value: &T, content_type: &'static str) -> Response {
    match crate::machinery::json::to_vec(value) {
        Ok(body) => {
            let mut response = body.into_response();
            response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            response.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
            response
        }
        Err(e) => Error::Internal(e.to_string()).into_response(),
    }
}

/// Adds `apiVersion` and `kind` to kube-core's discovery types, which leave them out.
#[derive(Serialize)]
struct Typed<'a, T> {
    #[serde(flatten)]
    types: TypeMeta,
    #[serde(flatten)]
    inner: &'a T,
}

impl Discovery {
    /// Discovery for the group's `versions`, the preferred first (there is always at least one).
    pub fn new(group: &'static str, versions: &GroupVersions) -> Self {
        Self { group, versions: versions.to_vec() }
    }

    fn group_version(&self, version: &str) -> GroupVersionForDiscovery {
        GroupVersionForDiscovery { group_version: format!("{}/{version}", self.group), version: version.into() }
    }

    /// `APIGroup` of the group: every version, the preferred first.
    pub fn api_group(&self) -> APIGroup {
        APIGroup {
            name: self.group.into(),
            preferred_version: Some(self.group_version(self.versions[0].0)),
            server_address_by_client_cidrs: None,
            versions: self.versions.iter().map(|(v, _)| self.group_version(v)).collect(),
        }
    }

    /// `APIResourceList` of `<group>/<version>`; `None` for a version not served.
    pub fn resource_list(&self, version: &str) -> Option<APIResourceList> {
        let (version, resources) = self.versions.iter().find(|(v, _)| *v == version)?;
        Some(APIResourceList {
            group_version: format!("{}/{version}", self.group),
            resources: resources.iter().flat_map(|r| self.api_resources(r)).collect(),
        })
    }

    /// A resource's entries in its `APIResourceList`: the resource, then each subresource as the
    /// kube-apiserver lists a custom resource's (`widgets/status`: kind and verbs only).
    fn api_resources(&self, r: &ResourceDescriptor) -> Vec<APIResource> {
        let info = &r.info;
        let resource = APIResource {
            categories: Some(to_strings(info.categories)),
            group: None,
            kind: info.kind.into(),
            name: info.plural.into(),
            namespaced: info.namespaced,
            short_names: Some(to_strings(info.short_names)),
            singular_name: info.singular.into(),
            storage_version_hash: Some(storage_version_hash(self.group, &r.storage_version, info.kind)),
            verbs: verb_names(info.verbs),
            version: None,
        };
        let subresources = info.subresources.iter().filter_map(|s| {
            Some(APIResource {
                kind: info.kind.into(),
                name: format!("{}/{}", info.plural, s.name()?),
                namespaced: info.namespaced,
                verbs: verb_names(info.verbs_of(*s)),
                ..Default::default()
            })
        });
        std::iter::once(resource).chain(subresources).collect()
    }

    fn aggregated(&self) -> APIGroupDiscoveryList {
        let versions = self
            .versions
            .iter()
            .map(|(version, resources)| APIVersionDiscovery {
                version: Some(version.to_string()),
                resources: self.aggregated_resources(version, resources),
                freshness: Some("Current".into()),
            })
            .collect();
        APIGroupDiscoveryList {
            metadata: None,
            items: vec![APIGroupDiscovery {
                metadata: Some(ObjectMeta { name: Some(self.group.into()), ..Default::default() }),
                versions,
            }],
        }
    }

    /// The resources of `version` in aggregated discovery.
    fn aggregated_resources(&self, version: &str, resources: &[ResourceDescriptor]) -> Vec<APIResourceDiscovery> {
        resources
            .iter()
            .map(|r| APIResourceDiscovery {
                resource: Some(r.info.plural.into()),
                response_kind: Some(gvk(self.group, version, r.info.kind)),
                scope: Some(if r.info.namespaced { "Namespaced" } else { "Cluster" }.into()),
                singular_resource: Some(r.info.singular.into()),
                verbs: verb_names(r.info.verbs),
                short_names: to_strings(r.info.short_names),
                categories: to_strings(r.info.categories),
                subresources: r
                    .info
                    .subresources
                    .iter()
                    .filter_map(|s| {
                        Some(APISubresourceDiscovery {
                            subresource: Some(s.name()?.into()),
                            response_kind: Some(gvk(self.group, version, r.info.kind)),
                            accepted_types: Vec::new(),
                            verbs: verb_names(r.info.verbs_of(*s)),
                        })
                    })
                    .collect(),
            })
            .collect()
    }

    fn aggregated_response(list: &APIGroupDiscoveryList, version: Aggregated) -> Response {
        let typed = Typed {
            types: TypeMeta {
                api_version: format!("apidiscovery.k8s.io/{}", version.version()),
                kind: "APIGroupDiscoveryList".into(),
            },
            inner: list,
        };
        let content_type = match version {
            Aggregated::V2 => "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            Aggregated::V2Beta1 => "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
        };
        json_response(&typed, content_type)
    }

    /// `GET /apis`.
    pub fn apis(&self, headers: &HeaderMap) -> Result<Response> {
        Ok(match negotiate_discovery(headers)? {
            Some(version) => Self::aggregated_response(&self.aggregated(), version),
            None => json_response(&APIGroupList { groups: vec![self.api_group()] }, "application/json"),
        })
    }

    /// `GET /api`: this server serves no core (`v1`) resources, so the legacy group is empty.
    pub fn api(&self, headers: &HeaderMap, server_address: &str) -> Result<Response> {
        Ok(match negotiate_discovery(headers)? {
            Some(version) => Self::aggregated_response(&APIGroupDiscoveryList::default(), version),
            None => json_response(
                &APIVersions {
                    server_address_by_client_cidrs: vec![ServerAddressByClientCIDR {
                        client_cidr: "0.0.0.0/0".into(),
                        server_address: server_address.into(),
                    }],
                    versions: Vec::new(),
                },
                "application/json",
            ),
        })
    }

    /// `GET /apis/<group>`.
    pub fn group(&self) -> Response {
        json_response(&self.api_group(), "application/json")
    }

    /// `GET /apis/<group>/<version>`, for a served version.
    pub fn version(&self, version: &str) -> Response {
        match self.resource_list(version) {
            Some(list) => json_response(&list, "application/json"),
            None => Error::PathNotFound.into_response(),
        }
    }
}

/// `GET /version`: the Kubernetes version whose API this server follows, and `identity` after
/// the `+`.
pub fn version_info(identity: &Identity) -> Response {
    let info = Info {
        build_date: String::new(),
        compiler: "rustc".into(),
        emulation_major: None,
        emulation_minor: None,
        git_commit: String::new(),
        git_tree_state: "clean".into(),
        git_version: format!("v1.{KUBERNETES_MINOR}.0+{}.{}", identity.name, identity.version),
        go_version: String::new(),
        major: "1".into(),
        min_compatibility_major: None,
        min_compatibility_minor: None,
        minor: KUBERNETES_MINOR.into(),
        platform: format!("{}/{}", std::env::consts::OS, go_arch()),
    };
    json_response(&info, "application/json")
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::testing::Widget;

    fn discovery() -> Discovery {
        Discovery::new("test.example.com", &[("v1", vec![ResourceDescriptor::of::<Widget>()])])
    }

    #[test]
    fn resource_list_advertises_the_resource_with_its_short_names() {
        let list = discovery().resource_list("v1").unwrap();
        assert_eq!(list.group_version, "test.example.com/v1");
        let widgets = &list.resources[0];
        assert_eq!(widgets.name, "widgets");
        assert_eq!(widgets.short_names.as_deref(), Some(&["wd".to_string()][..]));
        assert!(widgets.verbs.contains(&"deletecollection".to_string()));
        assert!(discovery().resource_list("v1alpha").is_none());
    }

    #[test]
    fn aggregated_discovery_is_chosen_by_accept() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static(kube::core::discovery::v2::ACCEPT_AGGREGATED_DISCOVERY_V2),
        );
        assert_eq!(negotiate_discovery(&headers).unwrap(), Some(Aggregated::V2));
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        assert_eq!(negotiate_discovery(&headers).unwrap(), None);
    }

    #[test]
    fn storage_version_hash_digests_the_storage_group_version_kind() {
        // Computed independently: base64(sha256("test.example.com/v1/Widget")[:8]) with Python.
        assert_eq!(storage_version_hash("test.example.com", "v1", "Widget"), "Zg2t0Wir22I=");
        assert_eq!(storage_version_hash("test.example.com", "v1beta1", "Widget"), "tKwfEomNqkk=");
    }
}
