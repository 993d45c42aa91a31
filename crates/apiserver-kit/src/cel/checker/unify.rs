//! Type unification as cel-go's checker does it (checker/types.go and mapping.go): whether a
//! type is assignable to another, binding type parameters in a substitution as it goes; the
//! more general of two types that unify; and the substitution of bound parameters.

use super::super::decls::CelType;
use std::collections::HashMap;
use std::sync::Arc;

/// The type parameters bound so far (cel-go's `mapping`).
#[derive(Clone, Debug, Default)]
pub(super) struct Mapping {
    bound: HashMap<Arc<str>, CelType>,
}

impl Mapping {
    fn find(&self, t: &CelType) -> Option<&CelType> {
        match t {
            CelType::Param(name) => self.bound.get(name),
            _ => None,
        }
    }

    fn bind(&mut self, parameter: &CelType, to: CelType) {
        if let CelType::Param(name) = parameter {
            self.bound.insert(name.clone(), to);
        }
    }
}

/// The substitution under which `t1` is assignable to `t2`, if it is (cel-go's `isAssignable`).
pub(super) fn assignable(m: &Mapping, t1: &CelType, t2: &CelType) -> Option<Mapping> {
    let mut copy = m.clone();
    internal_assignable(&mut copy, t1, t2).then_some(copy)
}

/// The substitution under which each of `l1` is assignable to the same place of `l2`.
pub(super) fn assignable_list(m: &Mapping, l1: &[CelType], l2: &[CelType]) -> Option<Mapping> {
    let mut copy = m.clone();
    internal_assignable_list(&mut copy, l1, l2).then_some(copy)
}

fn internal_assignable_list<'a>(
    m: &mut Mapping,
    l1: impl IntoIterator<Item = &'a CelType, IntoIter: ExactSizeIterator>,
    l2: impl IntoIterator<Item = &'a CelType, IntoIter: ExactSizeIterator>,
) -> bool {
    let (l1, l2) = (l1.into_iter(), l2.into_iter());
    l1.len() == l2.len() && l1.zip(l2).all(|(a, b)| internal_assignable(m, a, b))
}

fn internal_assignable(m: &mut Mapping, t1: &CelType, t2: &CelType) -> bool {
    if matches!(t2, CelType::Param(_)) {
        let (valid, bound) = valid_substitution(m, t1, t2);
        if valid {
            return true;
        }
        if bound {
            return false;
        }
    }
    if matches!(t1, CelType::Param(_)) {
        return valid_substitution(m, t2, t1).0;
    }
    if t1.is_dyn_or_error() || t2.is_dyn_or_error() {
        return true;
    }
    if matches!(t1, CelType::Null) {
        return nullable(t2);
    }
    if matches!(t2, CelType::Null) {
        return nullable(t1);
    }
    use CelType::*;
    match t1 {
        Bool | Bytes | Double | Int | String | Uint | Duration | Timestamp | Object(_) => assignable_from(t2, t1),
        Type(_) => matches!(t2, Type(_)),
        Opaque(..) | List(_) | Map(..) => {
            t1.same_kind(t2) && t1.name() == t2.name() && internal_assignable_list(m, t1.parameters(), t2.parameters())
        }
        _ => false,
    }
}

/// cel-go's `Type.IsAssignableType` (its default): `t` is dyn, or of `from`'s kind and name with
/// assignable parameters.
fn assignable_from(t: &CelType, from: &CelType) -> bool {
    let (mine, theirs) = (t.parameters(), from.parameters());
    t.is_dyn()
        || (t.same_kind(from)
            && t.name() == from.name()
            && mine.len() == theirs.len()
            && mine.iter().zip(&theirs).all(|(a, b)| assignable_from(a, b)))
}

/// Whether `null` is assignable to `t` (cel-go's legacy nullable types).
fn nullable(t: &CelType) -> bool {
    use CelType::*;
    matches!(t, Opaque(..) | Object(_) | Duration | Timestamp | Null | Dyn)
}

/// Whether `t2` (or what it is bound to) may stand for `t1`, binding it if unbound, and whether
/// it was bound (cel-go's `isValidTypeSubstitution`).
fn valid_substitution(m: &mut Mapping, t1: &CelType, t2: &CelType) -> (bool, bool) {
    if t1.same_kind(t2) && t1.is_exactly(t2) {
        return (true, true);
    }
    if let Some(bound) = m.find(t2).cloned() {
        if t1.same_kind(&bound) && t1.is_exactly(&bound) {
            return (true, true);
        }
        if internal_assignable(m, t1, &bound) {
            let general = most_general(t1, &bound).clone();
            if not_referenced_in(m, t2, &general) {
                m.bind(t2, general);
            }
            return (true, true);
        }
        return (false, true);
    }
    if not_referenced_in(m, t2, t1) {
        m.bind(t2, t1.clone());
        return (true, false);
    }
    (false, false)
}

/// Whether `t1` is `t2` or less specific (dyn where `t2` has a type).
fn equal_or_less_specific(t1: &CelType, t2: &CelType) -> bool {
    if t1.is_dyn() || matches!(t1, CelType::Param(_)) {
        return true;
    }
    if t2.is_dyn() || matches!(t2, CelType::Param(_)) || !t1.same_kind(t2) {
        return false;
    }
    match (t1, t2) {
        (CelType::Opaque(a, p1), CelType::Opaque(b, p2)) => {
            a == b && p1.len() == p2.len() && p1.iter().zip(p2).all(|(x, y)| equal_or_less_specific(x, y))
        }
        (CelType::List(a), CelType::List(b)) => equal_or_less_specific(a, b),
        (CelType::Map(k1, v1), CelType::Map(k2, v2)) => {
            equal_or_less_specific(k1, k2) && equal_or_less_specific(v1, v2)
        }
        (CelType::Type(_), _) => true,
        _ => t1.is_exactly(t2),
    }
}

/// The more general of two types known to unify.
pub(super) fn most_general<'a>(t1: &'a CelType, t2: &'a CelType) -> &'a CelType {
    if equal_or_less_specific(t1, t2) { t1 } else { t2 }
}

/// The occurs check: whether `t` is not within `within`, bindings followed.
fn not_referenced_in(m: &Mapping, t: &CelType, within: &CelType) -> bool {
    if t.is_exactly(within) {
        return false;
    }
    match within {
        CelType::Param(_) => m.find(within).is_none_or(|bound| not_referenced_in(m, t, bound)),
        CelType::Opaque(..) | CelType::List(_) | CelType::Map(..) | CelType::Type(_) => {
            within.parameters().iter().all(|p| not_referenced_in(m, t, p))
        }
        _ => true,
    }
}

/// `t` with its bound type parameters replaced by their bindings; unbound ones by `dyn` when
/// `unbound_to_dyn`.
pub(super) fn substitute(m: &Mapping, t: &CelType, unbound_to_dyn: bool) -> CelType {
    if let Some(bound) = m.find(t) {
        return substitute(m, bound, unbound_to_dyn);
    }
    match t {
        CelType::Param(_) if unbound_to_dyn => CelType::Dyn,
        CelType::Opaque(..) | CelType::List(_) | CelType::Map(..) | CelType::Type(Some(_)) => {
            t.with_parameters(t.parameters().into_iter().map(|p| substitute(m, p, unbound_to_dyn)).collect())
        }
        other => other.clone(),
    }
}

/// The substitution that binds each of `parameters` to a type.
pub(super) fn instantiation(bindings: impl IntoIterator<Item = (Arc<str>, CelType)>) -> Mapping {
    Mapping { bound: bindings.into_iter().collect() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(name: &str) -> CelType {
        CelType::Param(Arc::from(name))
    }

    #[test]
    fn a_type_parameter_binds_to_the_first_type_and_then_refuses_another() {
        let m = Mapping::default();
        let m = assignable(&m, &CelType::Int, &param("A")).unwrap();
        assert_eq!(substitute(&m, &CelType::list(param("A")), false), CelType::list(CelType::Int));
        assert!(assignable(&m, &CelType::Uint, &param("A")).is_none());
        assert!(assignable(&m, &CelType::Dyn, &param("A")).is_some());
    }

    #[test]
    fn dyn_and_errors_are_assignable_both_ways_and_null_only_to_nullable_types() {
        let m = Mapping::default();
        assert!(assignable(&m, &CelType::list(CelType::Int), &CelType::list(CelType::Dyn)).is_some());
        assert!(assignable(&m, &CelType::Error, &CelType::String).is_some());
        assert!(assignable(&m, &CelType::Null, &CelType::Timestamp).is_some());
        assert!(assignable(&m, &CelType::Null, &CelType::Int).is_none());
        assert!(
            assignable(
                &m,
                &CelType::map(CelType::String, CelType::Int),
                &CelType::map(CelType::String, CelType::Double)
            )
            .is_none()
        );
    }

    #[test]
    fn a_parameter_bound_to_dyn_widens_and_unbound_ones_become_dyn() {
        let m = assignable(&Mapping::default(), &CelType::Dyn, &param("A")).unwrap();
        let m = assignable(&m, &CelType::Int, &param("A")).unwrap();
        assert_eq!(substitute(&m, &param("A"), false), CelType::Dyn);
        assert_eq!(
            substitute(&m, &CelType::map(param("B"), param("A")), true),
            CelType::map(CelType::Dyn, CelType::Dyn)
        );
        assert_eq!(substitute(&m, &param("B"), false), param("B"));
    }

    #[test]
    fn the_occurs_check_refuses_a_parameter_within_its_own_binding() {
        let m = Mapping::default();
        assert!(assignable(&m, &CelType::list(param("A")), &param("A")).is_none());
    }

    #[test]
    fn the_most_general_of_two_types_is_the_one_with_dyn() {
        let (a, b) = (CelType::list(CelType::Dyn), CelType::list(CelType::Int));
        assert_eq!(most_general(&a, &b), &a);
        assert_eq!(most_general(&b, &a), &a);
        assert_eq!(most_general(&CelType::Error, &CelType::Int), &CelType::Int);
    }
}
