//! The admission chain of a write, in the order of k8s.io/apiserver's plugins: the mutating
//! webhooks, then the ValidatingAdmissionPolicies, then the validating webhooks (a policy's
//! denial stops the write before any validating webhook is called). Each part is skipped when
//! none of its rules can match the write.

use super::policy::ValidatingPolicies;
use super::webhooks::Webhooks;
use crate::machinery::admission::{Admission, Call, Mutated};
use crate::machinery::error::Result;
use serde_json::Value;

/// The policies and webhooks the server enforces (either may be off).
pub struct Chain {
    /// The cluster's ValidatingAdmissionPolicies.
    pub policies: Option<ValidatingPolicies>,
    /// The cluster's admission webhooks.
    pub webhooks: Option<Webhooks>,
}

impl Chain {
    fn policies_for(&self, call: &Call) -> Option<&ValidatingPolicies> {
        self.policies.as_ref().filter(|p| p.may_apply(call))
    }

    fn webhooks_for(&self, call: &Call) -> Option<&Webhooks> {
        self.webhooks.as_ref().filter(|w| w.may_call(call))
    }
}

#[async_trait::async_trait]
impl Admission for Chain {
    fn may_call(&self, call: &Call) -> bool {
        self.policies_for(call).is_some() || self.webhooks_for(call).is_some()
    }

    fn may_mutate(&self, call: &Call) -> bool {
        self.webhooks_for(call).is_some()
    }

    async fn mutate(&self, call: &Call, object: Option<&Value>, old: Option<&Value>) -> Result<Mutated> {
        match self.webhooks_for(call) {
            Some(webhooks) => webhooks.mutate(call, object, old).await,
            None => Ok(Mutated::default()),
        }
    }

    async fn validate(&self, call: &Call, object: Option<&Value>, old: Option<&Value>) -> Result<Vec<String>> {
        let mut warnings = match self.policies_for(call) {
            Some(policies) => policies.validate(call, object, old).await?,
            None => Vec::new(),
        };
        if let Some(webhooks) = self.webhooks_for(call) {
            warnings.extend(webhooks.validate(call, object, old).await?);
        }
        Ok(warnings)
    }
}
