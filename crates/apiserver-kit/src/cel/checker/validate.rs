//! The checks cel-go's environment runs on an expression its checker accepted, as Kubernetes
//! configures them (cel-go's cel/validator.go): list and map literals must be homogeneous (their
//! elements, keys and values of one type, `dyn` apart from `int`), and the constant arguments of
//! `duration`, `timestamp` and `matches` valid. Expressions are visited in cel-go's order (each
//! after its operands).

use super::super::decls::CelType;
use super::super::functions;
use super::super::program::{GROWTH, RED_ZONE, literal_value};
use super::issues::Issues;
use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use std::collections::HashMap;

/// Reports what `expr`'s checked types (`types`, by id) fail.
pub(super) fn validate(expr: &IdedExpr, types: &HashMap<u64, CelType>, issues: &mut Issues) {
    let mut literals = Vec::new();
    let mut calls = Vec::new();
    visit(expr, &mut |e| match &e.expr {
        Expr::List(_) | Expr::Map(_) => literals.push(e),
        Expr::Call(call) => calls.push((e, call)),
        _ => {}
    });
    let type_of = |e: &IdedExpr| types.get(&e.id).cloned().unwrap_or(CelType::Dyn);
    for literal in literals.iter().filter(|e| matches!(e.expr, Expr::List(_))) {
        homogeneous_list(literal, &type_of, issues);
    }
    for literal in literals.iter().filter(|e| matches!(e.expr, Expr::Map(_))) {
        homogeneous_map(literal, &type_of, issues);
    }
    for function in ["duration", "timestamp", "matches"] {
        for (_, call) in calls.iter().filter(|(_, call)| call.func_name == function) {
            constant_argument(call, issues);
        }
    }
}

/// Calls `f` on `e` and every expression within, each after those within it.
fn visit<'a>(e: &'a IdedExpr, f: &mut impl FnMut(&'a IdedExpr)) {
    stacker::maybe_grow(RED_ZONE, GROWTH, || {
        for child in children(e) {
            visit(child, f);
        }
        f(e);
    });
}

/// The expressions `e` holds, in cel-go's order.
pub(super) fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    match &e.expr {
        Expr::Call(call) => call.target.as_deref().into_iter().chain(&call.args).collect(),
        Expr::Select(select) => vec![&select.operand],
        Expr::List(list) => list.elements.iter().collect(),
        Expr::Map(map) => map
            .entries
            .iter()
            .flat_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(entry) => vec![&entry.key, &entry.value],
                EntryExpr::StructField(field) => vec![&field.value],
            })
            .collect(),
        Expr::Struct(structure) => structure
            .entries
            .iter()
            .filter_map(|entry| match &entry.expr {
                EntryExpr::StructField(field) => Some(&field.value),
                EntryExpr::MapEntry(_) => None,
            })
            .collect(),
        Expr::Comprehension(fold) => {
            vec![&fold.iter_range, &fold.accu_init, &fold.loop_cond, &fold.loop_step, &fold.result]
        }
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => Vec::new(),
    }
}

/// A list's elements of one type: the first that differs from the first is reported.
fn homogeneous_list(e: &IdedExpr, type_of: &impl Fn(&IdedExpr) -> CelType, issues: &mut Issues) {
    let Expr::List(list) = &e.expr else { return };
    let mut first: Option<CelType> = None;
    for (i, element) in list.elements.iter().enumerate() {
        let mut t = type_of(element);
        if list.optional_indices.contains(&i) {
            t = t.optional_value().cloned().unwrap_or(t);
        }
        match &first {
            None => first = Some(t),
            Some(expected) if !expected.is_equivalent(&t) => {
                return mismatch(issues, element.id, expected, &t);
            }
            Some(_) => {}
        }
    }
}

/// A map's keys of one type and values of one type: each that differs is reported.
fn homogeneous_map(e: &IdedExpr, type_of: &impl Fn(&IdedExpr) -> CelType, issues: &mut Issues) {
    let Expr::Map(map) = &e.expr else { return };
    let mut first: Option<(CelType, CelType)> = None;
    for entry in &map.entries {
        let EntryExpr::MapEntry(entry) = &entry.expr else { continue };
        let (key, mut value) = (type_of(&entry.key), type_of(&entry.value));
        if entry.optional {
            value = value.optional_value().cloned().unwrap_or(value);
        }
        let Some((first_key, first_value)) = &first else {
            first = Some((key, value));
            continue;
        };
        if !first_key.is_equivalent(&key) {
            mismatch(issues, entry.key.id, first_key, &key);
        }
        if !first_value.is_equivalent(&value) {
            mismatch(issues, entry.value.id, first_value, &value);
        }
    }
}

fn mismatch(issues: &mut Issues, id: u64, expected: &CelType, found: &CelType) {
    issues.report(id, format!("expected type '{expected}' but found '{found}'"));
}

/// `duration('1h')`, `timestamp('...')`, `matches`' first argument: a constant that must
/// convert, or compile as the evaluator compiles regular expressions (cel-go compiles the
/// first argument of either form of `matches`: the text, not the pattern, of `matches(s, re)`).
fn constant_argument(call: &CallExpr, issues: &mut Issues) {
    let Some(argument) = call.args.first() else { return };
    let Expr::Literal(literal) = &argument.expr else { return };
    let valid = match (call.func_name.as_str(), literal) {
        ("matches", LiteralValue::String(pattern)) => regex::Regex::new(pattern.inner()).is_ok(),
        ("matches", _) => true,
        (function, _) => functions::convert(function, &literal_value(literal)).is_ok(),
    };
    if !valid {
        issues.report(argument.id, format!("invalid {} argument", call.func_name));
    }
}
