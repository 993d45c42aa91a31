//! Floating-point numbers as the kube-apiserver writes them. It keeps a custom resource as
//! unstructured JSON: a number written as an integer is an int64, any other a float64, and Go's
//! `encoding/json` writes a float64 with no fraction as an integer (`12.0` reads back `12`), in
//! exponent form below 1e-6 and from 1e21 (`1e-7`, `1e+21`), and otherwise with the shortest
//! digits that read back the same number. [`GoFloats`] writes Rust's `f64` the same way, so a
//! field of type `f64` reads back as a CustomResourceDefinition's does: sent `12`, read `12`
//! (not `12.0`); [`integral_as_integers`] gives JSON values the same numbers.

use serde_json::Value;
use serde_json::ser::{Formatter, PrettyFormatter};
use std::io;

/// 2^53: below it in magnitude, an integral `f64` is written with the same digits as an
/// integer; Go writes a larger float64 with its shortest digits padded with zeros.
const EXACT: f64 = 9_007_199_254_740_992.0;

/// Whether `value` is a whole number that a JSON integer says exactly (below 2^53 in magnitude;
/// `-0` included): kube-openapi's `IsFloat64AJSONInteger`.
pub fn is_whole(value: f64) -> bool {
    value.fract() == 0.0 && value.abs() < EXACT
}

/// Whether `value` is written with the same digits as an integer: whole, and not `-0`.
fn written_as_integer(value: f64) -> bool {
    is_whole(value) && !(value == 0.0 && value.is_sign_negative())
}

/// Writes `value` as Go's `encoding/json` writes a float64 (a finite one: JSON has no other).
pub fn write_go_float<W: io::Write + ?Sized>(writer: &mut W, value: f64) -> io::Result<()> {
    let magnitude = value.abs();
    if magnitude != 0.0 && !(1e-6..1e21).contains(&magnitude) {
        // Go's strconv 'e' format with a sign and two digits, then `e-07` cleaned up to `e-7`.
        let scientific = format!("{value:e}");
        let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
        return match exponent.strip_prefix('-') {
            Some(negative) => write!(writer, "{mantissa}e-{negative}"),
            None => write!(writer, "{mantissa}e+{exponent:0>2}"),
        };
    }
    if written_as_integer(value) {
        return writer.write_all(itoa::Buffer::new().format(value as i64).as_bytes());
    }
    let mut buffer = ryu::Buffer::new();
    let shortest = buffer.format_finite(value);
    match shortest.contains('e') {
        // ryu's exponent form starts earlier than Go's; Display writes the same digits plainly.
        true => write!(writer, "{value}"),
        false => writer.write_all(shortest.trim_end_matches(".0").as_bytes()),
    }
}

/// A `serde_json` formatter writing JSON as `serde_json`'s `CompactFormatter` does, but floating-point
/// numbers as Go writes them ([`write_go_float`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct GoFloats;

impl Formatter for GoFloats {
    fn write_f64<W: io::Write + ?Sized>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        write_go_float(writer, value)
    }

    fn write_f32<W: io::Write + ?Sized>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        // The shortest digits of the f32, as Go writes a float32.
        let value: f64 = value.to_string().parse().unwrap_or(f64::from(value));
        write_go_float(writer, value)
    }
}

/// [`PrettyFormatter`] (two spaces, as `pretty=true` answers are indented) with [`GoFloats`]'
/// numbers.
#[derive(Debug, Default)]
pub struct PrettyGoFloats(PrettyFormatter<'static>);

/// Forwards formatter methods to the pretty formatter.
macro_rules! pretty {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(fn $method<W: io::Write + ?Sized>(&mut self, writer: &mut W $(, $arg: $ty)*) -> io::Result<()> {
            self.0.$method(writer $(, $arg)*)
        })*
    };
}

impl Formatter for PrettyGoFloats {
    pretty! {
        begin_array();
        end_array();
        begin_array_value(first: bool);
        end_array_value();
        begin_object();
        end_object();
        begin_object_key(first: bool);
        begin_object_value();
        end_object_value();
    }

    fn write_f64<W: io::Write + ?Sized>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        GoFloats.write_f64(writer, value)
    }

    fn write_f32<W: io::Write + ?Sized>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        GoFloats.write_f32(writer, value)
    }
}

/// Turns every floating-point number of `value` that has no fraction (and fits 64 bits) into an
/// integer, as the number a Go server decodes from what [`GoFloats`] writes: JSON values of a
/// typed object then compare equal to those parsed from a request that wrote the same numbers.
pub fn integral_as_integers(value: &mut Value) {
    match value {
        Value::Number(number) => {
            if let Some(integer) = number.as_f64().filter(|_| number.is_f64()).and_then(integral) {
                *number = integer;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_as_integers),
        Value::Object(members) => members.values_mut().for_each(integral_as_integers),
        _ => {}
    }
}

/// Whether [`integral_as_integers`] would change `value`.
pub fn has_integral_floats(value: &Value) -> bool {
    match value {
        Value::Number(number) => number.is_f64() && number.as_f64().and_then(integral).is_some(),
        Value::Array(items) => items.iter().any(has_integral_floats),
        Value::Object(members) => members.values().any(has_integral_floats),
        _ => false,
    }
}

/// `value` as an integer, when it has no fraction and is written with the same digits as one
/// (not `-0`, nothing from 2^53 on).
fn integral(value: f64) -> Option<serde_json::Number> {
    written_as_integer(value).then(|| (value as i64).into())
}

/// `value` as a JSON value with the number Go would read back (for Table cells).
pub fn json(value: f64) -> Value {
    match integral(value) {
        Some(integer) => Value::Number(integer),
        None => serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn written(value: f64) -> String {
        let mut out = Vec::new();
        write_go_float(&mut out, value).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn integral_values_are_written_without_a_fraction_as_go_writes_them() {
        assert_eq!(written(120.0), "120");
        assert_eq!(written(12.0), "12");
        assert_eq!(written(-3.0), "-3");
        assert_eq!(written(0.0), "0");
        assert_eq!(written(-0.0), "-0");
        assert_eq!(written(9_007_199_254_740_991.0), "9007199254740991");
        assert_eq!(written(9_223_372_036_854_775_808.0), "9223372036854776000");
        assert_eq!(written(1e20), "100000000000000000000");
        assert_eq!(json(120.0).to_string(), "120");
    }

    #[test]
    fn other_values_keep_their_shortest_digits_in_go_s_notation() {
        assert_eq!(written(170.5), "170.5");
        assert_eq!(written(0.1), "0.1");
        assert_eq!(written(0.000001), "0.000001");
        assert_eq!(written(0.00001234), "0.00001234");
        assert_eq!(written(1.5e-7), "1.5e-7");
        assert_eq!(written(1e-10), "1e-10");
        assert_eq!(written(1e21), "1e+21");
        assert_eq!(written(-2.5e300), "-2.5e+300");
        assert_eq!(written(5e-324), "5e-324");
        assert_eq!(written(f64::MAX), "1.7976931348623157e+308");
    }

    #[test]
    fn formatters_write_floats_the_go_way_and_everything_else_as_serde_json_does() {
        let value = serde_json::json!({"a": [12.0, 0.5, 1], "b": {"c": 1e21}});
        let mut compact = Vec::new();
        serde::Serialize::serialize(&value, &mut serde_json::Serializer::with_formatter(&mut compact, GoFloats))
            .unwrap();
        assert_eq!(String::from_utf8(compact).unwrap(), r#"{"a":[12,0.5,1],"b":{"c":1e+21}}"#);
        let mut pretty = Vec::new();
        let mut serializer = serde_json::Serializer::with_formatter(&mut pretty, PrettyGoFloats::default());
        serde::Serialize::serialize(&value, &mut serializer).unwrap();
        let expected = serde_json::to_string_pretty(&serde_json::json!({"a": [12, 0.5, 1], "b": {"c": 1}})).unwrap();
        assert_eq!(String::from_utf8(pretty).unwrap(), expected.replace("\"c\": 1", "\"c\": 1e+21"));
    }

    #[test]
    fn integral_floats_of_a_value_become_integers() {
        let mut value = serde_json::json!({"a": [12.0, 0.5, -3.0, -0.0], "b": 1e20});
        integral_as_integers(&mut value);
        assert_eq!(value, serde_json::json!({"a": [12, 0.5, -3, -0.0], "b": 100_000_000_000_000_000_000.0}));
        assert!(value["a"][0].is_i64() && value["a"][2].is_i64() && value["a"][3].is_f64() && value["b"].is_f64());
    }

    proptest! {
        /// Whatever the number, Go's notation reads back the same `f64`.
        #[test]
        fn go_notation_reads_back_the_same_number(bits in any::<u64>()) {
            let value = f64::from_bits(bits);
            prop_assume!(value.is_finite());
            let text = written(value);
            prop_assert_eq!(text.parse::<f64>().ok(), Some(value), "{}", text);
            prop_assert!(!text.ends_with(".0"), "{}", text);
        }
    }
}
