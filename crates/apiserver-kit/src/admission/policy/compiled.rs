//! A ValidatingAdmissionPolicy compiled once, when it is seen or changes, into what a request
//! evaluates: its variables, match conditions, validations with their messages, and audit
//! annotations, each expression compiled in the environment k8s.io/apiserver gives it
//! (`params` only when the policy has a `paramKind`; `authorizer` everywhere but in
//! `messageExpression`). An expression that does not compile keeps its error, which a request
//! meets as k8s.io/apiserver's does: `compilation error: compilation failed: ERROR: …`, under
//! the policy's `failurePolicy`.

use crate::cel::Program;
use k8s_openapi::api::admissionregistration::v1::{ValidatingAdmissionPolicy, ValidatingAdmissionPolicySpec};

/// The variables every policy expression may read.
const ALWAYS: [&str; 6] = ["object", "oldObject", "request", "namespaceObject", "variables", "authorizer"];

/// One expression and its program, or why it has none.
#[derive(Debug)]
pub struct Expression {
    /// The expression as written.
    pub source: String,
    /// Its program; else the error a request meets (`compilation failed: …`).
    pub program: Result<Program, String>,
}

impl Expression {
    /// Compiles `source` where `names` are declared.
    fn compile(source: &str, names: &[&str]) -> Expression {
        let program = Program::compile(source, names).map_err(|e| format!("compilation failed: {e}"));
        Expression { source: source.to_string(), program }
    }
}

/// A validation of the policy.
#[derive(Debug)]
pub struct Validation {
    /// `expression`.
    pub expression: Expression,
    /// `message`, when set.
    pub message: Option<String>,
    /// `messageExpression`, when set.
    pub message_expression: Option<Expression>,
    /// `reason`, when set (`Invalid` when not).
    pub reason: Option<String>,
}

/// An audit annotation of the policy.
#[derive(Debug)]
pub struct AuditAnnotation {
    /// `key`.
    pub key: String,
    /// `valueExpression`.
    pub value: Expression,
}

/// What `failurePolicy` says to do when the policy cannot be evaluated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Deny the request (`Fail`, the default).
    Fail,
    /// Let it through (`Ignore`).
    Ignore,
    /// A value the API server would not have stored.
    Unrecognized(String),
}

impl FailurePolicy {
    fn of(policy: Option<&str>) -> FailurePolicy {
        match policy {
            None | Some("Fail") => FailurePolicy::Fail,
            Some("Ignore") => FailurePolicy::Ignore,
            Some(other) => FailurePolicy::Unrecognized(other.to_string()),
        }
    }
}

/// A policy's compiled expressions.
#[derive(Debug)]
pub struct CompiledPolicy {
    /// `failurePolicy`.
    pub failure_policy: FailurePolicy,
    /// `variables`, in order.
    pub variables: Vec<(String, Expression)>,
    /// `matchConditions`, in order.
    pub match_conditions: Vec<(String, Expression)>,
    /// `validations`, in order.
    pub validations: Vec<Validation>,
    /// `auditAnnotations`, in order.
    pub audit_annotations: Vec<AuditAnnotation>,
}

impl CompiledPolicy {
    /// Compiles every expression of `policy`.
    pub fn compile(policy: &ValidatingAdmissionPolicy) -> CompiledPolicy {
        let empty = ValidatingAdmissionPolicySpec::default();
        let spec = policy.spec.as_ref().unwrap_or(&empty);
        let mut names: Vec<&str> = ALWAYS.to_vec();
        if spec.param_kind.is_some() {
            names.push("params");
        }
        let without_authorizer: Vec<&str> = names.iter().copied().filter(|n| *n != "authorizer").collect();
        let variables = spec.variables.iter().flatten();
        let conditions = spec.match_conditions.iter().flatten();
        let validations = spec.validations.iter().flatten().map(|v| Validation {
            expression: Expression::compile(&v.expression, &names),
            message: v.message.clone().filter(|m| !m.is_empty()),
            message_expression: v
                .message_expression
                .as_deref()
                .filter(|m| !m.is_empty())
                .map(|m| Expression::compile(m, &without_authorizer)),
            reason: v.reason.clone().filter(|r| !r.is_empty()),
        });
        let annotations = spec
            .audit_annotations
            .iter()
            .flatten()
            .map(|a| AuditAnnotation { key: a.key.clone(), value: Expression::compile(&a.value_expression, &names) });
        CompiledPolicy {
            failure_policy: FailurePolicy::of(spec.failure_policy.as_deref()),
            variables: variables.map(|v| (v.name.clone(), Expression::compile(&v.expression, &names))).collect(),
            match_conditions: conditions
                .map(|c| (c.name.clone(), Expression::compile(&c.expression, &names)))
                .collect(),
            validations: validations.collect(),
            audit_annotations: annotations.collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(spec: serde_json::Value) -> ValidatingAdmissionPolicy {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).unwrap()
    }

    #[test]
    fn params_are_declared_only_with_a_param_kind() {
        let validations = json!([{"expression": "params.max > 1"}]);
        let without = CompiledPolicy::compile(&policy(json!({"validations": validations})));
        let error = without.validations[0].expression.program.as_ref().unwrap_err();
        assert!(error.starts_with("compilation failed: ERROR: <input>"), "{error}");
        assert!(error.contains("undeclared reference to 'params'"), "{error}");
        let with = CompiledPolicy::compile(&policy(
            json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}, "validations": validations}),
        ));
        assert!(with.validations[0].expression.program.is_ok());
    }

    #[test]
    fn message_expressions_cannot_read_the_authorizer_and_empty_fields_are_unset() {
        let compiled = CompiledPolicy::compile(&policy(json!({
            "failurePolicy": "Ignore",
            "validations": [{"expression": "true", "message": "", "reason": "",
                "messageExpression": "string(authorizer)"}],
        })));
        assert_eq!(compiled.failure_policy, FailurePolicy::Ignore);
        let validation = &compiled.validations[0];
        assert_eq!((&validation.message, &validation.reason), (&None, &None));
        let message = validation.message_expression.as_ref().unwrap();
        assert!(message.program.as_ref().unwrap_err().contains("undeclared reference to 'authorizer'"));
    }
}
