//! The static types the planner infers, as far as a call's runtime cost needs them: cel-go
//! prices a call by the overload its type checker resolved, so `a + b` costs the length of two
//! strings when both are known to be strings, and 1 when either is `dyn` and several overloads
//! remain (an object's fields are `dyn` in admission policies). The first part of a type checker.

use super::program::{Node, Qualifier, Root};
use super::value::Value;

/// A static type; `Dyn` when not known.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StaticType {
    Dyn,
    /// The element type of an empty list literal: a type parameter the checker binds to the
    /// overload (`[].sort()` resolves one).
    Free,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    List(Box<StaticType>),
    Map(Box<StaticType>, Box<StaticType>),
    Timestamp,
    Duration,
    Other,
}

impl StaticType {
    /// The type of a constant.
    pub fn of(value: &Value) -> StaticType {
        match value {
            Value::Null => StaticType::Null,
            Value::Bool(_) => StaticType::Bool,
            Value::Int(_) => StaticType::Int,
            Value::Uint(_) => StaticType::Uint,
            Value::Double(_) => StaticType::Double,
            Value::String(_) => StaticType::String,
            Value::Bytes(_) => StaticType::Bytes,
            Value::List(items) if items.is_empty() => StaticType::List(Box::new(StaticType::Free)),
            Value::List(items) => StaticType::List(Box::new(common(items.iter().map(StaticType::of)))),
            Value::Map(map) => StaticType::Map(
                Box::new(common(map.keys().map(StaticType::of))),
                Box::new(common(map.entries().map(|(_, v)| StaticType::of(v)))),
            ),
            Value::Timestamp(..) => StaticType::Timestamp,
            Value::Duration(_) => StaticType::Duration,
            Value::Type(_) | Value::Optional(_) | Value::Opaque(_) => StaticType::Other,
        }
    }

    /// The type of an element of this list, or of a key of this map.
    pub fn element(&self) -> StaticType {
        match self {
            StaticType::List(t) | StaticType::Map(t, _) => (**t).clone(),
            _ => StaticType::Dyn,
        }
    }

    fn textual(&self) -> bool {
        matches!(self, StaticType::String | StaticType::Bytes)
    }

    fn comparable(&self) -> bool {
        !matches!(
            self,
            StaticType::Dyn | StaticType::Null | StaticType::List(_) | StaticType::Map(..) | StaticType::Other
        )
    }
}

/// The one type all of `types` have, else `Dyn` (none is `Dyn` too).
fn common(mut types: impl Iterator<Item = StaticType>) -> StaticType {
    let Some(first) = types.next() else { return StaticType::Dyn };
    if types.all(|t| t == first) { first } else { StaticType::Dyn }
}

/// The type `node` has, given the types of the comprehension variables in scope.
pub(crate) fn static_type(node: &Node, locals: &[(String, StaticType)]) -> StaticType {
    match node {
        Node::Const(value) => StaticType::of(value),
        Node::Attribute { root, qualifiers } => {
            let mut current = match root {
                Root::Variable(_) => StaticType::Dyn,
                Root::Local(name) => {
                    locals.iter().rev().find(|(n, _)| **n == **name).map_or(StaticType::Dyn, |(_, t)| t.clone())
                }
                Root::Relative(operand) => static_type(operand, locals),
            };
            for qualifier in qualifiers {
                current = match (&current, qualifier) {
                    (_, Qualifier::Field { optional: true, .. } | Qualifier::Index { optional: true, .. }) => {
                        StaticType::Other
                    }
                    (StaticType::Map(_, value), _) => (**value).clone(),
                    (StaticType::List(element), Qualifier::Index { .. }) => (**element).clone(),
                    _ => StaticType::Dyn,
                };
            }
            current
        }
        Node::Has { .. } | Node::And(..) | Node::Or(..) | Node::InSet { .. } => StaticType::Bool,
        Node::Call { function, target, args, .. } => {
            let mut types: Vec<StaticType> = target.iter().map(|t| static_type(t, locals)).collect();
            types.extend(args.iter().map(|a| static_type(a, locals)));
            returned(function, &types)
        }
        Node::Conditional { truthy, falsy, .. } => {
            common([static_type(truthy, locals), static_type(falsy, locals)].into_iter())
        }
        Node::List { elements, optional } if optional.is_empty() => {
            StaticType::List(Box::new(common(elements.iter().map(|e| static_type(e, locals)))))
        }
        Node::Fold(fold) => fold.result_type.clone(),
        Node::List { .. } | Node::Map { .. } | Node::OptionalOr { .. } => StaticType::Dyn,
    }
}

/// What a call of `function` on arguments of `types` (the target first) returns.
fn returned(function: &str, types: &[StaticType]) -> StaticType {
    use StaticType::*;
    match function {
        "upperAscii" | "lowerAscii" | "trim" | "substring" | "replace" | "charAt" | "join" | "string"
        | "strings.quote" | "find" | "getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath" => String,
        "size" | "int" | "indexOf" | "lastIndexOf" | "compareTo" | "sign" | "family" | "prefixLength" | "major"
        | "minor" | "patch" | "asInteger" => Int,
        "_==_"
        | "_!=_"
        | "_<_"
        | "_<=_"
        | "_>_"
        | "_>=_"
        | "!_"
        | "contains"
        | "startsWith"
        | "endsWith"
        | "matches"
        | "@in"
        | "hasValue"
        | "isSorted"
        | "@not_strictly_false" => Bool,
        "double" | "asApproximateFloat" => Double,
        "uint" => Uint,
        "bytes" => Bytes,
        "bool" => Bool,
        "duration" => Duration,
        "timestamp" => Timestamp,
        "split" | "findAll" => List(Box::new(String)),
        "lists.range" => List(Box::new(Int)),
        "sort" | "reverse" | "distinct" | "slice" => types.first().cloned().unwrap_or(Dyn),
        "_+_" | "_-_" | "_*_" | "_/_" | "_%_" => match arithmetic(function, types) {
            Some((left, _)) if left == Timestamp && function == "_-_" && types.get(1) == Some(&Timestamp) => Duration,
            Some((left, _)) => left,
            None => Dyn,
        },
        "-_" => types.first().cloned().unwrap_or(Dyn),
        _ => Dyn,
    }
}

/// The overload of an arithmetic operator the static types leave (its parameter types), if
/// exactly one does.
fn arithmetic(function: &str, types: &[StaticType]) -> Option<(StaticType, StaticType)> {
    use StaticType::*;
    let mut overloads = vec![(Int, Int), (Uint, Uint), (Double, Double)];
    if function == "_+_" {
        let list = List(Box::new(Dyn));
        overloads.extend([
            (String, String),
            (Bytes, Bytes),
            (list.clone(), list),
            (Timestamp, Duration),
            (Duration, Timestamp),
        ]);
    }
    if matches!(function, "_+_" | "_-_") {
        overloads.push((Duration, Duration));
    }
    if function == "_-_" {
        overloads.extend([(Timestamp, Timestamp), (Timestamp, Duration)]);
    }
    if function == "_%_" {
        overloads.retain(|(a, _)| *a != Double);
    }
    unique(overloads, types)
}

/// The comparison overload (`<` and its kin) the static types leave, if exactly one does.
fn comparison(types: &[StaticType]) -> Option<(StaticType, StaticType)> {
    use StaticType::*;
    let mut overloads: Vec<(StaticType, StaticType)> =
        [Bool, Int, Uint, Double, String, Bytes, Timestamp, Duration].into_iter().map(|t| (t.clone(), t)).collect();
    for (a, b) in [(Int, Uint), (Int, Double), (Uint, Int), (Uint, Double), (Double, Int), (Double, Uint)] {
        overloads.push((a, b));
    }
    unique(overloads, types)
}

fn unique(overloads: Vec<(StaticType, StaticType)>, types: &[StaticType]) -> Option<(StaticType, StaticType)> {
    let fits = |param: &StaticType, arg: Option<&StaticType>| match (param, arg) {
        (_, Some(StaticType::Dyn | StaticType::Free)) => true,
        (StaticType::List(_), Some(StaticType::List(_))) => true,
        (param, Some(arg)) => param == arg,
        (_, None) => false,
    };
    let mut fitting = overloads.into_iter().filter(|(a, b)| fits(a, types.first()) && fits(b, types.get(1)));
    let first = fitting.next()?;
    fitting.next().is_none().then_some(first)
}

/// Whether a call's cost follows its function's own formula, as the overload cel-go's checker
/// resolved prices it; `false` when the call costs cel-go's default of 1 (no overload, or one
/// whose cost is 1, left by the static types).
pub(crate) fn priced_by_formula(function: &str, types: &[StaticType]) -> bool {
    match function {
        "_+_" => arithmetic(function, types).is_some_and(|(a, _)| a.textual()),
        "_<_" | "_<=_" | "_>_" | "_>=_" => comparison(types).is_some_and(|(a, _)| a.textual()),
        "sort" => types.first().is_some_and(|t| t.element().comparable()),
        "@sortByAssociatedKeys" => types.get(1).is_some_and(|t| t.element().comparable()),
        _ => true,
    }
}
