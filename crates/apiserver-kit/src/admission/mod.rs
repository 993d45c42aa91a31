//! Admission, as every server built on k8s.io/apiserver runs it ([`chain`]): the cluster's
//! MutatingAdmissionPolicies and ValidatingAdmissionPolicies ([`policy`]) and its admission
//! webhooks, the mutating steps run again when needed ([`reinvocation`]). Webhooks are called as
//! k8s.io/apiserver calls them: the cluster's
//! MutatingWebhookConfigurations and ValidatingWebhookConfigurations decide which of this
//! server's writes each webhook sees ([`matching`]), and each call is an `admission.k8s.io/v1`
//! AdmissionReview whose answer is checked and turned into the client's `Status` ([`review`]),
//! sent over HTTPS as the kube-apiserver sends it ([`client`]); [`webhooks`] puts them together
//! as the registry's `Admission`, over a watch cache of the configurations ([`configurations`]).

pub mod chain;
pub mod client;
pub mod configurations;
pub mod match_conditions;
pub mod matching;
pub mod policy;
pub mod reinvocation;
pub mod review;
pub mod webhooks;

/// What waits while admission's objects cannot be listed (for the log of their reflectors).
pub(crate) const WAITING: crate::reflect::Purpose = crate::reflect::Purpose {
    waiting: "writes that admission may apply to are refused until it can, unless the server's options \
              turn admission webhooks or policies off (admission_webhooks, admission_policies)",
    keep_managed_fields: false,
};
