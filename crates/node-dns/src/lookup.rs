//! What a name under the cluster's zone means, as the Kubernetes DNS specification
//! (kubernetes/dns, docs/specification.md) and CoreDNS's `kubernetes` plugin answer it:
//! `<service>.<namespace>.svc.<zone>` is the Service's cluster IP, or every endpoint address of
//! a headless Service, or a CNAME of an ExternalName Service; `<hostname>.<service>.<namespace>.svc.<zone>`
//! is the endpoint address of a headless Service that carries that hostname (a StatefulSet's Pod).

use k8s_openapi::api::core::v1::{Endpoints, Service};
use kube::runtime::reflector::{ObjectRef, Store};
use std::net::Ipv4Addr;

/// The answer for a name.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// The name exists: its IPv4 addresses (none for a headless Service without endpoints).
    Addresses(Vec<Ipv4Addr>),
    /// The name is an alias of another (an ExternalName Service).
    Alias(String),
    /// No such name (outside the zone too: this DNS has no upstream).
    NoSuchName,
}

/// The cluster as the reflectors see it.
#[derive(Clone)]
pub struct Cluster {
    /// The cluster domain, such as `cluster.local`.
    pub zone: String,
    /// Every Service.
    pub services: Store<Service>,
    /// Every Endpoints object.
    pub endpoints: Store<Endpoints>,
}

impl Cluster {
    /// Resolves `name` (any case, with or without the final dot).
    pub fn resolve(&self, name: &str) -> Answer {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        let Some(labels) = name.strip_suffix(&format!(".svc.{}", self.zone)) else {
            return Answer::NoSuchName;
        };
        match labels.split('.').collect::<Vec<_>>()[..] {
            [service, namespace] => self.service(namespace, service),
            [hostname, service, namespace] => self.hostname(namespace, service, hostname),
            _ => Answer::NoSuchName,
        }
    }

    fn service(&self, namespace: &str, name: &str) -> Answer {
        let Some(service) = self.services.get(&ObjectRef::new(name).within(namespace)) else {
            return Answer::NoSuchName;
        };
        let spec = service.spec.clone().unwrap_or_default();
        if spec.type_.as_deref() == Some("ExternalName") {
            return spec.external_name.map_or(Answer::NoSuchName, Answer::Alias);
        }
        match spec.cluster_ip.as_deref() {
            Some("None") | Some("") | None => {
                Answer::Addresses(self.addresses(namespace, name).into_iter().map(|(ip, _)| ip).collect())
            }
            Some(ip) => ip.parse().map_or(Answer::NoSuchName, |ip| Answer::Addresses(vec![ip])),
        }
    }

    fn hostname(&self, namespace: &str, service: &str, hostname: &str) -> Answer {
        let ips: Vec<_> = self
            .addresses(namespace, service)
            .into_iter()
            .filter(|(_, name)| name.as_deref() == Some(hostname))
            .map(|(ip, _)| ip)
            .collect();
        if ips.is_empty() { Answer::NoSuchName } else { Answer::Addresses(ips) }
    }

    /// The endpoint addresses of a Service, with their hostnames. The endpoints controller lists
    /// Pods that are not ready among them when the Service publishes not-ready addresses.
    fn addresses(&self, namespace: &str, service: &str) -> Vec<(Ipv4Addr, Option<String>)> {
        let Some(endpoints) = self.endpoints.get(&ObjectRef::new(service).within(namespace)) else {
            return Vec::new();
        };
        let subsets = endpoints.subsets.iter().flatten();
        subsets
            .flat_map(|subset| subset.addresses.iter().flatten())
            .filter_map(|address| Some((address.ip.parse().ok()?, address.hostname.clone())))
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{EndpointAddress, EndpointSubset, ServiceSpec};
    use kube::api::ObjectMeta;
    use kube::runtime::{reflector::store, watcher::Event};

    fn meta(namespace: &str, name: &str) -> ObjectMeta {
        ObjectMeta { name: Some(name.into()), namespace: Some(namespace.into()), ..Default::default() }
    }

    /// Services farm-apiserver (10.96.7.8), etcd (headless: etcd-0 10.244.0.5, etcd-1
    /// 10.244.0.6) and outside (ExternalName db.example.org) in farm-system.
    pub(crate) fn cluster() -> Cluster {
        let (services, mut services_writer) = store::<Service>();
        let (endpoints, mut endpoints_writer) = store::<Endpoints>();
        let service = |name: &str, spec: ServiceSpec| Service {
            metadata: meta("farm-system", name),
            spec: Some(spec),
            ..Default::default()
        };
        for s in [
            service("farm-apiserver", ServiceSpec { cluster_ip: Some("10.96.7.8".into()), ..Default::default() }),
            service("etcd", ServiceSpec { cluster_ip: Some("None".into()), ..Default::default() }),
            service(
                "outside",
                ServiceSpec {
                    type_: Some("ExternalName".into()),
                    external_name: Some("db.example.org".into()),
                    ..Default::default()
                },
            ),
        ] {
            services_writer.apply_watcher_event(&Event::Apply(s));
        }
        let address = |ip: &str, hostname: &str| EndpointAddress {
            ip: ip.into(),
            hostname: Some(hostname.into()),
            ..Default::default()
        };
        endpoints_writer.apply_watcher_event(&Event::Apply(Endpoints {
            metadata: meta("farm-system", "etcd"),
            subsets: Some(vec![EndpointSubset {
                addresses: Some(vec![address("10.244.0.5", "etcd-0"), address("10.244.0.6", "etcd-1")]),
                ..Default::default()
            }]),
        }));
        Cluster { zone: "cluster.local".into(), services, endpoints }
    }

    #[test]
    fn a_service_is_its_cluster_ip_and_a_headless_one_its_endpoints() {
        let cluster = cluster();
        let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        assert_eq!(
            cluster.resolve("farm-apiserver.farm-system.svc.cluster.local."),
            Answer::Addresses(vec![ip("10.96.7.8")])
        );
        assert_eq!(
            cluster.resolve("ETCD.farm-system.svc.cluster.local"),
            Answer::Addresses(vec![ip("10.244.0.5"), ip("10.244.0.6")])
        );
        assert_eq!(
            cluster.resolve("etcd-1.etcd.farm-system.svc.cluster.local"),
            Answer::Addresses(vec![ip("10.244.0.6")])
        );
        assert_eq!(cluster.resolve("outside.farm-system.svc.cluster.local"), Answer::Alias("db.example.org".into()));
    }

    #[test]
    fn anything_else_does_not_exist() {
        let cluster = cluster();
        for name in [
            "etcd-2.etcd.farm-system.svc.cluster.local",
            "etcd-0.farm-apiserver.farm-system.svc.cluster.local",
            "etcd.default.svc.cluster.local",
            "etcd.farm-system.svc.cluster.local.farm-system.svc.cluster.local",
            "svc.cluster.local",
            "example.org",
            "etcd.farm-system.svc.other.zone",
        ] {
            assert_eq!(cluster.resolve(name), Answer::NoSuchName, "{name}");
        }
    }
}
