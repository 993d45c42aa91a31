//! Webhooks' `matchConditions`, as k8s.io/apiserver's webhook dispatchers evaluate them once a
//! webhook's rules and selectors match a write: CEL expressions over `object`, `oldObject` (at
//! the version the webhook is called at), `request` and `authorizer`, compiled once per set of
//! conditions. A `false` one skips the webhook; an error skips it under `failurePolicy: Ignore`
//! and otherwise refuses the write with 403 (`… is forbidden: expression '…' resulted in error:
//! …`), as the kube-apiserver fails closed.

use super::policy::compiled::{Expression, webhook_condition};
use super::policy::request::{authorizer_of, object_variable, request_variable};
use super::policy::validator::match_conditions;
use crate::cel::Value;
use crate::cel::authz::Authorizer;
use crate::machinery::admission::Call;
use crate::machinery::error::{Error, GroupResource, Result};
use crate::machinery::version::Conversion;
use k8s_openapi::api::admissionregistration::v1::MatchCondition;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How many sets of conditions stay compiled before they are all compiled again.
const KEPT: usize = 1_000;

/// A set of conditions by its names and expressions.
type Conditions = Vec<(String, String)>;

/// Compiled conditions by their text, and the authorizer of their checks.
#[derive(Default)]
pub struct MatchConditions {
    compiled: Mutex<HashMap<Conditions, Arc<Vec<Expression>>>>,
    authorizer: Option<Arc<dyn Authorizer>>,
}

impl MatchConditions {
    /// Conditions whose authorizer checks `authorizer` answers.
    pub fn new(authorizer: Option<Arc<dyn Authorizer>>) -> Self {
        Self { compiled: Mutex::default(), authorizer }
    }

    /// Whether the webhook with `conditions` and `failure_policy` is called for `call` on
    /// `object` over `old` (stored objects) seen at `at`; 403 when a condition fails to
    /// evaluate under `failurePolicy: Fail`.
    pub fn admit(
        &self,
        (conditions, failure_policy): (&[MatchCondition], Option<&str>),
        call: &Call,
        at: &Conversion,
        object: Option<&Json>,
        old: Option<&Json>,
    ) -> Result<bool> {
        if conditions.is_empty() {
            return Ok(true);
        }
        let compiled = self.compiled(conditions);
        let inputs = [
            ("object", object_variable(call, at, object)?),
            ("oldObject", object_variable(call, at, old)?),
            ("request", request_variable(call, &at.version)),
            ("namespaceObject", Value::Null),
            ("authorizer", authorizer_of(call)),
        ];
        let expressions: Vec<&Expression> = compiled.iter().collect();
        match match_conditions(&expressions, &[], &inputs, self.authorizer.as_deref()) {
            Ok(matches) => Ok(matches),
            Err(_) if failure_policy == Some("Ignore") => Ok(false),
            // `apierrors.NewForbidden` of the write's resource and name.
            Err(detail) => Err(Error::ForbiddenObject {
                resource: GroupResource { group: call.resource.group, resource: call.resource.plural },
                name: call.name.to_string(),
                detail,
                causes: Vec::new(),
            }),
        }
    }

    fn compiled(&self, conditions: &[MatchCondition]) -> Arc<Vec<Expression>> {
        let key: Conditions = conditions.iter().map(|c| (c.name.clone(), c.expression.clone())).collect();
        let mut compiled = self.compiled.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(known) = compiled.get(&key) {
            return known.clone();
        }
        if compiled.len() >= KEPT {
            compiled.clear();
        }
        let expressions = Arc::new(conditions.iter().map(|c| webhook_condition(&c.expression)).collect());
        compiled.insert(key, Arc::clone(&expressions));
        expressions
    }
}
