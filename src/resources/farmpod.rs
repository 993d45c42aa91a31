//! FarmPod: a read-only, enriched view of one real Pod, same namespace and name.
//!
//! Keeps the seed tutorial's `spec.containers` (the number of containers) and adds what a user
//! wants at a glance: node, phase, ready containers (`2/3`), restarts, pod IP, QoS class, images,
//! the controlling owner (`Kind/name`) and the Pod's labels, and carries what the kubelet reports:
//! the start time, the conditions and each container's state. Its resourceVersion is the Pod's.
//! Projections are made by the Pod cache (`crate::pods`); this file only describes the type.
//! [`v1`] is the same view at `farm.example.com/v1`.

pub mod v1;

use crate::machinery::columns::{Column, ColumnType};
use crate::machinery::resource::ApiResource;
use crate::machinery::strategy::Strategy;
use crate::machinery::verb::Verb;
use k8s_openapi::api::core::v1::{ContainerState, ContainerStatus, Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// FarmPodSpec is what the Pod asks for, summarised.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "farm.example.com",
    version = "v1alpha",
    kind = "FarmPod",
    plural = "farmpods",
    singular = "farmpod",
    shortname = "fp",
    category = "farm",
    namespaced,
    status = "FarmPodStatus",
    selectable = ".spec.nodeName",
    selectable = ".status.phase",
    derive = "PartialEq",
    doc = "FarmPod is a read-only view of a Pod of the cluster, with the facts a user wants at a glance. One FarmPod exists per Pod, with the same namespace and name."
)]
#[serde(rename_all = "camelCase")]
pub struct FarmPodSpec {
    /// Number of (regular) containers in the Pod.
    pub containers: i64,
    /// Node the Pod is scheduled on; empty while unscheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// Images of the Pod's containers, in order.
    #[serde(default)]
    pub images: Vec<String>,
    /// The Pod's controlling owner as `Kind/name` (for example `ReplicaSet/web-7d4b9`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// FarmPodStatus is the Pod's observed state, summarised.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FarmPodStatus {
    /// The Pod's phase: Pending, Running, Succeeded, Failed or Unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// What `kubectl get pods` shows as STATUS: a waiting or terminated container's reason, Terminating, or the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Ready containers over containers, for example `2/3`.
    pub ready: String,
    /// Number of ready containers.
    pub ready_containers: i64,
    /// Restarts of all containers together.
    pub restarts: i64,
    /// The Pod's IP address, once it has one.
    #[serde(default, rename = "podIP", skip_serializing_if = "Option::is_none")]
    pub pod_ip: Option<String>,
    /// The Pod's QoS class: Guaranteed, Burstable or BestEffort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos_class: Option<String>,
    /// When the kubelet acknowledged the Pod (before any image was pulled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// The Pod's conditions as the kubelet reports them (PodScheduled, Initialized, ContainersReady, Ready).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<PodCondition>,
    /// Each regular container as the kubelet reports it, in the Pod's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub container_statuses: Vec<FarmContainerStatus>,
}

/// FarmContainerStatus is one container of the Pod as the kubelet reports it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FarmContainerStatus {
    /// The container's name in the Pod.
    pub name: String,
    /// The image the container runs.
    #[serde(default)]
    pub image: String,
    /// Whether the container passes its readiness probe.
    pub ready: bool,
    /// Whether the container has started (passed its startup probe, if any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<bool>,
    /// How many times the kubelet has restarted the container.
    pub restart_count: i32,
    /// What the container is doing now: waiting (with its reason), running (since when) or terminated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ContainerState>,
    /// How the container's previous run ended, after a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_state: Option<ContainerState>,
}

impl From<&ContainerStatus> for FarmContainerStatus {
    fn from(c: &ContainerStatus) -> Self {
        Self {
            name: c.name.clone(),
            image: c.image.clone(),
            ready: c.ready,
            started: c.started,
            restart_count: c.restart_count,
            state: c.state.clone(),
            // The kubelet writes an empty lastState before any restart; shown only when it says something.
            last_state: c.last_state.clone().filter(|s| s != &ContainerState::default()),
        }
    }
}

/// The cells of both versions' columns, of the spec and status they share: what
/// `kubectl get pods -o wide` shows.
pub mod cells {
    use super::{FarmPodSpec, FarmPodStatus};
    use serde_json::Value;

    /// `<none>` for what is unset, as `kubectl get pods` prints it.
    fn or_none(text: Option<&str>) -> Value {
        text.unwrap_or("<none>").into()
    }

    /// Ready containers over containers.
    pub fn ready(status: Option<&FarmPodStatus>) -> Value {
        status.map_or("", |s| s.ready.as_str()).into()
    }

    /// The status as kubectl shows it.
    pub fn status(status: Option<&FarmPodStatus>) -> Value {
        status.and_then(|s| s.reason.as_deref().or(s.phase.as_deref())).unwrap_or_default().into()
    }

    /// Restarts of all containers.
    pub fn restarts(status: Option<&FarmPodStatus>) -> Value {
        status.map_or(0, |s| s.restarts).into()
    }

    /// The number of containers.
    pub fn containers(spec: &FarmPodSpec) -> Value {
        spec.containers.into()
    }

    /// The node.
    pub fn node(spec: &FarmPodSpec) -> Value {
        or_none(spec.node_name.as_deref())
    }

    /// The Pod's IP.
    pub fn ip(status: Option<&FarmPodStatus>) -> Value {
        or_none(status.and_then(|s| s.pod_ip.as_deref()))
    }

    /// The QoS class.
    pub fn qos(status: Option<&FarmPodStatus>) -> Value {
        status.and_then(|s| s.qos_class.as_deref()).unwrap_or_default().into()
    }

    /// The controlling owner.
    pub fn owner(spec: &FarmPodSpec) -> Value {
        or_none(spec.owner.as_deref())
    }
}

/// A FarmPod at any version: the spec and status every version shows.
pub trait Summary {
    /// The spec's summary of the Pod.
    fn summary(&self) -> &FarmPodSpec;
    /// The status's summary of the Pod.
    fn observed(&self) -> Option<&FarmPodStatus>;
}

impl Summary for FarmPod {
    fn summary(&self) -> &FarmPodSpec {
        &self.spec
    }

    fn observed(&self) -> Option<&FarmPodStatus> {
        self.status.as_ref()
    }
}

/// The columns of every version, from the summary they share.
pub fn columns<K: Summary>() -> Vec<Column<K>> {
    vec![
        Column::computed("Ready", ColumnType::String, "Ready containers over containers.", |p: &K| {
            cells::ready(p.observed())
        }),
        Column::computed("Status", ColumnType::String, "The Pod's status as kubectl shows it.", |p: &K| {
            cells::status(p.observed())
        }),
        Column::computed("Restarts", ColumnType::Integer, "Restarts of all containers.", |p: &K| {
            cells::restarts(p.observed())
        }),
        Column::computed("Containers", ColumnType::Integer, "Number of containers.", |p: &K| {
            cells::containers(p.summary())
        }),
        Column::computed("Node", ColumnType::String, "Node the Pod runs on.", |p: &K| cells::node(p.summary())),
        Column::computed("IP", ColumnType::String, "The Pod's IP address.", |p: &K| cells::ip(p.observed())).wide(),
        Column::computed("QoS", ColumnType::String, "The Pod's QoS class.", |p: &K| cells::qos(p.observed())).wide(),
        Column::computed("Owner", ColumnType::String, "The controlling owner.", |p: &K| cells::owner(p.summary()))
            .wide(),
    ]
}

/// The namespace of FarmPod UIDs: a FarmPod's UID is the UUIDv5 of its Pod's UID in it, so it is
/// stable and never equal to the Pod's.
const UID_NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6661_726d_706f_6400_8000_0000_0000_0001);

impl FarmPod {
    /// The FarmPod of `pod`; `None` for a Pod without name or namespace.
    pub fn project(pod: &Pod) -> Option<Self> {
        let meta = &pod.metadata;
        let (name, namespace) = (meta.name.clone()?, meta.namespace.clone()?);
        let spec = pod.spec.as_ref();
        let containers = spec.map(|s| s.containers.len()).unwrap_or_default() as i64;
        let owner = meta
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
            .map(|o| format!("{}/{}", o.kind, o.name));
        let uid = meta.uid.as_deref().map(|u| uuid::Uuid::new_v5(&UID_NAMESPACE, u.as_bytes()).to_string());
        Some(Self {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(namespace),
                uid,
                resource_version: meta.resource_version.clone(),
                creation_timestamp: meta.creation_timestamp.clone(),
                deletion_timestamp: meta.deletion_timestamp.clone(),
                labels: meta.labels.clone(),
                generation: Some(1),
                ..Default::default()
            },
            spec: FarmPodSpec {
                containers,
                node_name: spec.and_then(|s| s.node_name.clone()),
                images: spec.map(|s| s.containers.iter().filter_map(|c| c.image.clone()).collect()).unwrap_or_default(),
                owner,
            },
            status: Some(FarmPodStatus::project(pod.status.as_ref(), containers, meta.deletion_timestamp.is_some())),
        })
    }
}

impl FarmPodStatus {
    /// The summary of a Pod's `status` for a Pod of `containers` regular containers.
    fn project(status: Option<&PodStatus>, containers: i64, deleting: bool) -> Self {
        let statuses = status.and_then(|s| s.container_statuses.as_deref()).unwrap_or_default();
        let ready_containers = statuses.iter().filter(|c| c.ready).count() as i64;
        let phase = status.and_then(|s| s.phase.clone());
        let mut reason = status.and_then(|s| s.reason.clone()).or_else(|| phase.clone());
        for c in statuses {
            let state = c.state.as_ref();
            if let Some(r) = state.and_then(|s| s.waiting.as_ref()).and_then(|w| w.reason.clone()) {
                reason = Some(r);
            } else if let Some(t) = state.and_then(|s| s.terminated.as_ref()) {
                reason = Some(t.reason.clone().unwrap_or_else(|| format!("ExitCode:{}", t.exit_code)));
            }
        }
        if deleting {
            reason = Some("Terminating".into());
        }
        Self {
            phase,
            reason,
            ready: format!("{ready_containers}/{containers}"),
            ready_containers,
            restarts: statuses.iter().map(|c| i64::from(c.restart_count)).sum(),
            pod_ip: status.and_then(|s| s.pod_ip.clone()),
            qos_class: status.and_then(|s| s.qos_class.clone()),
            start_time: status.and_then(|s| s.start_time.clone()),
            conditions: status.and_then(|s| s.conditions.clone()).unwrap_or_default(),
            container_statuses: statuses.iter().map(FarmContainerStatus::from).collect(),
        }
    }
}

impl ApiResource for FarmPod {
    const VERBS: &'static [Verb] = &[Verb::Get, Verb::List, Verb::Watch];
}

impl Strategy for FarmPod {
    fn columns() -> Vec<Column<Self>> {
        columns()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "web-1", "namespace": "shop", "uid": "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
                "resourceVersion": "42", "labels": {"app": "web"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9", "uid": "u", "controller": true}]
            },
            "spec": {"nodeName": "node-a", "containers": [{"name": "a", "image": "nginx:1"}, {"name": "b", "image": "busybox"}, {"name": "c", "image": "redis"}]},
            "status": {
                "phase": "Running", "podIP": "10.0.0.7", "qosClass": "BestEffort",
                "containerStatuses": [
                    {"name": "a", "ready": true, "restartCount": 1, "image": "nginx:1", "imageID": "", "state": {"running": {}}},
                    {"name": "b", "ready": true, "restartCount": 2, "image": "busybox", "imageID": "", "state": {"running": {}}},
                    {"name": "c", "ready": false, "restartCount": 0, "image": "redis", "imageID": "", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
                ]
            }
        }))
        .unwrap()
    }

    #[test]
    fn a_pod_is_summarised() {
        let fp = FarmPod::project(&pod()).unwrap();
        assert_eq!(fp.metadata.resource_version.as_deref(), Some("42"));
        assert_eq!(fp.metadata.labels.as_ref().unwrap()["app"], "web");
        assert_ne!(fp.metadata.uid.as_deref(), Some("1b4e28ba-2fa1-11d2-883f-0016d3cca427"));
        assert_eq!(fp.spec.containers, 3);
        assert_eq!(fp.spec.images, ["nginx:1", "busybox", "redis"]);
        assert_eq!(fp.spec.owner.as_deref(), Some("ReplicaSet/web-7d4b9"));
        let status = fp.status.clone().unwrap();
        assert_eq!(status.ready, "2/3");
        assert_eq!(status.restarts, 3);
        assert_eq!(status.reason.as_deref(), Some("CrashLoopBackOff"));
        let stored = crate::machinery::stored::Stored::new(fp.clone()).unwrap();
        assert_eq!(stored.field("spec.nodeName").as_deref(), Some("node-a"), "selectable");
        assert_eq!(stored.field("status.phase").as_deref(), Some("Running"), "selectable");
        let cells: Vec<_> = columns::<FarmPod>()[..5]
            .iter()
            .map(|c| match c.cell {
                crate::machinery::columns::Cell::Computed(cell) => cell(&fp),
                crate::machinery::columns::Cell::Path(_) => serde_json::Value::Null,
            })
            .collect();
        assert_eq!(cells, [serde_json::json!("2/3"), "CrashLoopBackOff".into(), 3.into(), 3.into(), "node-a".into()]);
    }

    #[test]
    fn a_pending_pod_without_status_is_summarised_too() {
        let p: Pod = serde_json::from_value(
            serde_json::json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {"containers": [{"name": "a"}]}}),
        )
        .unwrap();
        let fp = FarmPod::project(&p).unwrap();
        assert_eq!(fp.status.unwrap().ready, "0/1");
        assert!(FarmPod::project(&Pod::default()).is_none());
    }

    #[test]
    fn what_the_kubelet_reports_is_carried_as_it_was_written() {
        let mut pod = pod();
        let status = pod.status.as_mut().unwrap();
        status.start_time = Some(Time(k8s_openapi::jiff::Timestamp::from_second(1_800_000_000).unwrap()));
        status.conditions =
            Some(vec![PodCondition { type_: "Ready".into(), status: "False".into(), ..Default::default() }]);
        let restarted = &mut status.container_statuses.as_mut().unwrap()[1];
        let exited = k8s_openapi::api::core::v1::ContainerStateTerminated { exit_code: 3, ..Default::default() };
        restarted.last_state = Some(ContainerState { terminated: Some(exited), ..Default::default() });
        status.container_statuses.as_mut().unwrap()[0].last_state = Some(ContainerState::default());
        let shown = FarmPod::project(&pod).unwrap().status.unwrap();
        let reported = pod.status.unwrap();
        assert_eq!(shown.start_time, reported.start_time);
        assert_eq!(Some(shown.conditions), reported.conditions);
        let containers = reported.container_statuses.unwrap();
        assert_eq!(shown.container_statuses.len(), 3);
        for (ours, theirs) in shown.container_statuses.iter().zip(&containers) {
            assert_eq!(
                (&ours.name, ours.ready, ours.restart_count),
                (&theirs.name, theirs.ready, theirs.restart_count)
            );
            assert_eq!(ours.state, theirs.state);
        }
        assert_eq!(shown.container_statuses[0].last_state, None, "an empty lastState is left out");
        assert_eq!(shown.container_statuses[1].last_state, containers[1].last_state);
    }

    #[test]
    fn uids_are_stable_per_pod() {
        let a = FarmPod::project(&pod()).unwrap().metadata.uid;
        assert_eq!(a, FarmPod::project(&pod()).unwrap().metadata.uid);
    }
}
