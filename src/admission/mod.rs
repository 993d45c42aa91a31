//! Admission webhooks, as every server built on k8s.io/apiserver calls them: the cluster's
//! MutatingWebhookConfigurations and ValidatingWebhookConfigurations decide which of this
//! server's writes each webhook sees ([`matching`]).

pub mod matching;
