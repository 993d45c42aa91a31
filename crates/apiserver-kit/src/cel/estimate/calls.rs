//! cel-go's own cost of a call by its overload id (`coster.functionCost`), when neither an
//! extension's nor Kubernetes' estimator prices it: linear in a string's or list's size for
//! the traversing functions, the product of sizes for `contains` and regular expressions,
//! `&&`, `||` and `?:` from their operands, and 1 for the rest.

use super::coster::Coster;
use super::range::Estimate;
use super::sizes::EntrySize;
use super::{CallEstimate, Operand, costs};
use cel::common::ast::IdedExpr;

/// The cost (and result size, when it tells it) of a call of `overload`, `arg_sum` the
/// operands' costs.
pub(super) fn estimate(
    coster: &mut Coster<'_>,
    e: &IdedExpr,
    overload: &str,
    target: Option<&Operand<'_>>,
    args: &[Operand<'_>],
    arg_costs: &[Estimate],
    arg_sum: Estimate,
) -> CallEstimate {
    let size = |operand: &Operand<'_>| operand.computed.unwrap_or(Estimate::UNKNOWN);
    let scan = |operand: &Operand<'_>| size(operand).by_factor(costs::STRING_TRAVERSAL);
    let traversal = |cost: Estimate| CallEstimate::cost(cost.plus(arg_sum));
    match (overload, target, args) {
        ("string_format", Some(target), _) => traversal(scan(target)),
        ("string_to_bytes", _, [arg]) => {
            let sz = size(arg);
            CallEstimate::sized(scan(arg).plus(arg_sum), Estimate::new(sz.min, sz.max.wrapping_mul(4)))
        }
        ("bytes_to_string", _, [arg]) => {
            let sz = size(arg);
            CallEstimate::sized(scan(arg).plus(arg_sum), Estimate::new(sz.min / 4, sz.max))
        }
        ("strings_quote", _, [arg]) => {
            let sz = size(arg);
            let quoted = Estimate::new(sz.min.wrapping_add(2), sz.max.wrapping_mul(2).wrapping_add(2));
            CallEstimate::sized(scan(arg).plus(arg_sum), quoted)
        }
        ("starts_with_string" | "ends_with_string", _, [arg]) => traversal(scan(arg)),
        ("in_list", _, [_, list]) => traversal(size(list).by_factor(1.0)),
        ("matches_string", Some(text), [regex]) | ("matches", None, [text, regex]) => {
            let text = size(text).plus(Estimate::fixed(1)).by_factor(costs::STRING_TRAVERSAL);
            let regex = size(regex).by_factor(costs::REGEX_STRING_LENGTH);
            traversal(text.multiply(regex))
        }
        ("contains_string", Some(text), [substring]) => traversal(scan(text).multiply(scan(substring))),
        ("logical_or" | "logical_and", _, _) => {
            let (lhs, rhs) = (arg_cost(arg_costs, 0), arg_cost(arg_costs, 1));
            CallEstimate::cost(Estimate::new(lhs.min, lhs.plus(rhs).max))
        }
        ("conditional", _, [_, truthy, falsy]) => conditional(coster, e, truthy, falsy, arg_costs),
        ("add_string" | "add_bytes" | "add_list", _, [lhs, rhs]) => {
            concatenation(coster, e, overload, lhs, rhs, arg_sum)
        }
        (comparison, _, [lhs, rhs, ..]) if compares_sizes(comparison) => {
            let smallest = size(lhs).max.min(size(rhs).max);
            let cost = Estimate::new(u64::from(smallest > 0), smallest);
            traversal(cost.by_factor(costs::STRING_TRAVERSAL))
        }
        _ => traversal(Estimate::fixed(1)),
    }
}

/// `c ? a : b`: the condition's cost and the costlier branch's; the result the size of
/// either, its entries either's.
fn conditional(
    coster: &mut Coster<'_>,
    e: &IdedExpr,
    truthy: &Operand<'_>,
    falsy: &Operand<'_>,
    arg_costs: &[Estimate],
) -> CallEstimate {
    let size = |operand: &Operand<'_>| operand.computed.unwrap_or(Estimate::UNKNOWN);
    let result = size(truthy).union(size(falsy));
    let (t, f) = (truthy.expr.and_then(|t| coster.entry_size(t)), falsy.expr.and_then(|f| coster.entry_size(f)));
    if let Some(entry) = EntrySize::union(t, f) {
        coster.entries.insert(e.id, entry);
    }
    let branches = arg_cost(arg_costs, 1).union(arg_cost(arg_costs, 2));
    CallEstimate::sized(arg_cost(arg_costs, 0).plus(branches), result)
}

/// `a + b` of strings, bytes or lists: the sizes added, strings and bytes traversed, lists
/// joined for 1; the entries either's.
fn concatenation(
    coster: &mut Coster<'_>,
    e: &IdedExpr,
    overload: &str,
    lhs: &Operand<'_>,
    rhs: &Operand<'_>,
    arg_sum: Estimate,
) -> CallEstimate {
    let size = |operand: &Operand<'_>| operand.computed.unwrap_or(Estimate::UNKNOWN);
    let result = size(lhs).plus(size(rhs));
    let (l, r) = (lhs.expr.and_then(|l| coster.entry_size(l)), rhs.expr.and_then(|r| coster.entry_size(r)));
    if let Some(entry) = EntrySize::union(l, r) {
        coster.entries.insert(e.id, entry);
    }
    let cost = if overload == "add_list" { Estimate::fixed(1) } else { result.by_factor(costs::STRING_TRAVERSAL) };
    CallEstimate::sized(cost.plus(arg_sum), result)
}

fn arg_cost(arg_costs: &[Estimate], i: usize) -> Estimate {
    arg_costs.get(i).copied().unwrap_or_default()
}

/// The overloads whose cost is the smaller operand's size: comparisons of strings and bytes,
/// and equality of anything.
fn compares_sizes(overload: &str) -> bool {
    matches!(
        overload,
        "less_string"
            | "greater_string"
            | "less_equals_string"
            | "greater_equals_string"
            | "less_bytes"
            | "greater_bytes"
            | "less_equals_bytes"
            | "greater_equals_bytes"
            | "equals"
            | "not_equals"
    )
}
