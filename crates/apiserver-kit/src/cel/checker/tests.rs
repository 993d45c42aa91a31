//! The checker's rules on small expressions: the types it gives and the errors it reports, as
//! cel-go's checker gives and reports them (each expected text is tools/cel-oracle's).

use super::*;
use crate::cel::macros;

fn declarations() -> Declarations {
    Declarations::admission(&["object", "request", "namespaceObject", "authorizer", "variables"])
}

/// The type `source` checks to.
fn typed(source: &str) -> String {
    let (parsed, info) = macros::parser().parse_with_source_info(source).expect("parses");
    match types(&parsed, &info, &declarations()) {
        Ok(checked) => checked.types.get(&parsed.id).map_or("none".to_string(), |t| t.to_string()),
        Err(error) => error.issues,
    }
}

/// The errors `source` is refused with (empty when it is accepted).
fn refused(source: &str) -> String {
    let (parsed, info) = macros::parser().parse_with_source_info(source).expect("parses");
    check(&parsed, &info, &declarations()).err().map(|e| e.issues).unwrap_or_default()
}

#[test]
fn literals_and_operators_take_their_overloads_result_types() {
    assert_eq!(typed("1 + 2"), "int");
    assert_eq!(typed("1u * 2u"), "uint");
    assert_eq!(typed("'a' + 'b'"), "string");
    assert_eq!(typed("timestamp('2026-01-01T00:00:00Z') - timestamp('2026-01-01T00:00:00Z')"), "duration");
    assert_eq!(typed("1 < 2.0"), "bool");
    assert_eq!(typed("true ? 1 : 2"), "int");
    assert_eq!(typed("null"), "null");
}

#[test]
fn dyn_operands_leave_several_overloads_and_a_dyn_result_unless_all_agree() {
    assert_eq!(typed("object.a + object.b"), "dyn");
    assert_eq!(typed("object.a < object.b"), "bool");
    assert_eq!(typed("object.a + 1"), "int");
    assert_eq!(typed("size(object.a)"), "int");
}

#[test]
fn type_parameters_are_bound_and_substituted() {
    assert_eq!(typed("[1, 2] + [3]"), "list(int)");
    assert_eq!(typed("{'a': [1]}['a']"), "list(int)");
    assert_eq!(typed("[]"), "list(dyn)");
    assert_eq!(typed("[].sort()"), "list(int)");
    assert_eq!(typed("optional.of('x').value()"), "string");
    assert_eq!(typed("type(1)"), "type(int)");
    assert_eq!(typed("[[1], [2]].flatten()"), "list(int)");
}

#[test]
fn mixed_literals_are_dyn_for_the_checker_and_refused_after() {
    assert_eq!(typed("[1, 'a']"), "list(dyn)");
    assert_eq!(
        refused("[1, 'a']"),
        "ERROR: <input>:1:5: expected type 'int' but found 'string'\n | [1, 'a']\n | ....^"
    );
    assert_eq!(
        refused("{1: 'a', 'b': 2}"),
        "ERROR: <input>:1:10: expected type 'int' but found 'string'\n | {1: 'a', 'b': 2}\n | .........^\n\
         ERROR: <input>:1:15: expected type 'string' but found 'int'\n | {1: 'a', 'b': 2}\n | ..............^"
    );
    assert_eq!(refused("[[1], [2]]"), "");
}

#[test]
fn a_call_no_overload_fits_is_reported_at_its_parenthesis_or_operator() {
    assert_eq!(
        refused("1 == 1u"),
        "ERROR: <input>:1:3: found no matching overload for '_==_' applied to '(int, uint)'\n | 1 == 1u\n | ..^"
    );
    assert_eq!(
        refused("[1, 2].join()"),
        "ERROR: <input>:1:12: found no matching overload for 'join' applied to 'list(int).()'\n | [1, 2].join()\n | ...........^"
    );
    assert_eq!(
        refused("size(1, 2)"),
        "ERROR: <input>:1:5: found no matching overload for 'size' applied to '(int, int)'\n | size(1, 2)\n | ....^"
    );
}

#[test]
fn unknown_names_and_functions_are_undeclared_references() {
    assert_eq!(
        refused("nope + 1"),
        "ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')\n | nope + 1\n | ^"
    );
    assert_eq!(
        refused("object.nope()"),
        "ERROR: <input>:1:12: undeclared reference to 'nope' (in container '')\n | object.nope()\n | ...........^"
    );
}

#[test]
fn declared_objects_have_their_fields_and_no_others() {
    assert_eq!(typed("request.userInfo.groups"), "list(string)");
    assert_eq!(typed("namespaceObject.metadata.creationTimestamp"), "timestamp");
    assert_eq!(typed("has(request.name)"), "bool");
    assert_eq!(typed("request.?kind"), "optional_type(kubernetes.GroupVersionKind)");
    assert_eq!(refused("request.foo"), "ERROR: <input>:1:8: undefined field 'foo'\n | request.foo\n | .......^");
    assert_eq!(
        refused("request.name.size"),
        "ERROR: <input>:1:13: type 'string' does not support field selection\n | request.name.size\n | ............^"
    );
}

#[test]
fn type_names_and_qualified_variables_resolve_as_wholes() {
    assert_eq!(typed("google.protobuf.Duration"), "type(duration)");
    assert_eq!(typed("net.IP"), "type(net.IP)");
    assert_eq!(typed("kubernetes.AdmissionRequest"), "type(kubernetes.AdmissionRequest)");
    assert_eq!(typed("authorizer.requestResource"), "kubernetes.authorization.ResourceCheck");
    assert_eq!(typed("variables.anything"), "dyn");
}

#[test]
fn comprehension_variables_take_their_range_element_types() {
    assert_eq!(typed("[1, 2].map(x, x * 2)"), "list(int)");
    assert_eq!(typed("{'a': 1}.map(k, k)"), "list(string)");
    assert_eq!(typed("['a'].transformList(i, v, i)"), "list(int)");
    assert_eq!(typed("{'a': 1}.transformMap(k, v, v + 1)"), "map(string, int)");
    assert_eq!(typed("object.items.map(x, x)"), "list(dyn)");
    assert_eq!(
        refused("[1, 2].all(x, x)"),
        "ERROR: <input>:1:15: expected type 'bool' but found 'int'\n | [1, 2].all(x, x)\n | ..............^"
    );
    assert_eq!(
        refused("1.all(x, true)"),
        "ERROR: <input>:1:1: expression of type 'int' cannot be range of a comprehension (must be list, map, or dynamic)\n | 1.all(x, true)\n | ^"
    );
}

#[test]
fn optional_entries_must_be_optional() {
    assert_eq!(typed("[?optional.of(1), 2]"), "list(int)");
    assert_eq!(
        refused("[?1]"),
        "ERROR: <input>:1:3: expected type 'optional_type(int)' but found 'int'\n | [?1]\n | ..^"
    );
}

#[test]
fn constant_arguments_must_convert_or_compile() {
    assert_eq!(
        refused("duration('x')"),
        "ERROR: <input>:1:10: invalid duration argument\n | duration('x')\n | .........^"
    );
    assert_eq!(
        refused("matches('[', 'a')"),
        "ERROR: <input>:1:9: invalid matches argument\n | matches('[', 'a')\n | ........^"
    );
    assert_eq!(refused("matches('a', '[')"), "");
}

#[test]
fn errors_are_sorted_by_position_over_lines() {
    let source = "1 +\n 'a' == [2, 'b']";
    assert_eq!(
        refused(source),
        "ERROR: <input>:1:3: found no matching overload for '_+_' applied to '(int, string)'\n | 1 +\n | ..^"
    );
    assert_eq!(typed("[1 + 'a', true && 1]").lines().filter(|l| l.starts_with("ERROR")).count(), 2);
}

#[test]
fn identifiers_of_type_type_are_names_of_types_even_comprehension_variables() {
    let source = "[].exists(x, x == int) || google.protobuf.Duration == type(request)";
    let (parsed, info) = macros::parser().parse_with_source_info(source).expect("parses");
    let checked = check(&parsed, &info, &declarations()).expect("checks");
    let mut names: Vec<&str> = checked.type_names.values().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["google.protobuf.Duration", "int", "x"]);
}
