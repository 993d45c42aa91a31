//! JSON as the server writes it: `serde_json`, with floating-point numbers as Go writes them
//! ([`super::number`]), for every object it stores or answers, every list, watch event, Table
//! and admission review, so that a number reads back as a CustomResourceDefinition's would.

use super::number::{GoFloats, PrettyGoFloats, integral_as_integers};
use serde::Serialize;
use serde_json::{Result, Value};
use std::io;

/// `value` as compact JSON.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    to_writer(&mut out, value)?;
    Ok(out)
}

/// `value` as JSON indented by two spaces (`pretty=true`).
pub fn to_vec_pretty<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    value.serialize(&mut serde_json::Serializer::with_formatter(&mut out, PrettyGoFloats::default()))?;
    Ok(out)
}

/// Writes `value` as compact JSON to `writer`.
pub fn to_writer<W: io::Write, T: Serialize + ?Sized>(writer: W, value: &T) -> Result<()> {
    value.serialize(&mut serde_json::Serializer::with_formatter(writer, GoFloats))
}

/// `value` as a JSON value holding the numbers Go reads from [`to_vec`]'s text: floating-point
/// numbers without a fraction become integers.
pub fn to_value<T: Serialize + ?Sized>(value: &T) -> Result<Value> {
    let mut value = serde_json::to_value(value)?;
    integral_as_integers(&mut value);
    Ok(value)
}

#[cfg(test)]
mod tests {
    #[derive(serde::Serialize)]
    struct Spec {
        weight: f64,
        height: f64,
        ratio: f32,
    }

    #[test]
    fn typed_floats_read_back_as_a_crd_writes_them() {
        let spec = Spec { weight: 12.0, height: 170.5, ratio: 0.1 };
        assert_eq!(
            String::from_utf8(super::to_vec(&spec).unwrap()).unwrap(),
            r#"{"weight":12,"height":170.5,"ratio":0.1}"#
        );
        let value = super::to_value(&spec).unwrap();
        assert!(value["weight"].is_i64() && value["height"] == 170.5, "{value}");
        let pretty = String::from_utf8(super::to_vec_pretty(&spec).unwrap()).unwrap();
        assert_eq!(pretty, "{\n  \"weight\": 12,\n  \"height\": 170.5,\n  \"ratio\": 0.1\n}");
    }
}
