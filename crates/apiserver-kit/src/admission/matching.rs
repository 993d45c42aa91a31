//! Which admission webhooks a request calls, as k8s.io/apiserver decides it
//! (`admission/plugin/webhook/predicates`: `rules.Matcher`, `namespace.Matcher`,
//! `object.Matcher`, and `generic.Webhook.ShouldCallHook`), as pure functions of the request's
//! attributes and one webhook's configuration:
//!
//! 1. `namespaceSelector`: a namespaced request matches when its namespace's labels do (a
//!    cluster-scoped one always does); an empty selector matches everything without looking the
//!    namespace up.
//! 2. `objectSelector`: the new object's labels or the old one's match (a missing object never
//!    does; a delete has only the old one).
//! 3. `rules`: one rule matches the scope, the operation, the group, the version and the
//!    resource with its subresource (`*` is every resource but no subresource, `*/status` the
//!    status of any, `*/*` everything).
//!
//! When no rule matches the request's version, `matchPolicy: Equivalent` (the default) tries the
//! other versions the same objects are served at, each rule in turn over every version
//! ([`invoked_version`]); the webhook is then called with the objects at the version its rule
//! named, as `generic.Webhook.ShouldCallHook` finds an equivalent resource. `Exact` does not. A
//! selector that is not valid (an unknown operator) makes the
//! request fail with a 500 when the rules match, as it does on the kube-apiserver.

pub use crate::machinery::admission::Operation;
use crate::machinery::error::{Error, Result};
use k8s_openapi::api::admissionregistration::v1::{MutatingWebhook, RuleWithOperations, ValidatingWebhook};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::core::{Selector, SelectorExt};
use std::collections::BTreeMap;

/// What a webhook's rules and selectors are matched against.
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    /// The API group of the resource (empty for the core group).
    pub group: &'a str,
    /// The version the request was made at.
    pub version: &'a str,
    /// The resource, plural (`widgets`).
    pub resource: &'a str,
    /// The subresource (`status`), or empty.
    pub subresource: &'a str,
    /// What the request does.
    pub operation: Operation,
    /// The request's namespace; empty for a cluster-scoped resource.
    pub namespace: &'a str,
    /// The metadata of the object the request writes, when it has one (not for a delete).
    pub object: Option<&'a ObjectMeta>,
    /// The metadata of the stored object, when there is one (updates and deletes).
    pub old_object: Option<&'a ObjectMeta>,
}

/// The parts of a webhook that decide whether a request calls it.
#[derive(Clone, Copy, Debug)]
pub struct Matching<'w> {
    /// `rules`.
    pub rules: &'w [RuleWithOperations],
    /// `namespaceSelector`; the API server defaults a missing one to `{}`.
    pub namespace_selector: Option<&'w LabelSelector>,
    /// `objectSelector`; the API server defaults a missing one to `{}`.
    pub object_selector: Option<&'w LabelSelector>,
    /// `matchPolicy`: `Exact`, or `Equivalent` (the API server's default for a missing one).
    pub match_policy: Option<&'w str>,
}

/// Mutating and validating webhooks carry the same matching fields.
macro_rules! matching_from {
    ($($webhook:ty),*) => {$(
        impl<'w> From<&'w $webhook> for Matching<'w> {
            fn from(webhook: &'w $webhook) -> Self {
                Matching {
                    rules: webhook.rules.as_deref().unwrap_or_default(),
                    namespace_selector: webhook.namespace_selector.as_ref(),
                    object_selector: webhook.object_selector.as_ref(),
                    match_policy: webhook.match_policy.as_deref(),
                }
            }
        }
    )*};
}

matching_from!(MutatingWebhook, ValidatingWebhook);

/// Whether the request `attr` calls the webhook `matching` (see the module documentation).
/// `namespace_labels` looks the request's namespace up, only when a selector needs it; its
/// error (a 404 for a namespace that does not exist) fails the request when the rules match.
pub fn should_call(
    matching: Matching,
    attr: &Attributes,
    namespace_labels: impl FnOnce(&str) -> Result<BTreeMap<String, String>>,
) -> Result<bool> {
    let namespace = match_namespace(matching.namespace_selector, attr, namespace_labels);
    if let Ok(false) = namespace {
        return Ok(false);
    }
    let object = match_object(matching.object_selector, attr);
    if let Ok(false) = object {
        return Ok(false);
    }
    if !matching.rules.iter().any(|rule| rule_matches(rule, attr)) {
        return Ok(false);
    }
    namespace?;
    object?;
    Ok(true)
}

/// The version at which the request `attr` calls the webhook `matching`, by its rules alone:
/// the request's own when a rule names it; else, under `matchPolicy: Equivalent`, the first of
/// `others` (the other versions the resource is served at) that a rule names, the rules tried
/// in order; `None` when none does.
pub fn invoked_version<'v>(matching: &Matching, attr: &Attributes<'v>, others: &[&'v str]) -> Option<&'v str> {
    if matching.rules.iter().any(|r| rule_matches(r, attr)) {
        return Some(attr.version);
    }
    if matching.match_policy == Some("Exact") {
        return None;
    }
    matching.rules.iter().find_map(|rule| {
        let equivalent = others.iter().filter(|v| **v != attr.version);
        equivalent.copied().find(|version| rule_matches(rule, &Attributes { version, ..*attr }))
    })
}

/// `rules.Matcher.Matches`.
pub fn rule_matches(rule: &RuleWithOperations, attr: &Attributes) -> bool {
    Rule::from(rule).matches(attr)
}

/// The fields of a rule, as webhooks' rules and policies' named rules both carry them.
#[derive(Clone, Copy)]
pub struct Rule<'r> {
    /// `scope`.
    pub scope: Option<&'r str>,
    /// `operations`.
    pub operations: &'r Option<Vec<String>>,
    /// `apiGroups`.
    pub api_groups: &'r Option<Vec<String>>,
    /// `apiVersions`.
    pub api_versions: &'r Option<Vec<String>>,
    /// `resources`.
    pub resources: &'r Option<Vec<String>>,
}

impl<'r> From<&'r RuleWithOperations> for Rule<'r> {
    fn from(rule: &'r RuleWithOperations) -> Self {
        Rule {
            scope: rule.scope.as_deref(),
            operations: &rule.operations,
            api_groups: &rule.api_groups,
            api_versions: &rule.api_versions,
            resources: &rule.resources,
        }
    }
}

impl Rule<'_> {
    /// `rules.Matcher.Matches`.
    pub fn matches(self, attr: &Attributes) -> bool {
        let listed = |items: &Option<Vec<String>>, wanted: &str| {
            items.iter().flatten().any(|item| item == "*" || item == wanted)
        };
        scope_matches(self.scope, attr)
            && listed(self.operations, attr.operation.as_str())
            && listed(self.api_groups, attr.group)
            && listed(self.api_versions, attr.version)
            && self.resources.iter().flatten().any(|listed| {
                let (resource, subresource) = listed.split_once('/').unwrap_or((listed, ""));
                (resource == "*" || resource == attr.resource)
                    && (subresource == "*" || subresource == attr.subresource)
            })
    }
}

/// A rule's `scope`: `*` (the default) any, `Namespaced` a request in a namespace, `Cluster` one
/// outside any (and the Namespace objects themselves).
fn scope_matches(scope: Option<&str>, attr: &Attributes) -> bool {
    let namespace_object = attr.group.is_empty() && attr.resource == "namespaces";
    match scope {
        None | Some("*") => true,
        Some("Namespaced") => !namespace_object && !attr.namespace.is_empty(),
        Some("Cluster") => namespace_object || attr.namespace.is_empty(),
        Some(_) => false,
    }
}

/// A label selector as kube-core evaluates it; a missing one selects everything.
fn parse(selector: Option<&LabelSelector>) -> Result<Selector> {
    let Some(selector) = selector else { return Ok(Selector::default()) };
    Selector::try_from(selector.clone())
        .map_err(|e| Error::Internal(format!("invalid label selector {selector:?}: {}", e.0)))
}

/// `namespace.Matcher.MatchNamespaceSelector`.
pub(super) fn match_namespace(
    selector: Option<&LabelSelector>,
    attr: &Attributes,
    namespace_labels: impl FnOnce(&str) -> Result<BTreeMap<String, String>>,
) -> Result<bool> {
    if attr.namespace.is_empty() {
        return Ok(true);
    }
    let selector = parse(selector)?;
    if selector.selects_all() {
        return Ok(true);
    }
    Ok(selector.matches(&namespace_labels(attr.namespace)?))
}

/// `object.Matcher.MatchObjectSelector`.
pub(super) fn match_object(selector: Option<&LabelSelector>, attr: &Attributes) -> Result<bool> {
    let selector = parse(selector)?;
    if selector.selects_all() {
        return Ok(true);
    }
    let empty = BTreeMap::new();
    let matches =
        |meta: Option<&ObjectMeta>| meta.is_some_and(|meta| selector.matches(meta.labels.as_ref().unwrap_or(&empty)));
    Ok(matches(attr.object) || matches(attr.old_object))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::error::GroupResource;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    const NAMESPACES: GroupResource = GroupResource { group: "", resource: "namespaces" };

    fn rule(operations: &[&str], resources: &[&str], scope: Option<&str>) -> RuleWithOperations {
        let strings = |items: &[&str]| Some(items.iter().map(|s| s.to_string()).collect());
        RuleWithOperations {
            api_groups: strings(&["test.example.com"]),
            api_versions: strings(&["*"]),
            operations: strings(operations),
            resources: strings(resources),
            scope: scope.map(str::to_string),
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn meta(pairs: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta { labels: (!pairs.is_empty()).then(|| labels(pairs)), ..Default::default() }
    }

    fn request(operation: Operation, subresource: &'static str) -> Attributes<'static> {
        Attributes {
            group: "test.example.com",
            version: "v1alpha",
            resource: "widgets",
            subresource,
            operation,
            namespace: "pasture",
            object: None,
            old_object: None,
        }
    }

    fn selector(match_labels: &[(&str, &str)], expressions: &[(&str, &str, &[&str])]) -> LabelSelector {
        LabelSelector {
            match_labels: (!match_labels.is_empty()).then(|| labels(match_labels)),
            match_expressions: Some(
                expressions
                    .iter()
                    .map(|(key, operator, values)| LabelSelectorRequirement {
                        key: key.to_string(),
                        operator: operator.to_string(),
                        values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
                    })
                    .collect(),
            ),
        }
    }

    /// A namespace lookup the test says must not happen.
    fn no_lookup(namespace: &str) -> Result<BTreeMap<String, String>> {
        panic!("looked up {namespace}")
    }

    #[test]
    fn resources_and_subresources_match_as_the_kube_apiserver_matches_them() {
        let cases: [(&str, bool, bool); 7] = [
            // (rule resource, matches the object, matches its status)
            ("widgets", true, false),
            ("widgets/status", false, true),
            ("widgets/*", true, true),
            ("*", true, false),
            ("*/status", false, true),
            ("*/*", true, true),
            ("gadgets", false, false),
        ];
        for (resource, main, status) in cases {
            let r = rule(&["*"], &[resource], None);
            assert_eq!(rule_matches(&r, &request(Operation::Update, "")), main, "{resource} on widgets");
            assert_eq!(rule_matches(&r, &request(Operation::Update, "status")), status, "{resource} on status");
        }
    }

    #[test]
    fn operations_groups_versions_and_scope_must_all_match() {
        let create = request(Operation::Create, "");
        assert!(rule_matches(&rule(&["CREATE", "UPDATE"], &["widgets"], None), &create));
        assert!(!rule_matches(&rule(&["UPDATE"], &["widgets"], None), &create));
        assert!(!rule_matches(&rule(&[], &["widgets"], None), &create), "no operation matches nothing");
        let mut other_group = rule(&["*"], &["widgets"], None);
        other_group.api_groups = Some(vec!["apps".into()]);
        assert!(!rule_matches(&other_group, &create));
        let mut exact_version = rule(&["*"], &["widgets"], None);
        exact_version.api_versions = Some(vec!["v1".into()]);
        assert!(!rule_matches(&exact_version, &create));
        assert!(rule_matches(&rule(&["*"], &["widgets"], Some("Namespaced")), &create));
        assert!(rule_matches(&rule(&["*"], &["widgets"], Some("*")), &create));
        assert!(!rule_matches(&rule(&["*"], &["widgets"], Some("Cluster")), &create));
        let cluster_wide = Attributes { namespace: "", ..create };
        assert!(rule_matches(&rule(&["*"], &["widgets"], Some("Cluster")), &cluster_wide));
        assert!(!rule_matches(&rule(&["*"], &["widgets"], Some("Namespaced")), &cluster_wide));
    }

    #[test]
    fn namespace_selectors_look_the_namespace_up_only_when_they_select_something() {
        let rules = [rule(&["*"], &["widgets"], None)];
        let everything = LabelSelector::default();
        let attr = request(Operation::Create, "");
        let webhook = |namespace_selector| Matching {
            rules: &rules,
            namespace_selector,
            object_selector: None,
            match_policy: None,
        };
        assert!(should_call(webhook(None), &attr, no_lookup).unwrap());
        assert!(should_call(webhook(Some(&everything)), &attr, no_lookup).unwrap());
        let prod = selector(&[("env", "prod")], &[]);
        let labelled = |env: &'static str| move |name: &str| Ok(labels(&[("env", env), ("name", name)]));
        assert!(should_call(webhook(Some(&prod)), &attr, labelled("prod")).unwrap());
        assert!(!should_call(webhook(Some(&prod)), &attr, labelled("dev")).unwrap());
        let not_kube = selector(&[], &[("name", "NotIn", &["kube-system"])]);
        assert!(should_call(webhook(Some(&not_kube)), &attr, labelled("dev")).unwrap());
    }

    #[test]
    fn a_missing_namespace_fails_the_request_only_when_the_rules_match() {
        let prod = selector(&[("env", "prod")], &[]);
        let missing = |name: &str| Err(Error::NotFound { resource: NAMESPACES, name: name.to_string() });
        let attr = request(Operation::Create, "");
        let matching_rules = [rule(&["*"], &["widgets"], None)];
        let webhook = Matching {
            rules: &matching_rules,
            namespace_selector: Some(&prod),
            object_selector: None,
            match_policy: None,
        };
        assert!(matches!(should_call(webhook, &attr, missing), Err(Error::NotFound { .. })));
        let other_rules = [rule(&["DELETE"], &["widgets"], None)];
        let webhook = Matching { rules: &other_rules, ..webhook };
        assert!(!should_call(webhook, &attr, missing).unwrap());
    }

    #[test]
    fn object_selectors_match_the_new_or_the_old_object() {
        let rules = [rule(&["*"], &["widgets"], None)];
        let white = selector(&[("color", "white")], &[]);
        let webhook =
            Matching { rules: &rules, namespace_selector: None, object_selector: Some(&white), match_policy: None };
        let (white, brown) = (meta(&[("color", "white")]), meta(&[("color", "brown")]));
        let create = |object| Attributes { object: Some(object), ..request(Operation::Create, "") };
        assert!(should_call(webhook, &create(&white), no_lookup).unwrap());
        assert!(!should_call(webhook, &create(&brown), no_lookup).unwrap());
        let recolor = Attributes { old_object: Some(&white), ..create(&brown) };
        assert!(should_call(webhook, &recolor, no_lookup).unwrap(), "the old object still matches");
        let delete = Attributes { old_object: Some(&white), ..request(Operation::Delete, "") };
        assert!(should_call(webhook, &delete, no_lookup).unwrap());
        let unlabelled = selector(&[], &[("color", "DoesNotExist", &[])]);
        let webhook = Matching { object_selector: Some(&unlabelled), ..webhook };
        assert!(should_call(webhook, &create(&meta(&[])), no_lookup).unwrap(), "no labels is the empty set");
        assert!(!should_call(webhook, &request(Operation::Delete, ""), no_lookup).unwrap(), "no object at all");
    }

    #[test]
    fn equivalent_finds_another_served_version_that_a_rule_names_and_exact_does_not() {
        let mut v1alpha_only = rule(&["CREATE"], &["widgets"], None);
        v1alpha_only.api_versions = Some(vec!["v1alpha".into()]);
        let rules = [v1alpha_only];
        let at_v1 = Attributes { version: "v1", ..request(Operation::Create, "") };
        let others = ["v1", "v1alpha"];
        let policy =
            |match_policy| Matching { rules: &rules, namespace_selector: None, object_selector: None, match_policy };
        assert_eq!(invoked_version(&policy(None), &at_v1, &others), Some("v1alpha"), "Equivalent is the default");
        assert_eq!(invoked_version(&policy(Some("Equivalent")), &at_v1, &others), Some("v1alpha"));
        assert_eq!(invoked_version(&policy(Some("Exact")), &at_v1, &others), None);
        let at_v1alpha = request(Operation::Create, "");
        assert_eq!(invoked_version(&policy(Some("Exact")), &at_v1alpha, &others), Some("v1alpha"));
        let rules_at_both = [rule(&["CREATE"], &["widgets"], None)];
        let both = Matching { rules: &rules_at_both, ..policy(None) };
        assert_eq!(invoked_version(&both, &at_v1, &others), Some("v1"), "the request's own version first");
        let update = Attributes { operation: Operation::Update, ..at_v1 };
        assert_eq!(invoked_version(&policy(None), &update, &others), None, "the rule still decides the operation");
    }

    #[test]
    fn both_kinds_of_webhook_give_their_rules_and_selectors() {
        let white = selector(&[("color", "white")], &[]);
        let validating = ValidatingWebhook {
            name: "weight.test.example.com".into(),
            rules: Some(vec![rule(&["CREATE"], &["widgets"], None)]),
            object_selector: Some(white.clone()),
            ..Default::default()
        };
        let mutating = MutatingWebhook {
            name: "label.test.example.com".into(),
            rules: validating.rules.clone(),
            object_selector: Some(white),
            ..Default::default()
        };
        let (white, brown) = (meta(&[("color", "white")]), meta(&[("color", "brown")]));
        for matching in [Matching::from(&validating), Matching::from(&mutating)] {
            let create = |object| Attributes { object: Some(object), ..request(Operation::Create, "") };
            assert!(should_call(matching, &create(&white), no_lookup).unwrap());
            assert!(!should_call(matching, &create(&brown), no_lookup).unwrap());
        }
        assert!(Matching::from(&ValidatingWebhook::default()).rules.is_empty());
    }

    #[test]
    fn an_invalid_selector_is_an_internal_error_when_the_rules_match() {
        let bad = selector(&[], &[("color", "Near", &["white"])]);
        let attr = Attributes { object: Some(&ObjectMeta::default()), ..request(Operation::Create, "") };
        let rules = [rule(&["*"], &["widgets"], None)];
        let webhook =
            Matching { rules: &rules, namespace_selector: None, object_selector: Some(&bad), match_policy: None };
        assert!(matches!(should_call(webhook, &attr, no_lookup), Err(Error::Internal(_))));
        let other_rules = [rule(&["*"], &["gadgets"], None)];
        assert!(!should_call(Matching { rules: &other_rules, ..webhook }, &attr, no_lookup).unwrap());
    }
}
