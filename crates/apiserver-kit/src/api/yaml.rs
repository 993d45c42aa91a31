//! Reading YAML request bodies (`application/yaml` creates and updates, apply patches) into JSON
//! values, as the kube-apiserver reads them through sigs.k8s.io/yaml (go-yaml v2 underneath).
//!
//! The parser is the `serde-saphyr` crate (the one kube-rs reads kubeconfigs with), set up to
//! resolve scalars as go-yaml v2 does: YAML 1.1 booleans (`yes`, `off`), legacy octal (`0755`
//! is 493), underscores in numbers (`1_000`), the last of duplicate keys, and only the first
//! document of a stream. Its budget bounds nesting to what a JSON body may nest, expanded text to
//! four request bodies, and aliases, nodes and events to the crate's defaults (50,000, 250,000
//! and 1,000,000), so an alias bomb or a deeply nested document is a 400 rather than memory or
//! stack exhaustion.

use super::patch::MAX_DEPTH;
use crate::machinery::error::{Error, Result};
use serde_json::Value;

/// The parser's options: go-yaml v2's scalar resolution and the budget described above; the
/// last of duplicate keys wins, or a duplicate is an error (`strict`).
fn options(strict: bool) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_DEPTH;
    // Aliases repeat scalars: at most four request bodies' worth of text after expansion.
    budget.max_total_scalar_bytes = 4 * super::decode::MAX_BODY_BYTES;
    serde_saphyr::options! {
        budget: Some(budget),
        duplicate_keys: if strict {
            serde_saphyr::DuplicateKeyPolicy::Error
        } else {
            serde_saphyr::DuplicateKeyPolicy::LastWins
        },
        legacy_octal_numbers: true,
        // One-line messages for a Status, without the rustc-like source excerpt.
        with_snippet: false,
    }
}

/// The stack of the thread that parses: the deserializer recurses once per level, and a debug
/// build needs about 4 MiB for [`MAX_DEPTH`] levels (a release build under 512 KiB), more than a
/// runtime worker has. Only touched pages are committed.
const PARSER_STACK_BYTES: usize = 16 * 1024 * 1024;

/// Parses the first document of a YAML stream into a JSON value; an empty stream is `null`. A
/// document that does not parse is `invalid(the parser's message)`, worded by the caller as the
/// kube-apiserver words it for that request. Parses on a thread of its own with a stack deep
/// enough for any document the budget lets through.
pub fn to_json(bytes: &[u8], invalid: impl FnOnce(String) -> Error) -> Result<Value> {
    on_deep_stack("yaml-parser", || parse(bytes))?.map_err(invalid)
}

/// [`to_json`], and the key the document repeats first, as sigs.k8s.io/yaml's strict reading
/// reports it (`line 4: key "weight" already set in map`), for a write's `fieldValidation`.
pub fn to_json_noting_duplicates(bytes: &[u8], invalid: impl FnOnce(String) -> Error) -> Result<(Value, Vec<String>)> {
    let parsed = on_deep_stack("yaml-parser", || {
        if let Some(message) = control_characters(bytes) {
            return Err(message);
        }
        match first_document(bytes, true) {
            Ok(value) => Ok((value, Vec::new())),
            // Read again keeping the last of repeated keys (and, for any other refusal of the
            // strict reading, to give the lenient reading's answer).
            Err(refused) => {
                let noted = match refused {
                    serde_saphyr::Error::DuplicateMappingKey { key: Some(key), location } => {
                        vec![format!("line {}: key {key:?} already set in map", location.line())]
                    }
                    _ => Vec::new(),
                };
                first_document(bytes, false).map(|value| (value, noted)).map_err(|e| e.to_string())
            }
        }
    })?;
    parsed.map_err(invalid)
}
/// Runs `work` on a thread of its own named `name`, with a stack deep enough for the YAML
/// parser or writer at [`MAX_DEPTH`] levels (and a few more, for the list around an object).
pub fn on_deep_stack<T: Send>(name: &str, work: impl FnOnce() -> T + Send) -> Result<T> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name(name.into())
            .stack_size(PARSER_STACK_BYTES)
            .spawn_scoped(scope, work)
            .map_err(|e| Error::Internal(format!("cannot start the {name} thread: {e}")))?
            .join()
            .map_err(|_| Error::Internal(format!("the {name} thread failed")))
    })
}

/// go-yaml's reader refuses any character outside YAML's printable set, quoted or not (so also
/// in a JSON document read as YAML): the message it gives, or `None` when there is none.
pub fn control_characters(bytes: &[u8]) -> Option<String> {
    let printable = |c: char| {
        matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}')
            || c >= '\u{10000}'
    };
    // Bytes that are not UTF-8 are the parser's to refuse.
    let text = std::str::from_utf8(bytes).ok()?;
    text.chars().any(|c| !printable(c)).then(|| "yaml: control characters are not allowed".to_string())
}

fn parse(bytes: &[u8]) -> std::result::Result<Value, String> {
    if let Some(message) = control_characters(bytes) {
        return Err(message);
    }
    first_document(bytes, false).map_err(|e| e.to_string())
}

/// The first document of a YAML stream (`null` for none), a repeated key refused when `strict`.
fn first_document(bytes: &[u8], strict: bool) -> std::result::Result<Value, serde_saphyr::Error> {
    let documents: Vec<GoYaml> = serde_saphyr::from_slice_multiple_with_options(bytes, options(strict))?;
    Ok(documents.into_iter().next().map_or(Value::Null, |d| d.0))
}
/// A YAML node read as sigs.k8s.io/yaml reads it into JSON: as serde_json reads any value, but a
/// mapping's plain keys resolve as go-yaml v2 resolves scalars and are then written as text
/// ([`KeyText`]): `n:` and `off:` are the key `"false"`, `0x10:` is `"16"`, `1.0:` is `"1"`.
struct GoYaml(Value);

impl<'de> serde::Deserialize<'de> for GoYaml {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        deserializer.deserialize_any(GoYamlVisitor).map(GoYaml)
    }
}

struct GoYamlVisitor;

impl<'de> serde::de::Visitor<'de> for GoYamlVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a YAML node")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(GoYaml(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        let mut members = serde_json::Map::new();
        while let Some((KeyText(key), GoYaml(value))) = map.next_entry()? {
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

/// A mapping key resolved as go-yaml v2 resolves a scalar, as text the way sigs.k8s.io/yaml's
/// `convertToJSONableObject` writes it: booleans `true`/`false`, integers in decimal, floats as
/// Go's `strconv.FormatFloat(f, 'g', -1, 32)` (`.inf`, `-.inf`, `.nan` as YAML writes them); a
/// null or a collection is no key JSON can have.
struct KeyText(String);

impl<'de> serde::Deserialize<'de> for KeyText {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        match deserializer.deserialize_any(GoYamlVisitor)? {
            Value::String(text) => Ok(KeyText(text)),
            Value::Bool(b) => Ok(KeyText(b.to_string())),
            Value::Number(n) => Ok(KeyText(match n.as_f64().filter(|_| n.is_f64()) {
                Some(f) => go_float32_g(f),
                None => n.to_string(),
            })),
            other => Err(D::Error::custom(format!("Unsupported map key of type: {other}"))),
        }
    }
}

/// `f` as Go's `strconv.FormatFloat(f, 'g', -1, 32)` writes it (YAML's words for the non-finite).
fn go_float32_g(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let single = f as f32;
    let scientific = format!("{single:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or_default();
    // The shortest digits; %e when the exponent is below -4 or at least 6, as Go decides for 'g'.
    if (-4..6).contains(&exponent) {
        format!("{single}")
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    fn to_json(bytes: &[u8]) -> std::result::Result<Value, Error> {
        super::to_json(bytes, Error::BadRequest)
    }

    #[test]
    fn control_characters_are_refused_as_go_yaml_refuses_them() {
        for (text, refused) in [
            ("a: b\tc\r\n", false),
            ("a: \u{85}\u{a0}\u{feff}\u{1f999}", false),
            ("{\"a\": \"\u{94}\"}", true),
            ("a: \u{7f}", true),
            ("a: \u{1b}", true),
            ("a: \u{fffe}", true),
        ] {
            assert_eq!(control_characters(text.as_bytes()).is_some(), refused, "{text:?}");
            assert_eq!(to_json(text.as_bytes()).is_err(), refused, "{text:?}");
        }
    }

    #[test]
    fn scalars_resolve_as_go_yaml_v2_resolves_them() {
        // What kube-apiserver 1.20 stored for the same Widget spec sent as application/yaml.
        let v = to_json(b"spec:\n  weight: 0x10\n  height: 0755\n  color: yes\n  k: 1_000\n  s: '0755'\n").unwrap();
        assert_eq!(v, json!({"spec": {"weight": 16, "height": 493, "color": true, "k": 1000, "s": "0755"}}));
    }

    #[test]
    fn plain_keys_resolve_as_go_yaml_v2_resolves_them_and_are_written_as_sigs_k8s_io_yaml_writes_them() {
        // What kube-apiserver 1.20 stored for the same labels and annotations sent as application/yaml.
        let v = to_json(
            b"n: b\n'y': c\nY: q\n0x10: e\n1_0: f\n1.5: g\n07: h\n1e3: i\n2001-12-14: k\nNO: l\n123456789012: m\n0.1: o\n1.0: p\n-0: r\n1e20: s\n",
        )
        .unwrap();
        let expected = json!({"false": "l", "y": "c", "true": "q", "16": "e", "10": "f", "1.5": "g", "7": "h",
            "1000": "i", "2001-12-14": "k", "123456789012": "m", "0.1": "o", "1": "p", "0": "r", "1e+20": "s"});
        assert_eq!(v, expected);
        assert!(to_json(b"~: h\n").is_err());
        assert_eq!(super::go_float32_g(1234567.0), "1.234567e+06");
        assert_eq!(super::go_float32_g(0.00001), "1e-05");
        assert_eq!(super::go_float32_g(1.23456789012), "1.2345679");
        // The parser refuses a non-finite float before it is a key (as JSON cannot hold it as a value).
        assert_eq!(super::go_float32_g(f64::NEG_INFINITY), "-.inf");
    }

    #[test]
    fn long_numbers_read_the_same_as_json_and_as_yaml_correctly_rounded_as_go_reads_them() {
        // serde_json without `float_roundtrip` read this one ulp off (found by fuzz/yaml_body).
        let text = format!("{{\"w\":{}e5}}", "1".to_string() + &"3".repeat(54));
        let json: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(to_json(text.as_bytes()).unwrap(), json);
        assert_eq!(json["w"].as_f64(), Some(1.3333333333333333e59));
    }

    #[test]
    fn the_last_duplicate_key_wins_and_only_the_first_document_counts() {
        let v = to_json(b"spec:\n  weight: 1\n  weight: 2\n---\nother: document\n").unwrap();
        assert_eq!(v, json!({"spec": {"weight": 2}}));
    }

    #[test]
    fn the_first_repeated_key_is_noted_by_its_line() {
        let invalid = |e: String| Error::BadRequest(e);
        let (v, noted) = to_json_noting_duplicates(
            b"kind: L
spec: {weight: 1, weight: 2, height: 1}
",
            invalid,
        )
        .unwrap();
        assert_eq!(v, json!({"kind": "L", "spec": {"weight": 2, "height": 1}}));
        assert_eq!(noted, [r#"line 2: key "weight" already set in map"#]);
        let (_, noted) = to_json_noting_duplicates(
            b"spec:
  weight: 1
",
            invalid,
        )
        .unwrap();
        assert!(noted.is_empty());
        assert!(to_json_noting_duplicates(b"a: [", invalid).is_err());
        assert!(to_json_noting_duplicates(b"a: ", invalid).is_err(), "control characters stay refused");
    }

    #[test]
    fn anchors_and_flow_style_are_yaml_and_json_is_yaml_too() {
        let v = to_json(b"a: &x {b: [1, 2.5, null]}\nc: *x\n").unwrap();
        assert_eq!(v, json!({"a": {"b": [1, 2.5, null]}, "c": {"b": [1, 2.5, null]}}));
        let json = br#"{"metadata": {"name": "dolly", "labels": {"a": "1"}}, "spec": {"weight": 3}}"#;
        assert_eq!(to_json(json).unwrap(), serde_json::from_slice::<Value>(json).unwrap());
    }

    #[test]
    fn malformed_deep_and_bomb_documents_are_errors_not_crashes() {
        assert!(to_json(b"spec:\n  height: [1\n").is_err());
        assert!(to_json(&[b'a', b':', b' ', 0xff]).is_err());
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert!(to_json(deep.as_bytes()).is_err());
        let block = |levels: usize| (0..levels).map(|i| format!("{}k:\n", "  ".repeat(i))).collect::<String>();
        // As deep as a JSON body may nest, and one level more.
        assert!(to_json(block(MAX_DEPTH).as_bytes()).is_ok());
        let err = to_json(block(MAX_DEPTH + 1).as_bytes()).unwrap_err();
        assert!(err.to_string().contains("budget breached: Depth"), "{err}");
        let mapping = "{a: ".repeat(MAX_DEPTH) + &"}".repeat(MAX_DEPTH);
        assert!(to_json(mapping.as_bytes()).is_ok());
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let prev = i - 1;
            bomb += &format!(
                "b{i}: &b{i} [*{}, *{0}, *{0}, *{0}, *{0}, *{0}, *{0}, *{0}, *{0}, *{0}]\n",
                if prev == 0 { "a".to_string() } else { format!("b{prev}") }
            );
        }
        assert!(to_json(bomb.as_bytes()).is_err());
        assert_eq!(to_json(b"").unwrap(), Value::Null);
    }
}
