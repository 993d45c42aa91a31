//! The standard library's timestamp and duration getters (`getFullYear`, `getMonth`, ...,
//! `getMilliseconds`), in UTC or in the time zone given (an IANA name, as Go's
//! `time.LoadLocation`, or an offset `+05:30`), as cel-go computes them.

use super::error::EvalError;
use super::value::Value;
use jiff::tz::{Offset, TimeZone};

type Eval = Result<Value, EvalError>;

const GETTERS: &[&str] = &[
    "getFullYear",
    "getMonth",
    "getDayOfYear",
    "getDayOfMonth",
    "getDate",
    "getDayOfWeek",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
];

/// Whether `function` is a getter with `args` arguments (a time zone or none).
pub fn is_member(function: &str, args: usize) -> bool {
    args <= 1 && GETTERS.contains(&function)
}

/// Calls a getter on a timestamp or a duration.
pub fn call(function: &str, target: &Value, args: &[&Value]) -> Option<Eval> {
    match (target, args) {
        (Value::Duration(nanos), []) => duration(function, *nanos).map(Ok),
        (Value::Timestamp(nanos, _), []) => Some(timestamp(function, *nanos, TimeZone::UTC)),
        (Value::Timestamp(nanos, _), [Value::String(zone)]) => {
            Some(time_zone(zone).and_then(|zone| timestamp(function, *nanos, zone)))
        }
        _ => None,
    }
}

fn duration(function: &str, nanos: i64) -> Option<Value> {
    let total = match function {
        "getHours" => nanos / 3_600_000_000_000,
        "getMinutes" => nanos / 60_000_000_000,
        "getSeconds" => nanos / 1_000_000_000,
        "getMilliseconds" => nanos / 1_000_000,
        _ => return None,
    };
    Some(Value::Int(total))
}

fn timestamp(function: &str, nanos: i128, zone: TimeZone) -> Eval {
    let instant = jiff::Timestamp::from_nanosecond(nanos).map_err(|e| EvalError::new(e.to_string()))?;
    let at = instant.to_zoned(zone);
    let value = match function {
        "getFullYear" => i64::from(at.year()),
        "getMonth" => i64::from(at.month()) - 1,
        "getDayOfYear" => i64::from(at.day_of_year()) - 1,
        "getDayOfMonth" => i64::from(at.day()) - 1,
        "getDate" => i64::from(at.day()),
        "getDayOfWeek" => i64::from(at.weekday().to_sunday_zero_offset()),
        "getHours" => i64::from(at.hour()),
        "getMinutes" => i64::from(at.minute()),
        "getSeconds" => i64::from(at.second()),
        "getMilliseconds" => i64::from(at.millisecond()),
        _ => return Err(EvalError::no_such_overload()),
    };
    Ok(Value::Int(value))
}

/// cel-go's timeZone: a name without `:` is loaded as Go loads it (`""` and `UTC` are UTC);
/// otherwise hours and minutes of an offset.
fn time_zone(zone: &str) -> Result<TimeZone, EvalError> {
    let Some((hours, minutes)) = zone.split_once(':') else {
        // "Local" is the kube-apiserver's own zone: UTC in its container image.
        if zone.is_empty() || zone == "UTC" || zone == "Local" {
            return Ok(TimeZone::UTC);
        }
        return jiff::tz::db().get(zone).map_err(|_| EvalError::new(format!("unknown time zone {zone}")));
    };
    // Neither the hours nor the minutes are range-checked (cel-go's stdlib inTimeZone).
    let hours = go_atoi(hours)?;
    let minutes = go_atoi(minutes)?;
    let minutes = if zone.starts_with('-') { minutes.checked_neg() } else { Some(minutes) };
    // Go takes any offset; one past what a zone can be (±25:59:59 here) is refused, never wrapped.
    let seconds = minutes
        .and_then(|m| hours.checked_mul(60)?.checked_add(m)?.checked_mul(60))
        .and_then(|s| i32::try_from(s).ok())
        .ok_or_else(|| EvalError::new(format!("timezone offset out of range: {zone}")))?;
    let offset = Offset::from_seconds(seconds).map_err(|e| EvalError::new(e.to_string()))?;
    Ok(TimeZone::fixed(offset))
}

/// Go's `strconv.Atoi` (the conversions' decimal parser), with its error message.
fn go_atoi(text: &str) -> Result<i64, EvalError> {
    super::conversions::parse_go_int(text)
        .ok_or_else(|| EvalError::new(format!("strconv.Atoi: parsing {text:?}: invalid syntax")))
}
