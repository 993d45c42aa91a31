//! Floating-point fields written as Go's `encoding/json` writes a `float64`, so a weight of 120
//! reads back `120` (not `120.0`) as from every Kubernetes server: an integral value is written
//! as an integer when one holds it exactly; any other value as serde_json writes it (the same
//! number, with the same shortest digits Go chooses).

use serde::Serializer;

/// The largest magnitude below which every integral `f64` converts to `i64`/`u64` exactly.
const EXACT: f64 = 18_446_744_073_709_551_616.0; // 2^64

/// `serialize_with` for an `f64` field.
pub fn go_float<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    let value = *value;
    if value.fract() == 0.0 && value.abs() < EXACT {
        if !value.is_sign_negative() {
            return serializer.serialize_u64(value as u64);
        }
        if value >= i64::MIN as f64 && value != 0.0 {
            return serializer.serialize_i64(value as i64);
        }
    }
    serializer.serialize_f64(value)
}

/// `value` as a JSON value written as [`go_float`] writes it (for Table cells).
pub fn json(value: f64) -> serde_json::Value {
    go_float(&value, serde_json::value::Serializer).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    #[derive(serde::Serialize)]
    struct Number(#[serde(serialize_with = "super::go_float")] f64);

    fn written(value: f64) -> String {
        serde_json::to_string(&Number(value)).unwrap_or_default()
    }

    #[test]
    fn integral_values_are_written_without_a_fraction_as_go_writes_them() {
        assert_eq!(written(120.0), "120");
        assert_eq!(written(-3.0), "-3");
        assert_eq!(written(0.0), "0");
        assert_eq!(written(9_223_372_036_854_775_808.0), "9223372036854775808");
        assert_eq!(written(i64::MIN as f64), "-9223372036854775808");
        assert_eq!(super::json(120.0).to_string(), "120");
    }

    #[test]
    fn other_values_keep_their_shortest_digits() {
        assert_eq!(written(170.5), "170.5");
        assert_eq!(written(0.1), "0.1");
        assert_eq!(written(-0.0), "-0.0");
        for value in [1e20, 1e300, 5e-324, f64::MAX] {
            assert_eq!(written(value).parse::<f64>().ok(), Some(value));
        }
    }
}
