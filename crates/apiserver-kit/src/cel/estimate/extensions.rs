//! The cost estimators cel-go's lists (version 3) and sets extensions bind to their overloads
//! (`checker.OverloadCostEstimate`), which come before Kubernetes' and cel-go's own: a list
//! allocated and traversed, sorted or deduplicated (quadratic), two lists compared.

use super::coster::Coster;
use super::range::Estimate;
use super::{CallEstimate, Operand, costs};
use cel::common::ast::{Expr, LiteralValue};

pub(super) fn estimate(
    coster: &Coster<'_>,
    overload: &str,
    target: Option<&Operand<'_>>,
    args: &[Operand<'_>],
) -> Option<CallEstimate> {
    let size = |operand: &Operand<'_>| coster.operand_size(operand);
    match (overload, target, args) {
        ("list_slice", Some(list), [start, end]) => {
            let sz = size(list);
            let (start, end) = (literal_uint(start, 0), literal_uint(end, sz.max));
            Some(allocating(1.0, Estimate::fixed(end.wrapping_sub(start))))
        }
        ("lists_range", None, [n]) => Some(allocating(1.0, Estimate::fixed(literal_uint(n, u64::MAX)))),
        ("list_reverse", Some(list), []) => Some(allocating(1.0, size(list))),
        ("list_flatten" | "list_flatten_int", Some(list), [] | [_]) => {
            let depth = args.first().map_or(1, |depth| literal_uint(depth, u64::MAX));
            Some(allocating(depth as f64, size(list)))
        }
        ("list_distinct", Some(list), []) => {
            let sz = size(list);
            Some(allocating(2.0, sz.multiply(sz)))
        }
        (id, Some(list), []) if element_of(id, "_sort").is_some() => {
            Some(sorting(size(list), element_of(id, "_sort").unwrap_or_default()))
        }
        (id, Some(_), [keys]) if element_of(id, "_sortByAssociatedKeys").is_some() => {
            Some(sorting(size(keys), element_of(id, "_sortByAssociatedKeys").unwrap_or_default()))
        }
        ("list_sets_contains_list" | "list_sets_intersects_list", _, [a, b]) => Some(sets(1.0, size(a), size(b))),
        ("list_sets_equivalent_list", _, [a, b]) => Some(sets(2.0, size(a), size(b))),
        _ => None,
    }
}

/// The element type's name in the id of a sort overload (`list_string_sort`: `string`).
fn element_of<'a>(id: &'a str, suffix: &str) -> Option<&'a str> {
    id.strip_prefix("list_")?.strip_suffix(suffix)
}

/// A literal int operand's value (negative: 0), else `default` (`nodeAsUintValue`).
fn literal_uint(operand: &Operand<'_>, default: u64) -> u64 {
    match operand.expr.map(|e| &e.expr) {
        Some(Expr::Literal(LiteralValue::Int(i))) => u64::try_from(*i.inner()).unwrap_or(0),
        _ => default,
    }
}

/// A call making a list of `size` elements, `factor` per element (`estimateAllocatingListCall`).
fn allocating(factor: f64, size: Estimate) -> CallEstimate {
    let cost = size.by_factor(factor).plus(Estimate::fixed(1)).plus(Estimate::fixed(costs::LIST_CREATE));
    CallEstimate::sized(cost, size)
}

/// A sort of a list of `size` elements of type `element` (`estimateListSortCost`): each
/// compared with each, strings and bytes traversed.
fn sorting(size: Estimate, element: &str) -> CallEstimate {
    let factor = if matches!(element, "string" | "bytes") { 2.0 + costs::STRING_TRAVERSAL } else { 2.0 };
    allocating(factor, size.multiply(size))
}

/// `sets.contains`, `sets.intersects`, `sets.equivalent`: each element of one compared with
/// each of the other, `factor` times.
fn sets(factor: f64, a: Estimate, b: Estimate) -> CallEstimate {
    CallEstimate::cost(a.multiply(b).by_factor(factor).plus(Estimate::fixed(1)))
}
