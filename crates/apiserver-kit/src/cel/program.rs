//! An expression compiled once into the plan the evaluator walks, once the type checker
//! (checker.rs) has accepted it, shaped as cel-go's planner shapes it (so that the runtime cost
//! counts the same steps, each call priced as its checked operand types resolve it): selections
//! and indexes on an identifier or any expression become one attribute with qualifiers, list and
//! map literals of constants and conversions of constants are folded into constants, and
//! identifiers whose type is a type are constants; struct literals are planned for a
//! mutation's types only (`Object.spec{...}`, `JSONPatch{...}`: [`super::objects`]).

use super::checker::{self, Checked};
use super::decls::{CelType, Declarations};
use super::error::{CompileError, EvalError, Stage};
use super::functions;
use super::pricing;
use super::value::{Map, Type, Value};
use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue, operators};
use std::sync::Arc;

/// cel-go's parser recursion limit (`expression recursion limit exceeded: 250`).
const MAX_RECURSION_DEPTH: u16 = 250;
/// The stack the parser runs on: virtual memory, committed only as deep as a parse goes.
const PARSER_STACK: usize = 256 << 20;
/// What the planner and the evaluator keep free before they grow their stack by [`GROWTH`].
pub(crate) const RED_ZONE: usize = 128 << 10;
/// How much stack the planner and the evaluator add when they run short.
pub(crate) const GROWTH: usize = 4 << 20;

/// A compiled expression.
#[derive(Debug)]
pub struct Program {
    pub(crate) root: Node,
    source: String,
    output: CelType,
    /// The parsed expression and what checking it found, which its cost is estimated from
    /// (cel-go estimates the checked expression, not the plan).
    pub(crate) parsed: IdedExpr,
    pub(crate) checked: Checked,
}

impl Program {
    /// Parses `source` with the optional syntax on (`a.?b`, `[?x]`), as Kubernetes' environment
    /// has it, checks its types and plans it; `variables` are the names the expression may read
    /// besides its comprehensions' own, typed as k8s.io/apiserver's admission-policy
    /// environment types them ([`Declarations::admission`]: `request` and `namespaceObject`
    /// objects with declared fields, any other name dyn).
    pub fn compile(source: &str, variables: &[&str]) -> Result<Program, CompileError> {
        Program::compile_declared(source, &Declarations::admission(variables))
    }

    /// [`Program::compile`] with variables of any declared types.
    pub fn compile_declared(source: &str, declarations: &Declarations) -> Result<Program, CompileError> {
        // The parser takes far more stack per level than a worker thread has for 250 levels
        // (cel-go's limit, which the parser keeps too): it runs on a stack of its own.
        let (parsed, info) = stacker::grow(PARSER_STACK, || {
            super::macros::parser().max_recursion_depth(MAX_RECURSION_DEPTH).parse_with_source_info(source)
        })
        .map_err(|errors| CompileError { issues: errors.to_string(), stage: Stage::Parse })?;
        if depth(&parsed) > usize::from(MAX_RECURSION_DEPTH) {
            // cel-go's visitor refuses what nests deeper than its limit (a chain of selections,
            // which its grammar parses without nesting rules, included).
            let issues = "ERROR: <input>:-1:0: max recursion depth exceeded".into();
            return Err(CompileError { issues, stage: Stage::Parse });
        }
        let checked = checker::check(&parsed, &info, declarations)?;
        let variables: Vec<&str> = declarations.names().collect();
        let patch_types = declarations.has_patch_types();
        let mut planner = Planner { variables: &variables, locals: Vec::new(), source, checked: &checked, patch_types };
        let root = planner.plan(&parsed)?;
        let output = checked.types.get(&parsed.id).cloned().unwrap_or(CelType::Dyn);
        Ok(Program { root, source: source.to_string(), output, parsed, checked })
    }

    /// The expression's text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The type the checker gave the whole expression (`dyn` when it could not tell).
    pub fn output_type(&self) -> &CelType {
        &self.output
    }
}

/// One step of a plan.
#[derive(Debug)]
pub(crate) enum Node {
    Const(Value),
    /// A variable or comprehension variable read, then qualified.
    Attribute {
        root: Root,
        qualifiers: Vec<Qualifier>,
    },
    /// `has(x.f)`: whether the last field is present.
    Has {
        operand: Box<Node>,
        field: Arc<str>,
        /// Whether the operand is typed a mutation's `Object` (its field tested in its Go map).
        object: bool,
    },
    /// A function call; `priced` false when cel-go charges it its default of 1 (the checked
    /// types leave no single overload whose own formula prices it).
    Call {
        function: Arc<str>,
        target: Option<Box<Node>>,
        args: Vec<Node>,
        priced: bool,
    },
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Conditional {
        condition: Box<Node>,
        truthy: Box<Node>,
        falsy: Box<Node>,
    },
    List {
        elements: Vec<Node>,
        optional: Vec<usize>,
    },
    Map {
        entries: Vec<(Node, Node, bool)>,
    },
    Fold(Box<Fold>),
    /// `T{field: value, ?field: optional}`: a mutation's object (`Object.spec{...}`,
    /// `JSONPatch{...}`), each field with whether it is optional.
    Struct {
        type_name: Arc<str>,
        fields: Vec<(Arc<str>, Node, bool)>,
    },
    /// `x in [constants]` (cel-go's set membership), the constants with their numbers' lossless
    /// conversions.
    InSet {
        element: Box<Node>,
        set: Vec<Value>,
    },
    /// `a.or(b)` (`value` false) and `a.orValue(b)` (true): `b` only evaluated when `a` is
    /// none, and no call cost (cel-go plans them as their own steps).
    OptionalOr {
        optional: Box<Node>,
        alternative: Box<Node>,
        value: bool,
    },
}

#[derive(Debug)]
pub(crate) enum Root {
    Variable(Arc<str>),
    /// A comprehension's variable, counted from the innermost.
    Local(Arc<str>),
    /// A selection on something that is not an identifier (`f(x).a`).
    Relative(Box<Node>),
}

#[derive(Debug)]
pub(crate) enum Qualifier {
    /// `.name`; `object` when the operand is typed a mutation's `Object` (cel-go then selects
    /// the field of the object's Go map: a missing one is null).
    Field {
        name: Arc<str>,
        optional: bool,
        object: bool,
    },
    Index {
        key: Box<Node>,
        optional: bool,
    },
}

#[derive(Debug)]
pub(crate) struct Fold {
    pub iter_var: Arc<str>,
    pub iter_var2: Option<Arc<str>>,
    pub accu_var: Arc<str>,
    pub range: Node,
    pub init: Node,
    pub condition: Node,
    pub step: Node,
    pub result: Node,
}

struct Planner<'a> {
    variables: &'a [&'a str],
    /// The comprehension variables in scope, innermost last.
    locals: Vec<String>,
    source: &'a str,
    /// What the type checker found.
    checked: &'a Checked,
    /// Whether a mutation's types are declared (their struct literals planned).
    patch_types: bool,
}

impl Planner<'_> {
    fn plan(&mut self, expr: &IdedExpr) -> Result<Node, CompileError> {
        stacker::maybe_grow(RED_ZONE, GROWTH, || self.plan_node(expr))
    }

    fn plan_node(&mut self, expr: &IdedExpr) -> Result<Node, CompileError> {
        if let Some(name) = self.checked.type_names.get(&expr.id) {
            return type_constant(name);
        }
        match &expr.expr {
            Expr::Literal(literal) => Ok(Node::Const(literal_value(literal))),
            Expr::Ident(name) => self.ident(name),
            Expr::Select(select) if select.test => {
                let object = self.typed_object(&select.operand);
                let operand = self.plan(&select.operand)?;
                Ok(Node::Has { operand: Box::new(operand), field: Arc::from(select.field.as_str()), object })
            }
            Expr::Select(select) => {
                let object = self.typed_object(&select.operand);
                let operand = self.plan(&select.operand)?;
                let name = Arc::from(select.field.as_str());
                Ok(qualify(operand, Qualifier::Field { name, optional: false, object }))
            }
            Expr::Call(call) => self.call(&call.func_name, call.target.as_deref(), &call.args),
            Expr::List(list) => self.list(&list.elements, &list.optional_indices),
            Expr::Map(map) => self.map(&map.entries),
            Expr::Comprehension(fold) => self.fold(fold),
            Expr::Struct(s) => self.structure(s),
            Expr::Unspecified => Err(self.unsupported("an empty expression")),
        }
    }

    fn ident(&mut self, name: &str) -> Result<Node, CompileError> {
        if self.locals.iter().any(|l| l == name) {
            return Ok(Node::Attribute { root: Root::Local(Arc::from(name)), qualifiers: Vec::new() });
        }
        // `.name`: the global `name`, whatever comprehension variable has that name.
        let name = name.strip_prefix('.').unwrap_or(name);
        if self.variables.contains(&name) {
            return Ok(Node::Attribute { root: Root::Variable(Arc::from(name)), qualifiers: Vec::new() });
        }
        if let Some(t) = Type::named(name) {
            return Ok(Node::Const(Value::Type(t)));
        }
        Err(self.error(&format!("undeclared reference to '{name}' (in container '')")))
    }

    fn call(&mut self, function: &str, target: Option<&IdedExpr>, args: &[IdedExpr]) -> Result<Node, CompileError> {
        if let (operators::INDEX | operators::OPT_INDEX, None, [operand, key]) = (function, target, args) {
            let operand = self.plan(operand)?;
            let key = Box::new(self.plan(key)?);
            return Ok(qualify(operand, Qualifier::Index { key, optional: function == operators::OPT_INDEX }));
        }
        if let (operators::OPT_SELECT, None, [operand, field]) = (function, target, args) {
            let Expr::Literal(LiteralValue::String(name)) = &field.expr else {
                return Err(self.unsupported("an optional selection of a computed field"));
            };
            let object = self.typed_object(operand);
            let operand = self.plan(operand)?;
            return Ok(qualify(operand, Qualifier::Field { name: Arc::from(name.inner()), optional: true, object }));
        }
        let mut planned: Vec<Node> = args.iter().map(|a| self.plan(a)).collect::<Result<_, _>>()?;
        let priced = |function: &str, target: Option<&IdedExpr>| self.priced(function, target, args);
        match (function, target, planned.len()) {
            (operators::LOGICAL_AND | operators::LOGICAL_OR, None, 2) => {
                let (right, left) = (Box::new(planned.remove(1)), Box::new(planned.remove(0)));
                Ok(if function == operators::LOGICAL_AND { Node::And(left, right) } else { Node::Or(left, right) })
            }
            (operators::CONDITIONAL, None, 3) => {
                let falsy = Box::new(planned.remove(2));
                let truthy = Box::new(planned.remove(1));
                Ok(Node::Conditional { condition: Box::new(planned.remove(0)), truthy, falsy })
            }
            _ => {
                // `optional.of(x)`, `strings.quote(s)`: a function of a namespace, not a member.
                if let Some(Expr::Ident(namespace)) = target.map(|t| &t.expr) {
                    let namespace = namespace.strip_prefix('.').unwrap_or(namespace);
                    let qualified = format!("{namespace}.{function}");
                    if !self.is_variable(namespace) && functions::is_declared(&qualified, false, planned.len()) {
                        let priced = priced(&qualified, None);
                        return fold_conversion(Node::Call {
                            function: Arc::from(qualified),
                            target: None,
                            args: planned,
                            priced,
                        });
                    }
                }
                if let (Some(target), "or" | "orValue", 1) = (target, function, planned.len()) {
                    let optional = Box::new(self.plan(target)?);
                    let alternative = Box::new(planned.remove(0));
                    return Ok(Node::OptionalOr { optional, alternative, value: function == "orValue" });
                }
                let priced = priced(function, target);
                let target = target.map(|t| self.plan(t)).transpose()?.map(Box::new);
                if !functions::is_declared(function, target.is_some(), planned.len()) {
                    return Err(self.undeclared_function(function));
                }
                let call = Node::Call { function: Arc::from(function), target, args: planned, priced };
                fold_conversion(set_membership(call))
            }
        }
    }

    fn list(&mut self, elements: &[IdedExpr], optional: &[usize]) -> Result<Node, CompileError> {
        let elements: Vec<Node> = elements.iter().map(|e| self.plan(e)).collect::<Result<_, _>>()?;
        if optional.is_empty() && elements.iter().all(|e| matches!(e, Node::Const(_))) {
            let values = elements.into_iter().filter_map(|e| if let Node::Const(v) = e { Some(v) } else { None });
            return Ok(Node::Const(Value::list(values.collect())));
        }
        Ok(Node::List { elements, optional: optional.to_vec() })
    }

    /// A struct literal of a mutation's types (cel-go's `evalObj`); of any other type refused.
    fn structure(&mut self, s: &cel::common::ast::StructExpr) -> Result<Node, CompileError> {
        let type_name = s.type_name.strip_prefix('.').unwrap_or(&s.type_name);
        if !self.patch_types || !super::objects::is_patch_type(type_name) {
            return Err(self.unsupported(&format!("message construction {}{{...}}", s.type_name)));
        }
        let mut fields = Vec::with_capacity(s.entries.len());
        for entry in &s.entries {
            let EntryExpr::StructField(field) = &entry.expr else {
                return Err(self.unsupported("a map entry in a message"));
            };
            fields.push((Arc::from(field.field.as_str()), self.plan(&field.value)?, field.optional));
        }
        Ok(Node::Struct { type_name: Arc::from(type_name), fields })
    }

    fn map(&mut self, entries: &[cel::common::ast::IdedEntryExpr]) -> Result<Node, CompileError> {
        let mut planned = Vec::with_capacity(entries.len());
        for entry in entries {
            let EntryExpr::MapEntry(entry) = &entry.expr else {
                return Err(self.unsupported("a message field in a map"));
            };
            planned.push((self.plan(&entry.key)?, self.plan(&entry.value)?, entry.optional));
        }
        let constant = planned.iter().all(|(k, v, o)| !o && matches!((k, v), (Node::Const(_), Node::Const(_))));
        if !constant {
            return Ok(Node::Map { entries: planned });
        }
        let entries = planned.into_iter().filter_map(|(k, v, _)| match (k, v) {
            (Node::Const(k), Node::Const(v)) => Some((k, v)),
            _ => None,
        });
        let map = Map::new(entries.collect()).map_err(|e| self.error(e.message()))?;
        Ok(Node::Const(Value::Map(Arc::new(map))))
    }

    /// Whether a call of `function` on `target` and `args` is priced by its own formula, as
    /// the checked types of its operands resolve it.
    fn priced(&self, function: &str, target: Option<&IdedExpr>, args: &[IdedExpr]) -> bool {
        let type_of = |e: &IdedExpr| self.checked.types.get(&e.id).cloned().unwrap_or(CelType::Dyn);
        let types: Vec<CelType> = target.into_iter().chain(args).map(type_of).collect();
        pricing::priced_by_formula(function, &types)
    }

    fn fold(&mut self, fold: &cel::common::ast::ComprehensionExpr) -> Result<Node, CompileError> {
        let range = self.plan(&fold.iter_range)?;
        let init = self.plan(&fold.accu_init)?;
        let depth = self.locals.len();
        self.locals.push(fold.accu_var.clone());
        self.locals.push(fold.iter_var.clone());
        self.locals.extend(fold.iter_var2.clone());
        let condition = self.plan(&fold.loop_cond);
        let step = self.plan(&fold.loop_step);
        self.locals.truncate(depth);
        self.locals.push(fold.accu_var.clone());
        let result = self.plan(&fold.result);
        self.locals.truncate(depth);
        Ok(Node::Fold(Box::new(Fold {
            iter_var: Arc::from(fold.iter_var.as_str()),
            iter_var2: fold.iter_var2.as_deref().map(Arc::from),
            accu_var: Arc::from(fold.accu_var.as_str()),
            range,
            init,
            condition: condition?,
            step: step?,
            result: result?,
        })))
    }

    /// Whether the checker typed `e` a mutation's `Object` type (not `JSONPatch`).
    fn typed_object(&self, e: &IdedExpr) -> bool {
        matches!(self.checked.types.get(&e.id), Some(CelType::Object(t))
            if t.name() != super::objects::JSON_PATCH && super::objects::is_patch_type(t.name()))
    }

    fn is_variable(&self, name: &str) -> bool {
        self.locals.iter().any(|l| l == name) || self.variables.contains(&name)
    }

    fn undeclared_function(&self, function: &str) -> CompileError {
        self.error(&format!("undeclared reference to '{function}' (in container '')"))
    }

    fn unsupported(&self, what: &str) -> CompileError {
        self.error(&format!("{what} is not supported"))
    }

    fn error(&self, message: &str) -> CompileError {
        CompileError { issues: format!("ERROR: <input>: {message}\n | {}", self.source), stage: Stage::Plan }
    }
}

/// How deep `root` nests (a loop over a stack of its own: the tree may be deeper than the
/// thread's stack allows recursion).
fn depth(root: &IdedExpr) -> usize {
    let mut deepest = 0;
    let mut pending: Vec<(&IdedExpr, usize)> = vec![(root, 1)];
    while let Some((expr, level)) = pending.pop() {
        deepest = deepest.max(level);
        pending.extend(children(expr).into_iter().map(|child| (child, level + 1)));
    }
    deepest
}

/// The expressions `expr` holds.
fn children(expr: &IdedExpr) -> Vec<&IdedExpr> {
    match &expr.expr {
        Expr::Call(call) => call.target.iter().map(|t| &**t).chain(&call.args).collect(),
        Expr::Select(select) => vec![&select.operand],
        Expr::List(list) => list.elements.iter().collect(),
        Expr::Map(map) => map.entries.iter().flat_map(entry_children).collect(),
        Expr::Struct(s) => s.entries.iter().flat_map(entry_children).collect(),
        Expr::Comprehension(fold) => {
            vec![&fold.iter_range, &fold.accu_init, &fold.loop_cond, &fold.loop_step, &fold.result]
        }
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => Vec::new(),
    }
}

fn entry_children(entry: &cel::common::ast::IdedEntryExpr) -> Vec<&IdedExpr> {
    match &entry.expr {
        EntryExpr::MapEntry(entry) => vec![&entry.key, &entry.value],
        EntryExpr::StructField(field) => vec![&field.value],
    }
}

/// `operand` with one more qualifier: an attribute's own, or a new relative attribute.
fn qualify(operand: Node, qualifier: Qualifier) -> Node {
    match operand {
        Node::Attribute { root, mut qualifiers } => {
            qualifiers.push(qualifier);
            Node::Attribute { root, qualifiers }
        }
        other => Node::Attribute { root: Root::Relative(Box::new(other)), qualifiers: vec![qualifier] },
    }
}

/// A type conversion of a constant, evaluated once (cel-go's OptOptimize); an error then fails
/// the compilation, as cel-go's program instantiation fails.
fn fold_conversion(call: Node) -> Result<Node, CompileError> {
    let Node::Call { function, target: None, args, .. } = &call else { return Ok(call) };
    if !functions::is_conversion(function) || args.len() != 1 || !matches!(args[0], Node::Const(_)) {
        return Ok(call);
    }
    let Node::Const(arg) = &args[0] else { return Ok(call) };
    match functions::convert(function, arg) {
        Ok(value) => Ok(Node::Const(value)),
        // A conversion the checker let through for a constant of the wrong type (`int(dyn(true))`,
        // `string(null)`, which the IP library's overload accepts): cel-go names it.
        Err(error) if error == EvalError::no_such_overload() => {
            let issues =
                format!("program instantiation failed: no such overload: {function}({})", arg.type_of().name());
            Err(CompileError { issues, stage: Stage::Plan })
        }
        Err(error) => {
            Err(CompileError { issues: format!("program instantiation failed: {error}"), stage: Stage::Plan })
        }
    }
}

/// `x in [constants]` of primitives other than bytes becomes a set lookup (cel-go's
/// OptOptimize); `x in []` is `false` without evaluating `x`.
fn set_membership(call: Node) -> Node {
    let Node::Call { function, target: None, mut args, priced } = call else { return call };
    let members = match args.get(1) {
        Some(Node::Const(Value::List(items))) if &*function == operators::IN => items.clone(),
        _ => return Node::Call { function, target: None, args, priced },
    };
    if members.is_empty() {
        return Node::Const(Value::Bool(false));
    }
    let primitive =
        |v: &Value| matches!(v, Value::Bool(_) | Value::Int(_) | Value::Uint(_) | Value::Double(_) | Value::String(_));
    if !members.iter().all(primitive) {
        return Node::Call { function, target: None, args, priced };
    }
    let mut set = Vec::with_capacity(members.len() * 3);
    for member in members.iter() {
        set.push(member.clone());
        set.extend(lossless_conversions(member));
    }
    args.truncate(1);
    Node::InSet { element: Box::new(args.remove(0)), set }
}

/// The other numeric types a set member also stands for (cel-go adds an int's double and
/// uint, a uint's double and int, a double's int and uint when they equal it).
fn lossless_conversions(member: &Value) -> Vec<Value> {
    let conversions = ["double", "int", "uint"].map(|to| functions::convert(to, member));
    conversions
        .into_iter()
        .filter_map(Result::ok)
        .filter(|converted| converted.type_of() != member.type_of())
        .filter(|converted| !matches!(member, Value::Double(_)) || converted.equals(member))
        .filter(|_| matches!(member, Value::Int(_) | Value::Uint(_) | Value::Double(_)))
        .collect()
}

/// A type's name as a constant (`int`, `google.protobuf.Duration`): cel-go's program
/// instantiation fails for a type the evaluator has no values of (`kubernetes.AdmissionRequest`).
fn type_constant(name: &str) -> Result<Node, CompileError> {
    match Type::named(name) {
        Some(t) => Ok(Node::Const(Value::Type(t))),
        None => {
            let issues = format!("program instantiation failed: reference to undefined type: {name}");
            Err(CompileError { issues, stage: Stage::Plan })
        }
    }
}

/// A literal's value.
pub(crate) fn literal_value(literal: &LiteralValue) -> Value {
    match literal {
        LiteralValue::Boolean(b) => Value::Bool(*b.inner()),
        LiteralValue::Bytes(b) => Value::Bytes(Arc::from(b.inner())),
        LiteralValue::Double(d) => Value::Double(*d.inner()),
        LiteralValue::Int(i) => Value::Int(*i.inner()),
        LiteralValue::Null => Value::Null,
        LiteralValue::String(s) => Value::string(s.inner()),
        LiteralValue::UInt(u) => Value::Uint(*u.inner()),
    }
}
