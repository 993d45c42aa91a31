//! The admission chain of a write, in the order of k8s.io/apiserver's plugins
//! (`RecommendedPluginOrder`): the MutatingAdmissionPolicies, the mutating webhooks, then the
//! ValidatingAdmissionPolicies and the validating webhooks (a policy's denial stops the write
//! before any validating webhook is called). The mutating steps run a second time when one of
//! them changed the object and some policy or webhook asks for it (`reinvocationPolicy:
//! IfNeeded`, [`super::reinvocation`]). Each part is skipped when none of its rules can match
//! the write.

use super::policy::{MutatingPolicies, ValidatingPolicies};
use super::reinvocation::{Reinvocation, Round};
use super::webhooks::Webhooks;
use crate::machinery::admission::{Admission, Call, Mutated};
use crate::machinery::error::Result;
use serde_json::Value;

/// The policies and webhooks the server enforces (any may be off).
pub struct Chain {
    /// The cluster's MutatingAdmissionPolicies.
    pub mutating_policies: Option<MutatingPolicies>,
    /// The cluster's ValidatingAdmissionPolicies.
    pub validating_policies: Option<ValidatingPolicies>,
    /// The cluster's admission webhooks.
    pub webhooks: Option<Webhooks>,
}

impl Chain {
    fn mutating_policies_for(&self, call: &Call) -> Option<&MutatingPolicies> {
        self.mutating_policies.as_ref().filter(|p| p.may_apply(call))
    }

    fn validating_policies_for(&self, call: &Call) -> Option<&ValidatingPolicies> {
        self.validating_policies.as_ref().filter(|p| p.may_apply(call))
    }

    fn webhooks_for(&self, call: &Call) -> Option<&Webhooks> {
        self.webhooks.as_ref().filter(|w| w.may_call(call))
    }
}

#[async_trait::async_trait]
impl Admission for Chain {
    fn may_call(&self, call: &Call) -> bool {
        self.may_mutate(call) || self.validating_policies_for(call).is_some()
    }

    fn may_mutate(&self, call: &Call) -> bool {
        self.mutating_policies_for(call).is_some() || self.webhooks_for(call).is_some()
    }

    async fn mutate(&self, call: &Call, object: Option<&Value>, old: Option<&Value>) -> Result<Mutated> {
        let policies = self.mutating_policies_for(call);
        let webhooks = self.webhooks_for(call);
        let mut run = match webhooks {
            Some(webhooks) => Some(webhooks.start_mutating().await?),
            None => None,
        };
        let (mut current, mut round, mut warnings) = (object.cloned(), Round::default(), Vec::new());
        let mut reinvocation = Reinvocation::default();
        loop {
            if let Some(policies) = policies {
                policies.mutate(call, &mut current, old, &mut round, &mut reinvocation).await?;
            }
            if let (Some(webhooks), Some(run)) = (webhooks, run.as_mut()) {
                webhooks.mutate_round(run, call, &mut current, old, &mut round, &mut warnings).await?;
            }
            if round.reinvoking || !round.wanted {
                break;
            }
            round.reinvoking = true;
        }
        let changed = current.as_ref() != object;
        Ok(Mutated { object: current.filter(|_| changed), warnings })
    }

    async fn validate(&self, call: &Call, object: Option<&Value>, old: Option<&Value>) -> Result<Vec<String>> {
        let mut warnings = match self.validating_policies_for(call) {
            Some(policies) => policies.validate(call, object, old).await?,
            None => Vec::new(),
        };
        if let Some(webhooks) = self.webhooks_for(call) {
            warnings.extend(webhooks.validate(call, object, old).await?);
        }
        Ok(warnings)
    }
}
