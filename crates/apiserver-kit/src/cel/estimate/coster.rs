//! The walk of a checked expression (cel-go's `coster`): each kind of expression's cost, a
//! call's from its operands' and its overloads' (the union over the overloads the checker left),
//! a comprehension's from its range's size times its loop's cost; the field paths and sizes
//! found on the way are kept for the calls above.

use super::path::Path;
use super::range::Estimate;
use super::sizes::{EntrySize, Local};
use super::{CallEstimate, Operand, Sizes, costs};
use crate::cel::checker::Checked;
use crate::cel::decls::CelType;
use crate::cel::program::{GROWTH, RED_ZONE};
use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use std::collections::HashMap;

/// The accumulator of cel-go's macros.
const ACCUMULATOR: &str = "@result";

pub(crate) struct Coster<'a> {
    pub checked: &'a Checked,
    pub sizes: &'a dyn Sizes,
    /// Each expression's field path from a variable, by id.
    pub paths: HashMap<u64, Path>,
    /// The comprehension variables in scope, by name, innermost last.
    pub locals: HashMap<String, Vec<Local>>,
    /// The sizes found for expressions, by id.
    pub computed: HashMap<u64, Estimate>,
    /// The sizes of the entries of list and map expressions, by id.
    pub entries: HashMap<u64, EntrySize>,
}

impl<'a> Coster<'a> {
    pub fn new(checked: &'a Checked, sizes: &'a dyn Sizes) -> Coster<'a> {
        Coster {
            checked,
            sizes,
            paths: HashMap::new(),
            locals: HashMap::new(),
            computed: HashMap::new(),
            entries: HashMap::new(),
        }
    }

    /// The estimated cost of `e`.
    pub fn cost(&mut self, e: &IdedExpr) -> Estimate {
        stacker::maybe_grow(RED_ZONE, GROWTH, || self.cost_of(e))
    }

    fn cost_of(&mut self, e: &IdedExpr) -> Estimate {
        match &e.expr {
            Expr::Literal(_) | Expr::Unspecified => Estimate::default(),
            Expr::Ident(name) => {
                let path = match self.peek(name) {
                    Some(local) => local.path.clone(),
                    None => Path::of(name),
                };
                self.paths.insert(e.id, path);
                Estimate::fixed(costs::SELECT_AND_IDENT)
            }
            Expr::Select(select) if select.test => self.cost(&select.operand),
            Expr::Select(select) => {
                let mut sum = self.cost(&select.operand);
                if matches!(self.type_of(&select.operand), CelType::Map(..) | CelType::Object(_) | CelType::Param(_)) {
                    sum = sum.plus(Estimate::fixed(costs::SELECT_AND_IDENT));
                }
                let path = self.path_of(&select.operand).append(&select.field);
                self.paths.insert(e.id, path);
                sum
            }
            Expr::Call(call) => self.call(e, call),
            Expr::List(list) => self.list(e, &list.elements),
            Expr::Map(map) => self.map(e, &map.entries),
            Expr::Struct(s) => {
                let fields = s.entries.iter().filter_map(|entry| match &entry.expr {
                    EntryExpr::StructField(field) => Some(&field.value),
                    EntryExpr::MapEntry(_) => None,
                });
                let sum = fields.fold(Estimate::default(), |sum, value| sum.plus(self.cost(value)));
                sum.plus(Estimate::fixed(costs::STRUCT_CREATE))
            }
            Expr::Comprehension(fold) if is_bind(fold) => self.bind(e, fold),
            Expr::Comprehension(fold) => self.comprehension(e, fold),
        }
    }

    /// The checked type of `e` (dyn when the checker left none).
    pub fn type_of(&self, e: &IdedExpr) -> CelType {
        self.checked.types.get(&e.id).cloned().unwrap_or(CelType::Dyn)
    }

    fn call<'e>(&mut self, e: &'e IdedExpr, call: &'e CallExpr) -> Estimate {
        if call.func_name == "dyn" && call.target.is_none() && call.args.len() == 1 {
            let cost = self.cost(&call.args[0]);
            self.copy_sizes(e, &call.args[0]);
            return Estimate::fixed(1).plus(cost);
        }
        let mut arg_costs = Vec::with_capacity(call.args.len());
        let mut args = Vec::with_capacity(call.args.len());
        for arg in &call.args {
            arg_costs.push(self.cost(arg));
            args.push(self.operand(arg));
        }
        let Some(resolved) = self.checked.calls.get(&e.id).filter(|r| !r.overloads.is_empty()) else {
            return Estimate::default();
        };
        let mut sum = Estimate::default();
        let target = match call.target.as_deref() {
            Some(target) if !resolved.namespaced => {
                sum = self.cost(target);
                Some(self.operand(target))
            }
            _ => None,
        };
        let mut cost = Estimate::new(u64::MAX, 0);
        let mut size: Option<Estimate> = None;
        for overload in &resolved.overloads {
            let estimate = self.function_cost(e, &resolved.function, overload, target.as_ref(), &args, &arg_costs);
            cost = cost.union(estimate.cost);
            if let Some(s) = estimate.size {
                size = Some(size.map_or(s, |size| size.union(s)));
            }
            let within = match *overload {
                "index_list" => "@items",
                "index_map" => "@values",
                _ => "",
            };
            if let (false, Some(container)) = (within.is_empty(), call.args.first()) {
                size = self.entry_size(container).map(|entry| entry.value);
                let path = self.path_of(container).append(within);
                self.paths.insert(e.id, path);
            }
            if size.is_none() {
                size = self.size(e);
            }
        }
        if let Some(size) = size {
            self.computed.insert(e.id, size);
        }
        sum.plus(cost)
    }

    /// A call's cost by its overload: the extensions' estimators first, then Kubernetes',
    /// then cel-go's own; the operands' costs added.
    fn function_cost<'e>(
        &mut self,
        e: &IdedExpr,
        function: &str,
        overload: &str,
        target: Option<&Operand<'e>>,
        args: &[Operand<'e>],
        arg_costs: &[Estimate],
    ) -> CallEstimate {
        let arg_sum = arg_costs.iter().fold(Estimate::default(), |sum, c| sum.plus(*c));
        let own = super::extensions::estimate(self, overload, target, args)
            .or_else(|| super::kubernetes::estimate(self, function, overload, target, args));
        if let Some(estimate) = own {
            return CallEstimate { cost: estimate.cost.plus(arg_sum), size: estimate.size };
        }
        super::calls::estimate(self, e, overload, target, args, arg_costs, arg_sum)
    }

    /// `e` as an operand of a call (`newAstNode`): no path when it is read from an
    /// accumulator.
    pub fn operand<'e>(&mut self, e: &'e IdedExpr) -> Operand<'e> {
        let mut path = self.path_of(e);
        if path.first().is_some_and(|first| &*first == ACCUMULATOR || &*first == "@__result__") {
            path = Path::default();
        }
        let computed = self.size(e);
        Operand { path, t: self.type_of(e), expr: Some(e), computed }
    }

    fn list(&mut self, e: &IdedExpr, elements: &[IdedExpr]) -> Estimate {
        let mut sum = Estimate::default();
        let mut item = Estimate::new(if elements.is_empty() { 0 } else { u64::MAX }, 0);
        for element in elements {
            sum = sum.plus(self.cost(element));
            item = item.union(self.size_or_unknown(element));
        }
        self.entries.insert(e.id, EntrySize { list: true, key: Estimate::fixed(1), value: item });
        sum.plus(Estimate::fixed(costs::LIST_CREATE))
    }

    fn map(&mut self, e: &IdedExpr, entries: &[cel::common::ast::IdedEntryExpr]) -> Estimate {
        let mut sum = Estimate::default();
        let empty = if entries.is_empty() { 0 } else { u64::MAX };
        let (mut key, mut value) = (Estimate::new(empty, 0), Estimate::new(empty, 0));
        for entry in entries {
            let EntryExpr::MapEntry(entry) = &entry.expr else { continue };
            sum = sum.plus(self.cost(&entry.key));
            sum = sum.plus(self.cost(&entry.value));
            key = key.union(self.size_or_unknown(&entry.key));
            value = value.union(self.size_or_unknown(&entry.value));
        }
        self.entries.insert(e.id, EntrySize { list: false, key, value });
        sum.plus(Estimate::fixed(costs::MAP_CREATE))
    }

    fn comprehension(&mut self, e: &IdedExpr, fold: &ComprehensionExpr) -> Estimate {
        let mut sum = self.cost(&fold.iter_range);
        sum = sum.plus(self.cost(&fold.accu_init));
        self.push_local(&fold.accu_var, &fold.accu_init);
        match &fold.iter_var2 {
            Some(second) => {
                self.push_iteration(&fold.iter_var, &fold.iter_range, Iterated::Key);
                self.push_iteration(second, &fold.iter_range, Iterated::Value);
            }
            None => self.push_iteration(&fold.iter_var, &fold.iter_range, Iterated::Single),
        }
        let condition = self.cost(&fold.loop_cond);
        let step = self.cost(&fold.loop_step);
        self.pop(&fold.iter_var);
        if let Some(second) = &fold.iter_var2 {
            self.pop(second);
        }
        sum = sum.plus(self.cost(&fold.result));
        self.pop(&fold.accu_var);
        let range = self.size_or_unknown(&fold.iter_range);
        sum = sum.plus(range.multiply(step.plus(condition)));
        match &fold.accu_init.expr {
            Expr::Literal(_) => {
                if let Some(size) = self.size(&fold.accu_init) {
                    self.computed.insert(e.id, size);
                }
            }
            Expr::List(_) | Expr::Map(_) => {
                self.computed.insert(e.id, range);
                if let Some(entry) = self.entry_size(&fold.loop_step) {
                    self.entries.insert(e.id, entry);
                }
            }
            _ => {}
        }
        sum
    }

    /// `cel.bind(v, init, result)` and the bindings macros make: `init` costs once, lazily.
    fn bind(&mut self, e: &IdedExpr, fold: &ComprehensionExpr) -> Estimate {
        let mut sum = self.cost(&fold.iter_range);
        sum = sum.plus(self.cost(&fold.accu_init));
        self.push_local(&fold.accu_var, &fold.accu_init);
        sum = sum.plus(self.cost(&fold.result));
        self.pop(&fold.accu_var);
        self.copy_sizes(e, &fold.result);
        sum
    }
}

/// Which of a range's entries an iteration variable takes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Iterated {
    /// The first of two variables: a list's index, a map's key.
    Key,
    /// The second of two: a list's element, a map's value.
    Value,
    /// The only variable: a list's element, a map's key.
    Single,
}

/// Whether `fold` is a binding (`isBind`): an empty range, a `false` condition, and an
/// accumulator of its own name.
fn is_bind(fold: &ComprehensionExpr) -> bool {
    let empty = matches!(&fold.iter_range.expr, Expr::List(list) if list.elements.is_empty());
    let never = matches!(&fold.loop_cond.expr, Expr::Literal(LiteralValue::Boolean(b)) if !*b.inner());
    empty && never && fold.accu_var != ACCUMULATOR
}
