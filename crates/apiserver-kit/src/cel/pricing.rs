//! Which calls cost what their function's own formula says: cel-go prices a call by the overload
//! its type checker resolved, so `a + b` costs the length of two strings when both are known to
//! be strings, and 1 when either is `dyn` and several overloads remain (an object's fields are
//! `dyn` in admission policies; a request's are typed). The types are the checker's.

use super::decls::CelType;

/// Whether a call's cost follows its function's own formula, as the overload cel-go's checker
/// resolved prices it; `false` when the call costs cel-go's default of 1 (no overload, or one
/// whose cost is 1, left by the static types of its operands, the target first).
pub(crate) fn priced_by_formula(function: &str, types: &[CelType]) -> bool {
    match function {
        "_+_" => arithmetic(types).is_some_and(|(a, _)| textual(&a)),
        "_<_" | "_<=_" | "_>_" | "_>=_" => comparison(types).is_some_and(|(a, _)| textual(&a)),
        "sort" => types.first().is_some_and(|t| comparable(&element(t))),
        "@sortByAssociatedKeys" => types.get(1).is_some_and(|t| comparable(&element(t))),
        _ => true,
    }
}

/// The type of an element of a list (dyn for anything else).
fn element(t: &CelType) -> CelType {
    match t {
        CelType::List(element) => (**element).clone(),
        _ => CelType::Dyn,
    }
}

fn textual(t: &CelType) -> bool {
    matches!(t, CelType::String | CelType::Bytes)
}

/// Whether cel-go orders values of `t` (sorts them, compares them with `<`).
fn comparable(t: &CelType) -> bool {
    use CelType::*;
    matches!(t, Bool | Int | Uint | Double | String | Bytes | Timestamp | Duration)
}

/// The overload of `+` the static types leave (its parameter types), if exactly one does.
fn arithmetic(types: &[CelType]) -> Option<(CelType, CelType)> {
    use CelType::*;
    let list = CelType::list(Dyn);
    let overloads = vec![
        (Int, Int),
        (Uint, Uint),
        (Double, Double),
        (String, String),
        (Bytes, Bytes),
        (list.clone(), list),
        (Timestamp, Duration),
        (Duration, Timestamp),
        (Duration, Duration),
    ];
    unique(overloads, types)
}

/// The comparison overload (`<` and its kin) the static types leave, if exactly one does.
fn comparison(types: &[CelType]) -> Option<(CelType, CelType)> {
    use CelType::*;
    let mut overloads: Vec<(CelType, CelType)> =
        [Bool, Int, Uint, Double, String, Bytes, Timestamp, Duration].into_iter().map(|t| (t.clone(), t)).collect();
    for (a, b) in [(Int, Uint), (Int, Double), (Uint, Int), (Uint, Double), (Double, Int), (Double, Uint)] {
        overloads.push((a, b));
    }
    unique(overloads, types)
}

fn unique(overloads: Vec<(CelType, CelType)>, types: &[CelType]) -> Option<(CelType, CelType)> {
    let fits = |param: &CelType, arg: Option<&CelType>| match (param, arg) {
        (_, Some(arg)) if arg.is_dyn_or_error() => true,
        (CelType::List(_), Some(CelType::List(_))) => true,
        (param, Some(arg)) => param == arg,
        (_, None) => false,
    };
    let mut fitting = overloads.into_iter().filter(|(a, b)| fits(a, types.first()) && fits(b, types.get(1)));
    let first = fitting.next()?;
    fitting.next().is_none().then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_known_on_one_side_are_priced_and_dyn_on_both_are_not() {
        assert!(priced_by_formula("_+_", &[CelType::String, CelType::Dyn]));
        assert!(!priced_by_formula("_+_", &[CelType::Dyn, CelType::Dyn]));
        assert!(!priced_by_formula("_+_", &[CelType::Int, CelType::Int]));
        assert!(priced_by_formula("_<_", &[CelType::Dyn, CelType::Bytes]));
        assert!(!priced_by_formula("_<_", &[CelType::Int, CelType::Dyn]));
    }

    #[test]
    fn sorts_are_priced_when_the_element_type_is_known_and_ordered() {
        assert!(priced_by_formula("sort", &[CelType::list(CelType::String)]));
        assert!(!priced_by_formula("sort", &[CelType::Dyn]));
        assert!(!priced_by_formula("sort", &[CelType::list(CelType::Dyn)]));
        assert!(priced_by_formula("@sortByAssociatedKeys", &[CelType::Dyn, CelType::list(CelType::Int)]));
        assert!(priced_by_formula("size", &[CelType::Dyn]));
    }
}
