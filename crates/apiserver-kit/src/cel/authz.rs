//! Kubernetes' authorizer library (k8s.io/apiserver `library.Authz`): the `authorizer`
//! variable of admission policies and the checks built from it
//! (`authorizer.group('').resource('pods').namespace('ns').check('get').allowed()`,
//! `authorizer.path('/healthz').check('get')`, `authorizer.serviceAccount('ns', 'sa')`,
//! `authorizer.requestResource` for the request's own resource), each `check` asked of an
//! [`Authorizer`] the evaluation is given, at cel-go's fixed cost of 350,000.

use super::error::EvalError;
use super::value::{Opaque, Value};
use std::sync::Arc;

/// The cost of one `check` (two per expression fit its limit, as k8s.io/apiserver sets it).
pub const CHECK_COST: u64 = 350_000;

/// Who a check is about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct User {
    /// The user name.
    pub name: String,
    /// Its UID, when known.
    pub uid: Option<String>,
    /// Its groups.
    pub groups: Vec<String>,
    /// Its extra attributes.
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl From<&crate::machinery::user::UserInfo> for User {
    fn from(user: &crate::machinery::user::UserInfo) -> Self {
        User { name: user.name.clone(), uid: user.uid.clone(), groups: user.groups.clone(), extra: user.extra.clone() }
    }
}

impl From<&User> for crate::machinery::user::UserInfo {
    fn from(user: &User) -> Self {
        Self { name: user.name.clone(), uid: user.uid.clone(), groups: user.groups.clone(), extra: user.extra.clone() }
    }
}

/// A resource check's attributes (`ResourceCheck`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceCheck {
    /// The API group.
    pub group: String,
    /// The resource (plural).
    pub resource: String,
    /// The subresource, or empty.
    pub subresource: String,
    /// The namespace, or empty.
    pub namespace: String,
    /// The name, or empty.
    pub name: String,
    /// `fieldSelector(…)`, or empty.
    pub field_selector: String,
    /// `labelSelector(…)`, or empty.
    pub label_selector: String,
}

/// What is asked of an [`Authorizer`]: a user may `verb` a resource or a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Question {
    /// A resource request (its version `*`).
    Resource(ResourceCheck),
    /// A non-resource request.
    Path(String),
}

/// An authorizer's answer (`Decision`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Whether it allows.
    pub allowed: bool,
    /// Its reason.
    pub reason: String,
    /// Why it could not decide, if it could not.
    pub error: Option<String>,
}

/// Answers checks (the server's delegated authorization).
pub trait Authorizer: Send + Sync {
    /// Whether `user` may `verb` what `question` names.
    fn authorize(&self, user: &User, verb: &str, question: &Question) -> Decision;
}

/// The values of the library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Authz {
    /// `kubernetes.authorization.Authorizer`.
    Authorizer {
        /// Whom its checks are about.
        user: User,
        /// What `authorizer.requestResource` gives: the request's own resource.
        request_resource: Option<Box<ResourceCheck>>,
    },
    /// `kubernetes.authorization.PathCheck`.
    Path {
        /// Whom it is about.
        user: User,
        /// The path.
        path: String,
    },
    /// `kubernetes.authorization.GroupCheck`.
    Group {
        /// Whom it is about.
        user: User,
        /// The API group.
        group: String,
    },
    /// `kubernetes.authorization.ResourceCheck`.
    Resource {
        /// Whom it is about.
        user: User,
        /// What it checks.
        check: ResourceCheck,
    },
    /// `kubernetes.authorization.Decision`.
    Decision(Decision),
}

impl Authz {
    /// The type's name.
    pub fn type_name(&self) -> &'static str {
        match self {
            Authz::Authorizer { .. } => "kubernetes.authorization.Authorizer",
            Authz::Path { .. } => "kubernetes.authorization.PathCheck",
            Authz::Group { .. } => "kubernetes.authorization.GroupCheck",
            Authz::Resource { .. } => "kubernetes.authorization.ResourceCheck",
            Authz::Decision(_) => "kubernetes.authorization.Decision",
        }
    }
}

/// The `authorizer` variable for `user`, with the request's own resource.
pub fn authorizer(user: User, request_resource: Option<ResourceCheck>) -> Value {
    value(Authz::Authorizer { user, request_resource: request_resource.map(Box::new) })
}

fn value(authz: Authz) -> Value {
    Value::Opaque(Arc::new(Opaque::Authz(authz)))
}

const MEMBERS: &[(&str, usize)] = &[
    ("path", 1),
    ("group", 1),
    ("serviceAccount", 2),
    ("resource", 1),
    ("subresource", 1),
    ("namespace", 1),
    ("name", 1),
    ("check", 1),
    ("allowed", 0),
    ("reason", 0),
    ("errored", 0),
    ("error", 0),
    ("fieldSelector", 1),
    ("labelSelector", 1),
];

/// Whether the library declares the member `function` with `args` arguments.
pub fn is_member(function: &str, args: usize) -> bool {
    MEMBERS.contains(&(function, args))
}

/// `authorizer.requestResource`.
pub fn select(target: &Authz, field: &str) -> Option<Value> {
    match (target, field) {
        (Authz::Authorizer { user, request_resource: Some(check) }, "requestResource") => {
            Some(value(Authz::Resource { user: user.clone(), check: (**check).clone() }))
        }
        _ => None,
    }
}

/// The cost of `function` on a value of the library (`None`: not one of them).
pub fn call_cost(function: &str, target: Option<&Value>) -> Option<u64> {
    let Some(Value::Opaque(opaque)) = target else { return None };
    let Opaque::Authz(_) = &**opaque else { return None };
    Some(if function == "check" { CHECK_COST } else { 1 })
}

/// Calls the member `function` on `target`; `None` when it is not one of the library's.
/// `authorizer` answers `check` (without one, a check is an error decision).
pub fn call_member(
    function: &str,
    target: &Value,
    args: &[&Value],
    authorizer: Option<&dyn Authorizer>,
) -> Option<Result<Value, EvalError>> {
    let Value::Opaque(opaque) = target else { return None };
    let Opaque::Authz(authz) = &**opaque else { return None };
    let text = |i: usize| match args.get(i) {
        Some(Value::String(s)) => Ok(s.to_string()),
        _ => Err(EvalError::no_such_overload()),
    };
    Some(member(function, authz, &text, authorizer))
}

fn member(
    function: &str,
    authz: &Authz,
    text: &dyn Fn(usize) -> Result<String, EvalError>,
    authorizer: Option<&dyn Authorizer>,
) -> Result<Value, EvalError> {
    let resource = |user: &User, check: ResourceCheck| Ok(value(Authz::Resource { user: user.clone(), check }));
    match (function, authz) {
        ("path", Authz::Authorizer { user, .. }) => Ok(value(Authz::Path { user: user.clone(), path: text(0)? })),
        ("group", Authz::Authorizer { user, .. }) => Ok(value(Authz::Group { user: user.clone(), group: text(0)? })),
        ("serviceAccount", Authz::Authorizer { .. }) => {
            Ok(value(Authz::Authorizer { user: service_account(&text(0)?, &text(1)?), request_resource: None }))
        }
        ("resource", Authz::Group { user, group }) => {
            resource(user, ResourceCheck { group: group.clone(), resource: text(0)?, ..Default::default() })
        }
        ("subresource", Authz::Resource { user, check }) => {
            resource(user, ResourceCheck { subresource: text(0)?, ..check.clone() })
        }
        ("namespace", Authz::Resource { user, check }) => {
            resource(user, ResourceCheck { namespace: text(0)?, ..check.clone() })
        }
        ("name", Authz::Resource { user, check }) => resource(user, ResourceCheck { name: text(0)?, ..check.clone() }),
        ("fieldSelector", Authz::Resource { user, check }) => {
            resource(user, ResourceCheck { field_selector: text(0)?, ..check.clone() })
        }
        ("labelSelector", Authz::Resource { user, check }) => {
            resource(user, ResourceCheck { label_selector: text(0)?, ..check.clone() })
        }
        ("check", Authz::Resource { user, check }) => {
            Ok(decide(authorizer, user, &text(0)?, Question::Resource(check.clone())))
        }
        ("check", Authz::Path { user, path }) => Ok(decide(authorizer, user, &text(0)?, Question::Path(path.clone()))),
        ("allowed", Authz::Decision(d)) => Ok(Value::Bool(d.allowed)),
        ("reason", Authz::Decision(d)) => Ok(Value::string(&d.reason)),
        ("errored", Authz::Decision(d)) => Ok(Value::Bool(d.error.is_some())),
        ("error", Authz::Decision(d)) => Ok(Value::string(d.error.as_deref().unwrap_or_default())),
        _ => Err(EvalError::no_such_overload()),
    }
}

/// The decision of `authorizer` (an error decision without one).
fn decide(authorizer: Option<&dyn Authorizer>, user: &User, verb: &str, question: Question) -> Value {
    let decision = match authorizer {
        Some(authorizer) => authorizer.authorize(user, verb, &question),
        None => Decision { allowed: false, reason: String::new(), error: Some("no authorizer".into()) },
    };
    value(Authz::Decision(decision))
}

/// The user of the ServiceAccount `namespace/name` (`serviceaccount.ServiceAccountInfo`).
fn service_account(namespace: &str, name: &str) -> User {
    User {
        name: format!("system:serviceaccount:{namespace}:{name}"),
        uid: None,
        groups: vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{namespace}")],
        extra: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allows `get` of pods in namespace `farm` to everyone, nothing else.
    struct PodReader;

    impl Authorizer for PodReader {
        fn authorize(&self, user: &User, verb: &str, question: &Question) -> Decision {
            let allowed = matches!(question, Question::Resource(r) if r.resource == "pods" && r.namespace == "farm")
                && verb == "get";
            Decision { allowed, reason: format!("asked for {}", user.name), error: None }
        }
    }

    fn run(expression: &str) -> Value {
        let program = super::super::Program::compile(expression, &["authorizer"]).unwrap();
        let user = User { name: "alice".into(), ..Default::default() };
        let check = ResourceCheck { resource: "pods".into(), namespace: "farm".into(), ..Default::default() };
        let variables = [("authorizer", authorizer(user, Some(check)))];
        let environment = super::super::Environment { lazy: None, authorizer: Some(&PodReader) };
        super::super::evaluate_with(&program, &variables, environment, 10_000_000).value.unwrap()
    }

    #[test]
    fn checks_are_built_and_asked_of_the_authorizer() {
        let allowed = "authorizer.group('').resource('pods').namespace('farm').check('get').allowed()";
        assert!(matches!(run(allowed), Value::Bool(true)));
        assert!(matches!(run(&allowed.replace("'get'", "'delete'")), Value::Bool(false)));
        assert!(matches!(run("authorizer.requestResource.check('get').allowed()"), Value::Bool(true)));
        let reason = run("authorizer.serviceAccount('farm', 'bot').path('/healthz').check('get').reason()");
        assert_eq!(reason.display(), "asked for system:serviceaccount:farm:bot");
        assert!(matches!(run("authorizer.path('/x').check('get').errored()"), Value::Bool(false)));
    }
}
