//! Validation of an object by a schema's rules, as apiextensions' `Validator.Validate` does it:
//! the tree walked along the object (properties and map entries by name, list items by index),
//! each node's rules evaluated with `self` its value and, for transition rules, `oldSelf` the
//! old value that correlates with it; a per-object runtime cost budget; each failure a field
//! error with the rule's message, reason and field path, or a warning when ratcheting lets it
//! pass.

use super::build::Node;
use super::compile::Compiled;
use super::path::Path;
use super::ratchet::{MapList, Ratchet};
use super::schema;
use super::values::to_value;
use crate::cel::{EvalError, PER_CALL_LIMIT, Value, evaluate};
use crate::machinery::error::{FieldError, FieldErrorKind, go_quote};
use serde_json::Value as Json;
use std::borrow::Cow;

/// The runtime cost all of an object's rules may spend together (`RuntimeCELCostBudget`).
pub const RUNTIME_COST_BUDGET: i64 = 10_000_000;
/// The longest message a `messageExpression` may make (`MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;
const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// What validating an object found.
#[derive(Debug, Default, PartialEq)]
pub struct Outcome {
    /// The failures, in the order found.
    pub errors: Vec<FieldError>,
    /// The failures ratcheting let pass (on values the update left as they were), as the
    /// `Warning` texts the kube-apiserver sends for them.
    pub warnings: Vec<String>,
}

/// A walk of the rules over one object.
pub struct Walk {
    /// What the walk found.
    pub outcome: Outcome,
    /// The cost left; below 0 once the walk stopped.
    pub budget: i64,
}

impl Walk {
    /// A walk with the whole budget.
    pub fn new() -> Walk {
        Walk { outcome: Outcome::default(), budget: RUNTIME_COST_BUDGET }
    }

    /// Validates `obj` (at `path`, under `node`), `old` its correlated old value.
    pub fn validate(&mut self, node: &Node, path: &Path, obj: &Json, old: Option<&Json>, ratchet: &Ratchet<'_>) {
        if obj.is_null() {
            return;
        }
        self.expressions(node, path, obj, old.filter(|o| !o.is_null()), ratchet);
        if self.budget < 0 {
            return;
        }
        for branch in &node.all_of {
            self.validate(branch, path, obj, old, &ratchet.uncorrelated());
            if self.budget < 0 {
                return;
            }
        }
        match obj {
            Json::Array(items) => self.items(node, path, items, old, ratchet),
            Json::Object(map) => self.entries(node, path, map, old, ratchet),
            _ => {}
        }
    }

    fn entries(
        &mut self,
        node: &Node,
        path: &Path,
        map: &serde_json::Map<String, Json>,
        old: Option<&Json>,
        ratchet: &Ratchet<'_>,
    ) {
        let correlatable = schema::map_correlatable(&node.schema);
        let old_of = |k: &str| old.filter(|_| correlatable).and_then(|o| o.get(k));
        if let Some(additional) = &node.additional {
            for (k, v) in map {
                self.validate(additional, &path.key(k), v, old_of(k), &ratchet.key(k));
                if self.budget < 0 {
                    return;
                }
            }
        }
        if node.properties.is_empty() {
            return;
        }
        for (k, v) in map {
            let Some((_, property)) = node.properties.iter().find(|(name, _)| name == k) else { continue };
            self.validate(property, &path.child(k), v, old_of(k), &ratchet.key(k));
            if self.budget < 0 {
                return;
            }
        }
    }

    fn items(&mut self, node: &Node, path: &Path, items: &[Json], old: Option<&Json>, ratchet: &Ratchet<'_>) {
        let Some(item_node) = &node.items else { return };
        let old_items = old.and_then(Json::as_array).map(Vec::as_slice).unwrap_or_default();
        let old_items = MapList::new(&node.schema, old_items);
        for (i, item) in items.iter().enumerate() {
            self.validate(item_node, &path.index(i), item, old_items.get(item), &ratchet.index(i));
            if self.budget < 0 {
                return;
            }
        }
    }

    /// The node's own rules on `obj`.
    fn expressions(&mut self, node: &Node, path: &Path, obj: &Json, old: Option<&Json>, ratchet: &Ratchet<'_>) {
        let value_schema = match node.resource_root {
            true => schema::with_type_and_object_meta(&node.schema),
            false => Cow::Borrowed(&node.schema),
        };
        let node_type = schema::type_of(&value_schema).to_string();
        if let Some(error) = &node.init_error {
            let detail = format!("rule compiler initialization error: {error}");
            self.outcome.errors.push(FieldError::invalid(path.to_string(), &node_type.into(), detail));
            return;
        }
        if node.rules.is_empty() {
            return;
        }
        if self.budget <= 0 {
            self.out_of_budget(path, &node_type);
            return;
        }
        let this = to_value(obj, &value_schema);
        let transitions = node.rules.iter().any(|r| r.uses_old_self);
        let previous = old.filter(|_| transitions).map(|old| to_value(old, &value_schema));
        let at = Place { path, obj, node_type: &node_type, ratchet };
        for compiled in &node.rules {
            if !self.rule(compiled, &at, &this, previous.as_ref()) {
                return;
            }
        }
    }

    /// One rule; `false` when no further rule may run.
    fn rule(&mut self, compiled: &Compiled, at: &Place<'_, '_>, this: &Value, old: Option<&Value>) -> bool {
        let rule = &compiled.rule;
        if let Some(error) = &compiled.error {
            let detail = format!("rule compile error: {error}");
            self.outcome.errors.push(FieldError::invalid(at.path.to_string(), &at.node_type.into(), detail));
            return true;
        }
        let Some(program) = &compiled.program else { return true };
        let optional = rule.optional_old_self == Some(true);
        if compiled.uses_old_self && old.is_none() && !optional {
            return true;
        }
        let mut variables = vec![("self", this.clone())];
        match (optional, old) {
            (true, old) => variables.push(("oldSelf", Value::Optional(old.cloned().map(std::sync::Arc::new)))),
            (false, Some(old)) => variables.push(("oldSelf", old.clone())),
            (false, None) => {}
        }
        let evaluation = evaluate(program, &variables, PER_CALL_LIMIT);
        if !self.spend(evaluation.cost) {
            self.out_of_budget(at.path, at.node_type);
            return false;
        }
        match evaluation.value {
            Err(error) => self.evaluation_error(compiled, at, &error),
            Ok(Value::Bool(true)) => true,
            Ok(_) => self.failed(compiled, at, &variables),
        }
    }

    /// Spends `cost` from the budget; `false` when it is more than is left.
    fn spend(&mut self, cost: u64) -> bool {
        match i64::try_from(cost) {
            Ok(cost) if cost <= self.budget => {
                self.budget -= cost;
                true
            }
            _ => false,
        }
    }

    fn out_of_budget(&mut self, path: &Path, node_type: &str) {
        self.outcome.errors.push(FieldError::invalid(path.to_string(), &node_type.into(), OUT_OF_BUDGET));
        self.budget = -1;
    }

    /// A rule that did not evaluate; `false` when no further rule may run.
    fn evaluation_error(&mut self, compiled: &Compiled, at: &Place<'_, '_>, error: &EvalError) -> bool {
        let rule = rule_error_string(compiled);
        let (detail, go_on) = if error.message().starts_with("no such overload") {
            let detail = format!(
                "'{error}': call arguments did not match a supported operator, function or macro signature for rule: {rule}"
            );
            (detail, true)
        } else if error.cost_exceeded {
            (
                format!(
                    "'{error}': no further validation rules will be run due to call cost exceeds limit for rule: {rule}"
                ),
                false,
            )
        } else {
            (format!("{error} evaluating rule: {rule}"), true)
        };
        self.outcome.errors.push(FieldError::invalid(at.path.to_string(), &at.node_type.into(), detail));
        if !go_on {
            self.budget = -1;
        }
        go_on
    }

    /// A rule that evaluated to false: its error (or warning, when ratcheted), at its field
    /// path, with its message; `false` when no further rule may run.
    fn failed(&mut self, compiled: &Compiled, at: &Place<'_, '_>, variables: &[(&str, Value)]) -> bool {
        let path = match &compiled.field_path {
            Some(field_path) => at.path.child(field_path),
            None => at.path.clone(),
        };
        let message = compiled.message_expression.as_ref().map(|program| self.message(compiled, program, variables));
        let detail = match message {
            Some(Message::Text(text)) => text,
            Some(Message::Fatal(detail)) => {
                self.add(compiled, at.ratchet, FieldError::invalid(path.to_string(), &at.node_type.into(), detail));
                self.budget = -1;
                return false;
            }
            Some(Message::Fallback) | None => rule_message_or_default(compiled),
        };
        let shown = (!matches!(at.node_type, "object" | "array")).then_some(at.obj);
        let error = field_error(path.to_string(), shown, detail, compiled.rule.reason.as_deref());
        self.add(compiled, at.ratchet, error);
        true
    }

    /// `error`, or its warning when ratcheting lets it pass (never a transition rule's).
    fn add(&mut self, compiled: &Compiled, ratchet: &Ratchet<'_>, error: FieldError) {
        if !compiled.uses_old_self && ratchet.unchanged() {
            self.outcome.warnings.push(error.to_string());
        } else {
            self.outcome.errors.push(error);
        }
    }

    /// The message a rule's `messageExpression` makes (`evalMessageExpression`).
    fn message(&mut self, compiled: &Compiled, program: &crate::cel::Program, variables: &[(&str, Value)]) -> Message {
        let evaluation = evaluate(program, variables, PER_CALL_LIMIT);
        if i64::try_from(evaluation.cost).map_or(true, |cost| cost > self.budget) {
            let detail = "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run";
            return Message::Fatal(detail.into());
        }
        if matches!(&evaluation.value, Err(error) if error.cost_exceeded) {
            let source = go_quote(&compiled.rule.message_expression);
            return Message::Fatal(format!(
                "no further validation rules will be run due to call cost exceeds limit for messageExpression: {source}"
            ));
        }
        self.spend(evaluation.cost);
        let Ok(Value::String(text)) = evaluation.value else { return Message::Fallback };
        let text = text.trim();
        if text.len() > MAX_MESSAGE_BYTES || text.contains('\n') || text.is_empty() {
            return Message::Fallback;
        }
        Message::Text(text.to_string())
    }
}

impl Default for Walk {
    fn default() -> Walk {
        Walk::new()
    }
}

/// Where a node's rules run: its path, value and type, and its place for ratcheting.
struct Place<'p, 'a> {
    path: &'p Path,
    obj: &'p Json,
    node_type: &'p str,
    ratchet: &'p Ratchet<'a>,
}

/// What a message expression gave: a message, nothing usable (the rule's message stands in), or
/// an error that stops the validation.
enum Message {
    Text(String),
    Fallback,
    Fatal(String),
}

/// The error of a failed rule by its `reason` (`fieldErrorForReason`); `value` is the node's
/// value when it is shown (not an object or a list).
fn field_error(field: String, value: Option<&Json>, detail: String, reason: Option<&str>) -> FieldError {
    let shown = value.map(|v| FieldError::invalid("", v, "").value).unwrap_or_default();
    match reason {
        Some("FieldValueForbidden") => FieldError::forbidden(field, detail),
        Some("FieldValueRequired") => FieldError::required(field, detail),
        Some("FieldValueDuplicate") => {
            FieldError { field, kind: FieldErrorKind::Duplicate, value: shown, detail: String::new() }
        }
        _ => FieldError { field, kind: FieldErrorKind::Invalid, value: shown, detail },
    }
}

/// The rule's message, or `failed rule: <rule>` (`ruleMessageOrDefault`).
fn rule_message_or_default(compiled: &Compiled) -> String {
    match compiled.rule.message.trim() {
        "" => format!("failed rule: {}", compiled.rule.rule.trim()),
        message => message.to_string(),
    }
}

/// The rule's message, or the rule itself (`ruleErrorString`).
fn rule_error_string(compiled: &Compiled) -> &str {
    match compiled.rule.message.trim() {
        "" => compiled.rule.rule.trim(),
        message => message,
    }
}
