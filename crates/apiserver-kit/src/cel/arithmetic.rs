//! `+`, `-`, `*`, `/` and `%` as cel-go computes them: 64-bit integers checked for overflow,
//! IEEE doubles, concatenation of strings, bytes and lists, and time arithmetic.

use super::error::EvalError;
use super::value::Value;
use std::sync::Arc;

type Eval = Result<Value, EvalError>;

/// `left <operator> right`; `function` is the operator's name (`_+_`).
pub fn apply(function: &str, left: &Value, right: &Value) -> Eval {
    use Value::*;
    match (left, right) {
        (Int(a), Int(b)) => int(function, *a, *b),
        (Uint(a), Uint(b)) => uint(function, *a, *b),
        (Double(a), Double(b)) => double(function, *a, *b),
        (String(a), String(b)) if function == "_+_" => Ok(Value::String(Arc::from(format!("{a}{b}")))),
        (Bytes(a), Bytes(b)) if function == "_+_" => Ok(Value::Bytes(a.iter().chain(b.iter()).copied().collect())),
        (List(a), List(b)) if function == "_+_" => super::list_types::add(a, b),
        (Timestamp(..) | Duration(_), Timestamp(..) | Duration(_)) => time(function, left, right),
        _ => Err(EvalError::no_such_overload()),
    }
}

/// `a <operator> b` of two 64-bit integers of one kind, checked: `None` on overflow.
macro_rules! checked {
    ($function:expr, $a:expr, $b:expr) => {
        match $function {
            "_+_" => $a.checked_add($b),
            "_-_" => $a.checked_sub($b),
            "_*_" => $a.checked_mul($b),
            "_/_" if $b == 0 => return Err(EvalError::new("division by zero")),
            "_/_" => $a.checked_div($b),
            "_%_" if $b == 0 => return Err(EvalError::new("modulus by zero")),
            "_%_" => $a.checked_rem($b),
            _ => return Err(EvalError::no_such_overload()),
        }
    };
}

fn int(function: &str, a: i64, b: i64) -> Eval {
    checked!(function, a, b).map(Value::Int).ok_or_else(EvalError::overflow)
}

fn uint(function: &str, a: u64, b: u64) -> Eval {
    checked!(function, a, b).map(Value::Uint).ok_or_else(|| EvalError::new("unsigned integer overflow"))
}

fn double(function: &str, a: f64, b: f64) -> Eval {
    match function {
        "_+_" => Ok(Value::Double(a + b)),
        "_-_" => Ok(Value::Double(a - b)),
        "_*_" => Ok(Value::Double(a * b)),
        "_/_" => Ok(Value::Double(a / b)),
        _ => Err(EvalError::no_such_overload()),
    }
}

fn time(function: &str, left: &Value, right: &Value) -> Eval {
    use Value::*;
    match (function, left, right) {
        ("_+_", Duration(a), Duration(b)) => a.checked_add(*b).map(Duration).ok_or_else(duration_overflow),
        ("_-_", Duration(a), Duration(b)) => a.checked_sub(*b).map(Duration).ok_or_else(duration_overflow),
        ("_+_", Timestamp(t, offset), Duration(d)) | ("_+_", Duration(d), Timestamp(t, offset)) => {
            timestamp(t + *d as i128, *offset)
        }
        ("_-_", Timestamp(t, offset), Duration(d)) => timestamp(t - *d as i128, *offset),
        ("_-_", Timestamp(a, _), Timestamp(b, _)) => {
            i64::try_from(a - b).map(Duration).map_err(|_| duration_overflow())
        }
        _ => Err(EvalError::no_such_overload()),
    }
}

/// A timestamp within CEL's range (years 1 to 9999), with its offset from UTC.
pub fn timestamp(nanos: i128, offset: i32) -> Eval {
    const MIN: i128 = -62_135_596_800 * 1_000_000_000;
    const MAX: i128 = 253_402_300_799 * 1_000_000_000 + 999_999_999;
    if (MIN..=MAX).contains(&nanos) {
        Ok(Value::Timestamp(nanos, offset))
    } else {
        Err(EvalError::new("timestamp overflow"))
    }
}

fn duration_overflow() -> EvalError {
    EvalError::new("duration overflow")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_overflow_and_divide_as_cel_go() {
        assert_eq!(apply("_+_", &Value::Int(i64::MAX), &Value::Int(1)).unwrap_err().message(), "integer overflow");
        assert_eq!(apply("_/_", &Value::Int(1), &Value::Int(0)).unwrap_err().message(), "division by zero");
        assert_eq!(apply("_%_", &Value::Int(1), &Value::Int(0)).unwrap_err().message(), "modulus by zero");
        assert_eq!(apply("_/_", &Value::Int(i64::MIN), &Value::Int(-1)).unwrap_err().message(), "integer overflow");
        assert_eq!(apply("_-_", &Value::Uint(0), &Value::Uint(1)).unwrap_err().message(), "unsigned integer overflow");
        assert!(apply("_+_", &Value::Int(1), &Value::Double(1.0)).is_err());
    }
}
