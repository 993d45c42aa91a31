//! FarmPod at `farm.example.com/v1`, the preferred version the Pod cache projects Pods to: the
//! same view of a Pod as at v1alpha, field for field; only the `apiVersion` converts.

use super::{FarmPodSpec as Summary, FarmPodStatus};
use crate::machinery::columns::Column;
use crate::machinery::error::Result;
use crate::machinery::resource::ApiResource;
use crate::machinery::strategy::Strategy;
use crate::machinery::verb::Verb;
use crate::machinery::version::Served;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// FarmPodSpec is what the Pod asks for, summarised.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "farm.example.com",
    version = "v1",
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
pub struct FarmPodSpec {
    /// The fields of the spec, the same as at v1alpha.
    #[serde(flatten)]
    pub summary: Summary,
}

impl FarmPod {
    /// The FarmPod that shows `pod`, if it has a name (see [`super::FarmPod::project`]).
    pub fn project(pod: &k8s_openapi::api::core::v1::Pod) -> Option<Self> {
        let at_v1alpha = super::FarmPod::project(pod)?;
        Some(Self {
            metadata: at_v1alpha.metadata,
            spec: FarmPodSpec { summary: at_v1alpha.spec },
            status: at_v1alpha.status,
        })
    }
}

impl super::Summary for FarmPod {
    fn summary(&self) -> &Summary {
        &self.spec.summary
    }

    fn observed(&self) -> Option<&FarmPodStatus> {
        self.status.as_ref()
    }
}

impl ApiResource for FarmPod {
    const VERBS: &'static [Verb] = &[Verb::Get, Verb::List, Verb::Watch];
}

impl Strategy for FarmPod {
    fn columns() -> Vec<Column<Self>> {
        super::columns()
    }
}

/// Sets the `apiVersion` of a FarmPod's JSON.
fn at(mut object: Value, api_version: &str) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), Value::String(api_version.into()));
    }
    object
}

/// v1alpha, served from the v1 FarmPods the Pod cache holds.
impl Served<FarmPod> for super::FarmPod {
    fn value_from_hub(object: Value) -> Result<Value> {
        Ok(at(object, "farm.example.com/v1alpha"))
    }

    fn value_to_hub(object: Value) -> Result<Value> {
        Ok(at(object, "farm.example.com/v1"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::resource::body_schema;

    #[test]
    fn a_farmpod_is_the_same_at_both_versions_but_for_its_api_version() {
        let new = FarmPod::new("web-1", FarmPodSpec { summary: Summary { containers: 2, ..Default::default() } });
        let stored = std::sync::Arc::new(crate::machinery::stored::Stored::new(new.clone()).unwrap());
        let old = <super::super::FarmPod as Served<FarmPod>>::stored_from_hub(&stored).unwrap().decode().unwrap();
        assert_eq!(new.spec.summary, old.spec);
        let mut value: Value = serde_json::from_slice(&stored.json()).unwrap();
        let converted: Value = serde_json::to_value(&old).unwrap();
        value["apiVersion"] = "farm.example.com/v1alpha".into();
        assert_eq!(converted, value);
        let (v1, v1alpha) = (body_schema::<FarmPod>(), body_schema::<super::super::FarmPod>());
        assert_eq!((&v1.properties, &v1.required), (&v1alpha.properties, &v1alpha.required));
    }
}
