//! apiserver-kit's CEL against k8s.io/apiserver's on expressions generated at random: most are
//! well typed by construction (ints, doubles, strings, bools and lists of them, with the object's
//! fields as `dyn`), so that Kubernetes evaluates them, and the value, error and cost of both are
//! compared; the others put values of any types together, and Kubernetes' type checker refuses
//! most of them: the compile errors are compared word for word. Mutations (`Object{...}`,
//! `[JSONPatch{...}]` of such values) are compiled with the mutation types, and their
//! conversions to an apply configuration and a JSON patch compared too. `CEL_RANDOM_SEED`
//! replays a run; `CEL_RANDOM_CASES` sets its size (default 400, and a quarter of it for
//! mutations).

mod cel;
mod oracle;

use cel::{agree, mutation_request, ours, ours_mutating, reference, request_for, same_mutation};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

fn int_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        (-5i64..20).prop_map(|i| i.to_string()),
        Just("9223372036854775807".to_string()),
        Just("-9223372036854775807".to_string()),
        Just("object.spec.weight".to_string()),
    ]
}

fn int_expr() -> impl Strategy<Value = String> {
    int_literal().prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            (inner.clone(), prop::sample::select(vec!["+", "-", "*", "/", "%"]), inner.clone())
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            inner.clone().prop_map(|a| format!("-({a})")),
            list_expr().prop_map(|l| format!("size({l})")),
            string_leaf().prop_map(|s| format!("{s}.size()")),
            (list_expr(), 0i64..4).prop_map(|(l, i)| format!("{l}[{i}]")),
            (bool_leaf(), inner.clone(), inner.clone()).prop_map(|(c, a, b)| format!("({c} ? {a} : {b})")),
            (string_leaf(), string_leaf()).prop_map(|(s, t)| format!("{s}.indexOf({t})")),
            double_leaf().prop_map(|d| format!("int({d})")),
            list_expr().prop_map(|l| format!("{l}.sum()")),
        ]
    })
}

fn double_leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("1.5".to_string()),
        Just("-0.25".to_string()),
        Just("1e300".to_string()),
        Just("object.spec.height".to_string()),
        (-3i64..3).prop_map(|i| format!("double({i})")),
        Just("(object.spec.height / 0.0)".to_string()),
    ]
}

fn string_leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("''".to_string()),
        Just("'wool'".to_string()),
        Just("'Héllo, World'".to_string()),
        Just("object.metadata.name".to_string()),
        Just("object.metadata.labels.team".to_string()),
        Just("object.spec.color".to_string()),
        Just("'a-b-c-d-e-f-g-h-i-j-k-l'".to_string()),
    ]
}

fn string_expr() -> impl Strategy<Value = String> {
    string_leaf().prop_recursive(2, 8, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} + {b})")),
            inner.clone().prop_map(|a| format!("{a}.upperAscii()")),
            (inner.clone(), 0i64..6).prop_map(|(a, i)| format!("{a}.substring({i})")),
            (inner.clone(), 0i64..6).prop_map(|(a, i)| format!("{a}.charAt({i})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}.replace('l', {b})")),
            int_literal().prop_map(|i| format!("string({i})")),
            double_leaf().prop_map(|d| format!("string({d})")),
            Just("object.spec.tags.join('/')".to_string()),
        ]
    })
}

fn bool_leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("true".to_string()),
        Just("false".to_string()),
        Just("has(object.spec.color)".to_string()),
        Just("has(object.spec.nothing)".to_string()),
        Just("(object.spec.weight > 100)".to_string()),
    ]
}

fn bool_expr() -> impl Strategy<Value = String> {
    bool_leaf().prop_recursive(3, 16, 2, |inner| {
        prop_oneof![
            (inner.clone(), prop::sample::select(vec!["&&", "||"]), inner.clone())
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            inner.clone().prop_map(|a| format!("!({a})")),
            (int_expr(), prop::sample::select(vec!["<", "<=", "==", "!=", ">", ">="]), int_expr())
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (string_expr(), prop::sample::select(vec!["<", "==", ">="]), string_expr())
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (string_expr(), string_leaf()).prop_map(|(a, b)| format!("{a}.contains({b})")),
            (string_expr(), string_leaf()).prop_map(|(a, b)| format!("{a}.startsWith({b})")),
            (string_expr(), Just("'^[a-z]+$'".to_string())).prop_map(|(a, re)| format!("{a}.matches({re})")),
            (int_expr(), list_expr()).prop_map(|(a, l)| format!("({a} in {l})")),
            (list_expr(), int_expr()).prop_map(|(l, e)| format!("{l}.all(x, x < {e})")),
            (list_expr(), int_expr()).prop_map(|(l, e)| format!("{l}.exists(x, x / {e} == 1)")),
            (list_expr(), int_expr()).prop_map(|(l, e)| format!("{l}.exists_one(x, x == {e})")),
            Just("object.spec.tags.all(t, t.size() == 1)".to_string()),
        ]
    })
}

fn list_expr() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("[]".to_string()),
        Just("[1, 2, 3]".to_string()),
        Just("[3, -1, 3, 0]".to_string()),
        (int_literal(), int_literal()).prop_map(|(a, b)| format!("[{a}, {b}]")),
        (0i64..5).prop_map(|n| format!("lists.range({n})")),
        Just("[1, 2, 3].map(x, x * object.spec.weight)".to_string()),
        Just("[5, 4, 3].filter(x, x % 2 == 1)".to_string()),
        Just("[2, 1].sort()".to_string()),
        Just("[1, 2, 3, 4].slice(1, 3)".to_string()),
        Just("([1] + [2, 2]).distinct()".to_string()),
    ]
}

/// Kubernetes' typed libraries, timestamps, optionals and maps, over strings and lists drawn
/// from the rest.
fn library_expr() -> impl Strategy<Value = String> {
    let quantity = prop::sample::select(vec!["'1.5Gi'", "'100m'", "'2'", "'-3k'", "'1e3'", "'0.5Ki'", "'abc'"]);
    let address = prop::sample::select(vec!["'10.0.0.1'", "'::1'", "'fe80::1'", "'192.168.1.300'", "'::ffff:1.2.3.4'"]);
    let network = prop::sample::select(vec!["'10.0.0.0/8'", "'192.168.1.1/24'", "'2001:db8::/32'", "'1.2.3.4/40'"]);
    let link = prop::sample::select(vec![
        "'https://u@example.com:8443/a%20b?x=1&x=2'",
        "'/path?q'",
        "'example.com'",
        "'http://[::1]/'",
    ]);
    let version = prop::sample::select(vec!["'1.2.3'", "'1.2.3-rc.1+b'", "'v1.2'", "'01.2.3'", "'2.0.0'"]);
    prop_oneof![
        (
            quantity.clone(),
            quantity.clone(),
            prop::sample::select(vec!["add", "sub", "compareTo", "isLessThan", "isGreaterThan"])
        )
            .prop_map(|(a, b, f)| format!("quantity({a}).{f}(quantity({b}))")),
        (quantity.clone(), prop::sample::select(vec!["asInteger()", "isInteger()", "asApproximateFloat()", "add(3)"]))
            .prop_map(|(a, f)| format!("quantity({a}).{f}")),
        quantity.clone().prop_map(|a| format!("isQuantity({a}) && sign(quantity({a})) >= 0")),
        (
            address.clone(),
            prop::sample::select(vec!["family()", "isLoopback()", "isGlobalUnicast()", "isLinkLocalUnicast()"])
        )
            .prop_map(|(a, f)| format!("ip({a}).{f}")),
        address.clone().prop_map(|a| format!("isIP({a}) ? string(ip({a})) : 'no'")),
        (network.clone(), address.clone()).prop_map(|(n, a)| format!("cidr({n}).containsIP({a})")),
        (network.clone(), network.clone()).prop_map(|(n, m)| format!("cidr({n}).containsCIDR({m})")),
        network.clone().prop_map(|n| format!("[cidr({n}).prefixLength(), size(string(cidr({n}).masked()))]")),
        (
            link.clone(),
            prop::sample::select(vec!["getHost()", "getHostname()", "getPort()", "getEscapedPath()", "getScheme()"])
        )
            .prop_map(|(u, f)| format!("url({u}).{f}")),
        link.clone().prop_map(|u| format!("isURL({u}) && url({u}).getQuery().size() >= 0")),
        (version.clone(), version.clone()).prop_map(|(a, b)| format!("semver({a}, true).compareTo(semver({b}, true))")),
        version.clone().prop_map(|a| format!("isSemver({a}) ? semver({a}).major() : -1")),
        string_expr().prop_map(|s| format!("format.dns1123Label().validate({s})")),
        string_expr().prop_map(|s| format!("format.named('labelValue').value().validate({s}).orValue([]).size()")),
        (string_expr(), string_leaf()).prop_map(|(s, t)| format!("{s}.split({t}).join('|')")),
        (string_expr(), string_leaf()).prop_map(|(s, t)| format!("[{s}.lastIndexOf({t}), {s}.indexOf({t}, 1)]")),
        string_expr().prop_map(|s| format!("{s}.findAll('[a-z]+').size()")),
        string_expr().prop_map(|s| format!("{s}.lowerAscii().trim().find('l.')")),
        Just("object.?spec.?color.orValue('none') + object.?spec.?hue.orValue('none')".to_string()),
        Just("object.metadata.labels.transformMap(k, v, v + k)".to_string()),
        (list_expr(), int_expr()).prop_map(|(l, e)| format!("{l}.transformList(i, v, i + v * {e})")),
        (list_expr(), int_expr()).prop_map(|(l, e)| format!("{l}.exists(i, v, v == {e} || i == 2)")),
        list_expr().prop_map(|l| format!("{{'n': size({l}), 's': {l}.map(x, string(x)).join()}}")),
        (0i64..100000, 0i64..100).prop_map(|(t, d)| {
            format!("(timestamp({t}) + duration('{d}m')).getHours('Europe/Paris') + duration('{d}s').getMilliseconds()")
        }),
        (list_expr(), list_expr()).prop_map(|(a, b)| format!("sets.intersects({a}, {b}) || sets.contains({a}, {b})")),
    ]
}

/// A value of any type, known before evaluation (no object's field, whose type is only known
/// then, nor `null`, which the checker lets into any library's function): the operands
/// [`mixed_expr`] combines. (What evaluating a call on a value of the wrong type says, `no such
/// overload: family(null_type)`, is not cel-go's word for word yet.)
fn any_leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        (-5i64..20).prop_map(|i| i.to_string()),
        prop::sample::select(vec!["''", "'wool'", "'Héllo, World'", "'a-b-c'"]).prop_map(str::to_string),
        prop::sample::select(vec!["true", "false", "1.5", "-0.25", "1e300"]).prop_map(str::to_string),
        prop::sample::select(vec![
            "[]",
            "[1, 2, 3]",
            "[3, -1, 3, 0]",
            "lists.range(3)",
            "[5, 4, 3].filter(x, x % 2 == 1)"
        ])
        .prop_map(str::to_string),
        prop::sample::select(vec![
            "1u",
            "b'ab'",
            "['a', 'b']",
            "{'a': 1}",
            "{1: 'a'}",
            "request",
            "request.userInfo.groups",
            "request.userInfo.extra",
            "request.kind",
            "duration('1s')",
            "timestamp(0)",
            "optional.of(1)",
            "optional.none()",
            "quantity('1')",
            "ip('::1')",
            "int",
            "google.protobuf.Duration",
        ])
        .prop_map(str::to_string),
    ]
}

/// The operators [`mixed_expr`] puts between any two operands.
const OPERATORS: &[&str] = &["+", "-", "*", "/", "%", "==", "!=", "<", ">=", "&&", "||", "in"];

/// The member calls [`mixed_expr`] makes on any target.
const MEMBERS: &[&str] = &[
    "size()",
    "size(1)",
    "contains('a')",
    "startsWith(1)",
    "join()",
    "join(',')",
    "sort()",
    "sum()",
    "max()",
    "value()",
    "hasValue()",
    "orValue(1)",
    "orValue('a')",
    "flatten()",
    "distinct()",
    "indexOf(1)",
    "reverse()",
    "charAt(0)",
    "upperAscii()",
    "getHours()",
    "add(1)",
    "family()",
    "nope()",
    "all(x, x)",
    "all(x, x > 0)",
    "exists(x, x == 'a')",
    "map(x, x + 1)",
    "map(x, [x])",
    "filter(x, x)",
    "exists_one(x, 1)",
    "transformList(i, v, i + v)",
    "transformMap(k, v, v)",
    "?kind",
    "?name.orValue(1)",
];

/// The functions [`mixed_expr`] calls with any argument.
const GLOBALS: &[&str] = &[
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "duration",
    "timestamp",
    "type",
    "quantity",
    "ip",
    "url",
    "lists.range",
    "optional.of",
    "optional.ofNonZeroValue",
    "strings.quote",
    "nope",
];

/// Fields of the declared objects, some undeclared, that [`mixed_expr`] compares with anything.
const FIELDS: &[&str] = &[
    "request.name",
    "request.nope",
    "request.userInfo.username",
    "request.userInfo.nope",
    "request.kind.group",
    "request.dryRun",
    "namespaceObject.metadata.labels",
    "namespaceObject.metadata.nope",
    "namespaceObject.spec.finalizers",
    "has(request.userInfo.groups)",
    "has(request.nothing)",
    "request.?kind.?version",
    "request.?kind.?nothing",
];

/// Constant arguments and optional entries checked at compile time, some invalid.
const CONSTANTS: &[&str] = &[
    "duration('1s')",
    "duration('1x')",
    "timestamp('2026-01-01T00:00:00Z')",
    "timestamp('yesterday')",
    "'a'.matches('^a+$')",
    "'a'.matches('(')",
    "matches('[', 'a')",
    "[?optional.of(1), ?optional.none()]",
    "{?'a': optional.of(1)}",
    "[?1]",
];

/// Expressions of any types put together without regard to them: most are refused by the type
/// checker (with one error or several, in nested places), the rest evaluate.
fn mixed_expr() -> impl Strategy<Value = String> {
    any_leaf().prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            (inner.clone(), prop::sample::select(OPERATORS), inner.clone())
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("[{a}, {b}]")),
            // (In a list: a comprehension over a map of two keys visits them in Go's random order
            // there, so that its cost varies when it stops early.)
            (inner.clone(), inner.clone(), inner.clone()).prop_map(|(a, b, c)| format!("[{{{a}: {b}, 'k': {c}}}]")),
            (inner.clone(), inner.clone(), inner.clone()).prop_map(|(a, b, c)| format!("({a} ? {b} : {c})")),
            (inner.clone(), prop::sample::select(MEMBERS)).prop_map(|(a, m)| format!("{a}.{m}")),
            (prop::sample::select(GLOBALS), inner.clone()).prop_map(|(f, a)| format!("{f}({a})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("sets.contains({a}, {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}.exists(x, x == {b})")),
            (prop::sample::select(FIELDS), inner.clone()).prop_map(|(f, b)| format!("({f} == {b})")),
            prop::sample::select(CONSTANTS).prop_map(str::to_string),
        ]
    })
}

fn expression() -> impl Strategy<Value = String> {
    prop_oneof![
        int_expr(),
        string_expr(),
        bool_expr(),
        list_expr(),
        double_leaf(),
        library_expr(),
        library_expr(),
        mixed_expr(),
        mixed_expr(),
    ]
}

/// A value of any kind for a mutation's field: typed expressions, values JSON cannot hold
/// (bytes, timestamps, uints, NaN), maps of one key (a Go map's order decides which of several
/// bad entries is reported), nested literals and the object's fields.
fn mutation_value() -> impl Strategy<Value = String> {
    let special = prop::sample::select(vec![
        "null",
        "b'ab'",
        "timestamp('2026-01-01T00:00:00Z')",
        "duration('90s')",
        "1u",
        "18446744073709551615u",
        "9007199254740993",
        "(0.0 / 0.0)",
        "object.spec",
        "object.spec.tags",
        "object.metadata.labels",
        "object.nothing",
        "optional.of(1)",
        "int",
        "[[1], [2]]",
        "[{'a': 1}]",
        "{'k': [1]}",
        "{1: 'a'}",
    ]);
    prop_oneof![
        int_expr(),
        string_expr(),
        bool_expr(),
        list_expr(),
        double_leaf(),
        special.prop_map(str::to_string),
        (string_leaf(), int_expr()).prop_map(|(k, v)| format!("{{{k}: {v}}}")),
    ]
}

/// A mutation: an apply configuration's Object, or a JSON patch, over random values.
fn mutation_expr() -> impl Strategy<Value = String> {
    let field = prop::sample::select(vec!["spec", "status", "a"]);
    let op = prop::sample::select(vec!["add", "replace", "test", "remove"]);
    prop_oneof![
        (field.clone(), mutation_value()).prop_map(|(f, v)| format!("Object{{{f}: {v}}}")),
        (field.clone(), field.clone(), mutation_value())
            .prop_map(|(f, g, v)| format!("Object{{{f}: Object.{g}{{x: {v}, n: 1}}}}")),
        (field.clone(), mutation_value()).prop_map(|(f, v)| format!("Object{{{f}: [Object.{f}{{x: {v}}}]}}")),
        (op.clone(), mutation_value()).prop_map(|(o, v)| format!("[JSONPatch{{op: '{o}', path: '/a', value: {v}}}]")),
        (op, field.clone(), mutation_value())
            .prop_map(|(o, f, v)| format!("[JSONPatch{{op: '{o}', path: '/{f}', value: Object.{f}{{x: {v}}}}}]")),
        (field.clone(), mutation_value()).prop_map(|(f, v)| format!("Object{{{f}: {v}}}.{f}")),
        (field, mutation_value(), mutation_value())
            .prop_map(|(f, v, w)| format!("Object{{{f}: {v}}} == Object{{{f}: {w}}}")),
    ]
}

#[test]
fn random_mutations_evaluate_and_convert_as_kubernetes_does() {
    let seed: u64 = std::env::var("CEL_RANDOM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand_seed);
    let cases: usize = std::env::var("CEL_RANDOM_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(400) / 4;
    let expressions = generate_with(seed, cases, mutation_expr);
    let requests: Vec<_> = expressions.iter().map(|e| mutation_request(e)).collect();
    let answers = reference(&requests);
    let differences: Vec<String> = requests
        .iter()
        .zip(&answers)
        .filter_map(|(request, theirs)| {
            let mine = ours_mutating(request);
            let expression = &request["expression"];
            (!same_mutation(&mine, theirs))
                .then(|| format!("{expression}\n  kubernetes: {theirs}\n  ours:       {mine}"))
        })
        .collect();
    let refused = answers.iter().filter(|a| a.get("compileError").is_some()).count();
    let converted = answers
        .iter()
        .filter(|a| a["applyConfiguration"].get("json").is_some() || a["jsonPatch"].get("json").is_some())
        .count();
    eprintln!(
        "seed {seed}: {cases} mutations compared, {refused} refused by Kubernetes' compiler, {converted} converted"
    );
    assert!(refused * 4 < cases, "most generated mutations must compile there ({refused} of {cases} did not)");
    assert!(
        differences.is_empty(),
        "seed {seed} (CEL_RANDOM_SEED={seed} replays it): {} of {cases} differ:\n{}",
        differences.len(),
        differences.iter().take(12).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn random_expressions_evaluate_as_kubernetes_evaluates_them() {
    let seed: u64 = std::env::var("CEL_RANDOM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand_seed);
    let cases: usize = std::env::var("CEL_RANDOM_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(400);
    let expressions = generate(seed, cases);
    let requests: Vec<_> = expressions.iter().map(|e| request_for(e)).collect();
    let answers = reference(&requests);
    let mut differences = Vec::new();
    let refused = answers.iter().filter(|a| a.get("compileError").is_some()).count();
    for (request, theirs) in requests.iter().zip(&answers) {
        let mine = ours(request);
        if !agree(&mine, theirs) {
            differences.push(format!("{}\n  kubernetes: {theirs}\n  ours:       {mine}", request["expression"]));
        }
    }
    eprintln!("seed {seed}: {cases} compared, {refused} of them refused by Kubernetes' compiler");
    assert!(refused * 2 < cases, "most generated expressions must compile there ({refused} of {cases} did not)");
    assert!(refused * 20 > cases, "some generated expressions must not compile ({refused} of {cases} did not)");
    assert!(
        differences.is_empty(),
        "seed {seed} (CEL_RANDOM_SEED={seed} replays it): {} of {cases} differ:\n{}",
        differences.len(),
        differences.iter().take(12).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// `cases` expressions from `seed`. Generated on a thread of 64 MiB: proptest builds a deep
/// strategy tree recursively (ours evaluates them on the test's own 2 MiB).
fn generate(seed: u64, cases: usize) -> Vec<String> {
    generate_with(seed, cases, expression)
}

/// `cases` expressions of the strategy `make` makes, from `seed`.
fn generate_with<S: Strategy<Value = String> + 'static>(seed: u64, cases: usize, make: fn() -> S) -> Vec<String> {
    let generating = std::thread::Builder::new().stack_size(64 << 20).spawn(move || {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
        let mut runner = TestRunner::new_with_rng(Config::default(), rng);
        let strategy = make();
        (0..cases).map(|_| strategy.new_tree(&mut runner).expect("a tree").current()).collect()
    });
    generating.expect("a thread").join().expect("generated")
}

fn rand_seed() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
}
