//! apiserver-kit's CEL against k8s.io/apiserver's: each expression of a corpus evaluated by
//! both, over the same object, request and namespace, and the value (with its CEL type), the
//! error message and the runtime cost compared, or the type checker's errors word for word. The reference is tools/cel-oracle (the admission-policy compiler of
//! Kubernetes 1.37.2), built by the workspace's `scripts/control-plane.sh cel-oracle`.

mod cel;
mod oracle;

use apiserver_kit::cel::Program;
use cel::{VARIABLES, agree, llama, ours, reference, request_for};
use serde_json::{Value as Json, json};

const CORPUS: &[&str] = &[
    // literals and arithmetic
    "1 + 1",
    "1 + 2 * 3 - 4 / 2 % 3",
    "9223372036854775807 + 1",
    "-9223372036854775808 / -1",
    "1 / 0",
    "1 % 0",
    "1u - 2u",
    "2u * 3u",
    "1.5 + 2.25",
    "1.0 / 0.0",
    "'ab' + 'cd'",
    "b'ab' + b'cd'",
    "[1, 2] + [3]",
    "-(1)",
    "!true",
    // comparisons and equality across numbers
    "1 == 1u",
    "1 == 1.0",
    "1 < 2u",
    "2.5 > 2",
    "'abc' < 'abd'",
    "[1, 2] == [1, 2]",
    "{'a': 1} == {'a': 1.0}",
    "null == null",
    "true && false || true",
    "false && (1 / 0 == 1)",
    "(1 / 0 == 1) || true",
    "(1 / 0 == 1) && true",
    "1 in [1, 2, 3]",
    "'a' in {'a': 1}",
    "true ? 1 : 2",
    // the object
    "object.spec.weight > 100",
    "object.spec.weight + 1",
    "object.spec.height * 2.0",
    "object.spec.missing",
    "object.metadata.labels.team == 'wool'",
    "object.metadata.labels['env']",
    "'team' in object.metadata.labels",
    "has(object.spec.color)",
    "has(object.spec.nothing)",
    "has(object.metadata.labels.team)",
    "has({'a': 1}.a)",
    "has(dyn({'a': 1}).b)",
    "has([{'a': 1}][0].a)",
    "has(object.spec.tags.map(t, {t: 1})[0].a)",
    // a field of what has none: false; of a list: an error
    "has(object.spec.weight.a)",
    "has(object.spec.color.a)",
    "has(object.metadata.name.x)",
    "has(dyn(null).a)",
    "has(dyn(1).a)",
    "has(object.spec.tags.a)",
    "has(dyn([1]).a)",
    "has(object.nothing.a)",
    "object.spec.tags[1]",
    "object.spec.tags[5]",
    "object.spec.tags.size()",
    "size(object.spec.tags)",
    "size(object.metadata.name)",
    "object.spec.tags.all(t, t.size() == 1)",
    "object.spec.tags.exists(t, t == 'b')",
    "object.spec.tags.exists_one(t, t == 'b')",
    "object.spec.tags.map(t, t + '!')",
    "object.spec.tags.filter(t, t != 'b')",
    "object.spec.tags.map(t, t == 'a', t + '?')",
    "object.spec.friends.all(f, f.weight > 1)",
    "object.metadata.labels.all(k, k.size() > 2)",
    // (a map's keys come in Go's random order there: only what visits every key has one cost)
    "object.metadata.labels.all(k, object.metadata.labels[k] != '')",
    "object.spec.weight.all(x, true)",
    "oldObject == null",
    "oldObject.spec",
    "params == null",
    "object.metadata.name.startsWith('dol')",
    "object.metadata.name.endsWith('ly')",
    "object.metadata.name.contains('ll')",
    "object.metadata.name.matches('^d[a-z]+$')",
    "matches(object.metadata.name, 'x')",
    "object.?spec.?color",
    "object.?spec.?nothing",
    "object.?nothing.?x",
    "object.?spec.color",
    "object.spec.weight in [120, 2]",
    "object.spec.height in [170.5]",
    "object.spec.weight in [120.0]",
    "object.spec.weight in [1, object.spec.weight]",
    "object.spec.weight > 100 ? object.spec.color : object.metadata.name",
    "[1, 2][0]",
    "object.spec[?'color']",
    "[1, 2].map(x, x * 2)",
    "[[1], [2, 3]].map(l, l.size())",
    "{'a': object.spec.weight}",
    "{'a': 1, 'a': 2}",
    "{'a': object.spec.weight, 'a': 2}",
    "[object.spec.weight, 1]",
    // conversions
    "int('42')",
    "int('4x')",
    "int(2.9)",
    "int(1e20)",
    "uint(-1)",
    "double('1.5')",
    "string(1.5)",
    "string(1000000.0)",
    "string(b'abc')",
    "bool('true')",
    "bool('yes')",
    "duration('1h30m')",
    "duration('1.5s') + duration('500ms')",
    "string(duration('90s'))",
    "timestamp('2026-11-29T20:00:00Z')",
    "timestamp('2026-11-29T20:00:00Z') + duration('1h')",
    "int(timestamp('1970-01-01T00:01:00Z'))",
    "type(1) == int",
    "type(object.spec.tags) == list",
    "dyn(1) + 1",
    "int(object.spec.weight)",
    "string(object.spec.weight)",
    // the strings extension (version 2) and Kubernetes' regex library
    "object.metadata.name.charAt(1)",
    "object.metadata.name.charAt(5)",
    "object.metadata.name.charAt(6)",
    "'héllo'.indexOf('l')",
    "'héllo'.indexOf('l', 3)",
    "'héllo'.indexOf('', 9)",
    "'héllo'.indexOf('x', -1)",
    "'hello'.lastIndexOf('l')",
    "'hello'.lastIndexOf('l', 2)",
    "'hello'.lastIndexOf('')",
    "'HeLLo'.lowerAscii()",
    "'héllo'.upperAscii()",
    "'a-b-c'.replace('-', '+')",
    "'a-b-c'.replace('-', '+', 1)",
    "'a,b,c'.split(',')",
    "'a,b,c'.split(',', 2)",
    "'abc'.split('')",
    "'hello'.substring(1)",
    "'hello'.substring(1, 3)",
    "'hello'.substring(3, 1)",
    "'hello'.substring(9)",
    "'  hi  '.trim()",
    "['a', 'b'].join()",
    "['a', 'b'].join('-')",
    "object.spec.tags.join(', ')",
    "[1, 2].join()",
    "strings.quote('a\"b')",
    "object.metadata.name.find('l+')",
    "object.metadata.name.findAll('l')",
    "'a1b22c333'.findAll('[0-9]+', 2)",
    "'abc'.find('x')",
    // optionals and lists
    "optional.of(1).hasValue()",
    "optional.none().hasValue()",
    "optional.none().value()",
    "optional.of(object.spec.weight).value()",
    "optional.none().orValue(5)",
    "optional.of(1).or(optional.of(2)).value()",
    "optional.ofNonZeroValue('').hasValue()",
    "optional.ofNonZeroValue(optional.none()).hasValue()",
    "optional.ofNonZeroValue(timestamp(0)).hasValue()",
    "optional.ofNonZeroValue(timestamp('0001-01-01T00:00:00Z')).hasValue()",
    "object.?spec.?color.orValue('black')",
    "object.?spec.?hue.orValue('black')",
    "object.spec.tags.first()",
    "[].first()",
    "object.spec.tags.last().value()",
    "optional.unwrap([optional.of(1), optional.none()])",
    "[optional.of(1), optional.none()].unwrapOpt()",
    "[1, 2, 3].isSorted()",
    "object.spec.tags.isSorted()",
    "[3, 1, 2].sum()",
    "[1.5, 2.5].sum()",
    "object.spec.tags.min()",
    "[3, 1, 2].max()",
    "[1, 2, 1].indexOf(1)",
    "[1, 2, 1].lastIndexOf(1)",
    "object.spec.tags.indexOf('c')",
    "[object.spec.weight, 1].sum()",
    // two-variable comprehensions
    "object.spec.tags.all(i, t, i < 3 && t != '')",
    "object.spec.tags.exists(i, t, i == 2 && t == 'c')",
    "object.spec.tags.existsOne(i, t, t == 'a')",
    "object.spec.tags.exists_one(i, t, i > 0)",
    "object.metadata.labels.all(k, v, k.size() > 2 && v != '')",
    "object.spec.tags.transformList(i, t, t + string(i))",
    "object.spec.tags.transformList(i, t, i != 1, t.upperAscii())",
    "object.metadata.labels.transformMap(k, v, v.size())",
    "object.metadata.labels.transformMap(k, v, k != 'env', v + '!')",
    "object.spec.tags.transformMapEntry(i, t, {t: i})",
    "[1, 1].transformMapEntry(i, v, {v: i})",
    "object.spec.tags.all(i, i, true)",
    // the lists (version 3) and sets extensions
    "[1, 2, 3, 4].slice(1, 3)",
    "[1, 2].slice(2, 1)",
    "[1, 2].slice(0, 3)",
    "[[1, 2], [3, [4]]].flatten()",
    "[[1, 2], [3, [4]]].flatten(2)",
    "[[1], 2].flatten(-1)",
    "[3, 1, 2].sort()",
    "['b', 'a'].sort()",
    "[].sort()",
    "[1, 'a'].sort()",
    "[1, 2, 1, 3].distinct()",
    "[1, 2, 3].reverse()",
    "lists.range(4)",
    "lists.range(-1)",
    "['bb', 'a', 'ccc'].sortBy(s, s.size())",
    "object.spec.tags.reverse()",
    "object.spec.tags.sort()",
    "object.spec.tags.sortBy(t, t)",
    "object.spec.tags.slice(0, 2)",
    "sets.contains([1, 2, 3], [2, 3])",
    "sets.contains([1, 2], [3])",
    "sets.equivalent([1, 2], [2, 1, 1])",
    "sets.intersects([1, 2], [3, 2])",
    "sets.contains(object.spec.tags, ['a'])",
    // timestamps and durations
    "timestamp('2026-11-29T20:30:15.250Z').getFullYear()",
    "timestamp('2026-11-29T20:30:15.250Z').getMonth()",
    "timestamp('2026-11-29T20:30:15.250Z').getDayOfYear()",
    "timestamp('2026-11-29T20:30:15.250Z').getDayOfMonth()",
    "timestamp('2026-11-29T20:30:15.250Z').getDate()",
    "timestamp('2026-11-29T20:30:15.250Z').getDayOfWeek()",
    "timestamp('2026-11-29T20:30:15.250Z').getHours()",
    "timestamp('2026-11-29T20:30:15.250Z').getMinutes()",
    "timestamp('2026-11-29T20:30:15.250Z').getSeconds()",
    "timestamp('2026-11-29T20:30:15.250Z').getMilliseconds()",
    "timestamp('2026-11-29T23:30:00Z').getHours('Europe/Paris')",
    "timestamp('2026-11-29T23:30:00Z').getDate('Asia/Tokyo')",
    "timestamp('2026-11-29T23:30:00Z').getHours('+05:30')",
    "timestamp('2026-11-29T23:30:00Z').getMinutes('-01:15')",
    "timestamp('2026-11-29T23:30:00Z').getHours('Mars/Olympus')",
    "timestamp('2026-11-29T23:30:00Z').getHours('+05:75')",
    "timestamp('2026-11-29T23:30:00Z').getHours('x:00')",
    "duration('2h30m').getHours()",
    "duration('2h30m').getMinutes()",
    "duration('-90s').getSeconds()",
    "duration('1.5s').getMilliseconds()",
    "timestamp('2026-11-29T23:30:00Z') - timestamp('2026-11-29T20:00:00Z')",
    "timestamp('2026-11-29T23:30:00Z') > timestamp('2026-11-29T20:00:00Z')",
    "duration('1h') < duration('61m')",
    "string(timestamp('2026-11-29T23:30:00.5+01:00'))",
    "timestamp(1700000000)",
    "timestamp('9999-12-31T23:59:59Z') + duration('1s')",
    // Kubernetes' libraries: quantities, IPs and CIDRs, URLs, versions, named formats
    "quantity('1.5Gi')",
    "quantity('1.5Gi') == quantity('1536Mi')",
    "quantity('100m').isLessThan(quantity('1'))",
    "quantity('2').isGreaterThan(quantity('1500m'))",
    "quantity('1k').compareTo(quantity('1000'))",
    "quantity('1Gi').add(quantity('512Mi'))",
    "quantity('1').add(2).sub(quantity('500m'))",
    "quantity('1.5').asInteger()",
    "quantity('3k').asInteger()",
    "quantity('1.5').isInteger()",
    "quantity('250m').asApproximateFloat()",
    "sign(quantity('-2'))",
    "quantity('abc')",
    "isQuantity('1Ei')",
    "isQuantity('1.5.5')",
    "ip('192.168.1.10').family()",
    "ip('fe80::1').isLinkLocalUnicast()",
    "ip('127.0.0.1').isLoopback()",
    "ip('::ffff:1.2.3.4')",
    "ip('01.2.3.4')",
    "ip.isCanonical('2001:db8::1')",
    "ip.isCanonical('2001:DB8::1')",
    "isIP('300.1.1.1')",
    "string(ip('10.0.0.1'))",
    "cidr('10.0.0.0/8').containsIP('10.1.2.3')",
    "cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))",
    "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')",
    "cidr('10.1.2.3/8').masked()",
    "cidr('10.1.2.3/8').ip()",
    "cidr('2001:db8::/32').prefixLength()",
    "cidr('10.0.0.0')",
    "isCIDR('10.0.0.0/33')",
    "string(cidr('192.168.0.0/24'))",
    "url('https://user@example.com:8443/a/b?x=1&x=2&y=3#f')",
    "url('https://example.com:8443/a%20b').getHost()",
    "url('https://example.com:8443/a').getHostname()",
    "url('https://example.com:8443/a').getPort()",
    "url('https://example.com/a%20b').getEscapedPath()",
    "url('https://example.com/?x=1&x=2&y=3').getQuery()",
    "url('https://[::1]:80/').getHostname()",
    "url('example.com')",
    "isURL('/relative')",
    "semver('1.2.3-rc.1+build').major()",
    "semver('1.2.3').isLessThan(semver('1.10.0'))",
    "semver('1.2.3-alpha').compareTo(semver('1.2.3'))",
    "semver('v1.2', true).minor()",
    "semver('01.2.3')",
    "isSemver('1.2')",
    "semver('1.2.3') == semver('1.2.3+other')",
    "format.dns1123Label().validate('Not_Valid')",
    "format.dns1123Label().validate('valid-name')",
    "format.named('uuid').value().validate('not-a-uuid')",
    "format.named('nope').hasValue()",
    "format.labelValue().validate(object.metadata.labels.team)",
    "format.uri()",
    // errors that the checker catches
    "undeclared + 1",
    "1 + 'a'",
    "object.spec.weight + 'a'",
    // wrong argument counts
    "size()",
    "'abc'.size(1)",
    "'abc'.substring()",
    "'abc'.charAt(1, 2)",
    "int(1, 2)",
    "optional.of()",
    "lists.range(1, 2)",
    "[1].slice(1)",
    "optional.of(1).hasValue(1)",
    // unknown functions
    "bogus(1)",
    "'abc'.reverse()",
    "math.greatest(1, 2)",
    "strings.upper('a')",
    "object.spec.tags.all()",
    // the request's and the namespace's declared fields
    "request.userInfo.username + '!'",
    "request.userInfo.name",
    "request.kind.grp == ''",
    "has(request.userInfo.nope)",
    "request.?userInfo.?nope",
    "request.dryRun + 1",
    "request.userInfo.groups[0] + 1",
    "request.userInfo.groups.exists(g, g.startsWith(1))",
    "request.userInfo.extra['x'].join(',')",
    "request.operation == 'CREATE' && request.userInfo.username.size() > 0",
    "request.name.size",
    "request + 1",
    "namespaceObject.metadata.labels.team + 1",
    "namespaceObject.status.conditions.all(c, c.lastTransitionTime > 1)",
    "namespaceObject.spec.finalizers.size() == 0",
    "kubernetes.AdmissionRequest",
    "google.protobuf.Duration",
    "type(duration('1s')) == google.protobuf.Duration",
    "type(ip('1.2.3.4')) == net.IP",
    "timestamp",
    "[].exists(x, x == int)",
    ".object.spec.weight",
    // mixed types
    "[1, 2.0]",
    "[1, 1u, 'a']",
    "{'a': 1, 'b': 'c'}",
    "{1: 'a', 'b': 'c'}",
    "[[1], ['a']]",
    "[[1, 2], [3, 'a']]",
    "[1, null]",
    "[object.spec.weight, object.spec.height]",
    "[optional.none(), optional.of(1)]",
    "[1, 2] == ['a']",
    "true ? 1 : 'a'",
    "1 ? 2 : 3",
    "1 + 'a' + 2.0",
    "'a' + 1 + 'b' + 2",
    "type(1) == 1",
    "!1",
    "-'a'",
    "1 in {'a': 1}",
    "null + 1",
    "has(object.spec.color) + 1",
    "[1, 2].indexOf('a')",
    "'a,b'.split(',').join(1)",
    "'a'.charAt('b')",
    "'abc'.matches(1)",
    "quantity('1').add('a')",
    "ip('1.2.3.4').family() + 'a'",
    "sets.contains([1], ['a'])",
    "url('https://x').getPort() + 1",
    "semver('1.0.0').major() + ''",
    "format.named('uuid').value().validate(1)",
    "quantity('1').?name",
    "has(url('https://x').host)",
    "ip('::1').family",
    // comprehensions
    "[1, 2].all(x, x + 1)",
    "[1, 2].map(x, x + 'a')",
    "[1, 2].filter(x, x)",
    "[1, 2].exists_one(x, 'a')",
    "{'a': 1}.all(k, k > 0)",
    "1.map(x, x)",
    "'abc'.all(c, true)",
    "[1, 2].all(x, y > 0)",
    "[1].map(x, x).map(y, x)",
    "[1, 2].transformList(i, v, i + 'a')",
    "{'a': 1}.transformMap(k, v, k + v)",
    "[1, 2].sortBy(x, [x])",
    "[[1], [2]].map(l, l.map(x, x + 'a'))",
    // optionals
    "optional.of(1) + 1",
    "optional.none().orValue('a') + 1",
    "object.?spec.orValue(1)",
    "[?1, 2]",
    "{?'a': 1}",
    "optional.of(1).value() + 'a'",
    "request.?name.orValue(1)",
    "[optional.of(1)].unwrapOpt() + ['a']",
    // constant arguments checked at compile time
    "timestamp('x')",
    "duration('1x') < duration('1s')",
    "'a'.matches('(')",
    "matches('(', 'a')",
];

/// Where ours differs today, and why (each a cost of the same value). The test fails when this
/// list is not exactly the differences, so that an expression leaves it when it agrees.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[(
    "has(object.nothing.a)",
    "cel-go resolves the operand and the presence test as one attribute and counts 1 when the path \
     fails; this evaluator counts the failed qualifier as well (2)",
)];

#[test]
fn the_corpus_evaluates_as_kubernetes_evaluates_it() {
    let requests: Vec<Json> = CORPUS.iter().map(|e| request_for(e)).collect();
    let answers = reference(&requests);
    let mut differences = Vec::new();
    for (request, theirs) in requests.iter().zip(&answers) {
        let mine = ours(request);
        let expression = request["expression"].as_str().unwrap_or_default();
        let known = KNOWN_DIFFERENCES.iter().find(|(e, _)| *e == expression);
        let differ = !agree(&mine, theirs);
        let as_known = match known {
            Some(_) => differ && theirs["value"] == mine["value"] && theirs["cost"] != mine["cost"],
            None => !differ,
        };
        if !as_known {
            differences.push(format!("{expression:?}\n  kubernetes: {theirs}\n  ours:       {mine}"));
        }
    }
    assert!(differences.is_empty(), "{} of {} differ:\n{}", differences.len(), CORPUS.len(), differences.join("\n"));
}

/// Expressions of the authorization library, with `authorizer` declared.
const AUTHORIZER_CORPUS: &[&str] = &[
    "authorizer.group('apps').resource('deployments').namespace('ns').check('get').allowed()",
    "authorizer.path('/healthz').check('get').allowed() || authorizer.requestResource.check('get').errored()",
    "authorizer.serviceAccount('ns', 'sa').group('').resource('pods').name('x').subresource('log').check('get').reason()",
    "authorizer.group('').resource('pods').fieldSelector('a=b').labelSelector('x').check('list').error()",
    "authorizer.group(1)",
    "authorizer.requestResource.check('get').reason() + 1",
    "authorizer.path('/x').allowed()",
    "authorizer.serviceAccount('ns')",
    "authorizer.nope",
    "authorizer.requestResource.nope",
    "string(authorizer)",
    "authorizer == null",
    "[authorizer, 1]",
];

/// With `authorizer` declared, the authorization library's expressions compile, or are refused
/// with the same errors, as Kubernetes compiles them (the oracle has no authorizer to evaluate
/// them with).
#[test]
fn authorizer_expressions_compile_as_kubernetes_compiles_them() {
    let requests: Vec<Json> = AUTHORIZER_CORPUS.iter().map(|e| json!({"expression": e, "authorizer": true})).collect();
    let answers = reference(&requests);
    let mut names: Vec<&str> = VARIABLES.iter().map(|(name, _)| *name).collect();
    names.push("authorizer");
    for (expression, theirs) in AUTHORIZER_CORPUS.iter().zip(&answers) {
        let mine = Program::compile(expression, &names).err().map(|e| e.issues);
        let theirs = theirs["compileError"].as_str().map(|t| t.strip_prefix("compilation failed: ").unwrap_or(t));
        assert_eq!(mine.as_deref(), theirs, "{expression}");
    }
}

/// Nesting as deep as cel-go's parser allows evaluates, far deeper is refused at compile time,
/// and neither overflows a worker thread's 2 MiB stack. (Between, the limits differ: cel-go
/// counts 250 levels of each grammar rule, the `cel` crate 250 levels of its own recursion;
/// `(1 + ` nested 150 times is refused there and evaluated here.)
#[test]
fn deep_expressions_are_refused_or_evaluated_as_kubernetes_does_on_a_small_stack() {
    let depths = [50, 100, 1000];
    let requests: Vec<Json> = depths
        .iter()
        .flat_map(|&d| {
            [
                format!("{}1{}", "(1 + ".repeat(d), ")".repeat(d)),
                format!("{}1{}", "[".repeat(d), "]".repeat(d)),
                format!("object{}", ".spec".repeat(d)),
                format!("{}true", "!".repeat(d)),
            ]
        })
        .map(|e| json!({"expression": e, "object": llama()}))
        .collect();
    let answers = reference(&requests);
    let ours: Vec<Json> = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || requests.iter().map(ours).collect())
        .expect("a thread")
        .join()
        .expect("no stack overflow");
    for (mine, theirs) in ours.iter().zip(&answers) {
        assert!(agree(mine, theirs), "{mine} / {theirs}");
    }
}
