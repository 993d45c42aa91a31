//! A ValidatingAdmissionPolicy compiled once, when it is seen or changes, into what a request
//! evaluates: its variables, match conditions, validations with their messages, and audit
//! annotations, each expression compiled in the environment k8s.io/apiserver gives it
//! (`params` only when the policy has a `paramKind`; `authorizer` everywhere but in
//! `messageExpression`). An expression that does not compile keeps its error, which a request
//! meets as k8s.io/apiserver's does: `compilation error: compilation failed: ERROR: …`, under
//! the policy's `failurePolicy`.

use crate::cel::{CelType, Program, Stage};
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

/// What an expression must evaluate to (its accessor's `ReturnTypes`).
#[derive(Clone, Copy)]
enum Returns {
    /// Anything (variables).
    Any,
    /// A bool (validations, match conditions).
    Bool,
    /// A string (message expressions).
    String,
    /// A string or null (audit annotations' values).
    StringOrNull,
}

impl Returns {
    fn types(self) -> Vec<CelType> {
        match self {
            Returns::Any => Vec::new(),
            Returns::Bool => vec![CelType::Bool],
            Returns::String => vec![CelType::String],
            Returns::StringOrNull => vec![CelType::String, CelType::Null],
        }
    }
}

/// A type as cel-go's `Type.String()` writes it (`bool`, `null_type`, `list(int)`).
fn go_type(t: &CelType) -> String {
    let parameters = t.parameters();
    if parameters.is_empty() {
        return t.name().to_string();
    }
    let parameters: Vec<String> = parameters.into_iter().map(go_type).collect();
    format!("{}({})", t.name(), parameters.join(", "))
}

impl Expression {
    /// Compiles `source` where `names` are declared, refusing it as `CompileCELExpression` does
    /// when its type is not one of `returns`.
    fn compile(source: &str, names: &[&str], returns: Returns) -> Expression {
        let program = match Program::compile(source, names) {
            Err(e) if e.stage == Stage::Plan => Err(format!("program instantiation failed: {e}")),
            Err(e) => Err(format!("compilation failed: {e}")),
            Ok(program) => {
                let wanted = returns.types();
                let output = program.output_type();
                match wanted.iter().any(|t| output.is_exactly(t)) || wanted.is_empty() {
                    true => Ok(program),
                    false if wanted.len() == 1 => {
                        Err(format!("must evaluate to {} but got {}", go_type(&wanted[0]), go_type(output)))
                    }
                    false => {
                        let wanted: Vec<String> = wanted.iter().map(go_type).collect();
                        Err(format!("must evaluate to one of [{}] but got {}", wanted.join(" "), go_type(output)))
                    }
                }
            }
        };
        Expression { source: source.to_string(), program }
    }
}

/// A webhook's match condition (`object`, `oldObject`, `request`, `namespaceObject` and
/// `authorizer` declared, no `params` nor `variables`).
pub fn webhook_condition(source: &str) -> Expression {
    Expression::compile(source, &["object", "oldObject", "request", "namespaceObject", "authorizer"], Returns::Bool)
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
            expression: Expression::compile(&v.expression, &names, Returns::Bool),
            message: v.message.clone().filter(|m| !m.is_empty()),
            message_expression: v
                .message_expression
                .as_deref()
                .filter(|m| !m.is_empty())
                .map(|m| Expression::compile(m, &without_authorizer, Returns::String)),
            reason: v.reason.clone().filter(|r| !r.is_empty()),
        });
        let annotations = spec.audit_annotations.iter().flatten().map(|a| AuditAnnotation {
            key: a.key.clone(),
            value: Expression::compile(&a.value_expression, &names, Returns::StringOrNull),
        });
        CompiledPolicy {
            failure_policy: FailurePolicy::of(spec.failure_policy.as_deref()),
            variables: variables
                .map(|v| (v.name.clone(), Expression::compile(&v.expression, &names, Returns::Any)))
                .collect(),
            match_conditions: conditions
                .map(|c| (c.name.clone(), Expression::compile(&c.expression, &names, Returns::Bool)))
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

    /// The kube-apiserver refuses such a policy when it is written, with these messages
    /// (seen on 1.37.2): one stored before (or by an older release) meets them per request.
    #[test]
    fn expressions_of_the_wrong_type_do_not_compile() {
        let compiled = CompiledPolicy::compile(&policy(json!({
            "validations": [{"expression": "object.spec.weight"}, {"expression": "1 == 1u"}],
            "auditAnnotations": [{"key": "a", "valueExpression": "1"}],
        })));
        let error = |e: &Expression| e.program.as_ref().unwrap_err().clone();
        assert_eq!(error(&compiled.validations[0].expression), "must evaluate to bool but got dyn");
        assert_eq!(
            error(&compiled.validations[1].expression),
            "compilation failed: ERROR: <input>:1:3: found no matching overload for '_==_' applied to '(int, uint)'\n \
             | 1 == 1u\n | ..^"
        );
        assert_eq!(
            error(&compiled.audit_annotations[0].value),
            "must evaluate to one of [string null_type] but got int"
        );
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
