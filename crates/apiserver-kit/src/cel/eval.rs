//! The evaluator: walks a [`Program`]'s plan over the variables of one request and counts the
//! runtime cost as cel-go's cost tracker does (one for each variable read and qualifier, ten
//! for a list built, thirty for a map, forty for a struct, each call its function's cost),
//! stopping once the cost passes the limit.

use super::error::EvalError;
use super::functions;
use super::program::{Fold, GROWTH, Node, Program, Qualifier, RED_ZONE, Root};
use super::value::{Map, Value};
use std::sync::Arc;

/// cel-go's `PerCallLimit`: the runtime cost one expression may reach (k8s.io/apiserver).
pub const PER_CALL_LIMIT: u64 = 1_000_000;

/// The result of one evaluation and what it cost.
#[derive(Debug)]
pub struct Evaluation {
    /// The value, or why there is none.
    pub value: Result<Value, EvalError>,
    /// The runtime cost spent, as cel-go's cost tracker counts it.
    pub cost: u64,
}

/// A map variable whose entries are evaluated only when an expression reads them, as
/// k8s.io/apiserver's lazy map serves a policy's `variables`: the entry's value (or error) is
/// computed once and kept by the implementation.
pub trait LazyMap {
    /// The variable's name (`variables`).
    fn name(&self) -> &str;
    /// The entry `key`, `None` when the map has no such entry.
    fn entry(&self, key: &str) -> Option<Result<Value, EvalError>>;
    /// Every entry's key, in order.
    fn keys(&self) -> Vec<String>;
}

/// What an evaluation may use besides its variables.
#[derive(Clone, Copy, Default)]
pub struct Environment<'a> {
    /// One more variable whose entries are evaluated when read (a policy's `variables`).
    pub lazy: Option<&'a dyn LazyMap>,
    /// What answers the authorizer library's `check`.
    pub authorizer: Option<&'a dyn super::authz::Authorizer>,
}

/// Evaluates `program` with `variables` (name, value), stopping past `limit`.
pub fn evaluate(program: &Program, variables: &[(&str, Value)], limit: u64) -> Evaluation {
    evaluate_with(program, variables, Environment::default(), limit)
}

/// [`evaluate`] in `environment`.
pub fn evaluate_with(
    program: &Program,
    variables: &[(&str, Value)],
    environment: Environment<'_>,
    limit: u64,
) -> Evaluation {
    let Environment { lazy, authorizer } = environment;
    let mut machine = Machine { variables, lazy, authorizer, locals: Vec::new(), cost: 0, limit };
    let value = machine.eval(&program.root);
    Evaluation { value, cost: machine.cost }
}

struct Machine<'a> {
    variables: &'a [(&'a str, Value)],
    lazy: Option<&'a dyn LazyMap>,
    authorizer: Option<&'a dyn super::authz::Authorizer>,
    /// Comprehension variables, innermost last; an accumulator may hold an error (cel-go's
    /// `all` goes on after an element's error and may still end `false`).
    locals: Vec<(Arc<str>, Eval)>,
    cost: u64,
    limit: u64,
}

type Eval = Result<Value, EvalError>;

/// `has(value.field)`: a map's key, an Object's field (of its Go map, when typed an Object;
/// none otherwise), a JSONPatch's field set; a list cannot be indexed by a name, and any other
/// value (a scalar, null) has no fields (cel-go's `refQualify` without
/// `EnableErrorOnBadPresenceTest`, which Kubernetes leaves off).
fn has_field(value: &Value, field: &str, object: bool) -> Result<bool, EvalError> {
    match value {
        Value::Map(map) => Ok(map.get_str(field).is_some()),
        Value::Object(o) => Ok(object && o.has(field)),
        Value::JsonPatch(patch) => patch.is_set(field),
        Value::List(_) => Err(EvalError::new("unsupported index type 'string' in list".to_string())),
        _ => Ok(false),
    }
}

/// An error that must not be absorbed by `&&`, `||` or a comprehension: the cost limit.
fn cancelled(result: &Eval) -> bool {
    matches!(result, Err(e) if e.cost_exceeded)
}

impl Machine<'_> {
    fn charge(&mut self, cost: u64) -> Result<(), EvalError> {
        self.cost = self.cost.saturating_add(cost);
        if self.cost > self.limit {
            return Err(EvalError::cost_limit_exceeded());
        }
        Ok(())
    }

    fn eval(&mut self, node: &Node) -> Eval {
        stacker::maybe_grow(RED_ZONE, GROWTH, || self.eval_node(node))
    }

    fn eval_node(&mut self, node: &Node) -> Eval {
        match node {
            Node::Const(value) => Ok(value.clone()),
            Node::Attribute { root, qualifiers } => self.attribute(root, qualifiers),
            Node::Has { operand, field, object } => self.has(operand, field, *object),
            Node::Call { function, target, args, priced } => self.call(function, target.as_deref(), args, *priced),
            Node::And(left, right) => self.logical(left, right, false),
            Node::Or(left, right) => self.logical(left, right, true),
            Node::Conditional { condition, truthy, falsy } => match self.eval(condition)? {
                Value::Bool(true) => self.branch(truthy),
                Value::Bool(false) => self.branch(falsy),
                _ => Err(EvalError::no_such_overload()),
            },
            Node::InSet { element, set } => self.in_set(element, set),
            Node::OptionalOr { optional, alternative, value } => self.optional_or(optional, alternative, *value),
            Node::List { elements, optional } => self.list(elements, optional),
            Node::Map { entries } => self.map(entries),
            Node::Struct { type_name, fields } => self.structure(type_name, fields),
            Node::Fold(fold) => self.fold(fold),
        }
    }

    /// A branch of `c ? t : f` or an index: cel-go resolves one that is an attribute without
    /// counting the attribute itself (its qualifiers still count).
    fn branch(&mut self, node: &Node) -> Eval {
        match node {
            Node::Attribute { root, qualifiers } => self.resolve(root, qualifiers),
            other => self.eval(other),
        }
    }

    fn attribute(&mut self, root: &Root, qualifiers: &[Qualifier]) -> Eval {
        let value = self.resolve(root, qualifiers);
        if cancelled(&value) {
            return value;
        }
        self.charge(1)?;
        value
    }

    /// The attribute's value, each qualifier counted as cel-go observes it: always, but once
    /// the value is optional (an optional qualifier, or an optional operand) only when it found
    /// something; after one found nothing, the rest are not applied.
    fn resolve(&mut self, root: &Root, qualifiers: &[Qualifier]) -> Eval {
        let mut qualifiers = qualifiers;
        let mut value = match root {
            Root::Variable(name) => match self.lazy_entry(name, qualifiers.first()) {
                Some(entry) => {
                    qualifiers = &qualifiers[1..];
                    self.charge(1)?;
                    entry
                }
                None => self.variable(name),
            },
            Root::Local(name) => self.local(name),
            Root::Relative(operand) => self.eval(operand),
        };
        for qualifier in qualifiers {
            let Ok(current) = value else { break };
            if matches!(current, Value::Optional(None)) {
                return Ok(current);
            }
            let optional = matches!(current, Value::Optional(_))
                || matches!(
                    qualifier,
                    Qualifier::Field { optional: true, .. } | Qualifier::Index { optional: true, .. }
                );
            value = self.qualify(current, qualifier);
            let missed = optional && matches!(value, Ok(Value::Optional(None)) | Err(_));
            if cancelled(&value) {
                return value;
            }
            if !missed {
                self.charge(1)?;
            }
        }
        value
    }

    /// `x in [constants]` as cel-go's set membership: found only among elements of the same
    /// type (the set holds the lossless numeric conversions of its numbers); no call cost.
    fn in_set(&mut self, element: &Node, set: &[Value]) -> Eval {
        let value = self.eval(element)?;
        Ok(Value::Bool(set.iter().any(|member| member.type_of() == value.type_of() && member.equals(&value))))
    }

    /// The entry of the lazy map `name` that `qualifier` (a field) selects, evaluated now; `None`
    /// when `name` is not the lazy map or the qualifier does not name an entry by a constant.
    fn lazy_entry(&self, name: &str, qualifier: Option<&Qualifier>) -> Option<Eval> {
        let lazy = self.lazy.filter(|lazy| lazy.name() == name)?;
        let (key, optional) = match qualifier? {
            Qualifier::Field { name, optional, .. } => (name.clone(), *optional),
            Qualifier::Index { key, optional } => match &**key {
                Node::Const(Value::String(key)) => (key.clone(), *optional),
                _ => return None,
            },
        };
        let entry = lazy.entry(&key);
        Some(match (entry, optional) {
            (Some(value), false) => value,
            (Some(value), true) => value.map(|v| Value::Optional(Some(Arc::new(v)))),
            (None, true) => Ok(Value::Optional(None)),
            (None, false) => Err(EvalError::no_such_key(&Value::String(key))),
        })
    }

    fn variable(&self, name: &str) -> Eval {
        if let Some(lazy) = self.lazy.filter(|lazy| lazy.name() == name) {
            // The whole map is read: every entry is evaluated.
            let mut entries = Vec::new();
            for key in lazy.keys() {
                let value = lazy.entry(&key).unwrap_or_else(|| Err(EvalError::no_such_key(&Value::string(&key))))?;
                entries.push((Value::string(&key), value));
            }
            return Ok(Value::Map(Arc::new(Map::new(entries)?)));
        }
        let found = self.variables.iter().find(|(n, _)| *n == name);
        found.map(|(_, v)| v.clone()).ok_or_else(|| EvalError::new(format!("no such attribute(s): {name}")))
    }

    fn local(&self, name: &str) -> Eval {
        let found = self.locals.iter().rev().find(|(n, _)| &**n == name);
        found.map(|(_, v)| v.clone()).unwrap_or_else(|| Err(EvalError::new(format!("no such attribute(s): {name}"))))
    }

    fn qualify(&mut self, value: Value, qualifier: &Qualifier) -> Eval {
        match qualifier {
            Qualifier::Field { name, optional, object: true } if matches!(value, Value::Object(_)) => {
                let Value::Object(object) = &value else { return Err(EvalError::no_such_overload()) };
                object.select(name, *optional)
            }
            Qualifier::Field { name, optional, .. } => {
                functions::select(&value, &Value::String(name.clone()), *optional, true)
            }
            Qualifier::Index { key, optional } => {
                // An attribute as the index is resolved uncounted, as a branch of `?:` is.
                let key = self.branch(key)?;
                functions::select(&value, &key, *optional, false)
            }
        }
    }

    /// `has(operand.field)`, which cel-go resolves as one attribute whose last qualifier tests
    /// the field: the operand's qualifiers counted as [`Self::resolve`] counts them (the
    /// attribute itself costs nothing), the test one more, but once the operand is optional
    /// (`has(a.?b.c)`) only when the field is there; an absent optional operand has nothing.
    fn has(&mut self, operand: &Node, field: &Arc<str>, object: bool) -> Eval {
        let value = match operand {
            Node::Attribute { root, qualifiers } => self.resolve(root, qualifiers)?,
            other => self.eval(other)?,
        };
        match value {
            Value::Optional(None) => Ok(Value::Bool(false)),
            Value::Optional(Some(inner)) => {
                let present = has_field(&inner, field, object)?;
                if present {
                    self.charge(1)?;
                }
                Ok(Value::Bool(present))
            }
            other => {
                self.charge(1)?;
                has_field(&other, field, object).map(Value::Bool)
            }
        }
    }

    fn optional_or(&mut self, optional: &Node, alternative: &Node, value: bool) -> Eval {
        match (self.eval(optional)?, value) {
            (Value::Optional(Some(inner)), true) => Ok((*inner).clone()),
            (present @ Value::Optional(Some(_)), false) => Ok(present),
            (Value::Optional(None), true) => self.eval(alternative),
            (Value::Optional(None), false) => match self.eval(alternative)? {
                alternative @ Value::Optional(_) => Ok(alternative),
                _ => Err(EvalError::no_such_overload()),
            },
            _ => Err(EvalError::no_such_overload()),
        }
    }

    fn call(&mut self, function: &str, target: Option<&Node>, args: &[Node], priced: bool) -> Eval {
        // cel-go evaluates the arguments of a call of three or more (the target counted), and of
        // `matches`, `find` and `findAll` with a constant pattern (compiled once), one after the
        // other and stops at the first error: the rest are not evaluated, and the call is not
        // charged (its cost tracker finds not all of its arguments).
        let arity = args.len() + usize::from(target.is_some());
        let stops_at_error = arity >= 3
            || (matches!(function, "matches" | "find" | "findAll") && matches!(args.last(), Some(Node::Const(_))));
        let target = target.map(|t| self.eval(t));
        if let Some(t) = &target
            && (cancelled(t) || (stops_at_error && t.is_err() && !args.is_empty()))
        {
            return t.clone();
        }
        let mut values = Vec::with_capacity(args.len());
        for (index, arg) in args.iter().enumerate() {
            let value = self.eval(arg);
            if cancelled(&value) || (stops_at_error && value.is_err() && index + 1 < args.len()) {
                return value;
            }
            values.push(value);
        }
        let result = match (&target, values.iter().find(|v| v.is_err())) {
            (Some(Err(error)), _) | (_, Some(Err(error))) => Err(error.clone()),
            _ => {
                let target = target.as_ref().and_then(|t| t.as_ref().ok());
                let args: Vec<&Value> = values.iter().filter_map(|v| v.as_ref().ok()).collect();
                if functions::result_size(function, target, &args) > self.limit.saturating_sub(self.cost) {
                    // Cancelled before building a result the cost would refuse anyway.
                    return Err(EvalError::cost_limit_exceeded());
                }
                match target.and_then(|t| super::authz::call_member(function, t, &args, self.authorizer)) {
                    Some(result) => result,
                    None => functions::call(function, target, &args),
                }
            }
        };
        let authz_cost = target.as_ref().and_then(|t| super::authz::call_cost(function, t.as_ref().ok()));
        let args: Vec<&Eval> = target.iter().chain(&values).collect();
        let cost = match authz_cost {
            Some(cost) => cost,
            None if priced => functions::call_cost(function, &args, result.as_ref().ok()),
            None => 1,
        };
        self.charge(cost)?;
        result
    }

    /// `&&` (`or` false) and `||` (`or` true), as cel-go: the deciding value wins over an error
    /// on either side; otherwise the first error.
    fn logical(&mut self, left: &Node, right: &Node, or: bool) -> Eval {
        let left = self.eval(left);
        if cancelled(&left) {
            return left;
        }
        if matches!(left, Ok(Value::Bool(b)) if b == or) {
            return Ok(Value::Bool(or));
        }
        let right = self.eval(right);
        if cancelled(&right) || matches!(right, Ok(Value::Bool(b)) if b == or) {
            return right;
        }
        for side in [left, right] {
            match side {
                Ok(Value::Bool(_)) => {}
                Ok(_) => return Err(EvalError::no_such_overload()),
                Err(error) => return Err(error),
            }
        }
        Ok(Value::Bool(!or))
    }

    /// A list literal, as cel-go's: the elements in order up to the first error, which is the
    /// list's; the list's cost is charged either way.
    fn list(&mut self, elements: &[Node], optional: &[usize]) -> Eval {
        let mut values = Vec::with_capacity(elements.len());
        let mut outcome = Ok(());
        for (index, element) in elements.iter().enumerate() {
            match (self.eval(element), optional.contains(&index)) {
                (Err(error), _) => {
                    outcome = Err(error);
                    break;
                }
                (Ok(Value::Optional(inner)), true) => values.extend(inner.map(|v| (*v).clone())),
                (Ok(_), true) => {
                    outcome = Err(EvalError::no_such_overload());
                    break;
                }
                (Ok(value), false) => values.push(value),
            }
        }
        if matches!(&outcome, Err(e) if e.cost_exceeded) {
            return outcome.map(|()| Value::Null);
        }
        self.charge(functions::LIST_CREATE_COST)?;
        outcome.map(|()| Value::list(values))
    }

    /// A map literal, as cel-go's: each key, then its value, up to the first error.
    fn map(&mut self, entries: &[(Node, Node, bool)]) -> Eval {
        let mut values = Vec::with_capacity(entries.len());
        let mut outcome = Ok(());
        for (key, value, optional) in entries {
            let entry = self.eval(key).and_then(|key| self.eval(value).map(|value| (key, value)));
            match (entry, optional) {
                (Err(error), _) => {
                    outcome = Err(error);
                    break;
                }
                (Ok((key, Value::Optional(inner))), true) => values.extend(inner.map(|v| (key, (*v).clone()))),
                (Ok(_), true) => {
                    outcome = Err(EvalError::no_such_overload());
                    break;
                }
                (Ok(entry), false) => values.push(entry),
            }
        }
        if matches!(&outcome, Err(e) if e.cost_exceeded) {
            return outcome.map(|()| Value::Null);
        }
        self.charge(functions::MAP_CREATE_COST)?;
        outcome.and_then(|()| Ok(Value::Map(Arc::new(Map::new(values)?))))
    }

    /// A struct literal, as cel-go's `evalObj`: each field in order up to the first error, an
    /// optional field left out when none; then the struct's cost, charged either way.
    fn structure(&mut self, type_name: &str, fields: &[(Arc<str>, Node, bool)]) -> Eval {
        let mut values = Vec::with_capacity(fields.len());
        let mut outcome = Ok(());
        for (name, node, optional) in fields {
            match (self.eval(node), optional) {
                (Err(error), _) => {
                    outcome = Err(error);
                    break;
                }
                (Ok(Value::Optional(inner)), true) => values.extend(inner.map(|v| (name.clone(), (*v).clone()))),
                (Ok(other), true) => {
                    let message = format!(
                        "cannot initialize optional entry '{name}' from non-optional value {}",
                        other.display()
                    );
                    outcome = Err(EvalError::new(message));
                    break;
                }
                (Ok(value), false) => values.push((name.clone(), value)),
            }
        }
        if matches!(&outcome, Err(e) if e.cost_exceeded) {
            return outcome.map(|()| Value::Null);
        }
        self.charge(functions::STRUCT_CREATE_COST)?;
        outcome.and_then(|()| super::objects::construct(type_name, values))
    }

    fn fold(&mut self, fold: &Fold) -> Eval {
        let range = self.eval(&fold.range)?;
        let items: Vec<(Value, Option<Value>)> = match (&range, fold.iter_var2.is_some()) {
            (Value::List(items), false) => items.iter().map(|v| (v.clone(), None)).collect(),
            (Value::List(items), true) => {
                items.iter().enumerate().map(|(i, v)| (Value::Int(i as i64), Some(v.clone()))).collect()
            }
            (Value::Map(map), false) => map.keys().map(|k| (k.clone(), None)).collect(),
            (Value::Map(map), true) => map.entries().map(|(k, v)| (k.clone(), Some(v.clone()))).collect(),
            (other, _) => {
                let go_type = functions::go_type_name(other);
                return Err(EvalError::new(format!("got '{go_type}', expected iterable type")));
            }
        };
        let init = self.eval(&fold.init);
        if cancelled(&init) {
            return init;
        }
        let depth = self.locals.len();
        self.locals.push((fold.accu_var.clone(), init));
        let outcome = self.iterate(fold, items);
        let result = outcome.and_then(|_| self.eval(&fold.result));
        self.locals.truncate(depth);
        result
    }

    fn iterate(&mut self, fold: &Fold, items: Vec<(Value, Option<Value>)>) -> Result<(), EvalError> {
        let accu = self.locals.len() - 1;
        for (first, second) in items {
            self.locals.push((fold.iter_var.clone(), Ok(first)));
            if let (Some(name), Some(value)) = (&fold.iter_var2, second) {
                self.locals.push((name.clone(), Ok(value)));
            }
            let condition = self.eval(&fold.condition);
            if cancelled(&condition) {
                return condition.map(|_| ());
            }
            if matches!(condition, Ok(Value::Bool(false))) {
                self.locals.truncate(accu + 1);
                return Ok(());
            }
            let step = self.eval(&fold.step);
            if cancelled(&step) {
                return step.map(|_| ());
            }
            self.locals.truncate(accu + 1);
            self.locals[accu].1 = step;
        }
        Ok(())
    }
}
