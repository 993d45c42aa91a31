//! Numbers, timestamps and durations written as Go writes them (`%v` of a float64,
//! `time.Duration.String`, RFC 3339 with nanoseconds).

/// A float64 as Go's `%v` writes it: the shortest digits, in exponent form below 1e-4 and from
/// 1e21 (`1e+21`, `1e-05`), `+Inf`, `-Inf`, `NaN`.
pub fn go_float(value: f64) -> String {
    go_shortest(value, 21)
}

/// A float64 as Go's `%g` writes it: as `%v`, but in exponent form from 1e6 (`1e+06`).
pub fn go_float_g(value: f64) -> String {
    go_shortest(value, 6)
}

/// Go's shortest `%g` digits, in exponent form when the exponent is below -4 or at least
/// `exponent_from`.
fn go_shortest(value: f64, exponent_from: i32) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let scientific = format!("{value:e}");
    let exponent: i32 = scientific.split_once('e').and_then(|(_, e)| e.parse().ok()).unwrap_or(0);
    if value != 0.0 && (exponent < -4 || exponent >= exponent_from) {
        let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
        let (sign, digits) = exponent.strip_prefix('-').map_or(("+", exponent), |d| ("-", d));
        return format!("{mantissa}e{sign}{digits:0>2}");
    }
    let plain = format!("{value}");
    plain.strip_suffix(".0").map(str::to_string).unwrap_or(plain)
}

/// Go's `time.Duration.String`: `1h2m3.5s`, `1.5ms`, `0s`.
pub fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < 1_000_000_000 {
        let (unit, scale) = match n {
            0..1_000 => ("ns", 1),
            1_000..1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{sign}{}{unit}", fraction(n, scale));
    }
    let (hours, rest) = (n / 3_600_000_000_000, n % 3_600_000_000_000);
    let (minutes, rest) = (rest / 60_000_000_000, rest % 60_000_000_000);
    let seconds = fraction(rest, 1_000_000_000);
    match (hours, minutes) {
        (0, 0) => format!("{sign}{seconds}s"),
        (0, m) => format!("{sign}{m}m{seconds}s"),
        (h, m) => format!("{sign}{h}h{m}m{seconds}s"),
    }
}

/// `value / scale` with the fraction's trailing zeros dropped (`1500, 1000` is `1.5`).
fn fraction(value: u64, scale: u64) -> String {
    let (whole, part) = (value / scale, value % scale);
    if part == 0 {
        return whole.to_string();
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{part:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// A duration's seconds as Go's `strconv.FormatFloat(d.Seconds(), 'f', -1, 64)` writes them.
pub fn seconds(nanos: i64) -> String {
    let seconds = (nanos / 1_000_000_000) as f64 + (nanos % 1_000_000_000) as f64 / 1e9;
    format!("{seconds}")
}

/// Go's `time.ParseDuration`: `1h30m`, `-1.5s`, `300ms`, `2h45m10.5s`, `0`.
pub fn parse_go_duration(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        let unit_end = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_end);
        let scale: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        total += duration_part(number, scale)?;
        if total > i64::MAX as i128 + 1 {
            return None;
        }
        rest = next;
    }
    let signed = if negative { -total } else { total };
    i64::try_from(signed).ok()
}

/// `number` (`1`, `1.5`, `.5`) of a unit of `scale` nanoseconds, truncated as Go truncates.
fn duration_part(number: &str, scale: i128) -> Option<i128> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let whole: i128 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    let mut part = whole.checked_mul(scale)?;
    let mut unit = scale;
    for digit in fraction.bytes() {
        unit /= 10;
        if unit == 0 {
            break;
        }
        part += i128::from(digit - b'0') * unit;
    }
    Some(part)
}

/// Nanoseconds since the epoch as Go's RFC 3339 with nanoseconds writes them, at `offset`
/// seconds east of UTC (`Z` for none), with up to nine fraction digits.
pub fn rfc3339(nanos: i128, offset: i32) -> String {
    let at = time::UtcOffset::from_whole_seconds(offset)
        .ok()
        .and_then(|zone| time::OffsetDateTime::from_unix_timestamp_nanos(nanos).ok().map(|t| t.to_offset(zone)));
    let Some(at) = at else {
        return nanos.to_string();
    };
    let zone = match offset {
        0 => "Z".to_string(),
        _ => {
            let (sign, seconds) = if offset < 0 { ('-', -offset) } else { ('+', offset) };
            format!("{sign}{:02}:{:02}", seconds / 3600, seconds % 3600 / 60)
        }
    };
    let fraction = match at.nanosecond() {
        0 => String::new(),
        n => format!(".{}", format!("{n:09}").trim_end_matches('0')),
    };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{fraction}{zone}",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_go_writes_them() {
        assert_eq!(go_duration(3_600_000_000_000), "1h0m0s");
        assert_eq!(go_duration(1_500_000_000), "1.5s");
        assert_eq!(go_duration(-90_000_000_000), "-1m30s");
        assert_eq!(go_duration(1_500_000), "1.5ms");
        assert_eq!(go_duration(1_000), "1µs");
        assert_eq!(go_duration(7), "7ns");
    }

    #[test]
    fn floats_read_as_go_percent_v_writes_them() {
        assert_eq!(go_float(1.0), "1");
        assert_eq!(go_float(0.5), "0.5");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(f64::INFINITY), "+Inf");
    }

    #[test]
    fn durations_parse_as_go_parses_them() {
        assert_eq!(parse_go_duration("1h30m"), Some(5_400_000_000_000));
        assert_eq!(parse_go_duration("-1.5s"), Some(-1_500_000_000));
        assert_eq!(parse_go_duration("0"), Some(0));
        assert_eq!(parse_go_duration("1"), None);
        assert_eq!(parse_go_duration("1d"), None);
        assert_eq!(seconds(1_500_000_000), "1.5");
        assert_eq!(go_float_g(1e6), "1e+06");
        assert_eq!(go_float_g(123456.0), "123456");
    }

    #[test]
    fn timestamps_are_rfc3339_in_utc() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_500_000_000, 0), "1970-01-01T00:00:01.5Z");
        assert_eq!(rfc3339(0, 3600), "1970-01-01T01:00:00+01:00");
    }
}
