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

/// The parser's options: go-yaml v2's scalar resolution and the budget described above.
fn options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_DEPTH;
    // Aliases repeat scalars: at most four request bodies' worth of text after expansion.
    budget.max_total_scalar_bytes = 4 * super::decode::MAX_BODY_BYTES;
    serde_saphyr::options! {
        budget: Some(budget),
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::LastWins,
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
    let parsed = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("yaml-parser".into())
            .stack_size(PARSER_STACK_BYTES)
            .spawn_scoped(scope, || parse(bytes))
            .map_err(|e| Error::Internal(format!("cannot start the YAML parser: {e}")))?
            .join()
            .map_err(|_| Error::Internal("the YAML parser failed".into()))
    })?;
    parsed.map_err(invalid)
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
    let documents: Vec<Value> =
        serde_saphyr::from_slice_multiple_with_options(bytes, options()).map_err(|e| e.to_string())?;
    Ok(documents.into_iter().next().unwrap_or(Value::Null))
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
        // What kube-apiserver 1.20 stored for the same Llama spec sent as application/yaml.
        let v = to_json(b"spec:\n  weight: 0x10\n  height: 0755\n  color: yes\n  n: 1_000\n  s: '0755'\n").unwrap();
        assert_eq!(v, json!({"spec": {"weight": 16, "height": 493, "color": true, "n": 1000, "s": "0755"}}));
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
