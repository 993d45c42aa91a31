//! A policy compiled once, when it is seen or changes, into what a request evaluates: a
//! ValidatingAdmissionPolicy's variables, match conditions, validations with their messages,
//! and audit annotations ([`CompiledPolicy`]); a MutatingAdmissionPolicy's variables, match
//! conditions and mutations ([`CompiledMutations`]). Each expression is compiled in the
//! environment k8s.io/apiserver gives it (`params` only when the policy has a `paramKind`;
//! `authorizer` everywhere but in `messageExpression`; the `Object` and `JSONPatch` types and
//! `jsonpatch.escapeKey` only in mutations). An expression that does not compile keeps its
//! error, which a request meets as k8s.io/apiserver's does: `compilation error: compilation
//! failed: ERROR: …`, under the policy's `failurePolicy`.

use crate::cel::{CelType, Declarations, ObjectType, Program, Stage, objects};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingAdmissionPolicy, MutatingAdmissionPolicySpec, ValidatingAdmissionPolicy, ValidatingAdmissionPolicySpec,
};
use std::sync::Arc;

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
    /// An `Object` (apply configurations).
    Object,
    /// A list of `JSONPatch` (JSON patches).
    Patches,
}

impl Returns {
    fn types(self) -> Vec<CelType> {
        match self {
            Returns::Any => Vec::new(),
            Returns::Bool => vec![CelType::Bool],
            Returns::String => vec![CelType::String],
            Returns::StringOrNull => vec![CelType::String, CelType::Null],
            Returns::Object => vec![CelType::Object(Arc::new(ObjectType::open(objects::OBJECT)))],
            Returns::Patches => vec![CelType::list(CelType::Object(Arc::new(ObjectType::open(objects::JSON_PATCH))))],
        }
    }
}

/// The declarations of a policy's expressions: the admission variables `names`, and
/// `variables` typed as k8s.io/apiserver's composited compiler types them: an object type
/// `kubernetes.variables` whose fields are the policy's variables compiled so far, each of its
/// expression's type (lists and maps keep their types, objects and the rest are `dyn`).
struct Scope<'n> {
    names: &'n [&'n str],
    variables: Vec<(String, CelType)>,
}

impl<'n> Scope<'n> {
    fn new(names: &'n [&'n str]) -> Self {
        Scope { names, variables: Vec::new() }
    }

    fn declarations(&self) -> Declarations {
        let declarations = Declarations::admission(self.names);
        if !self.names.contains(&"variables") {
            return declarations;
        }
        let fields = self.variables.iter().map(|(name, t)| (name.clone(), t.clone()));
        declarations.with_variable("variables", CelType::Object(Arc::new(ObjectType::new(VARIABLES, fields))))
    }

    /// Compiles `source`, refusing it as `CompileCELExpression` does when its type is not one
    /// of `returns`.
    fn compile(&self, source: &str, returns: Returns) -> Expression {
        Expression::compile_declared(source, &self.declarations(), returns)
    }

    /// [`Scope::compile`] with the mutation types declared (`HasPatchTypes`).
    fn compile_mutation(&self, source: &str, returns: Returns) -> Expression {
        Expression::compile_declared(source, &self.declarations().with_patch_types(), returns)
    }

    /// Compiles the policy's `variables` in order, each one's type declared for those after it
    /// (`CompileAndStoreVariables`).
    fn compile_variables<'v>(
        &mut self,
        variables: impl Iterator<Item = (&'v str, &'v str)>,
    ) -> Vec<(String, Expression)> {
        variables
            .map(|(name, source)| {
                let expression = self.compile(source, Returns::Any);
                let output = expression.program.as_ref().map_or(CelType::Dyn, |p| declared(p.output_type()));
                self.variables.retain(|(known, _)| known != name);
                self.variables.push((name.to_string(), output));
                (name.to_string(), expression)
            })
            .collect()
    }
}

/// The object type of `variables`.
const VARIABLES: &str = "kubernetes.variables";

/// A variable's type as a field of `variables` (`convertCelTypeToDeclType`).
fn declared(t: &CelType) -> CelType {
    match t {
        CelType::Bool
        | CelType::Bytes
        | CelType::Double
        | CelType::Duration
        | CelType::Int
        | CelType::Null
        | CelType::String
        | CelType::Timestamp
        | CelType::Uint => t.clone(),
        CelType::List(element) => CelType::list(declared(element)),
        CelType::Map(key, value) => CelType::map(declared(key), declared(value)),
        _ => CelType::Dyn,
    }
}

impl Expression {
    /// Compiles `source` where `names` are declared (`variables` as a map of `dyn`).
    fn compile(source: &str, names: &[&str], returns: Returns) -> Expression {
        Expression::compile_declared(source, &Declarations::admission(names), returns)
    }

    fn compile_declared(source: &str, declarations: &Declarations, returns: Returns) -> Expression {
        let program = match Program::compile_declared(source, declarations) {
            Err(e) if e.stage == Stage::Plan => Err(format!("program instantiation failed: {e}")),
            Err(e) => Err(format!("compilation failed: {e}")),
            Ok(program) => {
                let wanted = returns.types();
                let output = program.output_type();
                match wanted.iter().any(|t| output.is_exactly(t)) || wanted.is_empty() {
                    true => Ok(program),
                    false if wanted.len() == 1 => {
                        Err(format!("must evaluate to {} but got {}", wanted[0].go_string(), output.go_string()))
                    }
                    false => {
                        let wanted: Vec<String> = wanted.iter().map(CelType::go_string).collect();
                        Err(format!("must evaluate to one of [{}] but got {}", wanted.join(" "), output.go_string()))
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
        let mut scope = Scope::new(&names);
        let variables = scope.compile_variables(spec.variables.iter().flatten().map(|v| (&*v.name, &*v.expression)));
        let mut unauthorized = Scope::new(&without_authorizer);
        unauthorized.variables = scope.variables.clone();
        let conditions = spec.match_conditions.iter().flatten();
        let validations = spec.validations.iter().flatten().map(|v| Validation {
            expression: scope.compile(&v.expression, Returns::Bool),
            message: v.message.clone().filter(|m| !m.is_empty()),
            message_expression: (v.message_expression.as_deref().filter(|m| !m.is_empty()))
                .map(|m| unauthorized.compile(m, Returns::String)),
            reason: v.reason.clone().filter(|r| !r.is_empty()),
        });
        let annotations = spec.audit_annotations.iter().flatten().map(|a| AuditAnnotation {
            key: a.key.clone(),
            value: scope.compile(&a.value_expression, Returns::StringOrNull),
        });
        CompiledPolicy {
            failure_policy: FailurePolicy::of(spec.failure_policy.as_deref()),
            match_conditions: conditions
                .map(|c| (c.name.clone(), scope.compile(&c.expression, Returns::Bool)))
                .collect(),
            validations: validations.collect(),
            audit_annotations: annotations.collect(),
            variables,
        }
    }
}

/// How a mutation patches the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// `ApplyConfiguration`: merged as a server-side apply merges.
    ApplyConfiguration,
    /// `JSONPatch`: RFC 6902 operations.
    JsonPatch,
}

/// A mutation of the policy.
#[derive(Debug)]
pub struct Mutation {
    /// How it patches.
    pub patch_type: PatchType,
    /// Its expression.
    pub expression: Expression,
}

/// A MutatingAdmissionPolicy's compiled expressions.
#[derive(Debug)]
pub struct CompiledMutations {
    /// `failurePolicy`.
    pub failure_policy: FailurePolicy,
    /// `variables`, in order.
    pub variables: Vec<(String, Expression)>,
    /// `matchConditions`, in order.
    pub match_conditions: Vec<(String, Expression)>,
    /// `mutations`, in order; `None` for one k8s.io/apiserver compiles no patcher for (an unknown
    /// `patchType`, or the field it names missing), which fails the requests it matches.
    pub mutations: Vec<Option<Mutation>>,
    /// Whether `reinvocationPolicy` is `IfNeeded`.
    pub reinvoked: bool,
}

impl CompiledMutations {
    /// Compiles every expression of `policy` (`compilePolicy`).
    pub fn compile(policy: &MutatingAdmissionPolicy) -> CompiledMutations {
        let empty = MutatingAdmissionPolicySpec::default();
        let spec = policy.spec.as_ref().unwrap_or(&empty);
        let mut names: Vec<&str> = ALWAYS.to_vec();
        if spec.param_kind.is_some() {
            names.push("params");
        }
        let mut scope = Scope::new(&names);
        let variables = scope.compile_variables(spec.variables.iter().flatten().map(|v| (&*v.name, &*v.expression)));
        let mutations = spec.mutations.iter().flatten().map(|m| {
            let (patch_type, source, returns) = match m.patch_type.as_str() {
                "ApplyConfiguration" => {
                    let source = m.apply_configuration.as_ref().map(|a| a.expression.clone().unwrap_or_default());
                    (PatchType::ApplyConfiguration, source, Returns::Object)
                }
                "JSONPatch" => {
                    let source = m.json_patch.as_ref().map(|j| j.expression.clone().unwrap_or_default());
                    (PatchType::JsonPatch, source, Returns::Patches)
                }
                _ => return None,
            };
            Some(Mutation { patch_type, expression: scope.compile_mutation(&source?, returns) })
        });
        CompiledMutations {
            failure_policy: FailurePolicy::of(spec.failure_policy.as_deref()),
            match_conditions: (spec.match_conditions.iter().flatten())
                .map(|c| (c.name.clone(), scope.compile(&c.expression, Returns::Bool)))
                .collect(),
            mutations: mutations.collect(),
            reinvoked: spec.reinvocation_policy.as_deref() == Some("IfNeeded"),
            variables,
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

    /// As the kube-apiserver types them (seen on 1.37.2, which refuses such a policy when it is
    /// written with these words): each variable of its expression's type, known to those after it.
    #[test]
    fn variables_are_typed_in_order() {
        let compiled = CompiledPolicy::compile(&policy(json!({
            "variables": [
                {"name": "heavy", "expression": "object.spec.weight > 500"},
                {"name": "sizes", "expression": "[1, 2]"},
                {"name": "early", "expression": "variables.later"},
                {"name": "later", "expression": "'x'"},
            ],
            "validations": [
                {"expression": "!variables.heavy && variables.sizes[0] == 1", "messageExpression": "variables.later"},
                {"expression": "variables.nope"},
                {"expression": "variables.later == 1"},
            ],
        })));
        let error = |e: &Expression| e.program.as_ref().err().cloned();
        assert_eq!(error(&compiled.validations[0].expression), None);
        assert_eq!(error(compiled.validations[0].message_expression.as_ref().unwrap()), None);
        assert_eq!(
            error(&compiled.variables[2].1).unwrap(),
            "compilation failed: ERROR: <input>:1:10: undefined field 'later'\n | variables.later\n | .........^"
        );
        assert_eq!(
            error(&compiled.validations[1].expression).unwrap(),
            "compilation failed: ERROR: <input>:1:10: undefined field 'nope'\n | variables.nope\n | .........^"
        );
        assert_eq!(
            error(&compiled.validations[2].expression).unwrap(),
            "compilation failed: ERROR: <input>:1:17: found no matching overload for '_==_' applied to '(string, int)'\n \
             | variables.later == 1\n | ................^"
        );
    }

    /// The kube-apiserver 1.37.2 refuses such a MutatingAdmissionPolicy with these messages.
    #[test]
    fn mutations_are_typed_as_the_kube_apiserver_types_them() {
        let mutations = json!([
            {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "object"}},
            {"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}},
            {"patchType": "JSONPatch", "jsonPatch": {"expression":
                "variables.count > 0 ? [JSONPatch{op: 'add', path: '/x', value: 1}] : []"}},
            {"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: 1}]"}},
            {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{spec: 1}"}},
            {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Foo{}"}},
            {"patchType": "Strategic"},
        ]);
        let policy: MutatingAdmissionPolicy = serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {
            "reinvocationPolicy": "IfNeeded", "variables": [{"name": "count", "expression": "1"}],
            "mutations": mutations}}))
        .unwrap();
        let compiled = CompiledMutations::compile(&policy);
        assert!(compiled.reinvoked);
        let errors: Vec<Option<String>> = (compiled.mutations.iter())
            .map(|m| m.as_ref().and_then(|m| m.expression.program.as_ref().err().cloned()))
            .collect();
        assert_eq!(
            errors,
            [
                Some("must evaluate to Object but got dyn".into()),
                Some("must evaluate to list(JSONPatch) but got list(dyn)".into()),
                None,
                Some(
                    "compilation failed: ERROR: <input>:1:14: expected type of field 'op' is 'string' but provided \
                      type is 'int'\n | [JSONPatch{op: 1}]\n | .............^"
                        .into()
                ),
                None,
                Some(
                    "compilation failed: ERROR: <input>:1:4: undeclared reference to 'Foo' (in container '')\n \
                      | Foo{}\n | ...^"
                        .into()
                ),
                None,
            ]
        );
        assert!(compiled.mutations[6].is_none(), "no patcher for an unknown patch type");
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
