//! Kubernetes' cost of its libraries' functions (k8s.io/apiserver's
//! `CostEstimator.EstimateCallCost`), by function name, consulted before cel-go's own: lists,
//! strings, regular expressions, URLs, IPs and CIDRs, quantities, semver, named formats and
//! authorization; `None` leaves the call to cel-go.

use super::coster::Coster;
use super::range::{Estimate, to_u64};
use super::{CallEstimate, Operand, costs};
use crate::cel::decls::CelType;
use cel::common::ast::{Expr, LiteralValue};

/// `MaxNameFormatRegexSize`: the longest regular expression of a named format.
const MAX_NAME_FORMAT_REGEX_SIZE: f64 = 128.0;
/// `MaxFormatSize`.
const MAX_FORMAT_SIZE: u64 = 64;

pub(super) fn estimate(
    coster: &Coster<'_>,
    function: &str,
    overload: &str,
    target: Option<&Operand<'_>>,
    args: &[Operand<'_>],
) -> Option<CallEstimate> {
    let size = |operand: &Operand<'_>| coster.operand_size(operand);
    let scan = |operand: &Operand<'_>| size(operand).by_factor(costs::STRING_TRAVERSAL);
    let one = || Some(CallEstimate::cost(Estimate::fixed(1)));
    let first = args.first();
    match function {
        "check" => Some(CallEstimate::cost(Estimate::fixed(350_000))),
        "serviceAccount" | "path" | "group" | "resource" | "subresource" | "namespace" | "name" | "allowed"
        | "reason" | "error" | "errored" => one(),
        "fieldSelector" | "labelSelector" if args.len() == 1 => Some(CallEstimate::cost(selector(size(&args[0])))),
        "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" | "includes" => {
            target.map(|target| CallEstimate::cost(list_scan(coster, function, target)))
        }
        "url" | "jsonpatch.escapeKey" if args.len() == 1 => Some(CallEstimate::sized(scan(&args[0]), size(&args[0]))),
        "lowerAscii" | "upperAscii" | "substring" | "trim" => {
            target.map(|target| CallEstimate::sized(scan(target), size(target)))
        }
        "replace" if args.len() >= 2 => target.map(|target| replace(size(target), size(&args[0]), size(&args[1]))),
        "split" => target.map(|target| split(size(target), args.get(1))),
        "join" => target.map(|target| join(coster, target, args.first())),
        "find" | "findAll" if !args.is_empty() => target.map(|target| {
            let sz = size(target);
            let text = sz.plus(Estimate::fixed(1)).by_factor(costs::STRING_TRAVERSAL);
            let regex = size(&args[0]).by_factor(costs::REGEX_STRING_LENGTH);
            CallEstimate::sized(text.multiply(regex), Estimate::new(0, sz.max))
        }),
        "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" | "semver" | "isSemver" => {
            first.map(|arg| CallEstimate::cost(scan(arg)))
        }
        "ip" if overload == "cidr_ip" => one(),
        "ip" => first.map(|arg| CallEstimate::cost(scan(arg))),
        "ip.isCanonical" => first.map(|arg| CallEstimate::cost(size(arg).by_factor(2.0 * costs::STRING_TRAVERSAL))),
        "masked"
        | "prefixLength"
        | "family"
        | "isUnspecified"
        | "isLoopback"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "isGlobalUnicast" => one(),
        "containsIP" | "containsCIDR" => {
            first.map(|arg| CallEstimate::cost(contains(function == "containsCIDR", overload, size(arg))))
        }
        "validate" => first.map(|arg| {
            let factor = MAX_NAME_FORMAT_REGEX_SIZE * costs::REGEX_STRING_LENGTH;
            CallEstimate::cost(scan(arg).by_factor(factor))
        }),
        "format.named" | "sign" | "asInteger" | "isInteger" | "asApproximateFloat" | "isGreaterThan" | "isLessThan"
        | "compareTo" | "add" | "sub" | "major" | "minor" | "patch" | "getScheme" | "getHostname" | "getHost"
        | "getPort" | "getEscapedPath" | "getQuery" => one(),
        "_==_" => equality(args),
        _ => None,
    }
}

/// A label or field selector's parse: the string traversed, a requirement (a list and a
/// struct) every two characters.
fn selector(length: Estimate) -> Estimate {
    let parse = length.by_factor(costs::STRING_TRAVERSAL);
    let requirements = length.by_factor(0.5).by_factor((costs::LIST_CREATE + costs::STRUCT_CREATE) as f64);
    Estimate::fixed(costs::LIST_CREATE).plus(parse).plus(requirements)
}

/// `isSorted`, `sum`, `max`, `min`, `indexOf`, `lastIndexOf`, `includes`: each element of a
/// list compared (its strings traversed too), or a string traversed.
fn list_scan(coster: &Coster<'_>, function: &str, target: &Operand<'_>) -> Estimate {
    let mut element_cost = Estimate::fixed(1);
    match target.element() {
        Some(element) => {
            if matches!(element.t, CelType::String | CelType::Bytes) {
                element_cost = element_cost.plus(coster.operand_size(&element).by_factor(costs::STRING_TRAVERSAL));
            }
            coster.operand_size(target).multiply(element_cost)
        }
        None if function == "includes" => coster.operand_size(target).multiply(element_cost),
        None => coster.operand_size(target).by_factor(costs::STRING_TRAVERSAL),
    }
}

/// `s.replace(from, to)`: the traversal and the result's construction; the result's size from
/// how many replacements may lengthen or shorten it.
fn replace(sz: Estimate, from: Estimate, to: Estimate) -> CallEstimate {
    let (mut count, mut retained) = (Estimate::default(), Estimate::default());
    if from.min == 0 {
        count.max = if sz.max < u64::MAX { sz.max + 1 } else { sz.max };
        retained.max = sz.max;
    } else if to.max <= from.min {
        retained.max = sz.max;
    } else {
        count.max = to_u64((sz.max as f64 / from.min as f64).ceil());
    }
    if from.max == 0 {
        count.min = if sz.min < u64::MAX { sz.min + 1 } else { sz.min };
        retained.min = sz.min;
    } else if from.max <= to.min {
        retained.min = sz.min;
    } else {
        count.min = to_u64((sz.min as f64 / from.max as f64).ceil());
    }
    let size = count.multiply(to).plus(retained);
    CallEstimate::sized(sz.by_factor(2.0 * costs::STRING_TRAVERSAL), size)
}

/// `s.split(separator[, limit])`: at most a piece per character, or the literal limit.
fn split(sz: Estimate, limit: Option<&Operand<'_>>) -> CallEstimate {
    let literal = limit.and_then(|l| l.expr).and_then(|e| match &e.expr {
        Expr::Literal(LiteralValue::Int(i)) => Some(*i.inner() as u64),
        _ => None,
    });
    let max = literal.unwrap_or(sz.max);
    CallEstimate::sized(sz.by_factor(2.0 * costs::STRING_TRAVERSAL), Estimate::new(0, max))
}

/// `list.join([separator])`: the result's length traversed.
fn join(coster: &Coster<'_>, target: &Operand<'_>, separator: Option<&Operand<'_>>) -> CallEstimate {
    let list = coster.operand_size(target);
    let mut sz = match target.element() {
        Some(element) => list.multiply(coster.operand_size(&element)),
        None => Estimate::default(),
    };
    if let Some(separator) = separator {
        let separators = Estimate::new(list.min.saturating_sub(1), list.max.saturating_sub(1));
        sz = sz.plus(coster.operand_size(separator).multiply(separators));
    }
    CallEstimate::sized(sz.by_factor(costs::STRING_TRAVERSAL), sz)
}

/// `cidr.containsIP(ip)` and `cidr.containsCIDR(cidr)`: byte lists of 4 to 16 compared, a
/// string operand parsed first.
fn contains(cidr: bool, overload: &str, operand: Estimate) -> Estimate {
    let bytes = Estimate::new(4, 16);
    let mut cost = bytes.plus(bytes).by_factor(costs::STRING_TRAVERSAL);
    if cidr {
        cost = cost.plus(bytes.by_factor(costs::STRING_TRAVERSAL)).plus(Estimate::fixed(1));
    }
    let parsed = if cidr { "cidr_contains_cidr_string" } else { "cidr_contains_ip_string" };
    if overload == parsed {
        cost = cost.plus(operand.by_factor(costs::STRING_TRAVERSAL));
    }
    cost
}

/// `a == b` of two values of one of Kubernetes' types: 1, or a named format's or a URL's
/// length traversed.
fn equality(args: &[Operand<'_>]) -> Option<CallEstimate> {
    let [lhs, rhs] = args else { return None };
    if !lhs.t.is_exactly(&rhs.t) {
        return None;
    }
    let cost = match (&lhs.t, lhs.t.name()) {
        (CelType::Opaque(..), "net.IP" | "net.CIDR") => Estimate::fixed(1),
        (
            CelType::Object(_),
            "kubernetes.Quantity"
            | "kubernetes.authorization.Authorizer"
            | "kubernetes.authorization.PathCheck"
            | "kubernetes.authorization.GroupCheck"
            | "kubernetes.authorization.ResourceCheck"
            | "kubernetes.authorization.Decision"
            | "kubernetes.Semver",
        ) => Estimate::fixed(1),
        (CelType::Object(_), "kubernetes.NamedFormat") => {
            Estimate::new(1, MAX_FORMAT_SIZE).by_factor(costs::STRING_TRAVERSAL)
        }
        (CelType::Object(_), "kubernetes.URL") => {
            // Kubernetes reads the right operand's size for both.
            let size = rhs.computed.map_or(Estimate::fixed(1), |r| r.union(r));
            Estimate::new(1, size.max).by_factor(costs::STRING_TRAVERSAL)
        }
        _ => return None,
    };
    Some(CallEstimate::cost(cost))
}
