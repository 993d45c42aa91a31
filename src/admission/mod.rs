//! Admission webhooks, as every server built on k8s.io/apiserver calls them: the cluster's
//! MutatingWebhookConfigurations and ValidatingWebhookConfigurations decide which of this
//! server's writes each webhook sees ([`matching`]), and each call is an `admission.k8s.io/v1`
//! AdmissionReview whose answer is checked and turned into the client's `Status` ([`review`]).

pub mod matching;
pub mod review;
