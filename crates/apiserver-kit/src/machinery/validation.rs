//! Validation of `metadata` shared by every resource, with apimachinery's rules and messages:
//! names (DNS-1123 subdomain), `generateName`, namespace (DNS-1123 label), labels, annotations,
//! finalizers and owner references. Every error is collected; nothing stops at the first.

use super::error::FieldError;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::json;
use std::sync::LazyLock;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_FMT: &str = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
/// Total size allowed for all annotations of an object.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

fn anchored(fmt: &str) -> regex::Regex {
    // The patterns are constants of this module; a failure here is a programming error caught by the tests.
    regex::Regex::new(&format!("^{fmt}$")).unwrap_or_else(|e| panic!("bad pattern {fmt}: {e}"))
}

static DNS1123_LABEL: LazyLock<regex::Regex> = LazyLock::new(|| anchored(DNS1123_LABEL_FMT));
static DNS1123_SUBDOMAIN: LazyLock<regex::Regex> = LazyLock::new(|| anchored(DNS1123_SUBDOMAIN_FMT));
static QUALIFIED_NAME: LazyLock<regex::Regex> = LazyLock::new(|| anchored(QUALIFIED_NAME_FMT));
static LABEL_VALUE: LazyLock<regex::Regex> = LazyLock::new(|| anchored(LABEL_VALUE_FMT));

/// The length and pattern problems of `value`, `shape` describing the pattern; `max` is counted
/// in bytes, and said in `unit` (apimachinery's older validators say "characters", those of its
/// `validate/content` package, which label keys and values use since 1.34, "bytes").
fn length_and_pattern(
    value: &str,
    (max, unit): (usize, &str),
    pattern: &regex::Regex,
    shape: impl FnOnce() -> String,
) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > max {
        errs.push(format!("must be no more than {max} {unit}"));
    }
    if !pattern.is_match(value) {
        errs.push(shape());
    }
    errs
}

/// Problems with `value` as a DNS-1123 subdomain (an object name), as apimachinery words them.
pub fn dns1123_subdomain(value: &str) -> Vec<String> {
    subdomain_in(value, "characters")
}

/// [`dns1123_subdomain`], its length said in `unit`.
fn subdomain_in(value: &str, unit: &str) -> Vec<String> {
    length_and_pattern(value, (253, unit), &DNS1123_SUBDOMAIN, || {
        format!(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '{DNS1123_SUBDOMAIN_FMT}')"
        )
    })
}

/// Problems with `value` as a DNS-1123 label (a namespace name).
pub fn dns1123_label(value: &str) -> Vec<String> {
    length_and_pattern(value, (63, "characters"), &DNS1123_LABEL, || {
        format!(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '{DNS1123_LABEL_FMT}')"
        )
    })
}

/// Problems with `value` as a qualified name (`prefix/name` or `name`): label keys, annotation
/// keys, finalizers, as apimachinery 1.37 words them (`content.IsLabelKey`): the name part's
/// length in bytes, its pattern checked even when it is empty.
pub fn qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(subdomain_in(prefix, "bytes").into_iter().map(|m| format!("prefix part {m}")));
            }
            name
        }
        _ => {
            return vec![format!(
                "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{QUALIFIED_NAME_FMT}') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_string());
    }
    if !QUALIFIED_NAME.is_match(name) {
        errs.push(format!(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{QUALIFIED_NAME_FMT}')"
        ));
    }
    errs
}

/// Problems with `value` as a label value.
pub fn label_value(value: &str) -> Vec<String> {
    length_and_pattern(value, (63, "bytes"), &LABEL_VALUE, || {
        format!(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '{LABEL_VALUE_FMT}')"
        )
    })
}

fn push_all(errors: &mut Vec<FieldError>, field: &str, value: &str, messages: Vec<String>) {
    errors.extend(messages.into_iter().map(|m| FieldError::invalid(field, &json!(value), m)));
}

/// Validates an object's metadata as `ValidateObjectMeta` does: a namespaced resource's
/// object needs a namespace (a DNS label), a cluster-scoped one may not have one.
pub fn object_meta(meta: &ObjectMeta, namespaced: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(generate_name) = meta.generate_name.as_deref().filter(|g| !g.is_empty()) {
        // A generateName is a prefix: a trailing dash is allowed.
        let masked =
            generate_name.strip_suffix('-').map(|p| format!("{p}a")).unwrap_or_else(|| generate_name.to_string());
        push_all(&mut errors, "metadata.generateName", generate_name, dns1123_subdomain(&masked));
    }
    match meta.name.as_deref() {
        None | Some("") => errors.push(FieldError::required("metadata.name", "name or generateName is required")),
        Some(name) => push_all(&mut errors, "metadata.name", name, dns1123_subdomain(name)),
    }
    match meta.namespace.as_deref() {
        None | Some("") if namespaced => errors.push(FieldError::required("metadata.namespace", "")),
        None | Some("") => {}
        Some(ns) if namespaced => push_all(&mut errors, "metadata.namespace", ns, dns1123_label(ns)),
        Some(_) => errors.push(FieldError::forbidden("metadata.namespace", "not allowed on this type")),
    }
    for (key, value) in meta.labels.iter().flatten() {
        push_all(&mut errors, "metadata.labels", key, qualified_name(key));
        push_all(&mut errors, "metadata.labels", value, label_value(value));
    }
    let mut total = 0usize;
    for (key, value) in meta.annotations.iter().flatten() {
        push_all(&mut errors, "metadata.annotations", key, qualified_name(&key.to_ascii_lowercase()));
        total += key.len() + value.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errors.push(FieldError::too_long("metadata.annotations", TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    finalizers(meta, &mut errors);
    owner_references(meta, &mut errors);
    errors
}

/// Finalizers: qualified names. As in apimachinery's `ValidateFinalizers`, the field path carries
/// no index and a finalizer written twice is accepted.
fn finalizers(meta: &ObjectMeta, errors: &mut Vec<FieldError>) {
    for finalizer in meta.finalizers.iter().flatten() {
        push_all(errors, "metadata.finalizers", finalizer, qualified_name(finalizer));
    }
}

/// The finalizers Kubernetes itself uses, which need no domain.
const STANDARD_FINALIZERS: [&str; 3] = ["orphan", "foregroundDeletion", "kubernetes"];

/// Warnings for each finalizer `meta` adds to `old`'s (all of them on a create) whose name has no
/// path: "prefer a domain-qualified finalizer name", as the kube-apiserver warns a custom
/// resource's writer (`WarningsOnCreate`/`WarningsOnUpdate`, Kubernetes 1.28), in name order.
pub fn finalizer_warnings(meta: &ObjectMeta, old: Option<&ObjectMeta>) -> Vec<String> {
    let path = "metadata.finalizers";
    let had = |f: &String| old.is_some_and(|o| o.finalizers.iter().flatten().any(|h| h == f));
    let added: std::collections::BTreeSet<&String> = meta.finalizers.iter().flatten().filter(|f| !had(f)).collect();
    let mut warnings = Vec::new();
    for finalizer in added {
        warnings.extend(qualified_name(finalizer).into_iter().map(|m| format!("{path}: {finalizer:?}: {m}")));
        if finalizer.contains('/') || STANDARD_FINALIZERS.contains(&finalizer.as_str()) {
            continue;
        }
        let advice = if finalizer.contains('.') {
            "prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"
        } else {
            "prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
        };
        warnings.push(format!("{path}: {finalizer:?}: {advice}"));
    }
    warnings
}

/// Owner references, as `ValidateOwnerReferences` checks them: apiVersion (`<group>/<version>`
/// or `<version>`), kind, name and uid set, no Event as an owner, at most one controller; each
/// field's path carries the reference's index (since Kubernetes 1.2x).
fn owner_references(meta: &ObjectMeta, errors: &mut Vec<FieldError>) {
    let path = "metadata.ownerReferences";
    let mut first_controller: Option<String> = None;
    for (index, owner) in meta.owner_references.iter().flatten().enumerate() {
        let at = |field: &str| format!("{path}[{index}].{field}");
        let version = match owner.api_version.split('/').collect::<Vec<_>>()[..] {
            [version] | [_, version] => version,
            _ => "",
        };
        if owner.api_version.is_empty() {
            errors.push(FieldError::required(at("apiVersion"), "must not be empty"));
        } else if version.is_empty() {
            let detail = "must be <group>/<version> or <version>";
            errors.push(FieldError::invalid(at("apiVersion"), &json!(owner.api_version), detail));
        }
        for (field, value) in [("kind", &owner.kind), ("name", &owner.name), ("uid", &owner.uid)] {
            if value.is_empty() {
                errors.push(FieldError::required(at(field), "must not be empty"));
            }
        }
        if owner.api_version == "v1" && owner.kind == "Event" {
            let shown = serde_json::to_value(owner).unwrap_or_default();
            errors.push(FieldError::invalid(
                format!("{path}[{index}]"),
                &shown,
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if owner.controller == Some(true) {
            let current = format!("{}/{}", owner.kind, owner.name);
            match &first_controller {
                Some(first) => {
                    let shown = serde_json::to_value(&meta.owner_references).unwrap_or_default();
                    let detail = format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    );
                    errors.push(FieldError::invalid(path, &shown, detail));
                }
                None => first_controller = Some(current),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_finalizers_without_a_path_are_warned_of() {
        let mut m = meta("dolly");
        m.finalizers = Some(["hold", "farm.example.com/keep", "orphan", "a.b", "kept"].map(String::from).to_vec());
        let mut old = meta("dolly");
        old.finalizers = Some(vec!["kept".into()]);
        assert_eq!(
            finalizer_warnings(&m, Some(&old)),
            [
                r#"metadata.finalizers: "a.b": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"#,
                r#"metadata.finalizers: "hold": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"#,
            ]
        );
        assert_eq!(finalizer_warnings(&m, None).len(), 3, "on a create every finalizer is new");
    }
    use std::collections::BTreeMap;

    fn meta(name: &str) -> ObjectMeta {
        ObjectMeta { name: Some(name.into()), namespace: Some("default".into()), ..Default::default() }
    }

    #[test]
    fn a_cluster_scoped_object_may_not_have_a_namespace_and_needs_none() {
        let named = ObjectMeta { name: Some("west".into()), ..ObjectMeta::default() };
        assert!(object_meta(&named, false).is_empty());
        let placed = ObjectMeta { namespace: Some("default".into()), ..named.clone() };
        let shown: Vec<String> = object_meta(&placed, false).iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["metadata.namespace: Forbidden: not allowed on this type"]);
        let fields: Vec<String> = object_meta(&named, true).into_iter().map(|e| e.field).collect();
        assert_eq!(fields, ["metadata.namespace"], "a namespaced object needs one");
    }

    #[test]
    fn names_must_be_dns_subdomains() {
        assert!(dns1123_subdomain("dolly.the-widget").is_empty());
        assert_eq!(dns1123_subdomain("Dolly").len(), 1);
        assert_eq!(dns1123_subdomain(&"a".repeat(254)).len(), 1);
        assert_eq!(dns1123_subdomain("-a").len(), 1);
    }

    #[test]
    fn label_keys_and_values_follow_kubernetes_rules() {
        assert!(qualified_name("app.kubernetes.io/name").is_empty());
        assert!(qualified_name("herd").is_empty());
        assert!(!qualified_name("bad key").is_empty());
        assert!(!qualified_name("/x").is_empty());
        assert!(!qualified_name("a/b/c").is_empty());
        assert!(label_value("").is_empty());
        assert!(label_value("a-b_c.d").is_empty());
        assert!(!label_value("-a").is_empty());
        assert_eq!(label_value(&"a".repeat(64)), ["must be no more than 63 bytes"]);
        assert_eq!(qualified_name(&"a".repeat(64)), ["name part must be no more than 63 bytes"]);
        let empty_name = qualified_name("example.com/");
        assert_eq!(empty_name[0], "name part must be non-empty");
        assert!(empty_name[1].starts_with("name part must consist of"), "the pattern is checked too: {empty_name:?}");
        assert!(qualified_name("a/b/c")[0].starts_with("a valid label key must consist of"));
        assert_eq!(qualified_name(&format!("{}/a", "b".repeat(254)))[0], "prefix part must be no more than 253 bytes");
        assert_eq!(dns1123_subdomain(&"b".repeat(254))[0], "must be no more than 253 characters");
    }

    #[test]
    fn every_metadata_error_is_collected() {
        let mut m = meta("Bad_Name");
        m.labels = Some(BTreeMap::from([("bad key".to_string(), "bad value!".to_string())]));
        m.finalizers = Some(vec!["example.com/x".into(), "example.com/x".into(), "a b/c".into()]);
        let fields: Vec<String> = object_meta(&m, true).into_iter().map(|e| e.field).collect();
        assert_eq!(fields, ["metadata.name", "metadata.labels", "metadata.labels", "metadata.finalizers"]);
    }

    #[test]
    fn generate_name_may_end_with_a_dash() {
        let mut m = meta("x");
        m.generate_name = Some("dolly-".into());
        assert!(object_meta(&m, true).is_empty());
    }

    #[test]
    fn oversized_annotations_are_too_long() {
        let mut m = meta("x");
        m.annotations = Some(BTreeMap::from([("a".to_string(), "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT))]));
        let errors = object_meta(&m, true);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].to_string(), "metadata.annotations: Too long: must have at most 262144 bytes");
    }

    #[test]
    fn owner_references_are_checked_as_apimachinery_checks_them() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let owner = |api_version: &str, kind: &str, name: &str, uid: &str, controller: bool| OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            controller: controller.then_some(true),
            block_owner_deletion: Some(true),
        };
        let mut m = meta("dolly");
        m.owner_references = Some(vec![
            owner("test.example.com/v1alpha", "Widget", "mother", "u1", true),
            owner("a/b/c", "Herd", "north", "u2", true),
            owner("v1", "Event", "", "", false),
        ]);
        let shown: Vec<String> = object_meta(&m, true).iter().map(ToString::to_string).collect();
        assert_eq!(shown.len(), 5, "{shown:#?}");
        assert_eq!(
            shown[0],
            r#"metadata.ownerReferences[1].apiVersion: Invalid value: "a/b/c": must be <group>/<version> or <version>"#
        );
        assert!(shown[1].ends_with(r#"Found "true" in references for Widget/mother and Herd/north"#), "{shown:#?}");
        assert_eq!(shown[2], "metadata.ownerReferences[2].name: Required value: must not be empty");
        assert_eq!(shown[3], "metadata.ownerReferences[2].uid: Required value: must not be empty");
        assert!(shown[4].starts_with("metadata.ownerReferences[2]: Invalid value: "), "{shown:#?}");
        assert!(shown[4].ends_with("/v1, Kind=Event is disallowed from being an owner"), "{shown:#?}");
        m.owner_references = Some(vec![owner("v1", "ConfigMap", "cm", "u3", true)]);
        assert!(object_meta(&m, true).is_empty());
    }
}
