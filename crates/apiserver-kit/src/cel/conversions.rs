//! Type conversions (`int(x)`, `string(x)`, `duration(s)`, ...) with cel-go's range checks and
//! error messages (`type conversion error from 'string' to 'int'`).

use super::arithmetic::timestamp;
use super::error::EvalError;
use super::format;
use super::value::Value;
use std::sync::Arc;

type Eval = Result<Value, EvalError>;

fn conversion_error(from: &Value, to: &str) -> EvalError {
    EvalError::new(format!("type conversion error from '{}' to '{to}'", from.type_of().name()))
}

pub fn to_int(value: &Value) -> Eval {
    match value {
        Value::Int(_) => Ok(value.clone()),
        Value::Uint(u) => i64::try_from(*u).map(Value::Int).map_err(|_| EvalError::overflow()),
        Value::Double(d) => {
            if !d.is_finite() || *d <= i64::MIN as f64 || *d >= i64::MAX as f64 {
                return Err(EvalError::overflow());
            }
            Ok(Value::Int(*d as i64))
        }
        Value::String(s) => parse_go_int(s).map(Value::Int).ok_or_else(|| conversion_error(value, "int")),
        Value::Timestamp(nanos, _) => Ok(Value::Int(nanos.div_euclid(1_000_000_000) as i64)),
        Value::Duration(nanos) => Ok(Value::Int(*nanos)),
        _ => Err(EvalError::no_such_overload()),
    }
}

pub fn to_uint(value: &Value) -> Eval {
    let overflow = || EvalError::new("unsigned integer overflow");
    match value {
        Value::Uint(_) => Ok(value.clone()),
        Value::Int(i) => u64::try_from(*i).map(Value::Uint).map_err(|_| overflow()),
        Value::Double(d) => {
            if !d.is_finite() || *d < 0.0 || *d >= u64::MAX as f64 {
                return Err(overflow());
            }
            Ok(Value::Uint(*d as u64))
        }
        Value::String(s) => s.parse::<u64>().map(Value::Uint).map_err(|_| conversion_error(value, "uint")),
        _ => Err(EvalError::no_such_overload()),
    }
}

/// Go's `strconv.ParseInt(s, 10, 64)`: an optional sign and decimal digits.
pub(super) fn parse_go_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()
}

pub fn to_double(value: &Value) -> Eval {
    match value {
        Value::Double(_) => Ok(value.clone()),
        Value::Int(i) => Ok(Value::Double(*i as f64)),
        Value::Uint(u) => Ok(Value::Double(*u as f64)),
        Value::String(s) => parse_go_float(s).map(Value::Double).ok_or_else(|| conversion_error(value, "double")),
        _ => Err(EvalError::no_such_overload()),
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for what Rust reads the same way, and its spellings of
/// infinity and NaN.
fn parse_go_float(s: &str) -> Option<f64> {
    match s.to_ascii_lowercase().trim_start_matches(['+', '-']) {
        "inf" | "infinity" => Some(if s.starts_with('-') { f64::NEG_INFINITY } else { f64::INFINITY }),
        "nan" => Some(f64::NAN),
        _ if s.contains('_') || s.starts_with("0x") => None,
        _ => s.parse::<f64>().ok(),
    }
}

pub fn to_string(value: &Value) -> Eval {
    let text = match value {
        Value::String(_) => return Ok(value.clone()),
        Value::Int(i) => i.to_string(),
        Value::Uint(u) => u.to_string(),
        Value::Double(d) => format::go_float_g(*d),
        Value::Bool(b) => b.to_string(),
        Value::Bytes(b) => std::str::from_utf8(b).map_err(|_| conversion_error(value, "string"))?.to_string(),
        Value::Timestamp(nanos, offset) => format::rfc3339(*nanos, *offset),
        Value::Duration(nanos) => format!("{}s", format::seconds(*nanos)),
        Value::Opaque(opaque) if matches!(**opaque, super::value::Opaque::Ip(_) | super::value::Opaque::Cidr(_)) => {
            opaque.text()
        }
        _ => return Err(EvalError::no_such_overload()),
    };
    Ok(Value::String(Arc::from(text)))
}

/// Go's `strconv.ParseBool`.
pub fn to_bool(value: &Value) -> Eval {
    match value {
        Value::Bool(_) => Ok(value.clone()),
        Value::String(s) => match &**s {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(Value::Bool(true)),
            "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(Value::Bool(false)),
            _ => Err(conversion_error(value, "bool")),
        },
        _ => Err(EvalError::no_such_overload()),
    }
}

pub fn to_duration(value: &Value) -> Eval {
    match value {
        Value::Duration(_) => Ok(value.clone()),
        Value::String(s) => format::parse_go_duration(s)
            .map(Value::Duration)
            .ok_or_else(|| conversion_error(value, "google.protobuf.Duration")),
        _ => Err(EvalError::no_such_overload()),
    }
}

pub fn to_timestamp(value: &Value) -> Eval {
    match value {
        Value::Timestamp(..) => Ok(value.clone()),
        Value::Int(seconds) => timestamp(*seconds as i128 * 1_000_000_000, 0),
        Value::String(s) => {
            let parsed = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
                .map_err(|_| conversion_error(value, "google.protobuf.Timestamp"))?;
            timestamp(parsed.unix_timestamp_nanos(), parsed.offset().whole_seconds())
        }
        _ => Err(EvalError::no_such_overload()),
    }
}
