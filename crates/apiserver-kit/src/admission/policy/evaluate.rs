//! A list of a policy's expressions evaluated for one request, as k8s.io/apiserver's
//! `condition.ForInput` evaluates them: each with cel-go's per-call cost limit, their runtime
//! costs (and those of the `variables` they read) taken from one budget, which, once passed,
//! stops them all with `validation failed due to running out of cost budget, …`. The
//! `variables` are evaluated when an expression first reads them and kept for the rest of the
//! list (k8s.io/apiserver's lazy composition), each one's cost charged to the budget once.

use super::compiled::Expression;
use crate::cel::authz::Authorizer;
use crate::cel::{Environment, EvalError, LazyMap, PER_CALL_LIMIT, Value, evaluate_with};
use crate::machinery::error::go_quote;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// k8s.io/apiserver's `RuntimeCELCostBudget`: what one policy's validations may cost.
pub const BUDGET: u64 = 10_000_000;
/// `RuntimeCELCostBudgetMatchConditions`.
pub const MATCH_CONDITIONS_BUDGET: u64 = 2_500_000;

/// The message of an evaluation stopped by the budget.
pub const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// The variables of one request: `object`, `oldObject`, `request`, `params`, `namespaceObject`
/// (absent ones are null).
pub type Inputs<'a> = [(&'a str, Value)];

/// A policy's `variables`, evaluated when read.
struct Composition<'a> {
    inputs: &'a Inputs<'a>,
    authorizer: Option<&'a dyn Authorizer>,
    variables: &'a [(String, Expression)],
    values: RefCell<HashMap<String, Result<Value, EvalError>>>,
    cost: Cell<u64>,
}

impl LazyMap for Composition<'_> {
    fn name(&self) -> &str {
        "variables"
    }

    fn entry(&self, key: &str) -> Option<Result<Value, EvalError>> {
        if let Some(known) = self.values.borrow().get(key) {
            return Some(known.clone());
        }
        let (name, expression) = self.variables.iter().find(|(name, _)| name == key)?;
        let value = match &expression.program {
            Err(error) => {
                Err(EvalError::new(format!("composited variable {} fails to compile: {error}", go_quote(name))))
            }
            Ok(program) => {
                let environment = Environment { lazy: Some(self), authorizer: self.authorizer };
                let evaluation = evaluate_with(program, self.inputs, environment, PER_CALL_LIMIT);
                self.cost.set(self.cost.get().saturating_add(evaluation.cost));
                evaluation.value.map_err(|e| {
                    EvalError::new(format!("composited variable {} fails to evaluate: {e}", go_quote(name)))
                })
            }
        };
        self.values.borrow_mut().insert(key.to_string(), value.clone());
        Some(value)
    }

    fn keys(&self) -> Vec<String> {
        self.variables.iter().map(|(name, _)| name.clone()).collect()
    }
}

/// What evaluating one expression of the list gave: its value, or the message of its error.
pub type Outcome = Result<Value, String>;

/// Evaluates `expressions` (a `None` is a placeholder, which gives `None`) with `inputs` and
/// the policy's `variables`, within `budget`: their outcomes and what is left of the budget, or
/// the error that stopped them.
pub fn for_input(
    expressions: &[Option<&Expression>],
    inputs: &Inputs,
    variables: &[(String, Expression)],
    authorizer: Option<&dyn Authorizer>,
    budget: u64,
) -> Result<(Vec<Option<Outcome>>, u64), String> {
    let values = RefCell::new(HashMap::new());
    let composition = Composition { inputs, authorizer, variables, values, cost: Cell::new(0) };
    let mut remaining = budget;
    let mut outcomes = Vec::with_capacity(expressions.len());
    for expression in expressions {
        let Some(expression) = expression else {
            outcomes.push(None);
            continue;
        };
        let program = match &expression.program {
            Ok(program) => program,
            Err(error) => {
                outcomes.push(Some(Err(format!("compilation error: {error}"))));
                continue;
            }
        };
        let environment = Environment { lazy: Some(&composition), authorizer };
        let evaluation = evaluate_with(program, inputs, environment, PER_CALL_LIMIT);
        for cost in [composition.cost.replace(0), evaluation.cost] {
            remaining = remaining.checked_sub(cost).ok_or_else(|| OUT_OF_BUDGET.to_string())?;
        }
        let outcome =
            evaluation.value.map_err(|e| format!("expression '{}' resulted in error: {e}", expression.source));
        outcomes.push(Some(outcome));
    }
    Ok((outcomes, remaining))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expression(source: &str) -> Expression {
        let names = ["object", "variables"];
        Expression {
            source: source.into(),
            program: crate::cel::Program::compile(source, &names).map_err(|e| e.to_string()),
        }
    }

    /// An outcome as text, the value shown as CEL shows it.
    fn shown(outcome: &Option<Outcome>) -> Option<Result<String, String>> {
        outcome.as_ref().map(|o| o.as_ref().map(Value::display).map_err(Clone::clone))
    }

    fn object() -> Vec<(&'static str, Value)> {
        vec![("object", Value::from_json(&serde_json::json!({"spec": {"weight": 600}})))]
    }

    #[test]
    fn variables_are_evaluated_once_when_read_and_errors_name_them() {
        let variables = vec![
            ("heavy".to_string(), expression("object.spec.weight > 500")),
            ("broken".to_string(), expression("1 / 0 == 1")),
        ];
        let (a, b, c) = (expression("variables.heavy"), expression("!variables.heavy"), expression("variables.broken"));
        let inputs = object();
        let (outcomes, remaining) =
            for_input(&[Some(&a), None, Some(&b), Some(&c)], &inputs, &variables, None, 100).unwrap();
        assert_eq!(shown(&outcomes[0]), Some(Ok("true".into())));
        assert_eq!(shown(&outcomes[1]), None);
        assert_eq!(shown(&outcomes[2]), Some(Ok("false".into())));
        assert_eq!(
            shown(&outcomes[3]),
            Some(Err("expression 'variables.broken' resulted in error: composited variable \"broken\" fails to \
                      evaluate: division by zero"
                .into()))
        );
        assert!(remaining < 100);
    }

    #[test]
    fn the_budget_stops_the_list_and_compile_errors_are_outcomes() {
        let costly = expression("[1, 2, 3].map(x, x * 2).size() > 1");
        let inputs = object();
        assert_eq!(for_input(&[Some(&costly)], &inputs, &[], None, 3).unwrap_err(), OUT_OF_BUDGET);
        let broken = expression("nothing == 1");
        let (outcomes, _) = for_input(&[Some(&broken)], &inputs, &[], None, 3).unwrap();
        let message = outcomes[0].clone().unwrap().unwrap_err();
        assert!(message.starts_with("compilation error: ERROR: <input>"), "{message}");
        assert!(message.contains("undeclared reference to 'nothing'"), "{message}");
    }
}
