//! Admission webhooks, end to end and side by side: the same webhooks (a server written in the
//! test, `admission/webhook.rs`, reached through an ExternalName Service with its own CA in the
//! `caBundle`) are configured for llamas of farm-apiserver (`farm.example.com`, through the
//! aggregator) and for a CustomResourceDefinition of the same Llama on the real kube-apiserver
//! (`ref.example.com`). Every request is sent to both, and both answers are compared once the
//! group's name is made the same: codes, `Status` bodies, `Warning` headers, stored objects and
//! the reviews the webhook received.

#[path = "admission/both.rs"]
mod both;
mod common;
#[path = "admission/webhook.rs"]
mod webhook;

use both::{Answer, Both, llama, same_group, until_both_answer};
use common::clients::Cluster;
use common::control_plane::{ControlPlane, Farm, NOBODY_ADMITS, NOBODY_DELEGATES, eventually};
use serde_json::{Value, json};
use webhook::WebhookServer;

/// A webhook named `<name>.farm.example.com`, reached at `client` (a `service` or a `url`), for
/// `operations` on llamas of both groups.
fn entry(client: &str, ca: &str, name: &str, operations: &str, extra: &str) -> String {
    format!(
        "- name: {name}.farm.example.com\n  \
           clientConfig: {{{client}, caBundle: {ca}}}\n  \
           rules: [{{apiGroups: [farm.example.com, ref.example.com], apiVersions: ['*'], operations: [{operations}], resources: [llamas]}}]\n  \
           admissionReviewVersions: [v1]\n  {extra}\n"
    )
}

/// The `clientConfig` of a webhook reached through the Service `name` of farm-system at `path`.
fn service(name: &str, port: u16, path: &str) -> String {
    format!("service: {{name: {name}, namespace: farm-system, path: /{path}, port: {port}}}")
}

/// A configuration of `kind` named `name` holding `webhooks`.
fn configuration(api_version: &str, kind: &str, name: &str, webhooks: &str) -> String {
    format!("apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: {name}}}\nwebhooks:\n{webhooks}")
}

/// Services routing to the webhook server (`webhook`) and to a port where nothing listens
/// (`stopped`), as the tests' APIService is routed: ExternalName to localhost.
fn services(webhook: &WebhookServer, stopped: u16) -> String {
    let service = |name: &str, port: u16| {
        format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: farm-system}}\n\
             spec: {{type: ExternalName, externalName: localhost, ports: [{{port: {port}, protocol: TCP}}]}}\n"
        )
    };
    format!("{}---\n{}", service("webhook", webhook.port), service("stopped", stopped))
}

/// Starts the control plane, farm-apiserver, the reference CRD and the webhook server.
async fn setup() -> (ControlPlane, Farm, Both, WebhookServer) {
    let cp = ControlPlane::up();
    let farm = Farm::start(&cp.kubeconfig("admin"));
    cp.register(&farm).await;
    cp.install_reference_crd("ref.example.com");
    let webhook = webhook::start().await;
    let stopped = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    cp.must(&["apply", "-f", "-"], Some(&services(&webhook, stopped)));
    cp.must(&["create", "namespace", "pasture"], None);
    cp.must(&["label", "namespace", "pasture", "admission=on"], None);
    cp.must(&["create", "namespace", "wild"], None);
    let (base, client) = cp.apiserver();
    (cp, farm, Both::new(base, client), webhook)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_mutate_warn_and_refuse_llamas_as_they_do_custom_resources() {
    let (cp, farm, both, webhook) = setup().await;
    let (port, ca) = (webhook.port, webhook.ca_bundle.clone());
    let mutating = entry(
        &service("webhook", port, "mutate"),
        &ca,
        "label",
        "CREATE",
        "sideEffects: None\n  namespaceSelector: {matchLabels: {admission: 'on'}}\n  \
         objectSelector: {matchExpressions: [{key: skip-mutation, operator: DoesNotExist}]}",
    );
    let validating = [
        entry(
            &service("webhook", port, "validate"),
            &ca,
            "weight",
            "CREATE, UPDATE",
            "sideEffects: None\n  namespaceSelector: {matchLabels: {admission: 'on'}}",
        ),
        entry(&service("webhook", port, "protect"), &ca, "protect", "DELETE", "sideEffects: NoneOnDryRun"),
        entry(&service("webhook", port, "observe"), &ca, "status", "UPDATE", "sideEffects: None")
            .replace("resources: [llamas]", "resources: [llamas/status]"),
        // Reached by `url` rather than through a Service.
        entry(
            &format!("url: 'https://localhost:{port}/observe'"),
            &ca,
            "by-url",
            "DELETE",
            "sideEffects: NoneOnDryRun",
        ),
    ]
    .concat();
    // Called before the label webhook (configurations go by name), and again after it changed
    // the object, as its reinvocationPolicy asks.
    let observing = entry(
        &service("webhook", port, "observe"),
        &ca,
        "observe",
        "CREATE",
        "sideEffects: None\n  reinvocationPolicy: IfNeeded\n  namespaceSelector: {matchLabels: {admission: 'on'}}",
    );
    let v1 = "admissionregistration.k8s.io/v1";
    cp.must(
        &["apply", "-f", "-"],
        Some(&configuration(v1, "MutatingWebhookConfiguration", "farm-a-observe", &observing)),
    );
    cp.must(&["apply", "-f", "-"], Some(&configuration(v1, "MutatingWebhookConfiguration", "farm-label", &mutating)));
    cp.must(
        &["apply", "-f", "-"],
        Some(&configuration(v1, "ValidatingWebhookConfiguration", "farm-weight", &validating)),
    );
    until_both_answer(&both, "pasture", &llama("probe", 600.0, json!({})), 403).await;

    // A refusal is the same Status on both, naming the webhook and carrying its message.
    let (refused, reference) = both.create("pasture", &llama("heavy", 600.0, json!({}))).await;
    assert_eq!(refused, reference);
    assert_eq!(refused.code, 403, "{:?}", refused.body);
    let message = refused.body["message"].as_str().unwrap();
    assert!(
        message.contains(
            r#"admission webhook "weight.farm.example.com" denied the request: llamas over 500 kg are not allowed"#
        ),
        "{message}"
    );
    let (missing, _) = both.get("pasture", "heavy").await;
    assert_eq!(missing.code, 404, "nothing was stored");

    // The namespaceSelector: the namespace `wild` is not labelled, so neither webhook is called.
    let (created, reference) = both.create("wild", &llama("heavy", 600.0, json!({}))).await;
    assert_eq!((created.code, reference.code), (201, 201), "{:?}", created.body);
    // (Empty labels are dropped, as the kube-apiserver drops them for a custom resource.)
    assert_eq!(created.body["metadata"]["labels"], reference.body["metadata"]["labels"]);
    assert_eq!(created.body["metadata"]["labels"], Value::Null);

    // A mutating webhook's patch is stored; a validating webhook's warning reaches the client.
    webhook.forget();
    let (created, reference) = both.create("pasture", &llama("light", 450.0, json!({"herd": "a"}))).await;
    assert_eq!((created.code, reference.code), (201, 201), "{:?}", created.body);
    assert_eq!(created.body["metadata"]["labels"], json!({"herd": "a", "checked": "yes"}));
    assert_eq!(created.body["metadata"]["labels"], reference.body["metadata"]["labels"]);
    assert_eq!(created.warnings, reference.warnings);
    assert_eq!(created.warnings.len(), 2, "{:?}", created.warnings);
    assert!(created.warnings[0].contains("v1alpha Llama is deprecated"), "{:?}", created.warnings);
    assert!(created.warnings[1].contains("a llama of 450 kg is close to the limit"), "{:?}", created.warnings);
    compare_reviews(&webhook.received("mutate"), "CREATE");
    compare_reviews(&webhook.received("validate"), "CREATE");
    let observed = webhook.received("observe");
    let calls = |group: &str| observed.iter().filter(|r| r["request"]["kind"]["group"] == group).count();
    assert_eq!((calls("farm.example.com"), calls("ref.example.com")), (2, 2), "called again after the label");

    // The objectSelector: a llama labelled skip-mutation is not mutated.
    let (created, reference) = both.create("pasture", &llama("wool", 10.0, json!({"skip-mutation": "yes"}))).await;
    assert_eq!((created.code, reference.code), (201, 201));
    assert_eq!(created.body["metadata"]["labels"], json!({"skip-mutation": "yes"}));
    assert_eq!(reference.body["metadata"]["labels"], json!({"skip-mutation": "yes"}));

    // An update the webhook refuses leaves the object as it was.
    webhook.forget();
    let path = "namespaces/pasture/llamas/light";
    let merge = json!({"spec": {"weight": 700}});
    let (refused, reference) =
        both.each(reqwest::Method::PATCH, path, Some(&merge), "application/merge-patch+json").await;
    assert_eq!(refused, reference);
    assert_eq!(refused.code, 403);
    let (stored, _) = both.get("pasture", "light").await;
    assert_eq!(stored.body["spec"]["weight"], 450.0);
    compare_reviews(&webhook.received("validate"), "UPDATE");

    // A status write calls the webhooks of `llamas/status`, not those of `llamas`.
    webhook.forget();
    let status = json!({"status": {"observedGeneration": 1}});
    let path = "namespaces/pasture/llamas/light/status";
    let (written, reference) =
        both.each(reqwest::Method::PATCH, path, Some(&status), "application/merge-patch+json").await;
    assert_eq!((written.code, reference.code), (200, 200), "{:?}", written.body);
    let reviews = webhook.received("observe");
    compare_reviews(&reviews, "UPDATE");
    assert!(reviews.iter().all(|r| r["request"]["subResource"] == "status"), "{reviews:#?}");
    assert!(webhook.received("validate").is_empty());

    // Deletes: the old object is what the webhook judges; a dry run still asks it.
    let protected = llama("guarded", 10.0, json!({"protected": "true"}));
    let (created, reference) = both.create("wild", &protected).await;
    assert_eq!((created.code, reference.code), (201, 201));
    webhook.forget();
    let path = "namespaces/wild/llamas/guarded";
    let (refused, reference) = both.each(reqwest::Method::DELETE, path, None, "application/json").await;
    assert_eq!(refused, reference);
    assert_eq!(refused.code, 403);
    let dry = format!("{path}?dryRun=All");
    let (refused, reference) = both.each(reqwest::Method::DELETE, &dry, None, "application/json").await;
    assert_eq!(refused, reference);
    let reviews = webhook.received("protect");
    compare_reviews(&reviews, "DELETE");
    assert_eq!(reviews.last().unwrap()["request"]["dryRun"], true);
    compare_reviews(&webhook.received("observe"), "DELETE");

    // kubectl shows the refusal and the warning as for any resource.
    let (ok, _, stderr) =
        cp.run(&["create", "-n", "pasture", "-f", "-"], Some(&llama("big", 900.0, json!({})).to_string()));
    assert!(!ok && stderr.contains("llamas over 500 kg are not allowed"), "{stderr}");
    let (ok, _, stderr) =
        cp.run(&["create", "-n", "pasture", "-f", "-"], Some(&llama("near", 420.0, json!({})).to_string()));
    assert!(ok && stderr.contains("Warning: a llama of 420 kg is close to the limit"), "{stderr}");
    drop(farm);
}

/// Every number of `value` as a float: Llama's numbers are floats, which serde writes `170.0`
/// where the kube-apiserver keeps the `170` a client sent to a custom resource.
fn floats(value: &mut Value) {
    match value {
        Value::Number(n) => *value = json!(n.as_f64().unwrap()),
        Value::Array(items) => items.iter_mut().for_each(floats),
        Value::Object(map) => map.values_mut().for_each(floats),
        _ => {}
    }
}

/// The last review of `operation` each group's server sent, compared once what must differ is set aside: their uids, the
/// objects' uid, resourceVersion, generation, timestamps and managedFields.
fn compare_reviews(reviews: &[Value], operation: &str) {
    let of = |group: &str| {
        let mut sent = reviews
            .iter()
            .map(|r| &r["request"])
            .filter(|r| r["operation"] == operation && r["kind"]["group"] == group);
        sent.next_back().unwrap_or_else(|| panic!("no {operation} review of {group}: {reviews:#?}")).clone()
    };
    // farm-apiserver asks once; the kube-apiserver may ask again (a refused update that began
    // from its watch cache is tried once more on the object read from etcd).
    let (farm, reference) = (of("farm.example.com"), of("ref.example.com"));
    let normal = |request: &Value| {
        let mut request = same_group(request);
        request["uid"] = Value::Null;
        floats(&mut request);
        for object in ["object", "oldObject"] {
            if let Some(meta) = request[object]["metadata"].as_object_mut() {
                for field in ["uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"] {
                    meta.remove(field);
                }
            }
        }
        request
    };
    assert_eq!(normal(&farm), normal(&reference));
    assert_eq!(farm["userInfo"]["username"], "e2e-admin");
}

/// A webhook whose rules name v1alpha only receives a v1 write converted to v1alpha under
/// `matchPolicy: Equivalent` (its patch applied there and converted back), and none under
/// `Exact`, on both servers alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_for_v1alpha_sees_v1_writes_at_v1alpha_when_equivalent_and_not_when_exact() {
    let (cp, _farm, both, webhook) = setup().await;
    let (port, ca) = (webhook.port, webhook.ca_bundle.clone());
    let v1alpha_only = |name: &str, path: &str, policy: &str| {
        entry(
            &service("webhook", port, path),
            &ca,
            name,
            "CREATE",
            &format!("sideEffects: None\n  matchPolicy: {policy}"),
        )
        .replace("apiVersions: ['*']", "apiVersions: [v1alpha]")
    };
    let webhooks = [v1alpha_only("paint", "paint", "Equivalent"), v1alpha_only("exact", "observe", "Exact")].concat();
    let v1 = "admissionregistration.k8s.io/v1";
    cp.must(&["apply", "-f", "-"], Some(&configuration(v1, "MutatingWebhookConfiguration", "farm-paint", &webhooks)));
    let spotted = |name: &str| {
        json!({"apiVersion": "farm.example.com/v1", "kind": "Llama", "metadata": {"name": name},
            "spec": {"weight": 80, "height": 170, "coat": {"pattern": "Spotted"}}})
    };
    let painted = json!({"weight": 80, "height": 170, "coat": {"color": "grey", "pattern": "Spotted"}});
    eventually("both servers to see the webhook configuration", async || {
        let (farm, reference) = both
            .each_at(
                "v1",
                reqwest::Method::POST,
                "namespaces/pasture/llamas",
                Some(&spotted("probe")),
                "application/json",
            )
            .await;
        both.each(reqwest::Method::DELETE, "namespaces/pasture/llamas/probe", None, "application/json").await;
        farm.body["spec"] == painted && reference.body["spec"] == painted
    })
    .await;

    webhook.forget();
    let (farm, reference) = both
        .each_at("v1", reqwest::Method::POST, "namespaces/pasture/llamas", Some(&spotted("dolly")), "application/json")
        .await;
    assert_eq!((farm.code, reference.code), (201, 201), "{:?}", farm.body);
    assert_eq!(farm.body["spec"], painted, "the v1alpha patch converted back to v1");
    assert_eq!(farm.body["spec"], reference.body["spec"]);
    assert_eq!(farm.warnings, reference.warnings);
    let painting = webhook.received("paint");
    compare_reviews(&painting, "CREATE");
    let review = &painting.iter().find(|r| r["request"]["kind"]["group"] == "farm.example.com").unwrap()["request"];
    assert_eq!(
        (review["kind"]["version"].as_str(), review["requestKind"]["version"].as_str()),
        (Some("v1alpha"), Some("v1"))
    );
    assert_eq!(review["object"]["apiVersion"], "farm.example.com/v1alpha");
    assert_eq!(review["object"]["metadata"]["annotations"]["farm.example.com/v1-coat"], r#"{"pattern":"Spotted"}"#);
    assert!(webhook.received("observe").is_empty(), "Exact does not match a v1 write");

    // At v1alpha, both are called, each with the request as it came.
    let mut plain = llama("plain", 80.0, json!({}));
    // Without labels: after a webhook's patch the kube-apiserver drops an empty `labels` (its
    // ObjectMeta is coerced), which farm-apiserver passes on to the next webhook as it is.
    plain["metadata"].as_object_mut().unwrap().remove("labels");
    let (farm, reference) = both.create("pasture", &plain).await;
    assert_eq!((farm.code, reference.code), (201, 201), "{:?}", farm.body);
    assert_eq!(farm.body["spec"]["color"], "grey");
    compare_reviews(&webhook.received("observe"), "CREATE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_slow_and_side_effect_webhooks_fail_writes_as_they_do_custom_resources() {
    let (cp, _farm, both, webhook) = setup().await;
    let (port, ca) = (webhook.port, webhook.ca_bundle.clone());
    let stopped_port: u16 = {
        let (ok, out, _) =
            cp.run(&["get", "service", "-n", "farm-system", "stopped", "-o", "jsonpath={.spec.ports[0].port}"], None);
        assert!(ok);
        out.trim().parse().unwrap()
    };
    let v1 = "admissionregistration.k8s.io/v1";
    let apply = |kind: &str, name: &str, webhooks: String| {
        cp.must(&["apply", "-f", "-"], Some(&configuration(v1, kind, name, &webhooks)));
    };

    // A webhook that cannot be reached fails the write under Fail, with the same Status.
    let down = |policy: &str| {
        entry(
            &service("stopped", stopped_port, "validate"),
            &ca,
            "down",
            "CREATE",
            &format!("sideEffects: None\n  failurePolicy: {policy}"),
        )
    };
    apply("ValidatingWebhookConfiguration", "farm-down", down("Fail"));
    until_both_answer(&both, "wild", &llama("probe", 1.0, json!({})), 500).await;
    let (failed, reference) = both.create("wild", &llama("a", 1.0, json!({}))).await;
    assert_eq!((failed.code, reference.code), (500, 500));
    assert_eq!(failed.body["reason"], reference.body["reason"]);
    let prefix = |answer: &Answer| {
        let message = answer.body["message"].as_str().unwrap().to_string();
        message.split("?timeout=").next().unwrap().to_string()
    };
    assert_eq!(prefix(&failed), prefix(&reference));
    assert!(prefix(&failed).contains(&format!(r#"failed calling webhook "down.farm.example.com": failed to call webhook: Post "https://stopped.farm-system.svc:{stopped_port}/validate"#)), "{:?}", failed.body);

    // Under Ignore it is skipped.
    apply("ValidatingWebhookConfiguration", "farm-down", down("Ignore"));
    until_both_answer(&both, "wild", &llama("probe", 1.0, json!({})), 201).await;
    cp.must(&["delete", "validatingwebhookconfiguration", "farm-down"], None);

    // A webhook slower than its timeout fails the write when its time is up.
    apply(
        "ValidatingWebhookConfiguration",
        "farm-slow",
        entry(&service("webhook", port, "slow"), &ca, "slow", "CREATE", "sideEffects: None\n  timeoutSeconds: 1"),
    );
    until_both_answer(&both, "wild", &llama("probe", 1.0, json!({})), 500).await;
    // The webhook never answers: an answer at all (within a bound on failure only) is the
    // timeout at work, and it is the reference's answer.
    let (failed, reference) =
        tokio::time::timeout(common::EVENT_DEADLINE, both.create("wild", &llama("b", 1.0, json!({}))))
            .await
            .expect("the webhook's timeout ended both calls");
    assert_eq!((failed.code, reference.code), (500, 500));
    assert_eq!(failed.body["reason"], reference.body["reason"]);
    assert_eq!(failed.body["message"], reference.body["message"]);
    let message = failed.body["message"].as_str().unwrap();
    assert!(message.contains("?timeout=1s") && message.contains("context deadline exceeded"), "{message}");
    let (missing, reference_missing) = both.get("wild", "b").await;
    assert_eq!((missing.code, reference_missing.code), (404, 404), "neither stored the llama");
    cp.must(&["delete", "validatingwebhookconfiguration", "farm-slow"], None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_conditions_decide_which_writes_call_a_webhook_as_they_do_for_custom_resources() {
    let (cp, _farm, both, webhook) = setup().await;
    let (port, ca) = (webhook.port, webhook.ca_bundle.clone());
    let conditions = |failure: &str, extra: &str| {
        format!(
            "sideEffects: None\n  failurePolicy: {failure}\n  matchConditions:\n  \
             - {{name: not-exempt, expression: \"!has(object.metadata.labels) || !('exempt' in object.metadata.labels)\"}}\n  \
             - {{name: by-user, expression: \"request.userInfo.username != 'nobody-special'\"}}\n  {extra}"
        )
    };
    let weight = entry(&service("webhook", port, "validate"), &ca, "weight", "CREATE", &conditions("Fail", ""));
    let v1 = "admissionregistration.k8s.io/v1";
    cp.must(&["apply", "-f", "-"], Some(&configuration(v1, "ValidatingWebhookConfiguration", "farm-weight", &weight)));
    until_both_answer(&both, "wild", &llama("probe", 600.0, json!({})), 403).await;

    // A condition that is false skips the webhook; all true, the webhook refuses.
    let (created, reference) = both.create("wild", &llama("exempt", 600.0, json!({"exempt": "yes"}))).await;
    assert_eq!((created.code, reference.code), (201, 201), "{:?}", created.body);
    let (refused, reference) = both.create("wild", &llama("heavy", 600.0, json!({}))).await;
    assert_eq!(refused, reference);
    assert_eq!(refused.code, 403);

    // A condition that fails to evaluate refuses the write under Fail (403, as the kube-apiserver
    // fails closed) and skips the webhook under Ignore.
    let broken = |failure: &str| {
        let mut webhook =
            entry(&service("webhook", port, "validate"), &ca, "weight", "CREATE", &conditions(failure, ""));
        webhook = webhook.replace("request.userInfo.username != 'nobody-special'", "object.spec.nothing == 1");
        configuration(v1, "ValidatingWebhookConfiguration", "farm-weight", &webhook)
    };
    cp.must(&["apply", "-f", "-"], Some(&broken("Fail")));
    until_both_answer(&both, "wild", &llama("probe", 1.0, json!({})), 403).await;
    let (refused, reference) = both.create("wild", &llama("light", 1.0, json!({}))).await;
    assert_eq!(refused, reference);
    let message = refused.body["message"].as_str().unwrap_or_default();
    assert_eq!(
        message,
        "llamas.farm.example.com \"light\" is forbidden: expression 'object.spec.nothing == 1' resulted in error: \
         no such key: nothing"
    );
    cp.must(&["apply", "-f", "-"], Some(&broken("Ignore")));
    until_both_answer(&both, "wild", &llama("probe", 600.0, json!({})), 201).await;
    cp.must(&["delete", "validatingwebhookconfiguration", "farm-weight"], None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_rbac_for_webhook_configurations_writes_are_refused_not_let_through() {
    let cp = ControlPlane::up();
    let _farm = cp.farm_lacking_rbac_for(NOBODY_DELEGATES, "mutatingwebhookconfigurations").await;
    let dolly = llama("dolly", 120.0, json!({})).to_string();
    let (ok, _, stderr) = cp.run(&["create", "-f", "-"], Some(&dolly));
    assert!(!ok && stderr.contains("not yet ready to handle request"), "{stderr}");
    let (ok, _, stderr) = cp.run(&["get", "llamas"], None);
    assert!(ok, "reads are not admitted: {stderr}");

    // Once it may read them, writes go through.
    cp.must(&["apply", "-f", "-"], Some(NOBODY_ADMITS));
    eventually("writes to be admitted", async || cp.run(&["create", "-f", "-"], Some(&dolly)).0).await;
}
