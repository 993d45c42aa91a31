//! cel-go's type checker (checker/checker.go) as Kubernetes' environment runs it: each
//! expression typed from the declared variables and the environment's function signatures
//! (overloads resolved by unification, type parameters bound and substituted), identifiers,
//! fields of declared object types and function names checked, list and map literals of mixed
//! types typed `dyn` (Kubernetes refuses those after, with cel-go's homogeneous-literal
//! validator: the `validate` module), comprehension variables typed from their range, optional
//! selections and entries typed `optional_type`; every error reported as cel-go reports it.

mod issues;
mod unify;
mod validate;

use super::decls::{CelType, Declarations};
use super::error::CompileError;
use super::overloads::{self, Function, Overload};
use super::program::{GROWTH, RED_ZONE};
use cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedEntryExpr, IdedExpr, ListExpr, LiteralValue, SelectExpr,
    SourceInfo, StructExpr,
};
use issues::Issues;
use std::collections::HashMap;
use std::sync::Arc;
use unify::Mapping;

/// What checking an expression tells its planner.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    /// Each expression's type (type parameters left unbound made dyn), by id: the overload a
    /// call resolves to, and so its cost, follows from its operands'.
    pub types: HashMap<u64, CelType>,
    /// The identifiers (and qualified names: `google.protobuf.Duration`) whose type is a type,
    /// by id, with the name they resolve to: cel-go plans each as the type of that name (and
    /// fails when there is none: a comprehension variable bound to a type, `x`).
    pub type_names: HashMap<u64, String>,
    /// Each call's resolution, by id: the function (a namespace's named in full, its target
    /// then no operand, as cel-go rewrites the call) and the ids of the overloads that fit.
    pub calls: HashMap<u64, Resolved>,
}

/// The function a call resolved to and the overloads its operands' types fit (cel-go's
/// reference of the call), which its estimated cost follows.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub function: String,
    pub overloads: Vec<&'static str>,
    /// Whether the call names a namespace's function (`sets.contains(a, b)`), not a member.
    pub namespaced: bool,
}

/// Checks `expr` (parsed from `info`'s source) against `declarations` and Kubernetes' functions,
/// then runs the checks cel-go's environment runs on a checked expression.
pub(crate) fn check(expr: &IdedExpr, info: &SourceInfo, declarations: &Declarations) -> Result<Checked, CompileError> {
    let checked = types(expr, info, declarations)?;
    let mut issues = Issues::default();
    validate::validate(expr, &checked.types, &mut issues);
    if !issues.is_empty() {
        return Err(issues.into_error(info, expr));
    }
    Ok(checked)
}

/// The checker's own work: each expression typed, or its errors.
fn types(expr: &IdedExpr, info: &SourceInfo, declarations: &Declarations) -> Result<Checked, CompileError> {
    let mut checker = Checker {
        declarations,
        scopes: Vec::new(),
        types: HashMap::new(),
        names: HashMap::new(),
        calls: HashMap::new(),
        mapping: Mapping::default(),
        fresh: 0,
        issues: Issues::default(),
    };
    checker.check(expr);
    if !checker.issues.is_empty() {
        return Err(checker.issues.into_error(info, expr));
    }
    let mapping = &checker.mapping;
    let types = checker.types.iter().map(|(id, t)| (*id, unify::substitute(mapping, t, true))).collect();
    let types: HashMap<u64, CelType> = types;
    if types.values().any(CelType::holds_nil) {
        // cel-go's checked expression cannot hold a nil type (`JSONPatch{}.x`).
        let issues = "unexpected compilation error: missing type conversion to proto: ".to_string();
        return Err(CompileError { issues, stage: super::error::Stage::Check });
    }
    let mut type_names = checker.names;
    type_names.retain(|id, _| matches!(types.get(id), Some(CelType::Type(_))));
    Ok(Checked { types, type_names, calls: checker.calls })
}

struct Checker<'a> {
    declarations: &'a Declarations,
    /// The comprehensions' variables in scope, innermost scope last.
    scopes: Vec<Vec<(String, CelType)>>,
    /// Each expression's type, by id, before the final substitution.
    types: HashMap<u64, CelType>,
    /// What each identifier (or qualified name) resolved to, by id.
    names: HashMap<u64, String>,
    /// What each call resolved to, by id.
    calls: HashMap<u64, Resolved>,
    /// The type parameters bound so far.
    mapping: Mapping,
    /// How many fresh type variables (`_var0`, ...) were made.
    fresh: usize,
    issues: Issues,
}

impl Checker<'_> {
    fn check(&mut self, e: &IdedExpr) {
        stacker::maybe_grow(RED_ZONE, GROWTH, || self.check_node(e));
    }

    fn check_node(&mut self, e: &IdedExpr) {
        match &e.expr {
            Expr::Literal(literal) => self.set(e.id, literal_type(literal)),
            Expr::Ident(name) => self.ident(e.id, name),
            Expr::Select(select) => self.select(e, select),
            Expr::Call(call) => self.call(e, call),
            Expr::List(list) => self.list(e, list),
            Expr::Map(map) => self.map(e, &map.entries),
            Expr::Struct(structure) => self.structure(e, structure),
            Expr::Comprehension(fold) => self.comprehension(e, fold),
            Expr::Unspecified => self.set(e.id, CelType::Error),
        }
    }

    fn set(&mut self, id: u64, t: CelType) {
        self.types.insert(id, t);
    }

    fn type_of(&self, id: u64) -> CelType {
        self.types.get(&id).cloned().unwrap_or(CelType::Error)
    }

    /// Whether `t1` is assignable to `t2`, binding type parameters if it is.
    fn assignable(&mut self, t1: &CelType, t2: &CelType) -> bool {
        match unify::assignable(&self.mapping, t1, t2) {
            Some(mapping) => {
                self.mapping = mapping;
                true
            }
            None => false,
        }
    }

    fn substituted(&self, t: &CelType) -> CelType {
        unify::substitute(&self.mapping, t, false)
    }

    fn fresh_variable(&mut self) -> CelType {
        let name = format!("_var{}", self.fresh);
        self.fresh += 1;
        CelType::Param(Arc::from(name))
    }

    fn mismatch(&mut self, id: u64, expected: &CelType, found: &CelType) {
        self.issues.report(id, format!("expected type '{expected}' but found '{found}'"));
    }

    fn undeclared(&mut self, id: u64, name: &str) {
        self.issues.report(id, format!("undeclared reference to '{name}' (in container '')"));
    }

    fn ident(&mut self, id: u64, name: &str) {
        match self.resolve(name) {
            Some(resolved) => self.resolved(id, name, resolved),
            None => {
                self.set(id, CelType::Error);
                self.undeclared(id, name);
            }
        }
    }

    /// The name `name` at `id` resolved to a variable or a type name of type `t`.
    fn resolved(&mut self, id: u64, name: &str, t: CelType) {
        self.set(id, t);
        self.names.insert(id, name.trim_start_matches('.').to_string());
    }

    /// A simple name: a comprehension's variable, else a global (`.name` is always a global).
    fn resolve(&self, name: &str) -> Option<CelType> {
        if name.starts_with('.') {
            return self.global(name);
        }
        self.local(name).cloned().or_else(|| self.global(name))
    }

    fn local(&self, name: &str) -> Option<&CelType> {
        self.scopes.iter().rev().flat_map(|scope| scope.iter().rev()).find(|(n, _)| n == name).map(|(_, t)| t)
    }

    /// A declared variable, else a type's name (of type `type(T)`).
    fn global(&self, name: &str) -> Option<CelType> {
        let name = name.strip_prefix('.').unwrap_or(name);
        if let Some(t) = self.declarations.variable(name) {
            return Some(t.clone());
        }
        let named = type_identifier(name).or_else(|| self.declarations.object_type(name).map(CelType::Object));
        named.map(CelType::type_of)
    }

    fn select(&mut self, e: &IdedExpr, select: &SelectExpr) {
        // `a.b.c` may name a variable or a type (`google.protobuf.Duration`) as a whole.
        if let Some(qualifiers) = qualifiers(e) {
            let resolved = match qualifiers.first() {
                Some(first) if self.local(first).is_some() => None,
                _ => self.global(&qualifiers.join(".")),
            };
            if let Some(resolved) = resolved {
                return self.resolved(e.id, &qualifiers.join("."), resolved);
            }
        }
        let result = self.select_field(e.id, &select.operand, &select.field, false);
        let result = if select.test { CelType::Bool } else { result };
        let result = self.substituted(&result);
        self.set(e.id, result);
    }

    /// The type of `operand.field` (`operand.?field` when `optional`), reported at `id`.
    fn select_field(&mut self, id: u64, operand: &IdedExpr, field: &str, optional: bool) -> CelType {
        self.check(operand);
        let operand_type = self.substituted(&self.type_of(operand.id));
        let (target, in_optional) = match operand_type.optional_value() {
            Some(value) => (value.clone(), true),
            None => (operand_type, false),
        };
        let result = match &target {
            CelType::Map(_, value) => (**value).clone(),
            CelType::Object(object) if !object.is_declared() => {
                self.issues.report(id, format!("unexpected failed resolution of '{}'", object.name()));
                CelType::Error
            }
            CelType::Object(object) => match object.field(field) {
                Some(t) => t.clone(),
                None => {
                    self.issues.report(id, format!("undefined field '{field}'"));
                    CelType::Error
                }
            },
            CelType::Param(_) => {
                self.assignable(&CelType::Dyn, &target);
                CelType::Dyn
            }
            t if t.is_dyn_or_error() => CelType::Dyn,
            t => {
                self.issues.report(id, format!("type '{t}' does not support field selection"));
                CelType::Dyn
            }
        };
        if in_optional || optional { CelType::optional(result) } else { result }
    }

    fn call(&mut self, e: &IdedExpr, call: &CallExpr) {
        if call.func_name == "_?._" {
            return self.optional_select(e, call);
        }
        for arg in &call.args {
            self.check(arg);
        }
        let patch_types = self.declarations.has_patch_types();
        let Some(target) = call.target.as_deref() else {
            return match overloads::function(&call.func_name, patch_types) {
                Some(function) => self.resolve_overload(e.id, &call.func_name, function, None, &call.args),
                None => {
                    self.undeclared(e.id, &call.func_name);
                    self.set(e.id, CelType::Error);
                }
            };
        };
        // `optional.of(x)`, `sets.contains(a, b)`: a function of a namespace.
        if let Some(namespace) = qualified_name(target) {
            let name = format!("{}.{}", namespace.trim_start_matches('.'), call.func_name);
            if let Some(function) = overloads::function(&name, patch_types) {
                self.resolve_overload(e.id, &name, function, None, &call.args);
                if let Some(resolved) = self.calls.get_mut(&e.id) {
                    resolved.namespaced = true;
                }
                return;
            }
        }
        self.check(target);
        match overloads::function(&call.func_name, patch_types) {
            Some(function) => self.resolve_overload(e.id, &call.func_name, function, Some(target), &call.args),
            None => {
                self.set(e.id, CelType::Error);
                self.undeclared(e.id, &call.func_name);
            }
        }
    }

    /// `operand.?field`, which the parser writes `_?._(operand, 'field')`.
    fn optional_select(&mut self, e: &IdedExpr, call: &CallExpr) {
        let field = match (&call.target, call.args.as_slice()) {
            (None, [_, field]) => field,
            _ => {
                let member = if call.target.is_some() { " member call with" } else { "" };
                let message = format!(
                    "unsupported optional field selection: incorrect signature.{member} argument count: {}",
                    call.args.len()
                );
                return self.issues.report(e.id, message);
            }
        };
        let Expr::Literal(LiteralValue::String(name)) = &field.expr else {
            return self.issues.report(field.id, "unsupported optional field selection".to_string());
        };
        let result = self.select_field(e.id, &call.args[0], name.inner(), true);
        let result = self.substituted(&result);
        self.set(e.id, result);
        self.resolved_call(e.id, "_?._", vec!["select_optional_field"], false);
    }

    /// cel-go's `resolveOverload`: the overloads of `function` the arguments' types fit, the
    /// call's type from the first (dyn when another fits with another type).
    fn resolve_overload(
        &mut self,
        id: u64,
        name: &str,
        function: &Function,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
    ) {
        let arg_types: Vec<CelType> = target.into_iter().chain(args).map(|a| self.type_of(a.id)).collect();
        if matches!(name, "_&&_" | "_||_") {
            let first = function.overloads.first().map(|o| o.id).into_iter().collect();
            self.resolved_call(id, name, first, false);
            return self.logical(id, args, &arg_types);
        }
        let mut result: Option<CelType> = None;
        let mut fitting = Vec::new();
        for overload in function.overloads.iter().filter(|o| o.member == target.is_some()) {
            let (parameters, returned) = self.instantiate(overload);
            let Some(mapping) = unify::assignable_list(&self.mapping, &arg_types, &parameters) else { continue };
            self.mapping = mapping;
            fitting.push(overload.id);
            let returned = self.substituted(&returned);
            result = Some(match result {
                None => returned,
                Some(previous) if !previous.is_dyn() && !returned.is_exactly(&previous) => CelType::Dyn,
                Some(previous) => previous,
            });
        }
        self.resolved_call(id, name, fitting, false);
        match result {
            Some(t) => self.set(id, t),
            None => {
                let arg_types: Vec<CelType> =
                    arg_types.iter().map(|t| unify::substitute(&self.mapping, t, true)).collect();
                let signature = signature(&arg_types, target.is_some());
                self.issues.report(id, format!("found no matching overload for '{name}' applied to '{signature}'"));
                self.set(id, CelType::Error);
            }
        }
    }

    fn resolved_call(&mut self, id: u64, function: &str, overloads: Vec<&'static str>, namespaced: bool) {
        self.calls.insert(id, Resolved { function: function.to_string(), overloads, namespaced });
    }

    /// `&&` and `||`: each operand must be a bool.
    fn logical(&mut self, id: u64, args: &[IdedExpr], arg_types: &[CelType]) {
        let mut failed = false;
        for (arg, t) in args.iter().zip(arg_types) {
            if !self.assignable(t, &CelType::Bool) {
                self.mismatch(arg.id, &CelType::Bool, t);
                failed = true;
            }
        }
        self.set(id, if failed { CelType::Error } else { CelType::Bool });
    }

    /// The overload's parameter and result types, its type parameters made fresh variables.
    fn instantiate(&mut self, overload: &Overload) -> (Vec<CelType>, CelType) {
        if overload.type_parameters.is_empty() {
            return (overload.parameters.clone(), overload.result.clone());
        }
        let bindings: Vec<(Arc<str>, CelType)> =
            overload.type_parameters.iter().map(|p| (p.clone(), self.fresh_variable())).collect();
        let fresh = unify::instantiation(bindings);
        let parameters = overload.parameters.iter().map(|p| unify::substitute(&fresh, p, false)).collect();
        (parameters, unify::substitute(&fresh, &overload.result, false))
    }

    fn list(&mut self, e: &IdedExpr, list: &ListExpr) {
        let mut elements: Option<CelType> = None;
        for (i, element) in list.elements.iter().enumerate() {
            self.check(element);
            let mut t = self.type_of(element.id);
            if list.optional_indices.contains(&i) {
                t = self.optional_entry(element.id, t);
            }
            elements = Some(self.join(elements, t));
        }
        let elements = elements.unwrap_or_else(|| self.fresh_variable());
        self.set(e.id, CelType::list(elements));
    }

    /// The value type of an optional entry (`[?x]`, `{?k: v}`), which must be optional or dyn.
    fn optional_entry(&mut self, id: u64, t: CelType) -> CelType {
        match t.optional_value() {
            Some(value) => value.clone(),
            None => {
                if !t.is_dyn() {
                    self.mismatch(id, &CelType::optional(t.clone()), &t);
                }
                t
            }
        }
    }

    /// The type of a literal's elements so far with one more: the more general if they unify,
    /// else dyn (Kubernetes' validator refuses mixed literals after).
    fn join(&mut self, previous: Option<CelType>, current: CelType) -> CelType {
        let Some(previous) = previous else { return current };
        if self.assignable(&previous, &current) {
            return unify::most_general(&previous, &current).clone();
        }
        CelType::Dyn
    }

    fn map(&mut self, e: &IdedExpr, entries: &[IdedEntryExpr]) {
        let (mut keys, mut values): (Option<CelType>, Option<CelType>) = (None, None);
        for entry in entries {
            let EntryExpr::MapEntry(entry) = &entry.expr else { continue };
            self.check(&entry.key);
            let key = self.type_of(entry.key.id);
            keys = Some(self.join(keys, key));
            self.check(&entry.value);
            let mut value = self.type_of(entry.value.id);
            if entry.optional {
                value = self.optional_entry(entry.value.id, value);
            }
            values = Some(self.join(values, value));
        }
        let (key, value) = match (keys, values) {
            (Some(key), Some(value)) => (key, value),
            _ => (self.fresh_variable(), self.fresh_variable()),
        };
        self.set(e.id, CelType::map(key, value));
    }

    /// `T{field: value}`: a declared object type, its fields' values of their declared types.
    fn structure(&mut self, e: &IdedExpr, structure: &StructExpr) {
        let name = structure.type_name.strip_prefix('.').unwrap_or(&structure.type_name);
        let Some(object) = self.declarations.object_type(name) else {
            self.undeclared(e.id, &structure.type_name);
            return self.set(e.id, CelType::Error);
        };
        self.set(e.id, CelType::Object(object.clone()));
        for entry in &structure.entries {
            let EntryExpr::StructField(field) = &entry.expr else { continue };
            self.check(&field.value);
            let field_type = match object.field(&field.field) {
                Some(t) => t.clone(),
                None => {
                    self.issues.report(entry.id, format!("undefined field '{}'", field.field));
                    CelType::Error
                }
            };
            let mut value = self.type_of(field.value.id);
            if field.optional {
                value = self.optional_entry(field.value.id, value);
            }
            if !self.assignable(&field_type, &value) {
                let message = format!(
                    "expected type of field '{}' is '{field_type}' but provided type is '{value}'",
                    field.field
                );
                self.issues.report(entry.id, message);
            }
        }
    }

    fn comprehension(&mut self, e: &IdedExpr, fold: &ComprehensionExpr) {
        self.check(&fold.iter_range);
        self.check(&fold.accu_init);
        let range = self.substituted(&self.type_of(fold.iter_range.id));
        let accumulator = self.type_of(fold.accu_init.id);
        self.scopes.push(vec![(fold.accu_var.clone(), accumulator.clone())]);
        let (first, second) = match &range {
            CelType::List(element) if fold.iter_var2.is_some() => (CelType::Int, (**element).clone()),
            CelType::List(element) => ((**element).clone(), CelType::Dyn),
            CelType::Map(key, value) => ((**key).clone(), (**value).clone()),
            CelType::Dyn | CelType::Error | CelType::Param(_) => {
                self.assignable(&CelType::Dyn, &range);
                (CelType::Dyn, CelType::Dyn)
            }
            other => {
                let message = format!(
                    "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
                );
                self.issues.report(fold.iter_range.id, message);
                (CelType::Error, CelType::Error)
            }
        };
        let mut variables = vec![(fold.iter_var.clone(), first)];
        variables.extend(fold.iter_var2.clone().map(|name| (name, second)));
        self.scopes.push(variables);
        self.check(&fold.loop_cond);
        self.assert_type(&fold.loop_cond, &CelType::Bool);
        self.check(&fold.loop_step);
        self.assert_type(&fold.loop_step, &accumulator);
        self.scopes.pop();
        self.check(&fold.result);
        self.scopes.pop();
        let result = self.substituted(&self.type_of(fold.result.id));
        self.set(e.id, result);
    }

    fn assert_type(&mut self, e: &IdedExpr, expected: &CelType) {
        let found = self.type_of(e.id);
        if !self.assignable(expected, &found) {
            self.mismatch(e.id, expected, &found);
        }
    }
}

fn literal_type(literal: &LiteralValue) -> CelType {
    match literal {
        LiteralValue::Boolean(_) => CelType::Bool,
        LiteralValue::Bytes(_) => CelType::Bytes,
        LiteralValue::Double(_) => CelType::Double,
        LiteralValue::Int(_) => CelType::Int,
        LiteralValue::Null => CelType::Null,
        LiteralValue::String(_) => CelType::String,
        LiteralValue::UInt(_) => CelType::Uint,
    }
}

/// The types the environment names (the standard library's, the optional type's, the IP
/// library's), as the identifiers that name them.
fn type_identifier(name: &str) -> Option<CelType> {
    let param = |name: &str| CelType::Param(Arc::from(name));
    let t = match name {
        "bool" => CelType::Bool,
        "bytes" => CelType::Bytes,
        "double" => CelType::Double,
        "int" => CelType::Int,
        "uint" => CelType::Uint,
        "string" => CelType::String,
        "null_type" => CelType::Null,
        "type" => CelType::Type(None),
        "list" => CelType::list(param("A")),
        "map" => CelType::map(param("A"), param("B")),
        "google.protobuf.Duration" | "duration" => CelType::Duration,
        "google.protobuf.Timestamp" | "timestamp" => CelType::Timestamp,
        "optional_type" => CelType::optional(param("V")),
        "net.IP" | "net.CIDR" => CelType::opaque(name),
        _ => return None,
    };
    Some(t)
}

/// The names of a selection chain on an identifier (`a.b.c`: `a`, `b`, `c`), unless a presence
/// test is among them (cel-go's `computeQualifiers`).
fn qualifiers(e: &IdedExpr) -> Option<Vec<&str>> {
    let mut names = Vec::new();
    let mut current = e;
    loop {
        match &current.expr {
            Expr::Select(select) if !select.test => {
                names.push(select.field.as_str());
                current = &select.operand;
            }
            Expr::Ident(name) if !names.is_empty() => {
                names.push(name.as_str());
                names.reverse();
                return Some(names);
            }
            _ => return None,
        }
    }
}

/// The qualified name an identifier or a selection chain on one writes (`sets`, `a.b`).
fn qualified_name(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Expr::Ident(name) => Some(name.clone()),
        _ => qualifiers(e).map(|names| names.join(".")),
    }
}

/// A call's argument types as cel-go writes them in its errors: `(int, string)`, or
/// `list(int).()` for a member call.
fn signature(arg_types: &[CelType], member: bool) -> String {
    let (target, args) = match (member, arg_types) {
        (true, [target, args @ ..]) => (format!("{target}."), args),
        _ => (String::new(), arg_types),
    };
    let args: Vec<String> = args.iter().map(|t| t.to_string()).collect();
    format!("{target}({})", args.join(", "))
}

#[cfg(test)]
mod tests;
