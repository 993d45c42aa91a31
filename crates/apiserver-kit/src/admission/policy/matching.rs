//! Which requests a policy and its bindings apply to, as k8s.io/apiserver's policy matcher
//! decides it (`policy/matching.Matcher.Matches`): the namespace and object selectors, then
//! `excludeResourceRules` (an excluded request never matches), then `resourceRules` (none
//! matches everything), each rule with its `resourceNames`. Under `matchPolicy: Equivalent`, a
//! request no rule names at its own version matches at another version its objects are served
//! at, and the policy sees them there. A missing selector (which the API server defaults) is a
//! configuration error, as a selector that cannot be parsed is.

use super::super::matching::{Attributes, Rule, match_namespace, match_object};
use crate::machinery::error::Result;
use k8s_openapi::api::admissionregistration::v1::{MatchResources, NamedRuleWithOperations};
use std::collections::BTreeMap;

/// `errNilSelector`.
fn nil_selector(which: &str) -> String {
    format!("a nil {which} selector was passed, please ensure selectors are initialized properly")
}

/// The rule part of a named rule.
fn rule_of(named: &NamedRuleWithOperations) -> Rule<'_> {
    Rule {
        scope: named.scope.as_deref(),
        operations: &named.operations,
        api_groups: &named.api_groups,
        api_versions: &named.api_versions,
        resources: &named.resources,
    }
}

/// Whether `named` matches `attr` and the object's `name`.
fn named_rule_matches(named: &NamedRuleWithOperations, attr: &Attributes, name: &str) -> bool {
    rule_of(named).matches(attr)
        && named.resource_names.as_ref().is_none_or(|names| names.is_empty() || names.iter().any(|n| n == name))
}

/// The version at which `rules` match the request, trying the other served `versions` under
/// `Equivalent`; `None` when no rule does.
fn rules_match<'v>(
    rules: &[NamedRuleWithOperations],
    equivalent: bool,
    attr: &Attributes<'v>,
    versions: &[&'v str],
    name: &str,
) -> Option<&'v str> {
    if rules.iter().any(|rule| named_rule_matches(rule, attr, name)) {
        return Some(attr.version);
    }
    if !equivalent {
        return None;
    }
    rules.iter().find_map(|rule| {
        let others = versions.iter().copied().filter(|v| *v != attr.version);
        others.into_iter().find(|version| named_rule_matches(rule, &Attributes { version, ..*attr }, name))
    })
}

/// The version at which `criteria` match the request `attr` on the object `name` (`versions`:
/// every version its objects are served at), `None` when they do not; a configuration error's
/// message when they cannot be evaluated. `namespace_labels` looks up the labels of the
/// request's namespace, only when a selector needs them (its error fails the request when the
/// rules match).
pub fn matches<'v>(
    criteria: &MatchResources,
    attr: &Attributes<'v>,
    versions: &[&'v str],
    name: &str,
    namespace_labels: impl FnOnce(&str) -> Result<BTreeMap<String, String>>,
) -> std::result::Result<Option<&'v str>, Config> {
    let namespace_selector =
        criteria.namespace_selector.as_ref().ok_or_else(|| Config::Error(nil_selector("namespace")))?;
    let object_selector = criteria.object_selector.as_ref().ok_or_else(|| Config::Error(nil_selector("object")))?;
    let namespace = match_namespace(Some(namespace_selector), attr, namespace_labels);
    if let Ok(false) = namespace {
        return Ok(None);
    }
    let object = match_object(Some(object_selector), attr);
    if let Ok(false) = object {
        return Ok(None);
    }
    let equivalent = criteria.match_policy.as_deref() == Some("Equivalent");
    let excluded = criteria.exclude_resource_rules.as_deref().unwrap_or_default();
    if rules_match(excluded, equivalent, attr, versions, name).is_some() {
        return Ok(None);
    }
    let version = match criteria.resource_rules.as_deref() {
        None | Some([]) => Some(attr.version),
        Some(rules) => rules_match(rules, equivalent, attr, versions, name),
    };
    let Some(version) = version else { return Ok(None) };
    namespace.map_err(Config::Failed)?;
    object.map_err(Config::Failed)?;
    Ok(Some(version))
}

/// Whether the `resourceRules` of `criteria` may match the request at any of `versions`, its
/// selectors, exclusions and names aside: when no policy's may, a write skips them.
pub fn rules_may_match(criteria: &MatchResources, attr: &Attributes, versions: &[&str]) -> bool {
    let Some(rules) = criteria.resource_rules.as_deref().filter(|rules| !rules.is_empty()) else { return true };
    rules.iter().any(|rule| versions.iter().any(|version| rule_of(rule).matches(&Attributes { version, ..*attr })))
}

/// Why criteria could not be matched.
#[derive(Debug)]
pub enum Config {
    /// A configuration error, the policy's `failurePolicy` decides.
    Error(String),
    /// A failure of the request itself (the namespace could not be looked up, a selector
    /// could not be parsed).
    Failed(crate::machinery::error::Error),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::admission::Operation;
    use serde_json::json;

    fn criteria(value: serde_json::Value) -> MatchResources {
        serde_json::from_value(value).unwrap()
    }

    fn attr(version: &'static str, operation: Operation) -> Attributes<'static> {
        Attributes {
            group: "farm.example.com",
            version,
            resource: "llamas",
            subresource: "",
            operation,
            namespace: "pasture",
            object: None,
            old_object: None,
        }
    }

    const VERSIONS: &[&str] = &["v1", "v1alpha"];

    fn check(criteria: &MatchResources, attr: &Attributes<'static>, name: &str) -> Option<&'static str> {
        let labels = |_: &str| Ok(BTreeMap::from([("env".to_string(), "prod".to_string())]));
        matches(criteria, attr, VERSIONS, name, labels).unwrap()
    }

    #[test]
    fn rules_names_and_exclusions_decide() {
        let rules = json!([{"apiGroups": ["farm.example.com"], "apiVersions": ["v1"], "operations": ["CREATE"],
            "resources": ["llamas"], "resourceNames": ["dolly"]}]);
        let exact = criteria(json!({"namespaceSelector": {}, "objectSelector": {}, "matchPolicy": "Exact",
            "resourceRules": rules}));
        assert_eq!(check(&exact, &attr("v1", Operation::Create), "dolly"), Some("v1"));
        assert_eq!(check(&exact, &attr("v1", Operation::Create), "molly"), None);
        assert_eq!(check(&exact, &attr("v1", Operation::Update), "dolly"), None);
        assert_eq!(check(&exact, &attr("v1alpha", Operation::Create), "dolly"), None);
        let equivalent = criteria(json!({"namespaceSelector": {}, "objectSelector": {}, "matchPolicy": "Equivalent",
            "resourceRules": rules}));
        assert_eq!(check(&equivalent, &attr("v1alpha", Operation::Create), "dolly"), Some("v1"));
        let excluded = criteria(json!({"namespaceSelector": {}, "objectSelector": {}, "matchPolicy": "Equivalent",
            "excludeResourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]}));
        assert_eq!(check(&excluded, &attr("v1", Operation::Create), "dolly"), None);
        let everything = criteria(json!({"namespaceSelector": {}, "objectSelector": {}}));
        assert_eq!(check(&everything, &attr("v1alpha", Operation::Delete), ""), Some("v1alpha"));
    }

    #[test]
    fn selectors_decide_and_missing_ones_are_configuration_errors() {
        let prod = criteria(json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}, "objectSelector": {}}));
        assert_eq!(check(&prod, &attr("v1", Operation::Create), "dolly"), Some("v1"));
        let dev = criteria(json!({"namespaceSelector": {"matchLabels": {"env": "dev"}}, "objectSelector": {}}));
        assert_eq!(check(&dev, &attr("v1", Operation::Create), "dolly"), None);
        let missing = criteria(json!({"objectSelector": {}}));
        match matches(&missing, &attr("v1", Operation::Create), VERSIONS, "", |_| Ok(BTreeMap::new())) {
            Err(Config::Error(message)) => assert_eq!(message, nil_selector("namespace")),
            other => panic!("{other:?}"),
        }
    }
}
