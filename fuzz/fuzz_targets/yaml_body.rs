//! Reads arbitrary bytes as a YAML body, as an `application/yaml` create and an apply patch do
//! (`parse_yaml`, `apply_configuration`), then decodes what parses as a Llama body in every
//! `fieldValidation` mode. Checks that nothing panics or overflows the stack (the parser's depth
//! budget and its own thread), every error is a 4xx, and:
//! - JSON is YAML: bytes that parse as a JSON object parse as YAML to the same value;
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
    if let Ok(Value::Object(json)) = serde_json::from_slice::<Value>(data) {
        match &parsed {
            Ok(value) => assert_eq!(value, &Value::Object(json), "JSON read as YAML is not the same value"),
            Err(err) => panic!("a JSON object is not YAML: {err}"),
        }
    }
    match parsed {
        Ok(value) => decode_patched(&value),
        Err(err) => assert_client_error(&err),
    }
});
