//! cel-go's strings extension at the version Kubernetes enables (2): `charAt`, `indexOf`,
//! `lastIndexOf`, `lowerAscii`, `upperAscii`, `replace`, `split`, `substring`, `trim`, `join`,
//! `strings.quote`, with Go's semantics (indexes count code points, `strings.Split`,
//! `strings.Replace`, `strings.TrimSpace`) and its error messages; and Kubernetes' regex
//! library (`find`, `findAll`).

use super::error::EvalError;
use super::value::Value;
use std::sync::Arc;

type Eval = Result<Value, EvalError>;

/// Whether `function` is a member function of strings (or lists, for `join`) here, with `args`
/// arguments besides its target.
pub fn is_member(function: &str, args: usize) -> bool {
    matches!(
        (function, args),
        ("lowerAscii" | "upperAscii" | "trim" | "join", 0)
            | ("charAt" | "indexOf" | "lastIndexOf" | "split" | "substring" | "join" | "find" | "findAll", 1)
            | ("indexOf" | "lastIndexOf" | "split" | "substring" | "replace" | "findAll", 2)
            | ("replace", 3)
    )
}

/// Calls a member function on a string (or `join` on a list).
pub fn call(function: &str, target: &Value, args: &[&Value]) -> Option<Eval> {
    use Value::{Int, List, String as Str};
    let result = match (function, target, args) {
        ("join", List(items), []) => join(items, ""),
        ("join", List(items), [Str(separator)]) => join(items, separator),
        (_, Str(s), []) => unary(function, s)?,
        ("charAt", Str(s), [Int(i)]) => char_at(s, *i),
        ("indexOf", Str(s), [Str(sub)]) => index_of(s, sub, 0),
        ("indexOf", Str(s), [Str(sub), Int(offset)]) => index_of(s, sub, *offset),
        ("lastIndexOf", Str(s), [Str(sub)]) => last_index_of(s, sub, None),
        ("lastIndexOf", Str(s), [Str(sub), Int(offset)]) => last_index_of(s, sub, Some(*offset)),
        ("substring", Str(s), [Int(start)]) => substring(s, *start, None),
        ("substring", Str(s), [Int(start), Int(end)]) => substring(s, *start, Some(*end)),
        ("replace", Str(s), [Str(old), Str(new)]) => Ok(text(replace(s, old, new, -1))),
        ("replace", Str(s), [Str(old), Str(new), Int(n)]) => Ok(text(replace(s, old, new, *n))),
        ("split", Str(s), [Str(separator)]) => Ok(strings(split(s, separator, -1))),
        ("split", Str(s), [Str(separator), Int(n)]) => Ok(strings(split(s, separator, *n))),
        ("find", Str(s), [Str(pattern)]) => {
            find_all(s, pattern, 1).map(|found| text(found.first().copied().unwrap_or("")))
        }
        ("findAll", Str(s), [Str(pattern)]) => {
            find_all(s, pattern, -1).map(|found| strings(found.into_iter().map(str::to_string).collect()))
        }
        ("findAll", Str(s), [Str(pattern), Int(n)]) => {
            find_all(s, pattern, *n).map(|found| strings(found.into_iter().map(str::to_string).collect()))
        }
        _ => return None,
    };
    Some(result)
}

fn unary(function: &str, s: &str) -> Option<Eval> {
    let result = match function {
        "lowerAscii" => s.chars().map(|c| c.to_ascii_lowercase()).collect(),
        "upperAscii" => s.chars().map(|c| c.to_ascii_uppercase()).collect(),
        "trim" => s.trim().to_string(),
        _ => return None,
    };
    Some(Ok(text(result)))
}

fn text(s: impl AsRef<str>) -> Value {
    Value::String(Arc::from(s.as_ref()))
}

fn strings(items: Vec<String>) -> Value {
    Value::list(items.into_iter().map(text).collect())
}

fn out_of_range(index: i64) -> EvalError {
    EvalError::new(format!("index out of range: {index}"))
}

fn char_at(s: &str, index: i64) -> Eval {
    let count = s.chars().count() as i64;
    if index < 0 || index > count {
        return Err(out_of_range(index));
    }
    Ok(text(s.chars().nth(index as usize).map(String::from).unwrap_or_default()))
}

fn index_of(s: &str, sub: &str, offset: i64) -> Eval {
    if offset < 0 {
        return Err(out_of_range(offset));
    }
    let runes: Vec<char> = s.chars().collect();
    let needle: Vec<char> = sub.chars().collect();
    let offset = offset as usize;
    if needle.is_empty() {
        return Ok(Value::Int(offset.min(runes.len()) as i64));
    }
    if offset >= runes.len() || needle.len() > runes.len() {
        return Ok(Value::Int(-1));
    }
    let found = (offset..=runes.len() - needle.len()).find(|&i| runes[i..i + needle.len()] == needle[..]);
    Ok(Value::Int(found.map_or(-1, |i| i as i64)))
}

fn last_index_of(s: &str, sub: &str, offset: Option<i64>) -> Eval {
    let runes: Vec<char> = s.chars().collect();
    let needle: Vec<char> = sub.chars().collect();
    let offset = match offset {
        None if needle.is_empty() => return Ok(Value::Int(runes.len() as i64)),
        None if s.len() < sub.len() => return Ok(Value::Int(-1)),
        None => runes.len() as i64 - 1,
        Some(offset) if offset < 0 => return Err(out_of_range(offset)),
        Some(offset) => offset,
    };
    let offset = offset as usize;
    if needle.is_empty() {
        return Ok(Value::Int(offset.min(runes.len()) as i64));
    }
    if offset >= runes.len() || needle.len() > runes.len() {
        return Ok(Value::Int(-1));
    }
    let start = offset.min(runes.len() - needle.len());
    let found = (0..=start).rev().find(|&i| runes[i..i + needle.len()] == needle[..]);
    Ok(Value::Int(found.map_or(-1, |i| i as i64)))
}

fn substring(s: &str, start: i64, end: Option<i64>) -> Eval {
    let runes: Vec<char> = s.chars().collect();
    let length = runes.len() as i64;
    let end_value = end.unwrap_or(length);
    if end.is_some() && start > end_value {
        return Err(EvalError::new(format!("invalid substring range. start: {start}, end: {end_value}")));
    }
    if start < 0 || start > length {
        return Err(out_of_range(start));
    }
    if end_value < 0 || end_value > length {
        return Err(out_of_range(end_value));
    }
    Ok(text(runes[start as usize..end_value as usize].iter().collect::<String>()))
}

/// Go's `strings.Replace`: `n < 0` replaces all; an empty `old` matches before each code point
/// and at the end.
fn replace(s: &str, old: &str, new: &str, n: i64) -> String {
    if n < 0 {
        if old.is_empty() {
            return replace(s, old, new, s.chars().count() as i64 + 1);
        }
        return s.replace(old, new);
    }
    if old.is_empty() {
        let mut out = String::new();
        let mut left = n;
        for c in s.chars() {
            if left > 0 {
                out.push_str(new);
                left -= 1;
            }
            out.push(c);
        }
        if left > 0 {
            out.push_str(new);
        }
        return out;
    }
    s.replacen(old, new, n as usize)
}

/// Go's `strings.SplitN`: `n == 0` is no strings, `n < 0` all of them; an empty separator
/// splits after each code point.
fn split(s: &str, separator: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    let limit = if n < 0 { usize::MAX } else { n as usize };
    if separator.is_empty() {
        let chars: Vec<char> = s.chars().collect();
        let mut parts: Vec<String> = Vec::new();
        for (i, c) in chars.iter().enumerate() {
            if parts.len() + 1 == limit {
                parts.push(chars[i..].iter().collect());
                return parts;
            }
            parts.push(c.to_string());
        }
        return parts;
    }
    s.splitn(limit, separator).map(str::to_string).collect()
}

fn join(items: &[Value], separator: &str) -> Eval {
    let mut parts = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::String(s) => parts.push(&**s),
            other => return Err(EvalError::new(format!("join: invalid input: {}", other.display()))),
        }
    }
    Ok(text(parts.join(separator)))
}

/// `strings.quote`: double quotes, CEL's escapes.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `regexp.FindAllString(s, n)` (`n < 0`: all).
fn find_all<'s>(s: &'s str, pattern: &str, n: i64) -> Result<Vec<&'s str>, EvalError> {
    let re = regex::Regex::new(pattern).map_err(|e| EvalError::new(format!("error parsing regexp: {e}")))?;
    let limit = if n < 0 { usize::MAX } else { n as usize };
    Ok(re.find_iter(s).take(limit).map(|m| m.as_str()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_split_and_replace() {
        assert_eq!(split("a,b,c", ",", 2), vec!["a", "b,c"]);
        assert_eq!(split("abc", "", -1), vec!["a", "b", "c"]);
        assert_eq!(split("abc", "", 2), vec!["a", "bc"]);
        assert!(split("abc", ",", 0).is_empty());
        assert_eq!(replace("aaa", "a", "b", 2), "bba");
        assert_eq!(replace("ab", "", "-", -1), "-a-b-");
        assert_eq!(quote("a\"b\n"), "\"a\\\"b\\n\"");
    }
}
