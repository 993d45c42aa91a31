//! Reads arbitrary bytes as a YAML body, as an `application/yaml` create and an apply patch do
//! (`parse_yaml`, `apply_configuration`), then decodes what parses as a Llama body in every
//! `fieldValidation` mode. Checks that nothing panics or overflows the stack (the parser's depth
//! budget and its own thread), every error is a 4xx, and:
//! - JSON is YAML: bytes that parse as a JSON object parse as YAML to the same value (numbers
//!   compared by value: YAML's `-0` is the integer 0), unless they hold a character YAML does not
//!   allow in a stream, which JSON allows in strings (DEL, C1 controls): go-yaml refuses those
//!   too ("control characters are not allowed"), so the kube-apiserver answers a 400 as well;
//! - an apply configuration is an object, and YAML that parses to an object is one unchanged.
#![no_main]

mod common;

use common::{assert_client_error, decode_patched};
use farm_apiserver::api::decode::parse_yaml;
use farm_apiserver::api::patch::apply_configuration;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let parsed = parse_yaml(data, "Llama");
    let config = apply_configuration(data);
    match (&parsed, &config) {
        (Ok(value), Ok(config)) if value.is_object() => {
            if !matches!(serde_json::from_slice::<Value>(data), Ok(Value::Object(_))) {
                assert_eq!(value, config, "an apply configuration is not the YAML it was sent as");
            }
        }
        (_, Ok(config)) => assert!(config.is_object(), "an apply configuration that is not an object: {config}"),
        (_, Err(err)) => assert_client_error(err),
    }
    if let Ok(Value::Object(json)) = serde_json::from_slice::<Value>(data)
        && std::str::from_utf8(data).is_ok_and(yaml_printable)
    {
        match &parsed {
            Ok(value) => {
                let json = Value::Object(json);
                assert!(same(value, &json), "JSON read as YAML is not the same value: {value} and {json}");
            }
            Err(err) => panic!("a JSON object is not YAML: {err}"),
        }
    }
    match parsed {
        Ok(value) => decode_patched(&value),
        Err(err) => assert_client_error(&err),
    }
});

/// Whether every character of `text` is one YAML allows in a stream (`c-printable`, the check of
/// go-yaml's reader).
fn yaml_printable(text: &str) -> bool {
    text.chars().all(|c| {
        matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{7e}' | '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}')
            || c >= '\u{10000}'
    })
}

/// Equal JSON values, numbers compared by value.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}
