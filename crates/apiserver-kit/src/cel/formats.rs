//! Kubernetes' CEL named-format library (k8s.io/apiserver `library/format.go`, in every
//! environment since 1.31): `format.named(name)` (an optional format), one zero-argument
//! function per format (`format.dns1123Label()`, ...) and `<Format>.validate(s)`, which is
//! `optional.none()` for a valid string, else the validator's error strings, worded as
//! apimachinery's validators, kube-openapi's strfmt and Go's `url.ParseRequestURI` word them.
//!
//! Runtime costs (k8s.io/apiserver `library/cost.go`): `format.named` costs [`NAMED_COST`], a
//! zero-argument format function [`CONSTANT_COST`] (cel-go's default call cost), `==` between
//! formats 1, `validate` [`NamedFormat::validate_cost`] (a regular expression's cost estimated
//! with the format's `MaxRegexSize`).

use regex::Regex;
use regex::bytes::Regex as BytesRegex;
use std::borrow::Cow;
use std::fmt::{self, Write};
use std::sync::LazyLock;

use super::network::quote_bytes;

/// The CEL type name of a format: `kubernetes.NamedFormat`.
pub const TYPE_NAME: &str = "kubernetes.NamedFormat";

/// The cost of `format.named(name)` (a dictionary lookup).
pub const NAMED_COST: u64 = 1;

/// The cost of a zero-argument format function such as `format.dns1123Label()`.
pub const CONSTANT_COST: u64 = 1;

/// A named format, `kubernetes.NamedFormat`: its name, its validator and the size of the
/// regular expression its validation cost is estimated with. Formats are equal when their
/// names are (as the library's `Equal`).
#[derive(Clone, Copy)]
pub struct NamedFormat {
    /// The name `format.named` takes and the function's (`format.<key>()`).
    key: &'static str,
    /// The library's `Name` (`DNS1123Label`, `uuid`, ...).
    name: &'static str,
    validator: fn(&str) -> Vec<String>,
    max_regex_size: u64,
}

/// The formats, in format.go's order.
const FORMATS: [NamedFormat; 13] = [
    format("dns1123Label", "DNS1123Label", validate_dns1123_label, 30),
    format("dns1123Subdomain", "DNS1123Subdomain", validate_dns1123_subdomain, 60),
    format("dns1035Label", "DNS1035Label", validate_dns1035_label, 30),
    format("qualifiedName", "QualifiedName", validate_qualified_name, 60),
    format("dns1123LabelPrefix", "DNS1123LabelPrefix", validate_dns1123_label_prefix, 30),
    format("dns1123SubdomainPrefix", "DNS1123SubdomainPrefix", validate_dns1123_subdomain_prefix, 60),
    format("dns1035LabelPrefix", "DNS1035LabelPrefix", validate_dns1035_label_prefix, 30),
    format("labelValue", "LabelValue", validate_label_value, 40),
    // govalidator's URL regular expression's length.
    format("uri", "URI", validate_uri, 1103),
    // len(strfmt.UUIDPattern).
    format("uuid", "uuid", validate_uuid, 70),
    // govalidator's base64 regular expression's length.
    format("byte", "byte", validate_byte, 84),
    // len(strfmt.DateTimePattern), for both.
    format("date", "date", validate_date, 71),
    format("datetime", "datetime", validate_datetime, 71),
];

const fn format(
    key: &'static str,
    name: &'static str,
    validator: fn(&str) -> Vec<String>,
    max_regex_size: u64,
) -> NamedFormat {
    NamedFormat { key, name, validator, max_regex_size }
}

/// `format.named(name)`: the format of that name (`dns1123Label`, ..., `datetime`, as
/// [`names`] lists them), `None` (`optional.none()`) for any other name.
pub fn named(name: &str) -> Option<NamedFormat> {
    FORMATS.iter().find(|f| f.key == name).copied()
}

/// The names `format.named` knows, which are also the zero-argument functions'
/// (`format.<name>()`), in format.go's order.
#[cfg(test)]
pub fn names() -> impl Iterator<Item = &'static str> {
    FORMATS.iter().map(|f| f.key)
}

/// The format a zero-argument function returns, by the function's whole name
/// (`format.dns1123Label` → [`dns1123_label`]); `None` when it is no format function.
pub fn constant(function: &str) -> Option<NamedFormat> {
    function.strip_prefix("format.").and_then(named)
}

/// `format.dns1123Label()`: apimachinery's `NameIsDNSLabel(s, false)`.
#[cfg(test)]
pub fn dns1123_label() -> NamedFormat {
    FORMATS[0]
}

/// `format.dns1123Subdomain()`: `NameIsDNSSubdomain(s, false)`.
#[cfg(test)]
pub fn dns1123_subdomain() -> NamedFormat {
    FORMATS[1]
}

/// `format.dns1035Label()`: `NameIsDNS1035Label(s, false)`.
#[cfg(test)]
pub fn dns1035_label() -> NamedFormat {
    FORMATS[2]
}

/// `format.qualifiedName()`: `IsQualifiedName` (a label key: an optional DNS subdomain
/// prefix and `/`, then a name).
#[cfg(test)]
pub fn qualified_name() -> NamedFormat {
    FORMATS[3]
}

/// `format.dns1123LabelPrefix()`: `NameIsDNSLabel(s, true)` (a trailing `-` allowed).
#[cfg(test)]
pub fn dns1123_label_prefix() -> NamedFormat {
    FORMATS[4]
}

/// `format.dns1123SubdomainPrefix()`: `NameIsDNSSubdomain(s, true)`.
#[cfg(test)]
pub fn dns1123_subdomain_prefix() -> NamedFormat {
    FORMATS[5]
}

/// `format.dns1035LabelPrefix()`: `NameIsDNS1035Label(s, true)`.
#[cfg(test)]
pub fn dns1035_label_prefix() -> NamedFormat {
    FORMATS[6]
}

/// `format.labelValue()`: `IsValidLabelValue`.
#[cfg(test)]
pub fn label_value() -> NamedFormat {
    FORMATS[7]
}

/// `format.uri()`: Go's `url.ParseRequestURI` succeeds.
#[cfg(test)]
pub fn uri() -> NamedFormat {
    FORMATS[8]
}

/// `format.uuid()`: strfmt's `uuid` (hexadecimal groups 8-4-4-4-12, dashes optional).
#[cfg(test)]
pub fn uuid() -> NamedFormat {
    FORMATS[9]
}

/// `format.byte()`: strfmt's `byte` (padded standard base64).
#[cfg(test)]
pub fn byte() -> NamedFormat {
    FORMATS[10]
}

/// `format.date()`: strfmt's `date` (an RFC 3339 full-date).
#[cfg(test)]
pub fn date() -> NamedFormat {
    FORMATS[11]
}

/// `format.datetime()`: strfmt's `datetime`.
#[cfg(test)]
pub fn datetime() -> NamedFormat {
    FORMATS[12]
}

impl NamedFormat {
    /// The library's name of the format (`DNS1123Label`, `QualifiedName`, `URI`, `uuid`, ...).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The name `format.named` takes for it (`dns1123Label`, ...).
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// `<Format>.validate(s)`: `None` (`optional.none()`) when `s` is valid, else the
    /// validator's error strings in its order.
    pub fn validate(&self, s: &str) -> Option<Vec<String>> {
        let errors = (self.validator)(s);
        if errors.is_empty() { None } else { Some(errors) }
    }

    /// The library's `MaxRegexSize`: the length of the regular expression (or of an
    /// equivalent one) the validation's cost is estimated with.
    pub fn max_regex_size(&self) -> u64 {
        self.max_regex_size
    }

    /// The runtime cost of `validate(s)`, as cel-go's regex match cost:
    /// `ceil((1 + characters) × 0.1) × ceil(MaxRegexSize × 0.25)`.
    pub fn validate_cost(&self, s: &str) -> u64 {
        let text = ((1 + s.chars().count()) as f64 * 0.1).ceil() as u64;
        text * (self.max_regex_size as f64 * 0.25).ceil() as u64
    }
}

impl PartialEq for NamedFormat {
    fn eq(&self, other: &NamedFormat) -> bool {
        self.name == other.name
    }
}

impl Eq for NamedFormat {}

impl fmt::Debug for NamedFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamedFormat").field("name", &self.name).field("max_regex_size", &self.max_regex_size).finish()
    }
}

impl fmt::Display for NamedFormat {
    /// Go's `%v` of the library's `Format` struct without its validator's address, as
    /// tools/cel-oracle writes it: `{DNS1123Label 30}` (the name, `MaxRegexSize`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{} {}}}", self.name, self.max_regex_size)
    }
}

// apimachinery's DNS and label validators. They work on bytes: a prefix's masking may cut a
// character in two, as Go's byte slicing does.

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MSG: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `^fmt$` compiled (the patterns are constants).
fn anchored(fmt: &str) -> BytesRegex {
    BytesRegex::new(&format!("^{fmt}$")).expect("a constant regular expression")
}

static DNS1123_LABEL: LazyLock<BytesRegex> = LazyLock::new(|| anchored(DNS1123_LABEL_FMT));
static DNS1123_SUBDOMAIN: LazyLock<BytesRegex> = LazyLock::new(|| anchored(DNS1123_SUBDOMAIN_FMT));
static DNS1035_LABEL: LazyLock<BytesRegex> = LazyLock::new(|| anchored(DNS1035_LABEL_FMT));
static LABEL_KEY: LazyLock<BytesRegex> = LazyLock::new(|| anchored(LABEL_KEY_FMT));
static LABEL_VALUE: LazyLock<BytesRegex> = LazyLock::new(|| anchored(LABEL_VALUE_FMT));

/// apimachinery's `MaxLenError`: `unit` is `characters` (util/validation) or `bytes`
/// (api/validate/content).
fn max_len_error(length: usize, unit: &str) -> String {
    format!("must be no more than {length} {unit}")
}

/// apimachinery's `RegexError` (the double space before each ` or ` is theirs).
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        let _ = write!(out, "'{example}', ");
    }
    let _ = write!(out, "regex used for validation is '{fmt}')");
    out
}

/// `maskTrailingDash`: a name of more than one byte ending in `-` loses its last two bytes
/// and gains an `a`.
fn mask_trailing_dash(name: &str) -> Cow<'_, [u8]> {
    let bytes = name.as_bytes();
    if bytes.len() > 1 && bytes.ends_with(b"-") {
        let mut masked = bytes[..bytes.len() - 2].to_vec();
        masked.push(b'a');
        Cow::Owned(masked)
    } else {
        Cow::Borrowed(bytes)
    }
}

/// util/validation's `IsDNS1123Label`.
fn is_dns1123_label(value: &[u8]) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(max_len_error(63, "characters"));
    }
    if !DNS1123_LABEL.is_match(value) {
        if DNS1123_SUBDOMAIN.is_match(value) {
            errors.push("must not contain dots".to_string());
        } else {
            errors.push(regex_error(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, &["my-name", "123-abc"]));
        }
    }
    errors
}

/// `IsDNS1123Subdomain`, util/validation's (`unit` `characters`) or content's (`bytes`).
fn is_dns1123_subdomain(value: &[u8], unit: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 253 {
        errors.push(max_len_error(253, unit));
    }
    if !DNS1123_SUBDOMAIN.is_match(value) {
        errors.push(regex_error(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errors
}

/// util/validation's `IsDNS1035Label`.
fn is_dns1035_label(value: &[u8]) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(max_len_error(63, "characters"));
    }
    if !DNS1035_LABEL.is_match(value) {
        errors.push(regex_error(DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, &["my-name", "abc-123"]));
    }
    errors
}

fn validate_dns1123_label(s: &str) -> Vec<String> {
    is_dns1123_label(s.as_bytes())
}

fn validate_dns1123_label_prefix(s: &str) -> Vec<String> {
    is_dns1123_label(&mask_trailing_dash(s))
}

fn validate_dns1123_subdomain(s: &str) -> Vec<String> {
    is_dns1123_subdomain(s.as_bytes(), "characters")
}

fn validate_dns1123_subdomain_prefix(s: &str) -> Vec<String> {
    is_dns1123_subdomain(&mask_trailing_dash(s), "characters")
}

fn validate_dns1035_label(s: &str) -> Vec<String> {
    is_dns1035_label(s.as_bytes())
}

fn validate_dns1035_label_prefix(s: &str) -> Vec<String> {
    is_dns1035_label(&mask_trailing_dash(s))
}

/// content's `IsLabelKey` (`IsQualifiedName`).
fn validate_qualified_name(s: &str) -> Vec<String> {
    let examples = ["MyName", "my.name", "123-abc"];
    let mut errors = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                let prefix_errors = is_dns1123_subdomain(prefix.as_bytes(), "bytes");
                errors.extend(prefix_errors.into_iter().map(|e| format!("prefix part {e}")));
            }
            name
        }
        _ => {
            let key = regex_error(LABEL_KEY_MSG, LABEL_KEY_FMT, &examples);
            return vec![format!(
                "a valid label key {key} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errors.push(format!("name part {}", max_len_error(63, "bytes")));
    }
    if !LABEL_KEY.is_match(name.as_bytes()) {
        errors.push(format!("name part {}", regex_error(LABEL_KEY_MSG, LABEL_KEY_FMT, &examples)));
    }
    errors
}

/// content's `IsLabelValue`.
fn validate_label_value(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push(max_len_error(63, "bytes"));
    }
    if !LABEL_VALUE.is_match(s.as_bytes()) {
        errors.push(regex_error(LABEL_VALUE_MSG, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errors
}

// kube-openapi's strfmt formats.

static UUID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
        .expect("a constant regular expression")
});

// govalidator's base64 pattern.
static BASE64: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new("^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
        .expect("a constant regular expression")
});

// strfmt's DateTimePattern, matched against the lowercased part after the first `t`.
static TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new("^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
        .expect("a constant regular expression")
});

fn validate_uuid(s: &str) -> Vec<String> {
    if UUID.is_match(s) { Vec::new() } else { vec!["does not match the UUID format".to_string()] }
}

fn validate_byte(s: &str) -> Vec<String> {
    if BASE64.is_match(s) { Vec::new() } else { vec!["invalid base64".to_string()] }
}

fn validate_date(s: &str) -> Vec<String> {
    if is_date(s) { Vec::new() } else { vec!["invalid date".to_string()] }
}

fn validate_datetime(s: &str) -> Vec<String> {
    if is_datetime(s) { Vec::new() } else { vec!["invalid datetime".to_string()] }
}

/// strfmt's `IsDate`: Go's `time.Parse("2006-01-02", s)` succeeds: four digits, two, two,
/// dashes between, a month from 1 to 12 and a day of that month.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        b.get(range)
            .filter(|d| d.iter().all(u8::is_ascii_digit))
            .map(|d| d.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// strfmt's `IsDateTime`: at least four bytes; lowercased (Go's `strings.ToLower`) and split
/// at each `t`, the first piece a date and the second a time (`hh:mm:ss`, an optional
/// fraction after any character, `z` or an offset), the hours up to 23 and the minutes and
/// seconds up to 59. Pieces after a second `t` are not looked at.
fn is_datetime(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = go_to_lower(s);
    let mut pieces = lower.split('t');
    let (Some(date), Some(time)) = (pieces.next(), pieces.next()) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let Some(captures) = TIME.captures(time) else {
        return false;
    };
    let at_most = |group: usize, max: &str| captures.get(group).is_some_and(|m| m.as_str() <= max);
    at_most(1, "23") && at_most(2, "59") && at_most(3, "59")
}

/// Go's `strings.ToLower`: each character's simple lowercase mapping (`İ` → `i`).
fn go_to_lower(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == '\u{130}' {
                return 'i';
            }
            let mut lower = c.to_lowercase();
            match (lower.next(), lower.next()) {
                (Some(l), None) => l,
                _ => c,
            }
        })
        .collect()
}

/// Go's url.ParseRequestURI (Go 1.26, strict colons in http and https hosts), as `url(s)` reads
/// it ([`super::urls`]), its error written as `parse "s": …`.
fn validate_uri(s: &str) -> Vec<String> {
    match super::urls::parse_request_uri(s) {
        Ok(()) => Vec::new(),
        Err(e) => vec![format!("parse {}: {e}", quote_bytes(s.as_bytes()))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Messages the oracle answers with, used in many cases below.
    const LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
    const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const KEY: &str = "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
    const PREFIX_SUBDOMAIN: &str = "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    /// (format, input, the oracle's error list or None for optional.none(), the oracle's cost of
    /// `format.<format>().validate(input)`); LONGSUB stands for four 63-byte labels joined by dots.
    /// Every expected value was taken from tools/cel-oracle (kube-apiserver 1.37's CEL).
    const VALIDATIONS: &[(&str, &str, Option<&[&str]>, u64)] = &[
        ("dns1123Label", "my-name", None, 9),
        ("dns1123Label", "", Some(&[LABEL]), 9),
        ("dns1123Label", "a.b", Some(&["must not contain dots"]), 9),
        ("dns1123Label", "-a", Some(&[LABEL]), 9),
        ("dns1123Label", "a-", Some(&[LABEL]), 9),
        ("dns1123Label", "A", Some(&[LABEL]), 9),
        ("dns1123Label", "0", None, 9),
        ("dns1123Label", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", None, 57),
        (
            "dns1123Label",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            Some(&["must be no more than 63 characters"]),
            57,
        ),
        (
            "dns1123Label",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.a",
            Some(&["must be no more than 63 characters", "must not contain dots"]),
            57,
        ),
        (
            "dns1123Label",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-",
            Some(&["must be no more than 63 characters", LABEL]),
            57,
        ),
        ("dns1123Label", "é", Some(&[LABEL]), 9),
        ("dns1123Label", "a_b", Some(&[LABEL]), 9),
        ("dns1123LabelPrefix", "a-", None, 9),
        ("dns1123LabelPrefix", "-", Some(&[LABEL]), 9),
        ("dns1123LabelPrefix", "a--", None, 9),
        ("dns1123LabelPrefix", "ab-", None, 9),
        ("dns1123LabelPrefix", "A-", None, 9),
        ("dns1123LabelPrefix", "a.-", None, 9),
        ("dns1123LabelPrefix", "a.b-", Some(&["must not contain dots"]), 9),
        ("dns1123LabelPrefix", "é-", Some(&[LABEL]), 9),
        ("dns1123LabelPrefix", "aé-", Some(&[LABEL]), 9),
        ("dns1123LabelPrefix", "", Some(&[LABEL]), 9),
        (
            "dns1123LabelPrefix",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-",
            Some(&["must be no more than 63 characters"]),
            57,
        ),
        ("dns1123Subdomain", "example.com", None, 31),
        ("dns1123Subdomain", "apiextensions.k8s.io", None, 46),
        ("dns1123Subdomain", "", Some(&[SUBDOMAIN]), 16),
        ("dns1123Subdomain", "a..b", Some(&[SUBDOMAIN]), 16),
        ("dns1123Subdomain", "Example.com", Some(&[SUBDOMAIN]), 31),
        ("dns1123Subdomain", "a.-b", Some(&[SUBDOMAIN]), 16),
        ("dns1123Subdomain", "a.", Some(&[SUBDOMAIN]), 16),
        ("dns1123Subdomain", "LONGSUB", Some(&["must be no more than 253 characters"]), 391),
        ("dns1123SubdomainPrefix", "a.", Some(&[SUBDOMAIN]), 16),
        ("dns1123SubdomainPrefix", "a.b-", None, 16),
        ("dns1123SubdomainPrefix", "a-", None, 16),
        ("dns1123SubdomainPrefix", "mysubdomain.prefix.-", None, 46),
        ("dns1123SubdomainPrefix", "a..-", None, 16),
        ("dns1123SubdomainPrefix", "-", Some(&[SUBDOMAIN]), 16),
        ("dns1035Label", "my-name", None, 9),
        ("dns1035Label", "1abc", Some(&[DNS1035]), 9),
        ("dns1035Label", "", Some(&[DNS1035]), 9),
        ("dns1035Label", "a.b", Some(&[DNS1035]), 9),
        (
            "dns1035Label",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            Some(&["must be no more than 63 characters"]),
            57,
        ),
        ("dns1035LabelPrefix", "a-", None, 9),
        ("dns1035LabelPrefix", "1-", None, 9),
        ("dns1035LabelPrefix", "ab-", None, 9),
        ("dns1035LabelPrefix", "-", Some(&[DNS1035]), 9),
        ("dns1035LabelPrefix", "1a-", Some(&[DNS1035]), 9),
        ("qualifiedName", "apiextensions.k8s.io/v1beta1", None, 46),
        ("qualifiedName", "MyName", None, 16),
        ("qualifiedName", "", Some(&["name part must be non-empty", NAME_PART]), 16),
        ("qualifiedName", "/a", Some(&["prefix part must be non-empty"]), 16),
        ("qualifiedName", "a/", Some(&["name part must be non-empty", NAME_PART]), 16),
        ("qualifiedName", "/", Some(&["prefix part must be non-empty", "name part must be non-empty", NAME_PART]), 16),
        ("qualifiedName", "a/b/c", Some(&[KEY]), 16),
        ("qualifiedName", "Example.com/a", Some(&[PREFIX_SUBDOMAIN]), 31),
        ("qualifiedName", "-a", Some(&[NAME_PART]), 16),
        ("qualifiedName", "a_b.c-d", None, 16),
        (
            "qualifiedName",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            Some(&["name part must be no more than 63 bytes"]),
            106,
        ),
        (
            "qualifiedName",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_",
            Some(&["name part must be no more than 63 bytes", NAME_PART]),
            106,
        ),
        ("qualifiedName", "Bad..Prefix/-x-", Some(&[PREFIX_SUBDOMAIN, NAME_PART]), 31),
        ("qualifiedName", "LONGSUB/x", Some(&["prefix part must be no more than 253 bytes"]), 391),
        ("labelValue", "", None, 11),
        ("labelValue", "MyValue", None, 11),
        ("labelValue", "my_value", None, 11),
        ("labelValue", "-a", Some(&[VALUE]), 11),
        ("labelValue", "a b", Some(&[VALUE]), 11),
        (
            "labelValue",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            Some(&["must be no more than 63 bytes"]),
            71,
        ),
        (
            "labelValue",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_",
            Some(&["must be no more than 63 bytes", VALUE]),
            71,
        ),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", None, 73),
        ("uuid", "123E4567-E89B-12D3-A456-426614174000", None, 73),
        ("uuid", "123e4567e89b12d3a456426614174000", None, 73),
        ("uuid", "123e4567-e89b12d3-a456-426614174000", None, 73),
        ("uuid", "123e4567-e89b-12d3-a456-42661417400", Some(&["does not match the UUID format"]), 73),
        ("uuid", "{123e4567-e89b-12d3-a456-426614174000}", Some(&["does not match the UUID format"]), 73),
        ("uuid", "", Some(&["does not match the UUID format"]), 19),
        ("uuid", "g23e4567-e89b-12d3-a456-426614174000", Some(&["does not match the UUID format"]), 73),
        ("byte", "aGVsbG8=", None, 22),
        ("byte", "aGVsbG8", Some(&["invalid base64"]), 22),
        ("byte", "", Some(&["invalid base64"]), 22),
        ("byte", "aGVsbA==", None, 22),
        ("byte", "aGVsbA=", Some(&["invalid base64"]), 22),
        ("byte", "aGVs", None, 22),
        ("byte", "aGV=", None, 22),
        ("byte", "a===", Some(&["invalid base64"]), 22),
        ("byte", "ab+/", None, 22),
        ("byte", "ab-_", Some(&["invalid base64"]), 22),
        ("byte", "aGVs\nbG8=", Some(&["invalid base64"]), 22),
        ("byte", "aR==", None, 22),
        ("date", "2021-01-01", None, 37),
        ("date", "2021-02-29", Some(&["invalid date"]), 37),
        ("date", "2020-02-29", None, 37),
        ("date", "2021-13-01", Some(&["invalid date"]), 37),
        ("date", "2021-00-01", Some(&["invalid date"]), 37),
        ("date", "2021-01-00", Some(&["invalid date"]), 37),
        ("date", "2021-04-31", Some(&["invalid date"]), 37),
        ("date", "2021-1-01", Some(&["invalid date"]), 19),
        ("date", "2021-01-1", Some(&["invalid date"]), 19),
        ("date", "21-01-01", Some(&["invalid date"]), 19),
        ("date", "+021-01-01", Some(&["invalid date"]), 37),
        ("date", "2021-01-01T00:00:00Z", Some(&["invalid date"]), 55),
        ("date", "", Some(&["invalid date"]), 19),
        ("date", "0000-01-01", None, 37),
        ("date", "9999-12-31", None, 37),
        ("date", "20210-01-01", Some(&["invalid date"]), 37),
        ("date", " 2021-01-01", Some(&["invalid date"]), 37),
        ("date", "2021-01-01 ", Some(&["invalid date"]), 37),
        ("date", "2021/01/01", Some(&["invalid date"]), 37),
        ("date", "2021-01-32", Some(&["invalid date"]), 37),
        ("date", "1900-02-29", Some(&["invalid date"]), 37),
        ("date", "2000-02-29", None, 37),
        ("date", "２０２１-01-01", Some(&["invalid date"]), 37),
        ("datetime", "2021-01-01T00:00:00Z", None, 55),
        ("datetime", "2021-01-01t00:00:00z", None, 55),
        ("datetime", "2021-01-01T00:00:00+01:00", None, 55),
        ("datetime", "2021-01-01T00:00:00.123Z", None, 55),
        ("datetime", "2021-01-01T00:00:00,123Z", None, 55),
        ("datetime", "2021-01-01T00:00:00xZ", Some(&["invalid datetime"]), 55),
        ("datetime", "2021-01-01T24:00:00Z", Some(&["invalid datetime"]), 55),
        ("datetime", "2021-01-01T23:60:00Z", Some(&["invalid datetime"]), 55),
        ("datetime", "2021-01-01T23:59:60Z", Some(&["invalid datetime"]), 55),
        ("datetime", "2021-01-01T23:59:59+99:99", None, 55),
        ("datetime", "2021-01-01T00:00:00", Some(&["invalid datetime"]), 37),
        ("datetime", "2021-01-01 00:00:00Z", Some(&["invalid datetime"]), 55),
        ("datetime", "2021-01-01", Some(&["invalid datetime"]), 37),
        ("datetime", "2021-02-30T00:00:00Z", Some(&["invalid datetime"]), 55),
        ("datetime", "2021-01-01T00:00:00ZTjunk", None, 55),
        ("datetime", "2021-01-01T00:00:00Z\n", Some(&["invalid datetime"]), 55),
        ("datetime", "2021-01-01T00:00:00.Z", Some(&["invalid datetime"]), 55),
        ("datetime", "2021-01-01T00:00:00İ5Z", None, 55),
        ("datetime", "2021-01-01T00:00:00\u{212a}5Z", None, 55),
        ("datetime", "2021-01-01T0:00:00Z", Some(&["invalid datetime"]), 37),
        ("datetime", "T00:00:00Z", Some(&["invalid datetime"]), 37),
        ("datetime", "abc", Some(&["invalid datetime"]), 19),
        ("datetime", "", Some(&["invalid datetime"]), 19),
        ("datetime", "2021-01-01T00:00:00-00:00", None, 55),
        ("datetime", "2021-01-01T00:00:00.\n5Z", Some(&["invalid datetime"]), 55),
        ("uri", "http://example.com", None, 553),
        ("uri", "https://user:pass@example.com:8080/path?q=1#frag", None, 1381),
        ("uri", "/absolute/path", None, 553),
        ("uri", "relative/path", Some(&["parse \"relative/path\": invalid URI for request"]), 553),
        ("uri", "", Some(&["parse \"\": empty url"]), 277),
        ("uri", "*", None, 277),
        ("uri", ":foo", Some(&["parse \":foo\": missing protocol scheme"]), 277),
        ("uri", "mailto:someone@example.com", None, 829),
        ("uri", "http:opaque", None, 553),
        (
            "uri",
            "http://exa mple.com",
            Some(&["parse \"http://exa mple.com\": invalid character \" \" in host name"]),
            553,
        ),
        ("uri", "http://example.com/a b", None, 829),
        ("uri", "http://example.com/%zz", Some(&["parse \"http://example.com/%zz\": invalid URL escape \"%zz\""]), 829),
        ("uri", "http://example.com/%4", Some(&["parse \"http://example.com/%4\": invalid URL escape \"%4\""]), 829),
        ("uri", "http://example.com/%", Some(&["parse \"http://example.com/%\": invalid URL escape \"%\""]), 829),
        ("uri", "http://%41.com", Some(&["parse \"http://%41.com\": invalid URL escape \"%41\""]), 553),
        ("uri", "http://%c3%a9.com", None, 553),
        ("uri", "http://[::1]:80/", None, 553),
        ("uri", "http://[::1]x/", Some(&["parse \"http://[::1]x/\": invalid port \"x\" after host"]), 553),
        ("uri", "http://[::1", Some(&["parse \"http://[::1\": missing ']' in host"]), 553),
        ("uri", "http://a[::1]", Some(&["parse \"http://a[::1]\": invalid IP-literal"]), 553),
        ("uri", "http://[1.2.3.4]", Some(&["parse \"http://[1.2.3.4]\": invalid IP-literal"]), 553),
        ("uri", "http://[::ffff:1.2.3.4]", None, 829),
        ("uri", "http://[fe80::1%25en0]/", None, 829),
        ("uri", "http://[fe80::1%en0]/", Some(&["parse \"http://[fe80::1%en0]/\": invalid URL escape \"%en\""]), 829),
        (
            "uri",
            "http://[zz]/",
            Some(&["parse \"http://[zz]/\": invalid host: ParseAddr(\"zz\"): unable to parse IP"]),
            553,
        ),
        ("uri", "http://[]/", Some(&["parse \"http://[]/\": invalid host: ParseAddr(\"\"): unable to parse IP"]), 553),
        (
            "uri",
            "http://[1:2:3:4:5:6:7:8:9]/",
            Some(&[
                "parse \"http://[1:2:3:4:5:6:7:8:9]/\": invalid host: ParseAddr(\"1:2:3:4:5:6:7:8:9\"): trailing garbage after address (at \"9\")",
            ]),
            829,
        ),
        (
            "uri",
            "http://example.com:port",
            Some(&["parse \"http://example.com:port\": invalid port \":port\" after host"]),
            829,
        ),
        (
            "uri",
            "http://example.com:80:90",
            Some(&["parse \"http://example.com:80:90\": invalid port \":80:90\" after host"]),
            829,
        ),
        (
            "uri",
            "HTTPS://example.com:80:90",
            Some(&["parse \"HTTPS://example.com:80:90\": invalid port \":80:90\" after host"]),
            829,
        ),
        ("uri", "postgres://h1:5432,h2:5432/db", None, 829),
        (
            "uri",
            "postgres://h1:5432,h2:x/db",
            Some(&["parse \"postgres://h1:5432,h2:x/db\": invalid port \":x\" after host"]),
            829,
        ),
        ("uri", "http://us er@host", Some(&["parse \"http://us er@host\": net/url: invalid userinfo"]), 553),
        ("uri", "http://user%zz@host", Some(&["parse \"http://user%zz@host\": invalid URL escape \"%zz\""]), 553),
        ("uri", "http://user:pa%zz@host", Some(&["parse \"http://user:pa%zz@host\": invalid URL escape \"%zz\""]), 829),
        ("uri", "http://us@er@host", None, 553),
        ("uri", "http://host\t", Some(&["parse \"http://host\\t\": net/url: invalid control character in URL"]), 553),
        (
            "uri",
            "http://example.com/\u{7f}",
            Some(&["parse \"http://example.com/\\x7f\": net/url: invalid control character in URL"]),
            829,
        ),
        ("uri", "//host/path", None, 553),
        ("uri", "HTTP://EXAMPLE.COM", None, 553),
        ("uri", "1http://x", Some(&["parse \"1http://x\": invalid URI for request"]), 277),
        ("uri", "http://ex<>ample.com", None, 829),
        (
            "uri",
            "http://ex`ample.com",
            Some(&["parse \"http://ex`ample.com\": invalid character \"`\" in host name"]),
            553,
        ),
        (
            "uri",
            "http://ex{ample.com",
            Some(&["parse \"http://ex{ample.com\": invalid character \"{\" in host name"]),
            553,
        ),
        ("uri", "http://exé.com", None, 553),
        ("uri", "http://ex%aé.com", Some(&["parse \"http://ex%aé.com\": invalid URL escape \"%a\\xc3\""]), 553),
        (
            "uri",
            "http://[::1%25]/",
            Some(&["parse \"http://[::1%25]/\": invalid host: ParseAddr(\"::1%\"): zone must be a non-empty string"]),
            553,
        ),
        ("uri", "http://[%31::]/", Some(&["parse \"http://[%31::]/\": invalid URL escape \"%31\""]), 553),
        ("uri", "http://[::1%25%41]/", None, 553),
        ("uri", "http://[::1%25%0a]/", Some(&["parse \"http://[::1%25%0a]/\": invalid URL escape \"%0a\""]), 553),
        ("uri", "http://[::1%25%20]/", None, 553),
        ("uri", "http://[::1%25%c3]/", Some(&["parse \"http://[::1%25%c3]/\": invalid URL escape \"%c3\""]), 553),
        (
            "uri",
            "http://[::1%25a b]/",
            Some(&["parse \"http://[::1%25a b]/\": invalid character \" \" in host name"]),
            553,
        ),
        (
            "uri",
            "http://[1.2.3]/",
            Some(&["parse \"http://[1.2.3]/\": invalid host: ParseAddr(\"1.2.3\"): IPv4 address too short"]),
            553,
        ),
        (
            "uri",
            "http://[::1.2.3.04]/",
            Some(&[
                "parse \"http://[::1.2.3.04]/\": invalid host: ParseAddr(\"::1.2.3.04\"): IPv4 field has octet with leading zero",
            ]),
            829,
        ),
        (
            "uri",
            "http://[::1.2.3.4.5]/",
            Some(&["parse \"http://[::1.2.3.4.5]/\": invalid host: ParseAddr(\"::1.2.3.4.5\"): IPv4 address too long"]),
            829,
        ),
        (
            "uri",
            "http://[::1.2.3.256]/",
            Some(&[
                "parse \"http://[::1.2.3.256]/\": invalid host: ParseAddr(\"::1.2.3.256\"): IPv4 field has value >255",
            ]),
            829,
        ),
        (
            "uri",
            "http://[::1.2..4]/",
            Some(&[
                "parse \"http://[::1.2..4]/\": invalid host: ParseAddr(\"::1.2..4\"): IPv4 field must have at least one digit (at \".4\")",
            ]),
            553,
        ),
        (
            "uri",
            "http://[::1.2.3.x]/",
            Some(&[
                "parse \"http://[::1.2.3.x]/\": invalid host: ParseAddr(\"::1.2.3.x\"): unexpected character (at \"x\")",
            ]),
            553,
        ),
        ("uri", "http://[1:2:3:4:5:6:1.2.3.4]/", None, 829),
        (
            "uri",
            "http://[1:2:3:4:5:1.2.3.4]/",
            Some(&[
                "parse \"http://[1:2:3:4:5:1.2.3.4]/\": invalid host: ParseAddr(\"1:2:3:4:5:1.2.3.4\"): embedded IPv4 address must replace the final 2 fields of the address (at \"1.2.3.4\")",
            ]),
            829,
        ),
        (
            "uri",
            "http://[1:2:3:4:5:6:7:1.2.3.4]/",
            Some(&[
                "parse \"http://[1:2:3:4:5:6:7:1.2.3.4]/\": invalid host: ParseAddr(\"1:2:3:4:5:6:7:1.2.3.4\"): embedded IPv4 address must replace the final 2 fields of the address (at \"1.2.3.4\")",
            ]),
            1105,
        ),
        (
            "uri",
            "http://[::1:2:3:4:5:6:7:1.2.3.4]/",
            Some(&[
                "parse \"http://[::1:2:3:4:5:6:7:1.2.3.4]/\": invalid host: ParseAddr(\"::1:2:3:4:5:6:7:1.2.3.4\"): too many hex fields to fit an embedded IPv4 at the end of the address (at \"1.2.3.4\")",
            ]),
            1105,
        ),
        (
            "uri",
            "http://[12345::]/",
            Some(&[
                "parse \"http://[12345::]/\": invalid host: ParseAddr(\"12345::\"): each group must have 4 or less digits (at \"12345::\")",
            ]),
            553,
        ),
        (
            "uri",
            "http://[::1::]/",
            Some(&["parse \"http://[::1::]/\": invalid host: ParseAddr(\"::1::\"): multiple :: in address (at \":\")"]),
            553,
        ),
        (
            "uri",
            "http://[1:2:3:4:5:6:7::8]/",
            Some(&[
                "parse \"http://[1:2:3:4:5:6:7::8]/\": invalid host: ParseAddr(\"1:2:3:4:5:6:7::8\"): the :: must expand to at least one field of zeros",
            ]),
            829,
        ),
        ("uri", "http://[1:2:3:4:5:6:7:8]/", None, 829),
        (
            "uri",
            "http://[1:2:3]/",
            Some(&["parse \"http://[1:2:3]/\": invalid host: ParseAddr(\"1:2:3\"): address string too short"]),
            553,
        ),
        ("uri", "http://[::]/", None, 553),
        (
            "uri",
            "http://[::1:]/",
            Some(&[
                "parse \"http://[::1:]/\": invalid host: ParseAddr(\"::1:\"): colon must be followed by more characters (at \":\")",
            ]),
            553,
        ),
        ("uri", "http://[1%x]/", Some(&["parse \"http://[1%x]/\": invalid URL escape \"%x\""]), 553),
        (
            "uri",
            "http://[%ff::]/",
            Some(&[
                "parse \"http://[%ff::]/\": invalid host: ParseAddr(\"\\xff::\"): each colon-separated field must have at least one digit (at \"\\xff::\")",
            ]),
            553,
        ),
        (
            "uri",
            "http://[a%ffb::]/",
            Some(&[
                "parse \"http://[a%ffb::]/\": invalid host: ParseAddr(\"a\\xffb::\"): unexpected character, want colon (at \"\\xffb::\")",
            ]),
            553,
        ),
        ("uri", "http://host/?q=%zz", None, 553),
        ("uri", "http://host/p#%zz", Some(&["parse \"http://host/p#%zz\": invalid URL escape \"%zz\""]), 553),
        ("uri", "http://host#frag", Some(&["parse \"http://host#frag\": invalid character \"#\" in host name"]), 553),
        ("uri", "http://'host'/", None, 553),
        ("uri", "a:b", None, 277),
        ("uri", "http://host:/", None, 553),
        ("uri", "http://:80/", None, 553),
        ("uri", "http:///path", None, 553),
        ("uri", "/%", Some(&["parse \"/%\": invalid URL escape \"%\""]), 277),
        ("uri", "/é", None, 277),
        ("uri", "http://[::1]:8a/", Some(&["parse \"http://[::1]:8a/\": invalid port \":8a\" after host"]), 553),
        ("uri", "http://a@[::1]:80/", None, 553),
        ("uri", "http://é@host", Some(&["parse \"http://é@host\": net/url: invalid userinfo"]), 553),
        ("uri", "?q", Some(&["parse \"?q\": invalid URI for request"]), 277),
        ("uri", "/?q=%zz", None, 277),
    ];

    #[test]
    fn validates_as_the_oracle() {
        let long_subdomain = vec!["a".repeat(63); 4].join(".");
        for &(key, input, expected, cost) in VALIDATIONS {
            let input = input.replace("LONGSUB", &long_subdomain);
            let Some(format) = named(key) else { panic!("no format {key}") };
            let got = format.validate(&input);
            let expected = expected.map(|errors| errors.iter().map(|e| e.to_string()).collect::<Vec<_>>());
            assert_eq!(got, expected, "format.{key}().validate({input:?})");
            assert_eq!(
                format.validate_cost(&input) + CONSTANT_COST,
                cost,
                "cost of format.{key}().validate({input:?})"
            );
        }
    }

    /// (name, the oracle's opaque string of `format.<name>()` and of `format.named(name)`'s value).
    const FORMAT_STRINGS: &[(&str, &str)] = &[
        ("dns1123Label", "{DNS1123Label 30}"),
        ("dns1123Subdomain", "{DNS1123Subdomain 60}"),
        ("dns1035Label", "{DNS1035Label 30}"),
        ("qualifiedName", "{QualifiedName 60}"),
        ("dns1123LabelPrefix", "{DNS1123LabelPrefix 30}"),
        ("dns1123SubdomainPrefix", "{DNS1123SubdomainPrefix 60}"),
        ("dns1035LabelPrefix", "{DNS1035LabelPrefix 30}"),
        ("labelValue", "{LabelValue 40}"),
        ("uri", "{URI 1103}"),
        ("uuid", "{uuid 70}"),
        ("byte", "{byte 84}"),
        ("date", "{date 71}"),
        ("datetime", "{datetime 71}"),
    ];

    #[test]
    fn formats_print_and_compare_as_the_oracle() {
        let constructors = [
            dns1123_label(),
            dns1123_subdomain(),
            dns1035_label(),
            qualified_name(),
            dns1123_label_prefix(),
            dns1123_subdomain_prefix(),
            dns1035_label_prefix(),
            label_value(),
            uri(),
            uuid(),
            byte(),
            date(),
            datetime(),
        ];
        assert_eq!(names().collect::<Vec<_>>(), FORMAT_STRINGS.iter().map(|(n, _)| *n).collect::<Vec<_>>());
        for (&(key, printed), constructed) in FORMAT_STRINGS.iter().zip(constructors) {
            let Some(format) = named(key) else { panic!("no format {key}") };
            assert_eq!(format.to_string(), printed);
            assert_eq!(constructed.to_string(), printed);
            assert_eq!(constant(&format!("format.{key}")), Some(format));
            assert_eq!(format.key(), key);
        }
        // format.named answers optional.none() for other names (the oracle's, case sensitive).
        for other in ["DNS1123Label", "", "email", "ipv4", "dns1123label"] {
            assert!(named(other).is_none(), "{other}");
        }
        assert_eq!(constant("format.email"), None);
        // `format.uri() == format.uri()` is true, `format.uri() == format.date()` false.
        assert_eq!(uri(), uri());
        assert_ne!(uri(), date());
        assert_eq!(uri().name(), "URI");
        assert_eq!(uri().max_regex_size(), 1103);
    }

    #[test]
    fn quotes_as_go() {
        assert_eq!(quote_bytes(b"a\"b\\c\n\t\x07\x7f'"), "\"a\\\"b\\\\c\\n\\t\\a\\x7f'\"");
        assert_eq!(
            quote_bytes("é\u{301}\u{a0}\u{1F600}\u{F0000}".as_bytes()),
            "\"é\u{301}\\u00a0\u{1F600}\\U000f0000\""
        );
        assert_eq!(quote_bytes(b"%a\xc3"), "\"%a\\xc3\"");
    }
}
