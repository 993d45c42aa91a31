//! One node's rules compiled (apiextensions' `cel.Compile`): each rule type-checked with `self`
//! (and `oldSelf`, optional under `optionalOldSelf`) of the node's type, required to be a bool;
//! its `messageExpression` required to be a string; its `fieldPath` normalized. What a
//! CustomResourceDefinition would be refused for is worded as the kube-apiserver words it
//! ([`problems`]).

use super::cost::{self, Total};
use super::path::valid_field_path;
use super::sizes::NodeSizes;
use crate::cel::estimate::{self, Estimate, Sizes};
use crate::cel::{CelType, CompileError, Declarations, Program, Stage};
use crate::machinery::error::{FieldError, FieldErrorKind};
use serde::Deserialize;

/// One entry of a schema's `x-kubernetes-validations` (kube's `Rule`, apiextensions'
/// `ValidationRule`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Rule {
    /// The expression, true when the value is valid.
    pub rule: String,
    /// The message of a failure (else `failed rule: <rule>`).
    pub message: String,
    /// An expression making the message of a failure.
    pub message_expression: String,
    /// The field error of a failure: `FieldValueInvalid` (the default), `FieldValueForbidden`,
    /// `FieldValueRequired` or `FieldValueDuplicate`.
    pub reason: Option<String>,
    /// Where a failure is reported, relative to the node (`.spec.host`).
    pub field_path: String,
    /// Whether the rule runs without an old value too, `oldSelf` then an optional.
    pub optional_old_self: Option<bool>,
}

/// The reasons a rule may give (`supportedValidationReason`), sorted.
const REASONS: &[&str] = &["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"];

/// A rule and what compiling it gave.
#[derive(Debug)]
pub struct Compiled {
    /// The rule as written.
    pub rule: Rule,
    /// Its program; `None` for an empty rule or one that did not compile.
    pub program: Option<Program>,
    /// Why it did not compile (`compilation failed: ERROR: <input>:1:6: undefined field 'nope'`).
    pub error: Option<String>,
    /// Whether it reads `oldSelf`: a transition rule.
    pub uses_old_self: bool,
    /// Its message expression's program, when it has one that compiled.
    pub message_expression: Option<Program>,
    /// Why the message expression did not compile.
    pub message_error: Option<String>,
    /// Its `fieldPath`, normalized (`spec.host`), when it has a valid one.
    pub field_path: Option<String>,
    /// The most its program is estimated to cost once (0 when it has none).
    pub max_cost: u64,
    /// The most its message expression's program is estimated to cost, when it has one.
    pub message_max_cost: Option<u64>,
}

/// The variables of a node's rules: `self` of the node's type, and `oldSelf` of it (or an
/// optional of it), and `self` alone (which tells transition rules: those that need `oldSelf`).
pub struct Variables {
    plain: Declarations,
    optional: Declarations,
    without_old: Declarations,
    /// The sizes of the node's values, which the rules' costs are estimated from.
    sizes: Option<NodeSizes>,
}

impl Variables {
    /// The variables of rules on a node of type `t`.
    pub fn new(t: &CelType) -> Variables {
        let without_old = Declarations::new().with_variable("self", t.clone());
        Variables {
            plain: without_old.clone().with_variable("oldSelf", t.clone()),
            optional: without_old.clone().with_variable("oldSelf", CelType::optional(t.clone())),
            without_old,
            sizes: None,
        }
    }

    /// The variables, their values' sizes told by `sizes`.
    pub fn with_sizes(mut self, sizes: NodeSizes) -> Variables {
        self.sizes = Some(sizes);
        self
    }

    /// The most `program` is estimated to cost with these variables.
    fn max_cost(&self, program: &Program) -> u64 {
        match &self.sizes {
            Some(sizes) => estimate::estimate(program, sizes).max,
            None => estimate::estimate(program, &Unknown).max,
        }
    }
}

/// Sizes of no variable known.
struct Unknown;

impl Sizes for Unknown {
    fn size(&self, _: &[std::sync::Arc<str>]) -> Option<Estimate> {
        None
    }
}

/// Compiles `rule` with `variables`; `node` (its schema) checks its `fieldPath`.
pub fn compile(rule: &Rule, variables: &Variables, node: &serde_json::Value) -> Compiled {
    let mut compiled = Compiled {
        rule: rule.clone(),
        program: None,
        error: None,
        uses_old_self: false,
        message_expression: None,
        message_error: None,
        field_path: None,
        max_cost: 0,
        message_max_cost: None,
    };
    if rule.rule.trim().is_empty() {
        return compiled;
    }
    let declarations = if rule.optional_old_self == Some(true) { &variables.optional } else { &variables.plain };
    let program = match Program::compile_declared(&rule.rule, declarations) {
        Err(error) => {
            compiled.error = Some(detail(&error, "compilation failed: ", "program instantiation failed: "));
            return compiled;
        }
        Ok(program) if *program.output_type() != CelType::Bool => {
            compiled.error = Some("cel expression must evaluate to a bool".into());
            return compiled;
        }
        Ok(program) => program,
    };
    compiled.uses_old_self = Program::compile_declared(&rule.rule, &variables.without_old).is_err();
    compiled.max_cost = variables.max_cost(&program);
    compiled.program = Some(program);
    if !rule.message_expression.is_empty() {
        match Program::compile_declared(&rule.message_expression, declarations) {
            Err(error) => {
                let detail = detail(
                    &error,
                    "messageExpression compilation failed: ",
                    "messageExpression instantiation failed: ",
                );
                compiled.message_error = Some(detail);
            }
            Ok(program) if *program.output_type() != CelType::String => {
                compiled.message_error = Some("messageExpression must evaluate to a string".into());
            }
            Ok(program) => {
                compiled.message_max_cost = Some(variables.max_cost(&program));
                compiled.message_expression = Some(program);
            }
        }
    }
    if !rule.field_path.is_empty() {
        compiled.field_path = valid_field_path(&rule.field_path, node).ok();
    }
    compiled
}

/// A compiler error as apiextensions words it: `compiled` before the checker's issues,
/// `instantiated` before why the program could not be made.
fn detail(error: &CompileError, compiled: &str, instantiated: &str) -> String {
    const PLANNING: &str = "program instantiation failed: ";
    match (error.stage, error.issues.strip_prefix(PLANNING)) {
        (Stage::Plan, Some(why)) => format!("{instantiated}{why}"),
        _ => format!("{compiled}{}", error.issues),
    }
}

/// What is wrong with how the rules of the node at `path` are written, whatever they say (the
/// kube-apiserver's schema errors, which keep it from compiling the rules of the node and of
/// those above it), each a field error.
pub fn written(path: &str, rules: &[Rule], node: &serde_json::Value) -> Vec<String> {
    let at = |i: usize, field: &str| format!("{path}.x-kubernetes-validations[{i}].{field}");
    let written = rules.iter().enumerate().flat_map(|(i, rule)| written_problems(rule, node, |field| at(i, field)));
    written.map(|problem| problem.to_string()).collect()
}

/// What the kube-apiserver would refuse a CustomResourceDefinition for in the rules of the
/// node at `path` (`spec.validation.openAPIV3Schema.properties[spec]`), compiled as
/// `compiled`, once they are well written ([`written`]): each a field error. `uncorrelatable`
/// is the path of the list or map above the node whose items' old values cannot be known,
/// where transition rules are refused. `costs`, when the rules' costs are checked, is how many
/// times the node may be in an object and the schema's total so far, which each rule's cost is
/// added to.
pub fn problems(
    path: &str,
    compiled: &[Compiled],
    uncorrelatable: Option<&str>,
    mut costs: Option<(u64, &mut Total)>,
) -> Vec<String> {
    let at = |i: usize, field: &str| format!("{path}.x-kubernetes-validations[{i}].{field}");
    let mut problems = Vec::new();
    for (i, compiled) in compiled.iter().enumerate() {
        let rule = &compiled.rule;
        let value = Some(go_rule_json(rule));
        if let Some((cardinality, total)) = costs.as_mut() {
            let rule_cost = cost::times(compiled.max_cost, *cardinality);
            if rule_cost > cost::PER_EXPRESSION_LIMIT {
                let detail = cost::over_budget("estimated rule cost", rule_cost, cost::PER_EXPRESSION_LIMIT);
                problems.push(cost::forbidden(&at(i, "rule"), detail));
            }
            total.observe(&at(i, "rule"), rule_cost);
        }
        if let Some(error) = &compiled.error {
            problems.push(FieldError {
                field: at(i, "rule"),
                kind: FieldErrorKind::Invalid,
                value,
                detail: error.clone(),
            });
        }
        if let Some(error) = &compiled.message_error {
            let value = Some(go_rule_json(rule));
            let field = at(i, "messageExpression");
            problems.push(FieldError { field, kind: FieldErrorKind::Invalid, value, detail: error.clone() });
        } else if let (Some(message_cost), Some((_, total))) = (compiled.message_max_cost, costs.as_mut()) {
            if message_cost > cost::PER_EXPRESSION_LIMIT {
                let detail =
                    cost::over_budget("estimated messageExpression cost", message_cost, cost::PER_EXPRESSION_LIMIT);
                problems.push(cost::forbidden(&at(i, "messageExpression"), detail));
            }
            total.observe(&at(i, "messageExpression"), message_cost);
        }
        if let (true, Some(within)) = (compiled.uses_old_self, uncorrelatable) {
            let detail = format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {within}");
            problems.push(FieldError::invalid(at(i, "rule"), &rule.rule.clone().into(), detail));
        } else if let (false, Some(optional)) = (compiled.uses_old_self, rule.optional_old_self) {
            let detail = "may not be set if oldSelf is not used in rule";
            problems.push(FieldError::invalid(at(i, "optionalOldSelf"), &optional.into(), detail));
        }
    }
    problems.iter().map(ToString::to_string).collect()
}

/// What is wrong with how `rule` is written, whatever it says (apiextensions' schema checks).
fn written_problems(rule: &Rule, node: &serde_json::Value, at: impl Fn(&str) -> String) -> Vec<FieldError> {
    let mut problems = Vec::new();
    let (trimmed_rule, trimmed_message) = (rule.rule.trim(), rule.message.trim());
    let message = serde_json::Value::from(rule.message.as_str());
    if trimmed_rule.is_empty() {
        problems.push(FieldError::required(at("rule"), "rule is not specified"));
    } else if !rule.message.is_empty() && trimmed_message.is_empty() {
        problems.push(FieldError::invalid(at("message"), &message, "must be non-empty if specified"));
    } else if trimmed_message.contains('\n') {
        problems.push(FieldError::invalid(at("message"), &message, "must not contain line breaks"));
    } else if trimmed_rule.contains('\n') && trimmed_message.is_empty() {
        problems.push(FieldError::required(at("message"), "message must be specified if rule contains line breaks"));
    }
    if !rule.message_expression.is_empty() && rule.message_expression.trim().is_empty() {
        problems
            .push(FieldError::required(at("messageExpression"), "messageExpression must be non-empty if specified"));
    }
    if let Some(reason) = rule.reason.as_deref().filter(|r| !REASONS.contains(r)) {
        problems.push(FieldError::not_supported(at("reason"), &reason.into(), REASONS));
    }
    let field_path = serde_json::Value::from(rule.field_path.as_str());
    if !rule.field_path.is_empty() && rule.field_path.trim().is_empty() {
        problems.push(FieldError::invalid(at("fieldPath"), &field_path, "must be non-empty if specified"));
    }
    if rule.field_path.contains('\n') {
        problems.push(FieldError::invalid(at("fieldPath"), &field_path, "must not contain line breaks"));
    }
    if !rule.field_path.is_empty() && valid_field_path(&rule.field_path, node).is_err() {
        problems.push(FieldError::invalid(at("fieldPath"), &field_path, "must be a valid path"));
    }
    problems
}

/// `rule` as Go's `json.Marshal` writes apiextensions' internal `ValidationRule` (no JSON
/// tags: Go's field names; `<`, `>` and `&` escaped), the invalid value of a rule that does not
/// compile.
fn go_rule_json(rule: &Rule) -> String {
    let json = serde_json::json!({
        "Rule": rule.rule, "Message": rule.message, "MessageExpression": rule.message_expression,
        "Reason": rule.reason, "FieldPath": rule.field_path, "OptionalOldSelf": rule.optional_old_self,
    });
    let order = ["Rule", "Message", "MessageExpression", "Reason", "FieldPath", "OptionalOldSelf"];
    let fields: Vec<String> = order.iter().map(|k| format!("{}:{}", serde_json::json!(k), json[k])).collect();
    let text = format!("{{{}}}", fields.join(","));
    text.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::ObjectType;
    use serde_json::json;
    use std::sync::Arc;

    fn variables() -> Variables {
        let spec = ObjectType::new("selfType0", [("x", CelType::Int), ("name", CelType::String)]);
        Variables::new(&CelType::Object(Arc::new(spec)))
    }

    fn rule(text: &str) -> Rule {
        Rule { rule: text.into(), ..Rule::default() }
    }

    fn node() -> serde_json::Value {
        json!({"type": "object", "properties": {"x": {"type": "integer"}, "name": {"type": "string"}}})
    }

    #[test]
    fn rules_compile_against_the_node_type() {
        let compiled = compile(&rule("self.x > 0"), &variables(), &node());
        assert!(compiled.program.is_some() && compiled.error.is_none() && !compiled.uses_old_self);
        let transition = compile(&rule("self.x >= oldSelf.x"), &variables(), &node());
        assert!(transition.uses_old_self);
        let error = compile(&rule("self.nope > 0"), &variables(), &node()).error.unwrap();
        assert!(error.starts_with("compilation failed: ERROR: <input>:1:5: undefined field 'nope'"), "{error}");
        let error = compile(&rule("self.x"), &variables(), &node()).error.unwrap();
        assert_eq!(error, "cel expression must evaluate to a bool");
        let optional = Rule { optional_old_self: Some(true), ..rule("oldSelf.hasValue()") };
        assert!(compile(&optional, &variables(), &node()).uses_old_self);
    }

    #[test]
    fn message_expressions_and_field_paths_are_compiled_too() {
        let r = Rule { message_expression: "'x is ' + string(self.x)".into(), field_path: ".x".into(), ..rule("true") };
        let compiled = compile(&r, &variables(), &node());
        assert!(compiled.message_expression.is_some());
        assert_eq!(compiled.field_path.as_deref(), Some("x"));
        let r = Rule { message_expression: "self.x".into(), ..rule("true") };
        let error = compile(&r, &variables(), &node()).message_error.unwrap();
        assert_eq!(error, "messageExpression must evaluate to a string");
    }

    #[test]
    fn problems_are_worded_as_a_definition_is_refused() {
        let path = "spec.validation.openAPIV3Schema";
        let compiled = [compile(&rule("self.nope > 0"), &variables(), &node())];
        let problems = problems(path, &compiled, None, None);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with(
            "spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value: \
             {\"Rule\":\"self.nope \\u003e 0\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\
             \"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:5: undefined field 'nope'"
        ), "{}", problems[0]);
        let written = Rule { reason: Some("Nope".into()), field_path: ".zz".into(), ..rule(" ") };
        let problems = super::written(path, &[written], &node());
        assert_eq!(
            problems,
            [
                format!("{path}.x-kubernetes-validations[0].rule: Required value: rule is not specified"),
                format!(
                    "{path}.x-kubernetes-validations[0].reason: Unsupported value: \"Nope\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
                ),
                format!("{path}.x-kubernetes-validations[0].fieldPath: Invalid value: \".zz\": must be a valid path"),
            ]
        );
        let transition = [compile(&rule("self.x == oldSelf.x"), &variables(), &node())];
        let problems = super::problems(path, &transition, Some("spec.items"), None);
        assert!(
            problems[0]
                .ends_with("oldSelf cannot be used on the uncorrelatable portion of the schema within spec.items")
        );
    }
}
