//! Kubernetes' CEL libraries of typed values, as k8s.io/apiserver declares them: IP and CIDR
//! (`ip`, `cidr`, `containsIP`, ...), URLs (`url`, `getHost`, ...), semantic versions (`semver`,
//! `compareTo`, ...), named formats (`format.dns1123Label()`, `validate`) and quantities
//! (`quantity`, `isGreaterThan`, `add`, `asInteger`, ...), with the costs its
//! `CostEstimator` gives them. The values themselves live in their own modules.

use super::error::EvalError;
use super::value::{Opaque, Value};
use super::{formats, functions, network, quantity, semver, urls};
use std::sync::Arc;

type Eval = Result<Value, EvalError>;

const GLOBALS: &[(&str, usize)] = &[
    ("ip", 1),
    ("isIP", 1),
    ("ip.isCanonical", 1),
    ("cidr", 1),
    ("isCIDR", 1),
    ("url", 1),
    ("isURL", 1),
    ("semver", 1),
    ("semver", 2),
    ("isSemver", 1),
    ("isSemver", 2),
    ("format.named", 1),
    ("quantity", 1),
    ("isQuantity", 1),
    ("sign", 1),
];

const MEMBERS: &[(&str, usize)] = &[
    ("family", 0),
    ("isUnspecified", 0),
    ("isLoopback", 0),
    ("isLinkLocalMulticast", 0),
    ("isLinkLocalUnicast", 0),
    ("isGlobalUnicast", 0),
    ("containsIP", 1),
    ("containsCIDR", 1),
    ("ip", 0),
    ("masked", 0),
    ("prefixLength", 0),
    ("getScheme", 0),
    ("getHost", 0),
    ("getHostname", 0),
    ("getPort", 0),
    ("getEscapedPath", 0),
    ("getQuery", 0),
    ("major", 0),
    ("minor", 0),
    ("patch", 0),
    ("compareTo", 1),
    ("isLessThan", 1),
    ("isGreaterThan", 1),
    ("validate", 1),
    ("add", 1),
    ("sub", 1),
    ("asInteger", 0),
    ("isInteger", 0),
    ("asApproximateFloat", 0),
];

/// Whether the libraries declare the global `function` with `args` arguments.
pub fn is_global(function: &str, args: usize) -> bool {
    GLOBALS.contains(&(function, args)) || (args == 0 && formats::constant(function).is_some())
}

/// Whether the libraries declare the member `function` with `args` arguments.
pub fn is_member(function: &str, args: usize) -> bool {
    MEMBERS.contains(&(function, args))
}

fn opaque(value: Opaque) -> Value {
    Value::Opaque(Arc::new(value))
}

fn failed(message: String) -> EvalError {
    EvalError::new(message)
}

/// Calls a global function of the libraries.
pub fn call_global(function: &str, args: &[&Value]) -> Option<Eval> {
    use Value::{Bool, String as Str};
    let result = match (function, args) {
        ("ip", [Str(s)]) => network::parse_ip(s).map(|ip| opaque(Opaque::Ip(ip))).map_err(failed),
        ("isIP", [Str(s)]) => Ok(Bool(network::is_ip(s))),
        ("ip.isCanonical", [Str(s)]) => network::is_canonical(s).map(Bool).map_err(failed),
        ("cidr", [Str(s)]) => network::Cidr::parse(s).map(|c| opaque(Opaque::Cidr(c))).map_err(failed),
        ("isCIDR", [Str(s)]) => Ok(Bool(network::Cidr::is_cidr(s))),
        ("url", [Str(s)]) => urls::parse(s).map(|u| opaque(Opaque::Url(u))).map_err(failed),
        ("isURL", [Str(s)]) => Ok(Bool(urls::is_url(s))),
        ("semver", [Str(s)]) => semver::parse(s, false).map(|v| opaque(Opaque::Semver(v))).map_err(failed),
        ("semver", [Str(s), Bool(n)]) => semver::parse(s, *n).map(|v| opaque(Opaque::Semver(v))).map_err(failed),
        ("isSemver", [Str(s)]) => Ok(Bool(semver::is_semver(s, false))),
        ("isSemver", [Str(s), Bool(n)]) => Ok(Bool(semver::is_semver(s, *n))),
        ("quantity", [Str(s)]) => quantity::parse(s).map(|q| opaque(Opaque::Quantity(q))).map_err(failed),
        ("isQuantity", [Str(s)]) => Ok(Bool(quantity::parse(s).is_ok())),
        ("sign", [Value::Opaque(q)]) => match &**q {
            Opaque::Quantity(q) => Ok(Value::Int(q.sign())),
            _ => return None,
        },
        ("format.named", [Str(name)]) => {
            Ok(Value::Optional(formats::named(name).map(|f| Arc::new(opaque(Opaque::Format(f))))))
        }
        (constant, []) => Ok(opaque(Opaque::Format(formats::constant(constant)?))),
        _ => return None,
    };
    Some(result)
}

/// Calls a member function of an IP, a CIDR, a URL, a version or a format.
pub fn call_member(function: &str, target: &Value, args: &[&Value]) -> Option<Eval> {
    let Value::Opaque(value) = target else { return None };
    match &**value {
        Opaque::Ip(ip) => ip_member(function, ip, args),
        Opaque::Cidr(cidr) => cidr_member(function, cidr, args),
        Opaque::Url(url) => url_member(function, url, args),
        Opaque::Semver(version) => semver_member(function, version, args),
        Opaque::Quantity(quantity) => quantity_member(function, quantity, args),
        Opaque::Format(format) => match (function, args) {
            ("validate", [Value::String(s)]) => Some(Ok(Value::Optional(
                format
                    .validate(s)
                    .map(|errors| Arc::new(Value::list(errors.iter().map(|e| Value::string(e)).collect()))),
            ))),
            _ => None,
        },
        Opaque::Authz(_) => None,
    }
}

fn ip_member(function: &str, ip: &std::net::IpAddr, args: &[&Value]) -> Option<Eval> {
    if !args.is_empty() {
        return None;
    }
    let result = match function {
        "family" => Value::Int(network::family(ip)),
        "isUnspecified" => Value::Bool(network::is_unspecified(ip)),
        "isLoopback" => Value::Bool(network::is_loopback(ip)),
        "isLinkLocalMulticast" => Value::Bool(network::is_link_local_multicast(ip)),
        "isLinkLocalUnicast" => Value::Bool(network::is_link_local_unicast(ip)),
        "isGlobalUnicast" => Value::Bool(network::is_global_unicast(ip)),
        _ => return None,
    };
    Some(Ok(result))
}

fn cidr_member(function: &str, cidr: &network::Cidr, args: &[&Value]) -> Option<Eval> {
    let result = match (function, args) {
        ("containsIP", [Value::String(s)]) => {
            cidr.contains_ip_str(s).map(Value::Bool).map_err(|_| EvalError::no_such_overload())
        }
        ("containsIP", [Value::Opaque(other)]) => match &**other {
            Opaque::Ip(ip) => Ok(Value::Bool(cidr.contains_ip(ip))),
            _ => return None,
        },
        ("containsCIDR", [Value::String(s)]) => cidr.contains_cidr_str(s).map(Value::Bool).map_err(failed),
        ("containsCIDR", [Value::Opaque(other)]) => match &**other {
            Opaque::Cidr(other) => Ok(Value::Bool(cidr.contains_cidr(other))),
            _ => return None,
        },
        ("ip", []) => Ok(opaque(Opaque::Ip(cidr.ip()))),
        ("masked", []) => Ok(opaque(Opaque::Cidr(cidr.masked()))),
        ("prefixLength", []) => Ok(Value::Int(cidr.prefix_length())),
        _ => return None,
    };
    Some(result)
}

fn url_member(function: &str, url: &urls::Url, args: &[&Value]) -> Option<Eval> {
    if !args.is_empty() {
        return None;
    }
    let result = match function {
        "getScheme" => Value::string(url.scheme()),
        "getHost" => Value::string(&url.host()),
        "getHostname" => Value::string(&url.hostname()),
        "getPort" => Value::string(&url.port()),
        "getEscapedPath" => Value::string(&url.escaped_path()),
        "getQuery" => {
            let entries = url.query().into_iter().map(|(key, values)| {
                (Value::string(&key), Value::list(values.iter().map(|v| Value::string(v)).collect()))
            });
            return Some(super::value::Map::new(entries.collect()).map(|m| Value::Map(Arc::new(m))));
        }
        _ => return None,
    };
    Some(Ok(result))
}

fn semver_member(function: &str, version: &semver::Semver, args: &[&Value]) -> Option<Eval> {
    let result = match (function, args) {
        ("major", []) => Value::Int(version.major()),
        ("minor", []) => Value::Int(version.minor()),
        ("patch", []) => Value::Int(version.patch()),
        (_, [Value::Opaque(other)]) => {
            let Opaque::Semver(other) = &**other else { return None };
            let ordering = version.compare(other);
            match function {
                "compareTo" => Value::Int(ordering as i64),
                "isLessThan" => Value::Bool(ordering.is_lt()),
                "isGreaterThan" => Value::Bool(ordering.is_gt()),
                _ => return None,
            }
        }
        _ => return None,
    };
    Some(Ok(result))
}

fn quantity_member(function: &str, q: &quantity::Quantity, args: &[&Value]) -> Option<Eval> {
    let result = match (function, args) {
        ("asInteger", []) => return Some(q.as_integer().map(Value::Int).map_err(failed)),
        ("isInteger", []) => Value::Bool(q.is_integer()),
        ("asApproximateFloat", []) => Value::Double(q.as_approximate_float()),
        ("add" | "sub", [Value::Int(i)]) => {
            let other = quantity::Quantity::from_int(*i);
            opaque(Opaque::Quantity(if function == "add" { q.add(&other) } else { q.sub(&other) }))
        }
        (_, [Value::Opaque(other)]) => {
            let Opaque::Quantity(other) = &**other else { return None };
            match function {
                "add" => opaque(Opaque::Quantity(q.add(other))),
                "sub" => opaque(Opaque::Quantity(q.sub(other))),
                "compareTo" => Value::Int(q.compare(other) as i64),
                "isLessThan" => Value::Bool(q.compare(other).is_lt()),
                "isGreaterThan" => Value::Bool(q.compare(other).is_gt()),
                _ => return None,
            }
        }
        _ => return None,
    };
    Some(Ok(result))
}

/// What a call of the libraries costs (k8s.io/apiserver's `CostEstimator.CallCost`), given its
/// arguments (the target first); `None` for other functions.
pub fn call_cost(function: &str, args: &[&Eval]) -> Option<u64> {
    let length = |i: usize| functions::actual_size(args.get(i).copied());
    let tenth = functions::traversal;
    let cidr_size = || match args.first() {
        Some(Ok(Value::Opaque(value))) => match &**value {
            Opaque::Cidr(cidr) => cidr.size() as u64,
            _ => 1,
        },
        _ => 1,
    };
    let string_arg = matches!(args.get(1), Some(Ok(Value::String(_))));
    let cost = match function {
        "ip" if matches!(args.first(), Some(Ok(Value::Opaque(_)))) => 1,
        "ip" | "cidr" | "isIP" | "isCIDR" | "url" | "quantity" | "isQuantity" => tenth(length(0)),
        "semver" | "isSemver" => match args.first() {
            Some(Ok(Value::String(s))) => semver::parse_cost(s),
            _ => 1,
        },
        "format.named" => formats::NAMED_COST,
        "major" | "minor" | "patch" | "compareTo" | "isLessThan" | "isGreaterThan" => semver::ACCESSOR_COST,
        _ if formats::constant(function).is_some() => formats::CONSTANT_COST,
        "ip.isCanonical" => (length(0) as f64 * 0.2).ceil() as u64,
        "containsIP" => tenth(2 * cidr_size()) + if string_arg { tenth(length(1)) } else { 0 },
        "containsCIDR" => {
            tenth(2 * cidr_size()) + tenth(cidr_size()) + 1 + if string_arg { tenth(length(1)) } else { 0 }
        }
        "validate" => match args.first() {
            Some(Ok(Value::Opaque(value))) => match &**value {
                Opaque::Format(format) => match args.get(1) {
                    Some(Ok(Value::String(s))) => format.validate_cost(s),
                    // An error argument has size 1 (cel-go's actualSize).
                    _ => format.validate_cost("."),
                },
                _ => 1,
            },
            _ => 1,
        },
        _ if is_member(function, args.len().saturating_sub(1)) || is_global(function, args.len()) => 1,
        _ => return None,
    };
    Some(cost)
}
