//! The audit policy (`--audit-policy-file`, an `audit.k8s.io/v1` Policy in YAML or JSON) and
//! how it decides what a request records, as k8s.io/apiserver's `audit/policy` checker does: the
//! first rule that matches gives the level, the stages to leave out (the rule's and the
//! policy's) and whether managedFields are left out; a request no rule matches is not recorded.
//! A rule matches when each of its non-empty lists does: `users`, `userGroups` (any group),
//! `verbs`, then either `namespaces` and `resources` (group, resources with `*`, `*/sub`,
//! `res/*`, and `resourceNames`) for resource requests, or `nonResourceURLs` (exact, `*`, or a
//! `prefix*`) for the others.

use crate::auth::attributes::Attributes;
use crate::machinery::user::UserInfo;
use serde::Deserialize;

/// How much of a request an event records.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Nothing.
    #[default]
    None,
    /// Who did what to which object, and the answer's code.
    Metadata,
    /// And the request's body.
    Request,
    /// And the response's body.
    RequestResponse,
}

/// When in a request's life an event is written.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, serde::Serialize)]
pub enum Stage {
    /// As soon as the request arrives.
    RequestReceived,
    /// When a long-running request (a watch) has sent its response head.
    ResponseStarted,
    /// When the response is complete.
    ResponseComplete,
    /// When serving the request panicked.
    Panic,
}

/// A group's resources, as a rule names them.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupResources {
    /// The API group (`""` for the core group, `*` for every group).
    #[serde(default)]
    pub group: String,
    /// The resources: `widgets`, `widgets/status` for a subresource, `*` for all, `widgets/*` for a
    /// resource and its subresources, `*/status` for one subresource of all; empty for every one.
    #[serde(default)]
    pub resources: Vec<String>,
    /// The names of the objects matched (`resourceNames`, which needs `resources`); empty for every object.
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// One rule of the policy.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    /// The level requests matching this rule are recorded at.
    pub level: Level,
    /// The users (by name) this rule applies to; empty for every user.
    #[serde(default)]
    pub users: Vec<String>,
    /// The groups this rule applies to (a user in any of them matches); empty for every group.
    #[serde(default)]
    pub user_groups: Vec<String>,
    /// The verbs this rule applies to; empty for every verb.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// The resources this rule applies to; empty for every resource of every group.
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    /// The namespaces this rule applies to (`""` for cluster-scoped objects); empty for every namespace.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// The non-resource URL paths this rule applies to (`nonResourceURLs`): a path, `*`, or a prefix
    /// ending in `*`.
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    /// Stages not written for the requests this rule matches, besides the policy's.
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    /// Whether to leave managedFields out of the recorded objects; `None` for the policy's choice.
    pub omit_managed_fields: Option<bool>,
}

/// The policy file.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    /// `audit.k8s.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `Policy`.
    #[serde(default)]
    pub kind: String,
    /// The rules, in order: the first that matches a request decides its level.
    #[serde(default)]
    pub rules: Vec<PolicyRule>,
    /// Stages not written, whatever the rule.
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    /// Whether to leave managedFields out of the recorded objects, unless the rule says otherwise.
    #[serde(default)]
    pub omit_managed_fields: bool,
}

/// What the policy asks of one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestConfig {
    /// How much of the request is recorded.
    pub level: Level,
    /// Stages not written.
    pub omit_stages: Vec<Stage>,
    /// Leave managedFields out of the recorded objects.
    pub omit_managed_fields: bool,
}

impl RequestConfig {
    /// Whether an event of `stage` is written.
    pub fn writes(&self, stage: Stage) -> bool {
        self.level > Level::None && !self.omit_stages.contains(&stage)
    }
}

impl Policy {
    /// Reads a policy from YAML or JSON text and checks it.
    pub fn parse(text: &str) -> Result<Self, String> {
        let policy: Self = serde_saphyr::from_str(text).map_err(|e| format!("decoding the audit policy: {e}"))?;
        policy.validate()?;
        Ok(policy)
    }

    /// Refuses what the kube-apiserver's `ValidatePolicy` and reader refuse, in its words: another
    /// kind or version, no rules, a rule for both resources and non-resource URLs, a
    /// non-resource URL not starting with `/` or with `*` before its end, `resourceNames`
    /// without resources.
    fn validate(&self) -> Result<(), String> {
        if self.kind != "Policy" || self.api_version != "audit.k8s.io/v1" {
            return Err(format!(
                "the audit policy must be an audit.k8s.io/v1 Policy, not {}/{}",
                self.api_version, self.kind
            ));
        }
        if self.rules.is_empty() {
            return Err("loaded illegal policy with 0 rules".into());
        }
        let mut errors = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
            let resources = !rule.resources.is_empty() || !rule.namespaces.is_empty();
            if resources && !rule.non_resource_urls.is_empty() {
                errors.push(format!(
                    "rules[{i}].nonResourceURLs: Invalid value: {:?}: rules cannot apply to both regular resources and non-resource URLs",
                    rule.non_resource_urls
                ));
            }
            for (j, url) in rule.non_resource_urls.iter().enumerate() {
                let field = format!("rules[{i}].nonResourceURLs[{j}]");
                if url != "*" && !url.starts_with('/') {
                    errors.push(format!(
                        "{field}: Invalid value: {url:?}: non-resource URL rules must begin with a '/' character"
                    ));
                }
                if url.trim_end_matches('*').contains('*') {
                    errors.push(format!("{field}: Invalid value: {url:?}: non-resource URL wildcards '*' must be the final character of the rule"));
                }
            }
            for (j, group) in rule.resources.iter().enumerate() {
                if !group.resource_names.is_empty() && group.resources.is_empty() {
                    errors.push(format!(
                        "rules[{i}].resources[{j}].resourceNames: Invalid value: {:?}: using resourceNames requires at least one resource",
                        group.resource_names
                    ));
                }
            }
        }
        match errors.len() {
            0 => Ok(()),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }

    /// What the policy asks of a request by `user` with `attributes`.
    pub fn evaluate(&self, user: &UserInfo, attributes: &Attributes) -> RequestConfig {
        let Some(rule) = self.rules.iter().find(|rule| rule_matches(rule, user, attributes)) else {
            return RequestConfig { level: Level::None, omit_stages: self.omit_stages.clone(), ..Default::default() };
        };
        let mut omit_stages = self.omit_stages.clone();
        omit_stages.extend(rule.omit_stages.iter().filter(|s| !self.omit_stages.contains(s)));
        RequestConfig {
            level: rule.level,
            omit_stages,
            omit_managed_fields: rule.omit_managed_fields.unwrap_or(self.omit_managed_fields),
        }
    }
}

fn rule_matches(rule: &PolicyRule, user: &UserInfo, attributes: &Attributes) -> bool {
    if !rule.users.is_empty() && !rule.users.contains(&user.name) {
        return false;
    }
    if !rule.user_groups.is_empty() && !user.groups.iter().any(|g| rule.user_groups.contains(g)) {
        return false;
    }
    let verb = match attributes {
        Attributes::Resource { verb, .. } | Attributes::NonResource { verb, .. } => verb,
    };
    if !rule.verbs.is_empty() && !rule.verbs.contains(verb) {
        return false;
    }
    if !rule.namespaces.is_empty() || !rule.resources.is_empty() {
        return matches_resource(rule, attributes);
    }
    if !rule.non_resource_urls.is_empty() {
        let Attributes::NonResource { path, .. } = attributes else { return false };
        return rule.non_resource_urls.iter().any(|spec| path_matches(path, spec));
    }
    true
}

/// `ruleMatchesResource`.
fn matches_resource(rule: &PolicyRule, attributes: &Attributes) -> bool {
    let Attributes::Resource { group, resource, subresource, namespace, name, .. } = attributes else { return false };
    if !rule.namespaces.is_empty() && !rule.namespaces.contains(namespace) {
        return false;
    }
    if rule.resources.is_empty() {
        return true;
    }
    let combined = if subresource.is_empty() { resource.clone() } else { format!("{resource}/{subresource}") };
    rule.resources.iter().filter(|gr| gr.group == *group || gr.group == "*").any(|gr| {
        gr.resources.is_empty()
            || gr.resources.iter().any(|listed| {
                (gr.resource_names.is_empty() || gr.resource_names.contains(name))
                    && (*listed == combined
                        || listed == "*"
                        || (!subresource.is_empty() && listed.strip_prefix("*/") == Some(subresource.as_str()))
                        || listed.strip_suffix("/*") == Some(resource.as_str()))
            })
    })
}

/// `pathMatches`: `*`, the path itself, or a prefix ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*" || spec == path || spec.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(verb: &str, resource: &str, subresource: &str, namespace: &str, name: &str) -> Attributes {
        Attributes::Resource {
            verb: verb.into(),
            group: "test.example.com".into(),
            version: "v1alpha".into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..Default::default() }
    }

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
omitManagedFields: true
rules:
- level: None
  users: ["system:kube-aggregator"]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: RequestResponse
  resources: [{group: test.example.com, resources: ["widgets/status"]}]
  omitManagedFields: false
- level: Request
  verbs: [create, update, patch]
  namespaces: [pasture]
  resources: [{group: test.example.com, resources: [widgets], resourceNames: [dolly]}]
  omitStages: [ResponseStarted]
- level: Metadata
  userGroups: ["system:authenticated"]
"#;

    #[test]
    fn the_first_matching_rule_decides() {
        let policy = Policy::parse(POLICY).unwrap();
        let alice = user("alice", &["system:authenticated"]);
        let level = |user: &UserInfo, attributes: &Attributes| policy.evaluate(user, attributes).level;
        let aggregator = user("system:kube-aggregator", &["system:masters", "system:authenticated"]);
        assert_eq!(level(&aggregator, &resource("get", "widgets", "", "pasture", "dolly")), Level::None);
        let version = Attributes::NonResource { verb: "get".into(), path: "/version".into() };
        assert_eq!(level(&alice, &version), Level::None);
        let healthz = Attributes::NonResource { verb: "get".into(), path: "/healthz/ping".into() };
        assert_eq!(level(&alice, &healthz), Level::None, "a prefix ending in *");
        let status = policy.evaluate(&alice, &resource("update", "widgets", "status", "wild", "cria"));
        assert_eq!(status.level, Level::RequestResponse);
        assert!(!status.omit_managed_fields, "the rule's choice wins over the policy's");
        let dolly = policy.evaluate(&alice, &resource("patch", "widgets", "", "pasture", "dolly"));
        assert_eq!(dolly.level, Level::Request);
        assert_eq!(dolly.omit_stages, [Stage::RequestReceived, Stage::ResponseStarted], "policy's and rule's");
        assert!(dolly.omit_managed_fields);
        assert!(!dolly.writes(Stage::RequestReceived) && dolly.writes(Stage::ResponseComplete));
        assert_eq!(
            level(&alice, &resource("patch", "widgets", "", "pasture", "cria")),
            Level::Metadata,
            "another name"
        );
        assert_eq!(level(&alice, &resource("get", "widgets", "", "pasture", "dolly")), Level::Metadata, "another verb");
        let anonymous = user("system:anonymous", &["system:unauthenticated"]);
        let none = policy.evaluate(&anonymous, &resource("list", "widgets", "", "", ""));
        assert_eq!(none.level, Level::None, "no rule matches");
        assert!(!none.writes(Stage::ResponseComplete));
    }

    #[test]
    fn resources_match_with_wildcards_as_upstream() {
        let rule = |resources: &[&str], group: &str| PolicyRule {
            level: Level::Metadata,
            users: vec![],
            user_groups: vec![],
            verbs: vec![],
            resources: vec![GroupResources {
                group: group.into(),
                resources: resources.iter().map(|r| r.to_string()).collect(),
                resource_names: vec![],
            }],
            namespaces: vec![],
            non_resource_urls: vec![],
            omit_stages: vec![],
            omit_managed_fields: None,
        };
        let status = resource("update", "widgets", "status", "a", "x");
        let main = resource("update", "widgets", "", "a", "x");
        assert!(matches_resource(&rule(&["*/status"], "test.example.com"), &status));
        assert!(!matches_resource(&rule(&["*/status"], "test.example.com"), &main));
        assert!(matches_resource(&rule(&["widgets/*"], "*"), &status));
        assert!(matches_resource(&rule(&["widgets/*"], "*"), &main), "`res/*` also matches the resource itself");
        assert!(!matches_resource(&rule(&["widgets"], "test.example.com"), &status), "a subresource is named in full");
        assert!(matches_resource(&rule(&[], "test.example.com"), &status), "a group without resources is all of it");
        assert!(!matches_resource(&rule(&["*"], ""), &main), "another group");
        let url = Attributes::NonResource { verb: "get".into(), path: "/apis".into() };
        assert!(!matches_resource(&rule(&["*"], "*"), &url));
    }

    #[test]
    fn bad_policies_are_refused() {
        let refused = |text: &str| Policy::parse(text).unwrap_err();
        assert!(refused("apiVersion: v1\nkind: ConfigMap\n").contains("audit.k8s.io/v1 Policy"));
        assert!(
            refused("apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]\n")
                .contains("audit.k8s.io/v1 Policy")
        );
        assert_eq!(refused("apiVersion: audit.k8s.io/v1\nkind: Policy\n"), "loaded illegal policy with 0 rules");
        let head = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n";
        let mixed = format!("{head}- level: Metadata\n  resources: [{{group: ''}}]\n  nonResourceURLs: ['/version']\n");
        assert!(refused(&mixed).contains("cannot apply to both"));
        assert!(refused(&format!("{head}- level: Everything\n")).starts_with("decoding the audit policy"));
        let urls = format!("{head}- level: Metadata\n  nonResourceURLs: ['version', '/a*b']\n");
        let both = refused(&urls);
        assert!(
            both.starts_with('[')
                && both.contains("must begin with a '/'")
                && both.contains("must be the final character"),
            "{both}"
        );
        let names =
            format!("{head}- level: Metadata\n  resources: [{{group: test.example.com, resourceNames: [dolly]}}]\n");
        assert!(refused(&names).contains("using resourceNames requires at least one resource"));
    }
}
