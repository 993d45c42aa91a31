//! One policy evaluated for one request and one param, as k8s.io/apiserver's
//! `validating.validator.Validate` does it: the match conditions first (a `false` one skips
//! the policy; errors follow `failurePolicy`), then every validation (a failed one denies with
//! its `messageExpression`'s result, its `message` or `failed expression: …`, and its
//! `reason`), then the audit annotations (a string is published, null or empty is not).

use super::compiled::{CompiledPolicy, Expression, FailurePolicy};
use super::evaluate::{BUDGET, Inputs, MATCH_CONDITIONS_BUDGET, Outcome, for_input};
use crate::cel::Value;
use crate::cel::authz::Authorizer;

/// k8s.io/apiserver's `MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE: usize = 5 * 1024;

/// What one validation decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Whether it denies the request.
    pub deny: bool,
    /// Why, for a denial.
    pub message: String,
    /// The `Status` reason of a denial (`Invalid` unless the validation set one).
    pub reason: Option<String>,
}

/// What one audit annotation decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Annotation {
    /// Publish `value` under `key`.
    Publish {
        /// The annotation's key (the policy's name is put before it).
        key: String,
        /// Its value, trimmed.
        value: String,
    },
    /// Nothing to publish.
    Exclude,
    /// The annotation failed under `failurePolicy: Fail`: the request is denied with this.
    Error(String),
}

/// The outcome of one policy for one request and param.
#[derive(Debug, Default)]
pub struct Validated {
    /// One per validation (or one for an error that stopped them all); none when the match
    /// conditions did not match.
    pub decisions: Vec<Decision>,
    /// One per audit annotation.
    pub annotations: Vec<Annotation>,
}

/// The decision for an error under `failure`.
fn failed(failure: &FailurePolicy, message: String) -> Decision {
    Decision { deny: *failure != FailurePolicy::Ignore, message, reason: None }
}

/// Evaluates `policy` with `inputs` (`namespaceObject` among them, which the match conditions
/// see null, as k8s.io/apiserver gives them none; `authorizer` too, which it gives the match
/// conditions and validations only), asking `authorizer` the authorizer library's checks.
pub fn validate(policy: &CompiledPolicy, inputs: &Inputs, authorizer: Option<&dyn Authorizer>) -> Validated {
    let failure = &policy.failure_policy;
    if !policy.match_conditions.is_empty() {
        let conditions: Vec<_> = policy.match_conditions.iter().map(|(_, e)| e).collect();
        let without_namespace: Vec<(&str, Value)> = inputs
            .iter()
            .map(|(name, value)| (*name, if *name == "namespaceObject" { Value::Null } else { value.clone() }))
            .collect();
        match match_conditions(&conditions, &policy.variables, &without_namespace, authorizer) {
            Ok(true) => {}
            Ok(false) => return Validated::default(),
            Err(_) if *failure == FailurePolicy::Ignore => return Validated::default(),
            Err(message) => return Validated { decisions: vec![failed(failure, message)], annotations: Vec::new() },
        }
    }
    let stopped = |message| Validated { decisions: vec![failed(failure, message)], annotations: Vec::new() };
    let expressions: Vec<_> = policy.validations.iter().map(|v| Some(&v.expression)).collect();
    let (outcomes, remaining) = match for_input(&expressions, inputs, &policy.variables, authorizer, BUDGET) {
        Ok(done) => done,
        Err(message) => return stopped(message),
    };
    let messages: Vec<_> = policy.validations.iter().map(|v| v.message_expression.as_ref()).collect();
    let unauthorized: Vec<(&str, Value)> = inputs.iter().filter(|(n, _)| *n != "authorizer").cloned().collect();
    let messages =
        for_input(&messages, &unauthorized, &policy.variables, None, remaining).map(|(outcomes, _)| outcomes);
    let decisions = outcomes
        .into_iter()
        .zip(&policy.validations)
        .enumerate()
        .map(|(i, (outcome, validation))| {
            let message = messages.as_ref().map(|m| m.get(i).cloned().flatten());
            decide(failure, outcome, message, validation)
        })
        .collect();
    let annotations: Vec<_> = policy.audit_annotations.iter().map(|a| Some(&a.value)).collect();
    let annotations = match for_input(&annotations, &unauthorized, &policy.variables, None, BUDGET) {
        Ok((outcomes, _)) => outcomes,
        Err(message) => return stopped(message),
    };
    let annotations = annotations
        .into_iter()
        .zip(&policy.audit_annotations)
        .map(|(o, a)| annotate(failure, o, &a.key, &a.value.source));
    Validated { decisions, annotations: annotations.collect() }
}

/// Whether every match condition holds (`matchconditions.Matcher.Match`, a policy's or a
/// webhook's); the first `false` wins over errors, which are joined as k8s.io's `NewAggregate`
/// joins them.
pub fn match_conditions(
    conditions: &[&Expression],
    variables: &[(String, Expression)],
    inputs: &Inputs,
    authorizer: Option<&dyn Authorizer>,
) -> Result<bool, String> {
    let expressions: Vec<_> = conditions.iter().map(|e| Some(*e)).collect();
    let (outcomes, _) = for_input(&expressions, inputs, variables, authorizer, MATCH_CONDITIONS_BUDGET)?;
    let mut errors = Vec::new();
    for outcome in outcomes.into_iter().flatten() {
        match outcome {
            Ok(Value::Bool(false)) => return Ok(false),
            Ok(_) => {}
            Err(message) => errors.push(message),
        }
    }
    match errors.len() {
        0 => Ok(true),
        1 => Err(errors.swap_remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// One validation's decision from its `outcome` and its message expression's (`Err` when the
/// message expressions ran out of budget).
fn decide(
    failure: &FailurePolicy,
    outcome: Option<Outcome>,
    message: Result<Option<Outcome>, &String>,
    validation: &super::compiled::Validation,
) -> Decision {
    match (outcome, message) {
        (Some(Err(error)), _) => failed(failure, error),
        (_, Err(stopped)) => failed(failure, format!("failed messageExpression: {stopped}")),
        (Some(Ok(Value::Bool(true))), _) => Decision { deny: false, message: String::new(), reason: None },
        (_, Ok(message)) => {
            let evaluated = match message {
                Some(Ok(Value::String(text))) => {
                    let text = text.trim();
                    if text.len() > MAX_MESSAGE || text.contains('\n') { String::new() } else { text.to_string() }
                }
                _ => String::new(),
            };
            let message = Some(evaluated)
                .filter(|m| !m.is_empty())
                .or_else(|| validation.message.as_deref().map(str::trim).filter(|m| !m.is_empty()).map(String::from))
                .unwrap_or_else(|| format!("failed expression: {}", validation.expression.source.trim()));
            let reason = Some(validation.reason.clone().unwrap_or_else(|| "Invalid".into()));
            Decision { deny: true, message, reason }
        }
    }
}

/// One audit annotation's result.
fn annotate(failure: &FailurePolicy, outcome: Option<Outcome>, key: &str, source: &str) -> Annotation {
    let error =
        |message| if *failure == FailurePolicy::Ignore { Annotation::Exclude } else { Annotation::Error(message) };
    match outcome {
        None => Annotation::Exclude,
        Some(Err(message)) => error(message),
        Some(Ok(Value::String(value))) if value.trim().is_empty() => Annotation::Exclude,
        Some(Ok(Value::String(value))) => Annotation::Publish { key: key.to_string(), value: value.trim().to_string() },
        Some(Ok(Value::Null)) => Annotation::Exclude,
        Some(Ok(other)) => Annotation::Error(format!(
            "valueExpression '{source}' resulted in unsupported return type: {}. Return type must be either string or null.",
            other.type_of().name()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;
    use serde_json::json;

    fn compiled(spec: serde_json::Value) -> CompiledPolicy {
        let policy: ValidatingAdmissionPolicy =
            serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).unwrap();
        CompiledPolicy::compile(&policy)
    }

    fn inputs(weight: i64) -> Vec<(&'static str, Value)> {
        let object = Value::from_json(&json!({"metadata": {"name": "dolly"}, "spec": {"weight": weight}}));
        ["oldObject", "request", "namespaceObject", "authorizer"]
            .into_iter()
            .map(|name| (name, Value::Null))
            .chain([("object", object)])
            .collect()
    }

    #[test]
    fn failed_validations_deny_with_their_message_in_order_of_preference() {
        let policy = compiled(json!({"validations": [
            {"expression": "object.spec.weight <= 500", "messageExpression": "'too heavy: ' + string(object.spec.weight)"},
            {"expression": "object.spec.weight <= 400", "message": " over 400 ", "reason": "Forbidden"},
            {"expression": " object.spec.weight <= 300 ", "messageExpression": "'two\\nlines'"},
            {"expression": "object.spec.weight > 0"},
        ]}));
        let decisions = validate(&policy, &inputs(600), None).decisions;
        let messages: Vec<_> = decisions.iter().map(|d| (d.deny, d.message.as_str(), d.reason.as_deref())).collect();
        assert_eq!(
            messages,
            [
                (true, "too heavy: 600", Some("Invalid")),
                (true, "over 400", Some("Forbidden")),
                (true, "failed expression: object.spec.weight <= 300", Some("Invalid")),
                (false, "", None),
            ]
        );
    }

    #[test]
    fn typed_variables_are_read_as_they_are_evaluated() {
        let policy = compiled(json!({
            "variables": [{"name": "heavy", "expression": "object.spec.weight > 500"},
                {"name": "limits", "expression": "{'max': 500}"}],
            "validations": [{"expression": "!variables.heavy",
                "messageExpression": "'over ' + string(variables.limits['max'])"}],
        }));
        let decisions = validate(&policy, &inputs(600), None).decisions;
        assert_eq!(decisions, [Decision { deny: true, message: "over 500".into(), reason: Some("Invalid".into()) }]);
        assert!(!validate(&policy, &inputs(100), None).decisions[0].deny);
    }

    #[test]
    fn match_conditions_skip_or_fail_as_the_failure_policy_says() {
        let conditions = json!([{"name": "heavy", "expression": "object.spec.weight > 100"},
            {"name": "broken", "expression": "object.spec.nothing == 1"}]);
        let validations = json!([{"expression": "false"}]);
        let fail = compiled(json!({"matchConditions": conditions, "validations": validations}));
        assert!(validate(&fail, &inputs(50), None).decisions.is_empty());
        let decisions = validate(&fail, &inputs(600), None).decisions;
        assert_eq!(decisions.len(), 1);
        assert!(decisions[0].deny);
        assert_eq!(
            decisions[0].message,
            "expression 'object.spec.nothing == 1' resulted in error: no such key: nothing"
        );
        let ignore =
            compiled(json!({"failurePolicy": "Ignore", "matchConditions": conditions, "validations": validations}));
        assert!(validate(&ignore, &inputs(600), None).decisions.is_empty());
    }

    #[test]
    fn audit_annotations_publish_strings_and_refuse_other_types() {
        let policy = compiled(json!({"auditAnnotations": [
            {"key": "weight", "valueExpression": "' ' + string(object.spec.weight)"},
            {"key": "none", "valueExpression": "null"},
            {"key": "number", "valueExpression": "object.spec.weight"},
        ]}));
        let annotations = validate(&policy, &inputs(7), None).annotations;
        assert_eq!(
            annotations,
            [
                Annotation::Publish { key: "weight".into(), value: "7".into() },
                Annotation::Exclude,
                // (Refused when the policy is written: its type is dyn.)
                Annotation::Error("compilation error: must evaluate to one of [string null_type] but got dyn".into()),
            ]
        );
    }
}
