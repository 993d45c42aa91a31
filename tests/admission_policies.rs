//! ValidatingAdmissionPolicies, end to end and side by side: the same policies and bindings
//! (created on the real kube-apiserver, matching both groups) apply to llamas of
//! farm-apiserver (`farm.example.com`, through the aggregator), which reads them from the
//! cluster, and to a CustomResourceDefinition of the same Llama (`ref.example.com`), which the
//! kube-apiserver checks itself. Every request is sent to both, and the answers compared once
//! the group's name is made the same: codes, `Status` bodies, `Warning` headers, what was stored.

#[path = "admission/both.rs"]
mod both;
mod common;

use both::{Both, llama, until_both, until_both_answer};
use common::clients::Cluster;
use common::control_plane::{ControlPlane, Farm};
use serde_json::{Value, json};

const MERGE: &str = "application/merge-patch+json";

/// A policy named `name` on creates and updates of llamas of both groups, with `spec` added.
fn policy(name: &str, spec: Value) -> Value {
    let rules = json!([{"apiGroups": ["farm.example.com", "ref.example.com"], "apiVersions": ["*"],
        "operations": ["CREATE", "UPDATE"], "resources": ["llamas"]}]);
    let mut policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name}, "spec": {"matchConstraints": {"resourceRules": rules}}});
    policy["spec"].as_object_mut().unwrap().extend(spec.as_object().unwrap().clone());
    policy
}

/// A binding of `policy` with `actions` and `spec` added, named after it.
fn binding(policy: &str, actions: &[&str], spec: Value) -> Value {
    let mut binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": policy},
        "spec": {"policyName": policy, "validationActions": actions}});
    binding["spec"].as_object_mut().unwrap().extend(spec.as_object().unwrap().clone());
    binding
}

fn apply(cp: &ControlPlane, objects: &[Value]) {
    for object in objects {
        cp.must(&["apply", "-f", "-"], Some(&object.to_string()));
    }
}

/// Starts the control plane, farm-apiserver (with `extra` arguments), the reference CRD and
/// the namespaces `pasture` (labelled `env=prod`) and `wild`.
async fn setup(extra: &[&str]) -> (ControlPlane, Farm, Both) {
    let cp = ControlPlane::up();
    let farm = Farm::start_with(&cp.kubeconfig("admin"), extra);
    cp.register(&farm).await;
    cp.install_reference_crd("ref.example.com");
    cp.must(&["create", "namespace", "pasture"], None);
    cp.must(&["label", "namespace", "pasture", "env=prod"], None);
    cp.must(&["create", "namespace", "wild"], None);
    let (base, client) = cp.apiserver();
    (cp, farm, Both::new(base, client))
}

/// The message of a refusal.
fn message(body: &Value) -> &str {
    body["message"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_deny_warn_and_select_llamas_as_they_do_custom_resources() {
    let dir = tempfile::tempdir().unwrap();
    let audit_policy = dir.path().join("audit-policy.yaml");
    std::fs::write(&audit_policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]\n").unwrap();
    let audit_log = dir.path().join("audit.log");
    let (policy_file, log) = (audit_policy.to_str().unwrap(), audit_log.to_str().unwrap());
    let (cp, farm, both) = setup(&["--audit-policy-file", policy_file, "--audit-log-path", log]).await;
    apply(
        &cp,
        &[
            policy(
                "max-weight",
                json!({
                    "variables": [{"name": "weight", "expression": "object.spec.weight"}],
                    "validations": [{"expression": "variables.weight <= 500",
                        "messageExpression": "'a llama of ' + string(variables.weight) + ' kg is over 500 kg'"}],
                    "auditAnnotations": [{"key": "weight", "valueExpression": "string(variables.weight)"}],
                }),
            ),
            binding("max-weight", &["Deny"], json!({})),
            policy(
                "team-label",
                json!({
                    "matchConditions": [{"name": "not-exempt", "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}],
                    "validations": [{"expression": "has(object.metadata.labels) && 'team' in object.metadata.labels",
                        "message": "every llama in production carries a team label", "reason": "Forbidden"}],
                }),
            ),
            binding(
                "team-label",
                &["Deny"],
                json!({"matchResources": {"namespaceSelector": {"matchLabels": {"env": "prod"}}}}),
            ),
            policy(
                "light",
                json!({"validations": [{"expression": "object.spec.weight >= 10"},
                    {"expression": "object.spec.weight != 600", "message": "600 kg, exactly"}]}),
            ),
            binding("light", &["Warn", "Audit"], json!({})),
        ],
    );
    // Both servers have seen every policy.
    until_both_answer(&both, "wild", &llama("probe", 600.0, json!({"team": "a"})), 422).await;
    until_both_answer(&both, "pasture", &llama("probe", 100.0, json!({})), 403).await;
    let warned = |answer: &both::Answer| answer.warnings.iter().any(|w| w.contains("'light'"));
    until_both(&both, "wild", &llama("probe", 5.0, json!({})), warned).await;

    // A denial is the same Status on both, naming the policy and the binding.
    let (refused, reference) = both.create("pasture", &llama("heavy", 600.0, json!({"team": "a"}))).await;
    assert_eq!(refused, reference);
    assert_eq!(refused.code, 422, "{:?}", refused.body);
    // A `Warn` action's warning goes out with another binding's denial.
    assert!(refused.warnings.iter().any(|w| w.ends_with("'light': 600 kg, exactly\"")), "{:?}", refused.warnings);
    assert_eq!(
        message(&refused.body),
        "llamas.farm.example.com \"heavy\" is forbidden: ValidatingAdmissionPolicy 'max-weight' with binding \
         'max-weight' denied request: a llama of 600 kg is over 500 kg"
    );
    let (missing, reference) = both.get("pasture", "heavy").await;
    assert_eq!((missing.code, reference.code), (404, 404), "nothing was stored");

    // The binding's namespaceSelector and the policy's match condition decide where the team
    // label is required; the validation's reason gives the code.
    let (refused, reference) = both.create("pasture", &llama("anonymous", 100.0, json!({}))).await;
    assert_eq!(refused, reference);
    assert_eq!(refused.code, 403, "{:?}", refused.body);
    assert_eq!(refused.body["reason"], "Forbidden");
    for (namespace, labels) in [("wild", json!({})), ("pasture", json!({"exempt": "yes"}))] {
        let (created, reference) = both.create(namespace, &llama("free", 100.0, labels)).await;
        assert_eq!((created.code, reference.code), (201, 201), "{namespace}: {:?}", created.body);
    }

    // Warn: a Warning header, the write goes through.
    let (created, reference) = both.create("wild", &llama("tiny", 5.0, json!({}))).await;
    assert_eq!((created.code, reference.code), (201, 201), "{:?}", created.body);
    assert_eq!(created.warnings, reference.warnings);
    assert!(
        created.warnings.iter().any(|w| w.contains(
            "Validation failed for ValidatingAdmissionPolicy 'light' with binding 'light': failed expression: \
             object.spec.weight >= 10"
        )),
        "{:?}",
        created.warnings
    );

    // An update is judged on the new object; the stored one stays as it was.
    let path = "namespaces/wild/llamas/free";
    // (With a finalizer the kube-apiserver warns of: the warning goes out with the denial.)
    let heavier = json!({"metadata": {"finalizers": ["hold"]}, "spec": {"weight": 700}});
    let (refused, reference) = both.each(reqwest::Method::PATCH, path, Some(&heavier), MERGE).await;
    assert_eq!(refused, reference);
    assert_eq!(refused.code, 422);
    assert!(refused.warnings.iter().any(|w| w.contains("domain-qualified finalizer")), "{:?}", refused.warnings);
    let (stored, _) = both.get("wild", "free").await;
    assert_eq!(stored.body["spec"]["weight"], 100.0);

    // Audit: the annotations of the policy's audit expressions and of the failed validation.
    let annotations = audit_annotations(&audit_log, "tiny");
    assert_eq!(annotations["max-weight/weight"], "5", "{annotations}");
    let failures: Value =
        serde_json::from_str(annotations["validation.policy.admission.k8s.io/validation_failure"].as_str().unwrap())
            .unwrap();
    assert_eq!(
        failures,
        json!([{"message": "failed expression: object.spec.weight >= 10", "policy": "light", "binding": "light",
            "expressionIndex": 0, "validationActions": ["Warn", "Audit"]}])
    );
    drop(farm);
}

/// The annotations of the audit event that created the llama `name`.
fn audit_annotations(log: &std::path::Path, name: &str) -> Value {
    let text = std::fs::read_to_string(log).unwrap();
    let events = text.lines().filter_map(|line| serde_json::from_str::<Value>(line).ok());
    let mut created =
        events.filter(|e| e["verb"] == "create" && e["objectRef"]["name"] == name && e["stage"] == "ResponseComplete");
    created.next().map(|e| e["annotations"].clone()).unwrap_or_else(|| panic!("no audit event of {name}:\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_server_side_apply_and_kube_rs_meet_a_denial_as_for_any_resource() {
    let (cp, farm, both) = setup(&[]).await;
    apply(
        &cp,
        &[
            policy(
                "max-weight",
                json!({"validations": [{"expression": "object.spec.weight <= 500",
                "message": "llamas over 500 kg are not allowed"}]}),
            ),
            binding("max-weight", &["Deny"], json!({})),
        ],
    );
    until_both_answer(&both, "wild", &llama("probe", 600.0, json!({})), 422).await;
    // kubectl prints the same for both groups: the Status of a 422 with its cause.
    let heavy = llama("heavy", 900.0, json!({})).to_string();
    let each = |args: &[&str]| {
        let run = |group: &str| {
            let (ok, _, stderr) = cp.run(args, Some(&heavy.replace("farm.example.com", group)));
            (ok, stderr.replace("ref.example.com", "farm.example.com"))
        };
        (run("farm.example.com"), run("ref.example.com"))
    };
    for args in [&["create", "-n", "wild", "-f", "-"][..], &["apply", "--server-side", "-n", "wild", "-f", "-"]] {
        let ((ok, stderr), reference) = each(args);
        assert_eq!((ok, &stderr), (reference.0, &reference.1), "{args:?}");
        assert!(!ok, "{args:?} created");
        assert!(
            stderr.contains(
                "The llamas \"heavy\" is invalid: : ValidatingAdmissionPolicy 'max-weight' with binding \
                 'max-weight' denied request: llamas over 500 kg are not allowed"
            ),
            "{args:?}: {stderr}"
        );
    }

    let client = cp.client().await;
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("farm.example.com", "v1", "Llama"),
        "llamas",
    );
    let llamas = kube::Api::<kube::api::DynamicObject>::namespaced_with(client, "wild", &resource);
    let mut object: kube::api::DynamicObject = serde_json::from_str(&heavy.replace("v1alpha", "v1")).unwrap();
    object.data = json!({"spec": {"weight": 900, "height": 170}});
    match llamas.create(&Default::default(), &object).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
            assert!(status.message.contains("'max-weight' denied request"), "{}", status.message);
        }
        other => panic!("{other:?}"),
    }
    drop(farm);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn params_come_from_config_maps_and_from_llamas_and_missing_ones_follow_the_binding() {
    let (cp, farm, both) = setup(&[]).await;
    let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap"});
    apply(
        &cp,
        &[
            policy(
                "limit",
                json!({"paramKind": configmap, "validations": [
                {"expression": "object.spec.weight <= int(params.data.max)",
                 "messageExpression": "'over the limit of ' + params.data.max + ' kg'"}]}),
            ),
            binding("limit", &["Deny"], json!({"paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"}})),
        ],
    );
    // No ConfigMap yet: the binding denies every write, as `parameterNotFoundAction` says.
    until_both_answer(&both, "wild", &llama("probe", 1.0, json!({})), 422).await;
    let (refused, reference) = both.create("wild", &llama("any", 1.0, json!({}))).await;
    assert_eq!(refused, reference);
    assert!(
        message(&refused.body).ends_with(
            "denied request: failed to configure binding: no params found for policy binding with `Deny` \
             parameterNotFoundAction"
        ),
        "{:?}",
        refused.body
    );

    // The ConfigMap of the request's namespace gives the limit.
    cp.must(&["create", "configmap", "limits", "-n", "wild", "--from-literal=max=300"], None);
    until_both_answer(&both, "wild", &llama("probe", 1.0, json!({})), 201).await;
    let (refused, reference) = both.create("wild", &llama("big", 400.0, json!({}))).await;
    assert_eq!(refused, reference);
    assert!(message(&refused.body).ends_with("denied request: over the limit of 300 kg"), "{:?}", refused.body);
    let (created, reference) = both.create("wild", &llama("small", 200.0, json!({}))).await;
    assert_eq!((created.code, reference.code), (201, 201));

    // Params selected by labels, from llamas of the same server: each one is a limit.
    let own = |group: &str| {
        let rules =
            json!([{"apiGroups": [group], "apiVersions": ["*"], "operations": ["CREATE"], "resources": ["llamas"]}]);
        let mut policy = policy(
            &format!("herd-{group}"),
            json!({
                "paramKind": {"apiVersion": format!("{group}/v1"), "kind": "Llama"},
                "validations": [{"expression": "object.metadata.name == params.metadata.name || object.spec.weight < params.spec.weight",
                    "messageExpression": "'heavier than ' + params.metadata.name"}],
            }),
        );
        policy["spec"]["matchConstraints"]["resourceRules"] = rules;
        let selector =
            json!({"paramRef": {"selector": {"matchLabels": {"role": "limit"}}, "parameterNotFoundAction": "Allow"}});
        [policy, binding(&format!("herd-{group}"), &["Deny"], selector)]
    };
    apply(&cp, &own("farm.example.com"));
    apply(&cp, &own("ref.example.com"));
    for (name, weight) in [("leader", 250.0), ("elder", 150.0)] {
        let (created, reference) = both.create("wild", &llama(name, weight, json!({"role": "limit"}))).await;
        assert_eq!((created.code, reference.code), (201, 201), "{name}: {:?}", created.body);
    }
    // (The kube-apiserver's own watch of its llamas may lag behind the creates.)
    until_both_answer(&both, "wild", &llama("follower", 200.0, json!({})), 422).await;
    let (refused, reference) = both.create("wild", &llama("follower", 200.0, json!({}))).await;
    assert_eq!(refused, reference);
    assert!(message(&refused.body).ends_with("denied request: heavier than elder"), "{:?}", refused.body);
    drop(farm);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_follow_the_failure_policy_and_policies_see_the_version_they_name() {
    let (cp, farm, both) = setup(&[]).await;
    let broken = |name: &str, failure: &str| {
        policy(
            name,
            json!({"failurePolicy": failure,
            "matchConditions": [{"name": "named", "expression": format!("object.metadata.name == '{name}'")}],
            "validations": [{"expression": "object.spec.color == 'white'"}]}),
        )
    };
    apply(
        &cp,
        &[
            broken("fails", "Fail"),
            binding("fails", &["Deny"], json!({})),
            broken("ignores", "Ignore"),
            binding("ignores", &["Deny"], json!({})),
            // Rules at v1 only: a write at v1alpha is seen at v1 (matchPolicy Equivalent).
            policy(
                "v1-only",
                json!({"validations": [{"expression": "false",
                "messageExpression": "'seen at ' + request.kind.version + ' as ' + object.apiVersion + ', requested at ' + request.requestKind.version"}],
                "matchConstraints": {"matchPolicy": "Exact", "resourceRules": [{"apiGroups": ["farm.example.com", "ref.example.com"],
                    "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["llamas"]}]}}),
            ),
            binding("v1-only", &["Warn"], json!({})),
        ],
    );
    until_both_answer(&both, "wild", &llama("fails", 1.0, json!({})), 422).await;
    let (refused, reference) = both.create("wild", &llama("fails", 1.0, json!({}))).await;
    assert_eq!(refused, reference);
    assert!(
        message(&refused.body).ends_with(
            "denied request: expression 'object.spec.color == 'white'' resulted in error: no such key: color"
        ),
        "{:?}",
        refused.body
    );
    let (created, reference) = both.create("wild", &llama("ignores", 1.0, json!({}))).await;
    assert_eq!((created.code, reference.code), (201, 201), "{:?}", created.body);

    // Exact: a write at v1alpha is not seen; Equivalent: it is, at v1.
    let seen = |warnings: &[String]| warnings.iter().any(|w| w.contains("seen at"));
    let (created, reference) = both.create("wild", &llama("alpha", 1.0, json!({}))).await;
    assert_eq!((created.code, reference.code), (201, 201));
    assert_eq!(created.warnings, reference.warnings);
    assert!(!seen(&created.warnings), "{:?}", created.warnings);
    let patch = json!({"spec": {"matchConstraints": {"matchPolicy": "Equivalent"}}});
    cp.must(&["patch", "validatingadmissionpolicy", "v1-only", "--type=merge", "-p", &patch.to_string()], None);
    let warned = async || {
        let (created, reference) = both.create("wild", &llama("probe-v1", 1.0, json!({}))).await;
        let path = "namespaces/wild/llamas/probe-v1";
        both.each(reqwest::Method::DELETE, path, None, "application/json").await;
        seen(&created.warnings) && created.warnings == reference.warnings
    };
    common::control_plane::eventually("both to warn at v1", warned).await;
    let (created, reference) = both.create("wild", &llama("beta", 1.0, json!({}))).await;
    assert_eq!(created.warnings, reference.warnings);
    let expected = "seen at v1 as farm.example.com/v1, requested at v1alpha";
    assert!(created.warnings.iter().any(|w| w.contains(expected)), "{:?}", created.warnings);
    drop(farm);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_authorizer_asks_the_cluster_for_the_requests_user() {
    let (cp, farm, both) = setup(&[]).await;
    let writer = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: llama-writer}\n\
        rules: [{apiGroups: [farm.example.com, ref.example.com], resources: [llamas], verbs: [create, get, delete]}]\n---\n\
        apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: nobody-writes}\n\
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: llama-writer}\n\
        subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: e2e-nobody}]\n";
    cp.must(&["apply", "-f", "-"], Some(writer));
    apply(
        &cp,
        &[
            policy(
                "approval",
                json!({"validations": [
                {"expression": "object.spec.weight <= 300 || authorizer.group(request.resource.group).resource('llamas').check('approve').allowed()",
                 "message": "llamas over 300 kg need the approve verb on llamas"},
                {"expression": "authorizer.requestResource.check('create').allowed()",
                 "message": "the writer may not create this llama"}]}),
            ),
            binding("approval", &["Deny"], json!({})),
        ],
    );
    until_both_answer(&both, "wild", &llama("probe", 400.0, json!({})), 201).await;
    // As the admin (system:masters), everything is allowed; as e2e-nobody, not approve.
    let heavy = llama("heavy", 400.0, json!({})).to_string();
    let as_nobody = |group: &str| {
        let (ok, _, stderr) = cp.run(
            &["--as", "e2e-nobody", "create", "-n", "wild", "-f", "-"],
            Some(&heavy.replace("farm.example.com", group)),
        );
        (ok, stderr.replace("ref.example.com", "farm.example.com"))
    };
    let eventually_both = async |created: bool| {
        common::control_plane::eventually("both to decide alike", async || {
            let (farm, reference) = (as_nobody("farm.example.com"), as_nobody("ref.example.com"));
            if farm.0 {
                cp.run(&["delete", "llamas.farm.example.com", "heavy", "-n", "wild"], None);
            }
            if reference.0 {
                cp.run(&["delete", "llamas.ref.example.com", "heavy", "-n", "wild"], None);
            }
            farm.0 == created && farm == reference
        })
        .await
    };
    eventually_both(false).await;
    let (ok, stderr) = as_nobody("farm.example.com");
    assert!(!ok && stderr.contains("llamas over 300 kg need the approve verb on llamas"), "{stderr}");
    let approver = writer.replace("llama-writer", "llama-approver").replace("nobody-writes", "nobody-approves");
    cp.must(&["apply", "-f", "-"], Some(&approver.replace("[create, get, delete]", "[approve]")));
    eventually_both(true).await;
    drop(farm);
}

/// A MutatingAdmissionPolicy named `name` on creates and updates of llamas of both groups,
/// with `spec` added.
fn mutating_policy(name: &str, spec: Value) -> Value {
    let mut policy = policy(name, json!({"reinvocationPolicy": "Never"}));
    policy["kind"] = "MutatingAdmissionPolicy".into();
    policy["spec"].as_object_mut().unwrap().extend(spec.as_object().unwrap().clone());
    policy
}

/// A binding of the MutatingAdmissionPolicy `policy` with `spec` added, named after it.
fn mutating_binding(policy: &str, spec: Value) -> Value {
    let mut binding = binding(policy, &[], spec);
    binding["kind"] = "MutatingAdmissionPolicyBinding".into();
    binding["spec"].as_object_mut().unwrap().remove("validationActions");
    binding
}

/// One mutation of `patch_type` with `expression`.
fn mutation(patch_type: &str, expression: &str) -> Value {
    let field = if patch_type == "JSONPatch" { "jsonPatch" } else { "applyConfiguration" };
    json!({"patchType": patch_type, field: {"expression": expression}})
}

/// What a mutation may have changed in a created or read object.
fn changed(answer: &both::Answer) -> Value {
    json!({"labels": answer.body["metadata"]["labels"], "spec": answer.body["spec"]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_policies_change_llamas_as_they_change_custom_resources() {
    let (cp, farm, both) = setup(&[]).await;
    let herd =
        "[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('example.org/herd'), value: 'north'}]";
    apply(
        &cp,
        &[
            mutating_policy(
                "default-color",
                json!({"matchConditions": [{"name": "uncoloured", "expression": "!has(object.spec.color)"}],
                    "mutations": [mutation("ApplyConfiguration", "Object{spec: Object.spec{color: 'white'}}")]}),
            ),
            mutating_binding("default-color", json!({})),
            mutating_policy("herd-label", json!({"mutations": [mutation("JSONPatch", herd)]})),
            mutating_binding(
                "herd-label",
                json!({"matchResources": {"namespaceSelector": {"matchLabels": {"env": "prod"}}}}),
            ),
        ],
    );
    let mutated = |a: &both::Answer| {
        a.code == 201
            && a.body["spec"]["color"] == "white"
            && a.body["metadata"]["labels"]["example.org/herd"] == "north"
    };
    until_both(&both, "pasture", &llama("probe", 100.0, json!({"team": "a"})), mutated).await;

    // Both servers store what the policies made of the llama.
    let (created, reference) = both.create("pasture", &llama("dolly", 100.0, json!({"team": "a"}))).await;
    assert_eq!((created.code, reference.code), (201, 201), "{:?}", created.body);
    assert_eq!(changed(&created), changed(&reference));
    assert_eq!(
        changed(&created),
        json!({"labels": {"team": "a", "example.org/herd": "north"}, "spec": {"weight": 100, "height": 170, "color": "white"}})
    );
    let (read, _) = both.get("pasture", "dolly").await;
    assert_eq!(changed(&read), changed(&created), "stored as answered");
    // A colour given is kept; outside production no label is added.
    let mut brown = llama("brownie", 100.0, json!({}));
    brown["spec"]["color"] = "brown".into();
    let (created, reference) = both.create("wild", &brown).await;
    assert_eq!(changed(&created), changed(&reference));
    assert_eq!(changed(&created), json!({"labels": null, "spec": {"weight": 100, "height": 170, "color": "brown"}}));

    // An update is mutated too: the colour taken away comes back.
    let uncolour = json!({"spec": {"color": null}});
    let path = "namespaces/wild/llamas/brownie";
    let (updated, reference) = both.each(reqwest::Method::PATCH, path, Some(&uncolour), MERGE).await;
    assert_eq!((updated.code, reference.code), (200, 200), "{:?}", updated.body);
    assert_eq!(changed(&updated), changed(&reference));
    assert_eq!(updated.body["spec"]["color"], "white");

    // kubectl, server-side apply and kube-rs all get the mutated object.
    let plain = llama("applied", 100.0, json!({})).to_string();
    for group in ["farm.example.com", "ref.example.com"] {
        let args = ["apply", "--server-side", "-n", "wild", "-f", "-", "-o", "jsonpath={.spec.color}"];
        assert_eq!(cp.must(&args, Some(&plain.replace("farm.example.com", group))), "white", "{group}");
    }
    let client = cp.client().await;
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("farm.example.com", "v1alpha", "Llama"),
        "llamas",
    );
    let llamas = kube::Api::<kube::api::DynamicObject>::namespaced_with(client, "pasture", &resource);
    let object: kube::api::DynamicObject =
        serde_json::from_value(llama("rusty", 100.0, json!({"team": "b"})).clone()).unwrap();
    let created = llamas.create(&Default::default(), &object).await.unwrap();
    assert_eq!(created.data["spec"]["color"], "white");
    assert_eq!(created.metadata.labels.unwrap()["example.org/herd"], "north");

    // The policy sees a write at v1 at v1, where the colour is `spec.coat.color`: its
    // `spec.color` is a field the schema does not declare there.
    let mut at_v1 = llama("modern", 100.0, json!({"team": "a"}));
    at_v1["apiVersion"] = "farm.example.com/v1".into();
    let collection = "namespaces/pasture/llamas";
    let (refused, reference) =
        both.each_at("v1", reqwest::Method::POST, collection, Some(&at_v1), "application/json").await;
    assert_eq!(refused, reference);
    assert!(
        message(&refused.body)
            .ends_with("failed to convert patch object to typed object: .spec.color: field not declared in schema"),
        "{:?}",
        refused.body
    );
    drop(farm);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutation_errors_follow_the_failure_policy_and_reinvocation_runs_policies_again() {
    let (cp, farm, both) = setup(&[]).await;
    let failing = |name: &str, failure: &str, weight: f64, mutation: Value| {
        mutating_policy(
            name,
            json!({"failurePolicy": failure, "mutations": [mutation],
                "matchConditions": [{"name": "weight", "expression": format!("object.spec.weight == {weight}")}]}),
        )
    };
    let coat = "has(object.metadata.labels) && 'coat' in object.metadata.labels \
                ? Object{spec: Object.spec{color: object.metadata.labels['coat']}} : Object{}";
    let label = "!has(object.metadata.labels) ? [JSONPatch{op: 'add', path: '/metadata/labels', value: {'coat': 'brown'}}] \
                 : !('coat' in object.metadata.labels) ? [JSONPatch{op: 'add', path: '/metadata/labels/coat', value: 'brown'}] \
                 : []";
    let mut reinvoked = mutating_policy("a-coat-color", json!({"mutations": [mutation("ApplyConfiguration", coat)]}));
    reinvoked["spec"]["reinvocationPolicy"] = "IfNeeded".into();
    apply(
        &cp,
        &[
            failing(
                "missing-path",
                "Fail",
                13.0,
                mutation("JSONPatch", "[JSONPatch{op: 'remove', path: '/spec/nothing'}]"),
            ),
            mutating_binding("missing-path", json!({})),
            failing(
                "undeclared",
                "Fail",
                14.0,
                mutation("ApplyConfiguration", "Object{spec: Object.spec{colour: 'red'}}"),
            ),
            mutating_binding("undeclared", json!({})),
            failing(
                "ignored",
                "Ignore",
                15.0,
                mutation("JSONPatch", "[JSONPatch{op: 'remove', path: '/spec/nothing'}]"),
            ),
            mutating_binding("ignored", json!({})),
            failing(
                "test-fails",
                "Fail",
                16.0,
                mutation(
                    "JSONPatch",
                    "[JSONPatch{op: 'test', path: '/spec/height', value: 1}, JSONPatch{op: 'replace', path: '/spec/height', value: 2}]",
                ),
            ),
            mutating_binding("test-fails", json!({})),
            reinvoked,
            mutating_binding("a-coat-color", json!({})),
            mutating_policy("b-coat-label", json!({"mutations": [mutation("JSONPatch", label)]})),
            mutating_binding("b-coat-label", json!({})),
        ],
    );
    // Both servers have seen every policy (the last one applied, then each failing one).
    let coated = |a: &both::Answer| a.code == 201 && a.body["spec"]["color"] == "brown";
    until_both(&both, "wild", &llama("probe", 100.0, json!({})), coated).await;
    for weight in [13.0, 14.0] {
        until_both_answer(&both, "wild", &llama("probe", weight, json!({})), 403).await;
    }
    for (weight, end) in [
        (
            13.0,
            "denied request: JSON Patch: error in remove for path: '/spec/nothing': Unable to remove nonexistent key: nothing: missing value",
        ),
        (
            14.0,
            "denied request: error applying patch: failed to convert patch object to typed object: .spec.colour: field not declared in schema",
        ),
    ] {
        let (refused, reference) = both.create("wild", &llama("failing", weight, json!({}))).await;
        assert_eq!(refused, reference);
        assert_eq!((refused.code, refused.body["reason"].as_str()), (403, Some("Invalid")), "{:?}", refused.body);
        assert!(message(&refused.body).ends_with(end), "{:?}", refused.body);
    }
    // Ignored errors and failed tests leave the object as it was.
    for weight in [15.0, 16.0] {
        let name = format!("kept-{weight}");
        let (created, reference) = both.create("wild", &llama(&name, weight, json!({}))).await;
        assert_eq!((created.code, reference.code), (201, 201), "{:?}", created.body);
        assert_eq!(changed(&created), changed(&reference));
        assert_eq!(created.body["spec"]["height"], 170);
    }

    // The label policy runs after the colour policy, which runs again (IfNeeded) and sees it.
    let (created, reference) = both.create("wild", &llama("coated", 100.0, json!({}))).await;
    assert_eq!(changed(&created), changed(&reference));
    assert_eq!(
        changed(&created),
        json!({"labels": {"coat": "brown"}, "spec": {"weight": 100, "height": 170, "color": "brown"}})
    );
    drop(farm);
}
