//! Kubernetes' CEL semver library, version 1 (`semver(s)`, `semver(s, true)`, `isSemver`,
//! `major`/`minor`/`patch`, `compareTo`, `isLessThan`, `isGreaterThan`): versions parsed,
//! normalized, printed and ordered as github.com/blang/semver/v4 does it for
//! k8s.io/apiserver's `library/semverlib.go`, with the same error messages.
//!
//! Runtime costs (k8s.io/apiserver `library/cost.go`): `semver` and `isSemver` cost
//! [`parse_cost`] (a tenth of the string's length in characters, rounded up); every accessor
//! and comparison, and `==` between versions, cost [`ACCESSOR_COST`].

use super::network::quote_bytes as go_quote_bytes;
use std::cmp::Ordering;
use std::fmt;

/// The CEL type name of a version: `kubernetes.Semver`.
pub const TYPE_NAME: &str = "kubernetes.Semver";

/// The cost of `major()`, `minor()`, `patch()`, `compareTo`, `isLessThan`, `isGreaterThan`
/// and of `==` between two versions.
pub const ACCESSOR_COST: u64 = 1;

/// A semantic version: `kubernetes.Semver` (blang's `semver.Version`).
///
/// Equality is the library's: two versions are equal when they have the same precedence, so
/// build metadata is ignored (`semver("1.2.3+a") == semver("1.2.3")`).
#[derive(Clone, Debug)]
pub struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Prerelease>,
    build: Vec<String>,
}

/// One dot-separated identifier of a pre-release.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Prerelease {
    Numeric(u64),
    Alphanumeric(String),
}

/// `semver(s)` (`normalize` false) or `semver(s, true)`: the version, or the error message
/// the library answers with (`No Major.Minor.Patch elements found`, ...).
///
/// Normalization (`normalizeAndParse`) removes one leading `v`, leading zeros of the major,
/// minor and patch parts, and adds a zero minor and patch to `1` or `1.2`.
pub fn parse(s: &str, normalize: bool) -> Result<Semver, String> {
    if normalize { parse_strict(&normalized(s)?) } else { parse_strict(s) }
}

/// `isSemver(s)` / `isSemver(s, normalize)`: whether [`parse`] succeeds.
pub fn is_semver(s: &str, normalize: bool) -> bool {
    parse(s, normalize).is_ok()
}

/// The runtime cost of `semver(s)`, `semver(s, b)`, `isSemver(s)` and `isSemver(s, b)`:
/// `ceil(characters × 0.1)` (a string traversal).
pub fn parse_cost(s: &str) -> u64 {
    (s.chars().count() as f64 * 0.1).ceil() as u64
}

impl Semver {
    /// `major()`: the major number, as Go converts a `uint64` to an `int64` (wrapping).
    pub fn major(&self) -> i64 {
        self.major as i64
    }

    /// `minor()`: the minor number, wrapping as [`Semver::major`].
    pub fn minor(&self) -> i64 {
        self.minor as i64
    }

    /// `patch()`: the patch number, wrapping as [`Semver::major`].
    pub fn patch(&self) -> i64 {
        self.patch as i64
    }

    /// Semantic-version precedence (blang's `Compare`): major, minor and patch numerically; a
    /// version with a pre-release before the same one without; pre-release identifiers in
    /// turn, numeric ones numerically and before alphanumeric ones, alphanumeric ones by their
    /// bytes, a shorter list first when it is a prefix of the other. Build metadata is ignored.
    /// `compareTo` is this as -1, 0 or 1; `isLessThan` is `Less`, `isGreaterThan` `Greater`.
    pub fn compare(&self, other: &Semver) -> Ordering {
        let numbers = (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if numbers != Ordering::Equal {
            return numbers;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => compare_prereleases(&self.pre, &other.pre),
        }
    }
}

impl PartialEq for Semver {
    fn eq(&self, other: &Semver) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

impl Eq for Semver {}

impl fmt::Display for Semver {
    /// blang's `String()`: `1.2.3`, `1.2.3-rc.1`, `1.2.3-rc.1+build.5` (the oracle's opaque
    /// string of a `kubernetes.Semver`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        for (i, pre) in self.pre.iter().enumerate() {
            f.write_str(if i == 0 { "-" } else { "." })?;
            match pre {
                Prerelease::Numeric(n) => write!(f, "{n}")?,
                Prerelease::Alphanumeric(s) => f.write_str(s)?,
            }
        }
        for (i, build) in self.build.iter().enumerate() {
            f.write_str(if i == 0 { "+" } else { "." })?;
            f.write_str(build)?;
        }
        Ok(())
    }
}

fn compare_prereleases(left: &[Prerelease], right: &[Prerelease]) -> Ordering {
    for (a, b) in left.iter().zip(right) {
        let order = match (a, b) {
            (Prerelease::Numeric(x), Prerelease::Numeric(y)) => x.cmp(y),
            (Prerelease::Numeric(_), Prerelease::Alphanumeric(_)) => Ordering::Less,
            (Prerelease::Alphanumeric(_), Prerelease::Numeric(_)) => Ordering::Greater,
            (Prerelease::Alphanumeric(x), Prerelease::Alphanumeric(y)) => x.as_bytes().cmp(y.as_bytes()),
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    left.len().cmp(&right.len())
}

/// Kubernetes' `normalizeAndParse` before its `semver.Parse`: one `v` removed, leading zeros
/// of each of the first three dot-separated parts removed, `.0` added up to three parts.
fn normalized(s: &str) -> Result<String, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s.splitn(3, '.').map(without_leading_zeros).collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|last| last.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".to_string());
        }
        parts.resize(3, "0".to_string());
    }
    Ok(parts.join("."))
}

/// A part of more than one byte without its leading zeros, `0` put back when nothing or no
/// digit remains in front (`00` → `0`, `0a` → `0a`, `007` → `7`).
fn without_leading_zeros(part: &str) -> String {
    if part.len() <= 1 {
        return part.to_string();
    }
    let trimmed = part.trim_start_matches('0');
    if trimmed.as_bytes().first().is_some_and(u8::is_ascii_digit) { trimmed.to_string() } else { format!("0{trimmed}") }
}

/// blang's `semver.Parse`.
fn parse_strict(s: &str) -> Result<Semver, String> {
    if s.is_empty() {
        return Err("Version string empty".to_string());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    let [major, minor, rest] = parts[..] else {
        return Err("No Major.Minor.Patch elements found".to_string());
    };
    let major = version_number(major, "major", "Major")?;
    let minor = version_number(minor, "minor", "Minor")?;
    let (rest, build) = match rest.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (rest, None),
    };
    let (patch, pre) = match rest.split_once('-') {
        Some((patch, pre)) => (patch, Some(pre)),
        None => (rest, None),
    };
    let patch = version_number(patch, "patch", "Patch")?;
    let pre = match pre {
        Some(pre) => pre.split('.').map(prerelease).collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let build = match build {
        Some(build) => build.split('.').map(build_identifier).collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    Ok(Semver { major, minor, patch, pre, build })
}

/// A major, minor or patch number: digits only, no leading zero, fits 64 bits.
fn version_number(part: &str, lower: &str, title: &str) -> Result<u64, String> {
    if !part.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("Invalid character(s) found in {lower} number {}", go_quote_bytes(part.as_bytes())));
    }
    if part.len() > 1 && part.starts_with('0') {
        return Err(format!("{title} number must not contain leading zeroes {}", go_quote_bytes(part.as_bytes())));
    }
    parse_uint(part)
}

/// Go's `strconv.ParseUint(digits, 10, 64)` of a string of ASCII digits, with its errors.
fn parse_uint(digits: &str) -> Result<u64, String> {
    if digits.is_empty() {
        return Err("strconv.ParseUint: parsing \"\": invalid syntax".to_string());
    }
    digits
        .parse()
        .map_err(|_| format!("strconv.ParseUint: parsing {}: value out of range", go_quote_bytes(digits.as_bytes())))
}

fn is_alphanumeric(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// blang's `NewPRVersion`.
fn prerelease(s: &str) -> Result<Prerelease, String> {
    if s.is_empty() {
        return Err("Prerelease is empty".to_string());
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        if s.len() > 1 && s.starts_with('0') {
            return Err(format!(
                "Numeric PreRelease version must not contain leading zeroes {}",
                go_quote_bytes(s.as_bytes())
            ));
        }
        return parse_uint(s).map(Prerelease::Numeric);
    }
    if is_alphanumeric(s) {
        return Ok(Prerelease::Alphanumeric(s.to_string()));
    }
    Err(format!("Invalid character(s) found in prerelease {}", go_quote_bytes(s.as_bytes())))
}

fn build_identifier(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("Build meta data is empty".to_string());
    }
    if !is_alphanumeric(s) {
        return Err(format!("Invalid character(s) found in build meta data {}", go_quote_bytes(s.as_bytes())));
    }
    Ok(s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (input, normalize, the oracle's opaque string or error message, the oracle's cost).
    /// Every expected value below was taken from tools/cel-oracle (kube-apiserver 1.37's CEL).
    const PARSES: &[(&str, bool, Result<&str, &str>, u64)] = &[
        ("1.2.3", false, Ok("1.2.3"), 1),
        ("", false, Err("Version string empty"), 0),
        ("1", false, Err("No Major.Minor.Patch elements found"), 1),
        ("1.2", false, Err("No Major.Minor.Patch elements found"), 1),
        ("1.2.3.4", false, Err("Invalid character(s) found in patch number \"3.4\""), 1),
        ("01.2.3", false, Err("Major number must not contain leading zeroes \"01\""), 1),
        ("1.02.3", false, Err("Minor number must not contain leading zeroes \"02\""), 1),
        ("1.2.03", false, Err("Patch number must not contain leading zeroes \"03\""), 1),
        ("a.2.3", false, Err("Invalid character(s) found in major number \"a\""), 1),
        ("1.b.3", false, Err("Invalid character(s) found in minor number \"b\""), 1),
        ("1.2.c", false, Err("Invalid character(s) found in patch number \"c\""), 1),
        ("1..3", false, Err("strconv.ParseUint: parsing \"\": invalid syntax"), 1),
        (".2.3", false, Err("strconv.ParseUint: parsing \"\": invalid syntax"), 1),
        ("1.2.", false, Err("strconv.ParseUint: parsing \"\": invalid syntax"), 1),
        ("1.2.-3", false, Err("strconv.ParseUint: parsing \"\": invalid syntax"), 1),
        ("1.2.3-", false, Err("Prerelease is empty"), 1),
        ("1.2.3+", false, Err("Build meta data is empty"), 1),
        ("1.2.3-alpha", false, Ok("1.2.3-alpha"), 2),
        ("1.2.3-alpha.1", false, Ok("1.2.3-alpha.1"), 2),
        ("1.2.3-01", false, Err("Numeric PreRelease version must not contain leading zeroes \"01\""), 1),
        ("1.2.3-00", false, Err("Numeric PreRelease version must not contain leading zeroes \"00\""), 1),
        ("1.2.3-x.007", false, Err("Numeric PreRelease version must not contain leading zeroes \"007\""), 2),
        ("1.2.3-0", false, Ok("1.2.3-0"), 1),
        ("1.2.3-0a", false, Ok("1.2.3-0a"), 1),
        ("1.2.3-a..b", false, Err("Prerelease is empty"), 1),
        ("1.2.3-a_b", false, Err("Invalid character(s) found in prerelease \"a_b\""), 1),
        ("1.2.3+a_b", false, Err("Invalid character(s) found in build meta data \"a_b\""), 1),
        ("1.2.3+a..b", false, Err("Build meta data is empty"), 1),
        ("1.2.3+build.01", false, Ok("1.2.3+build.01"), 2),
        ("1.2.3-rc.1+build.5", false, Ok("1.2.3-rc.1+build.5"), 2),
        ("1.2.3+build-1", false, Ok("1.2.3+build-1"), 2),
        ("1.2.3+b+c", false, Err("Invalid character(s) found in build meta data \"b+c\""), 1),
        ("1.2.3-a+b-c", false, Ok("1.2.3-a+b-c"), 2),
        ("1.2.3-x.-", false, Ok("1.2.3-x.-"), 1),
        ("1.2.3--", false, Ok("1.2.3--"), 1),
        ("1.2.3---a", false, Ok("1.2.3---a"), 1),
        ("1.2.3-a.0.b", false, Ok("1.2.3-a.0.b"), 2),
        ("18446744073709551615.0.0", false, Ok("18446744073709551615.0.0"), 3),
        (
            "18446744073709551616.0.0",
            false,
            Err("strconv.ParseUint: parsing \"18446744073709551616\": value out of range"),
            3,
        ),
        (
            "0.18446744073709551616.0",
            false,
            Err("strconv.ParseUint: parsing \"18446744073709551616\": value out of range"),
            3,
        ),
        (
            "0.0.18446744073709551616",
            false,
            Err("strconv.ParseUint: parsing \"18446744073709551616\": value out of range"),
            3,
        ),
        (
            "0.0.0-18446744073709551616",
            false,
            Err("strconv.ParseUint: parsing \"18446744073709551616\": value out of range"),
            3,
        ),
        ("v1.2.3", false, Err("Invalid character(s) found in major number \"v1\""), 1),
        (" 1.2.3", false, Err("Invalid character(s) found in major number \" 1\""), 1),
        ("1.2.3 ", false, Err("Invalid character(s) found in patch number \"3 \""), 1),
        ("+1.2.3", false, Err("Invalid character(s) found in major number \"+1\""), 1),
        ("-1.2.3", false, Err("Invalid character(s) found in major number \"-1\""), 1),
        ("é.1.1", false, Err("Invalid character(s) found in major number \"é\""), 1),
        ("1.2.3-é", false, Err("Invalid character(s) found in prerelease \"é\""), 1),
        ("1.2.3-é\t", false, Err("Invalid character(s) found in prerelease \"é\\t\""), 1),
        ("1.2.3-\u{200b}", false, Err("Invalid character(s) found in prerelease \"\\u200b\""), 1),
        ("1.2.3+\"q\"", false, Err("Invalid character(s) found in build meta data \"\\\"q\\\"\""), 1),
        ("1.2.3-'", false, Err("Invalid character(s) found in prerelease \"'\""), 1),
        ("1.2.3-e\u{301}", false, Err("Invalid character(s) found in prerelease \"e\u{301}\""), 1),
        ("1.2.3-\u{7f}", false, Err("Invalid character(s) found in prerelease \"\\x7f\""), 1),
        ("1.2.3-\u{1F600}", false, Err("Invalid character(s) found in prerelease \"\u{1F600}\""), 1),
        ("1.2.3-\u{E000}", false, Err("Invalid character(s) found in prerelease \"\\ue000\""), 1),
        ("1.2.3-\u{F0000}", false, Err("Invalid character(s) found in prerelease \"\\U000f0000\""), 1),
        ("v1.2.3", true, Ok("1.2.3"), 1),
        ("1.2", true, Ok("1.2.0"), 1),
        ("1", true, Ok("1.0.0"), 1),
        ("v1", true, Ok("1.0.0"), 1),
        ("01.01.01", true, Ok("1.1.1"), 1),
        ("00.00.00", true, Ok("0.0.0"), 1),
        ("0001", true, Ok("1.0.0"), 1),
        ("v0.0.0", true, Ok("0.0.0"), 1),
        ("", true, Err("strconv.ParseUint: parsing \"\": invalid syntax"), 0),
        ("v", true, Err("strconv.ParseUint: parsing \"\": invalid syntax"), 1),
        ("vv1.2.3", true, Err("Invalid character(s) found in major number \"0v1\""), 1),
        ("V1.2.3", true, Err("Invalid character(s) found in major number \"0V1\""), 1),
        (" 1.2.3", true, Err("Invalid character(s) found in major number \"0 1\""), 1),
        ("1.2-rc", true, Err("short version cannot contain PreRelease/Build meta data"), 1),
        ("1-rc", true, Err("short version cannot contain PreRelease/Build meta data"), 1),
        ("1+b", true, Err("short version cannot contain PreRelease/Build meta data"), 1),
        ("1.2.3-rc", true, Ok("1.2.3-rc"), 1),
        ("1.2.03-rc.01", true, Err("Numeric PreRelease version must not contain leading zeroes \"01\""), 2),
        ("1.2.0-rc", true, Ok("1.2.0-rc"), 1),
        ("1.2.00-rc", true, Ok("1.2.0-rc"), 1),
        ("1.2.0a", true, Err("Invalid character(s) found in patch number \"0a\""), 1),
        ("1.2.00a", true, Err("Invalid character(s) found in patch number \"0a\""), 1),
        ("1.2.a", true, Err("Invalid character(s) found in patch number \"a\""), 1),
        ("1.2.-3", true, Ok("1.2.0-3"), 1),
        ("1..3", true, Err("strconv.ParseUint: parsing \"\": invalid syntax"), 1),
        ("1.", true, Err("strconv.ParseUint: parsing \"\": invalid syntax"), 1),
        (".1", true, Err("strconv.ParseUint: parsing \"\": invalid syntax"), 1),
        ("1.2.3.4", true, Err("Invalid character(s) found in patch number \"3.4\""), 1),
        ("1.2.3+01", true, Ok("1.2.3+01"), 1),
        ("1.2.003+01", true, Ok("1.2.3+01"), 1),
        ("1.0x", true, Err("Invalid character(s) found in minor number \"0x\""), 1),
        ("0x1", true, Err("Invalid character(s) found in major number \"0x1\""), 1),
        ("1.2.3", true, Ok("1.2.3"), 1),
        ("é.1.1", true, Err("Invalid character(s) found in major number \"0é\""), 1),
        ("0é.1.1", true, Err("Invalid character(s) found in major number \"0é\""), 1),
        ("1.2.3-\u{a0}", false, Err("Invalid character(s) found in prerelease \"\\u00a0\""), 1),
        ("1.2.3-\u{ad}", false, Err("Invalid character(s) found in prerelease \"\\u00ad\""), 1),
        ("1.2.3-\u{2028}", false, Err("Invalid character(s) found in prerelease \"\\u2028\""), 1),
        ("1.2.3-\u{378}", false, Err("Invalid character(s) found in prerelease \"\\u0378\""), 1),
        ("1.2.3-\u{feff}", false, Err("Invalid character(s) found in prerelease \"\\ufeff\""), 1),
        ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false, Err("No Major.Minor.Patch elements found"), 3),
        ("éééééééééé", false, Err("No Major.Minor.Patch elements found"), 1),
    ];

    #[test]
    fn parses_and_normalizes_as_the_oracle() {
        for &(input, normalize, expected, cost) in PARSES {
            let got = parse(input, normalize).map(|v| v.to_string());
            assert_eq!(got.as_deref().map_err(String::as_str), expected, "semver({input:?}, {normalize})");
            assert_eq!(is_semver(input, normalize), expected.is_ok(), "isSemver({input:?}, {normalize})");
            assert_eq!(parse_cost(input), cost, "cost of semver({input:?}, {normalize})");
        }
    }

    /// (left, right, compareTo); from the oracle, as `left.compareTo(right)`.
    const COMPARISONS: &[(&str, &str, i64)] = &[
        ("1.2.3", "1.2.3", 0),
        ("1.2.3", "2.0.0", -1),
        ("1.2.3", "0.1.2", 1),
        ("1.2.3", "1.2.3-rc", 1),
        ("1.2.3-rc.1", "1.2.3-rc.2", -1),
        ("1.2.3-rc.10", "1.2.3-rc.2", 1),
        ("1.2.3-rc.1", "1.2.3-rc", 1),
        ("1.2.3-1", "1.2.3-a", -1),
        ("1.2.3-B", "1.2.3-a", -1),
        ("1.2.3+a", "1.2.3+b", 0),
        ("1.2.3+a", "1.2.3", 0),
        ("1.2.3-alpha.beta", "1.2.3-alpha.1", 1),
        ("1.10.0", "1.9.0", 1),
        ("1.2.3", "1.2.4", -1),
        ("1.2.3-a-b", "1.2.3-a", 1),
        ("18446744073709551615.0.0", "9223372036854775808.0.0", 1),
    ];

    #[test]
    fn compares_as_the_oracle() {
        for &(left, right, expected) in COMPARISONS {
            let (Ok(a), Ok(b)) = (parse(left, false), parse(right, false)) else {
                panic!("{left} or {right} does not parse");
            };
            assert_eq!(a.compare(&b) as i64, expected, "{left} <=> {right}");
            assert_eq!(b.compare(&a) as i64, -expected, "{right} <=> {left}");
            assert_eq!(a == b, expected == 0, "{left} == {right}");
        }
    }

    /// (version, major, minor, patch): the oracle's `major()`, `minor()`, `patch()`.
    const ACCESSORS: &[(&str, i64, i64, i64)] = &[
        ("1.2.3", 1, 2, 3),
        ("10.20.30", 10, 20, 30),
        ("0.0.0-rc+b", 0, 0, 0),
        ("18446744073709551615.0.0", -1, 0, 0),
        ("9223372036854775808.0.0", i64::MIN, 0, 0),
    ];

    #[test]
    fn accessors_as_the_oracle() {
        for &(version, major, minor, patch) in ACCESSORS {
            let Ok(v) = parse(version, false) else { panic!("{version} does not parse") };
            assert_eq!((v.major(), v.minor(), v.patch()), (major, minor, patch), "{version}");
        }
    }
}
