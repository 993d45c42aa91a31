//! Finding values in a JSON document without decoding it: the spans of the few fields a stored
//! object is indexed by (its name, namespace, labels, resourceVersion, selectable fields), so
//! lists, selectors and keys read them from the object's stored encoding.
//!
//! The scanner walks compact JSON as serde_json writes it (no whitespace between tokens, though
//! it skips any): it finds members of objects by key and skips every other value, strings with
//! escapes and nested containers included. It never panics: on input that is not JSON it finds
//! nothing.

use std::borrow::Cow;

/// Where a scalar sits in a document: a string's contents between its quotes (escaped when
/// they hold a backslash escape, so they must be unescaped to be read), or another scalar's
/// literal (`true`, `12`). Eight bytes: the top bit of `len` says whether it is escaped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    start: u32,
    len: u32,
}

const ESCAPED: u32 = 1 << 31;

impl Span {
    /// The empty text.
    pub const EMPTY: Span = Span { start: 0, len: 0 };
    /// The top bit of [`Span::to_raw`]'s length: the contents hold an escape.
    pub const ESCAPED: u32 = ESCAPED;

    /// Its start, and its length with [`Span::ESCAPED`], for a compact copy of an index.
    pub fn to_raw(&self) -> (u32, u32) {
        (self.start, self.len)
    }

    /// The span [`Span::to_raw`] gave.
    pub fn from_raw(start: u32, len: u32) -> Self {
        Self { start, len }
    }

    fn new(start: usize, len: usize, escaped: bool) -> Option<Self> {
        let len = u32::try_from(len).ok().filter(|l| l & ESCAPED == 0)?;
        Some(Self { start: u32::try_from(start).ok()?, len: if escaped { len | ESCAPED } else { len } })
    }

    fn escaped(&self) -> bool {
        self.len & ESCAPED != 0
    }

    /// Where it starts.
    pub fn start(&self) -> usize {
        self.start as usize
    }

    /// Where it ends (exclusive): a string's closing quote, or after another scalar's literal.
    pub fn end(&self) -> usize {
        self.start as usize + (self.len & !ESCAPED) as usize
    }

    /// The same text `by` bytes earlier (for a document cut at its start); `None` if it would
    /// begin before the cut.
    pub fn shifted_back(&self, by: usize) -> Option<Self> {
        let start = self.start.checked_sub(u32::try_from(by).ok()?)?;
        Some(Self { start, len: self.len })
    }

    /// The text of the scalar in `json` (the document it was found in).
    pub fn text<'a>(&self, json: &'a [u8]) -> Cow<'a, str> {
        match self.bytes(json) {
            Cow::Borrowed(raw) => String::from_utf8_lossy(raw),
            Cow::Owned(unescaped) => Cow::Owned(String::from_utf8(unescaped).unwrap_or_default()),
        }
    }

    /// The UTF-8 bytes of [`Span::text`], borrowed from `json` unless they had to be unescaped.
    pub fn bytes<'a>(&self, json: &'a [u8]) -> Cow<'a, [u8]> {
        let start = self.start as usize;
        let end = start + (self.len & !ESCAPED) as usize;
        let Some(raw) = json.get(start..end) else {
            return Cow::Borrowed(b"");
        };
        if self.escaped() {
            // The quotes around the contents are just outside the span.
            let quoted = start.checked_sub(1).and_then(|open| json.get(open..end + 1));
            let unescaped = serde_json::from_slice::<String>(quoted.unwrap_or_default()).unwrap_or_default();
            return Cow::Owned(unescaped.into_bytes());
        }
        Cow::Borrowed(raw)
    }
}

/// The byte that opens an object.
const OBJECT: u8 = b'{';

/// The index after the whitespace at `i`.
fn skip_ws(json: &[u8], mut i: usize) -> usize {
    while matches!(json.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The string whose opening quote is at `i`: its span and the index after its closing quote.
fn string_at(json: &[u8], i: usize) -> Option<(Span, usize)> {
    if json.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        match json.get(j)? {
            b'"' => break,
            b'\\' => {
                escaped = true;
                j += 2;
            }
            _ => j += 1,
        }
    }
    Some((Span::new(i + 1, j - i - 1, escaped)?, j + 1))
}

/// The index after the value that starts at `i`.
fn skip_value(json: &[u8], i: usize) -> Option<usize> {
    match json.get(i)? {
        b'"' => string_at(json, i).map(|(_, end)| end),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match json.get(j)? {
                    b'"' => {
                        j = string_at(json, j)?.1;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let len = json[i..].iter().position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t'));
            Some(i + len.unwrap_or(json.len() - i))
        }
    }
}

/// The index after the value that starts at `at`.
pub fn value_end(json: &[u8], at: usize) -> Option<usize> {
    skip_value(json, at)
}

/// The members of the object whose `{` is at `at`: each key's span and the index where its value
/// starts. Stops (without an error) where the input is not an object.
pub fn members<'a>(json: &'a [u8], at: usize) -> impl Iterator<Item = (Span, usize)> + 'a {
    let mut next = (json.get(at) == Some(&OBJECT)).then_some(at + 1);
    std::iter::from_fn(move || {
        let i = skip_ws(json, next?);
        let (key, after_key) = string_at(json, i)?;
        let value = skip_ws(json, after_key);
        if json.get(value) != Some(&b':') {
            next = None;
            return None;
        }
        let value = skip_ws(json, value + 1);
        let end = skip_ws(json, skip_value(json, value)?);
        next = (json.get(end) == Some(&b',')).then_some(end + 1);
        Some((key, value))
    })
}

/// Where the value of the member `key` of the object whose `{` is at `at` starts.
fn find_in(json: &[u8], at: usize, key: &str) -> Option<usize> {
    members(json, at).find(|(k, _)| k.text(json) == key).map(|(_, value)| value)
}

/// Where the value at `path` (object keys from the top) starts.
pub fn find(json: &[u8], path: &[&str]) -> Option<usize> {
    path.iter().try_fold(skip_ws(json, 0), |at, key| find_in(json, at, key))
}

/// The scalar whose value starts at `at`: a string's contents, or another scalar's literal;
/// `None` for `null`, objects and arrays.
pub fn scalar(json: &[u8], at: usize) -> Option<Span> {
    match json.get(at)? {
        b'"' => string_at(json, at).map(|(span, _)| span),
        b'[' | b'n' => None,
        &OBJECT => None,
        _ => {
            let end = skip_value(json, at)?;
            Span::new(at, end - at, false)
        }
    }
}

/// The string members of the object whose `{` is at `at`, as (key, value) spans; members whose
/// value is not a scalar are left out.
pub fn string_members(json: &[u8], at: usize) -> Vec<(Span, Span)> {
    members(json, at).filter_map(|(key, value)| Some((key, scalar(json, value)?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text_at(json: &[u8], path: &[&str]) -> Option<String> {
        find(json, path).and_then(|at| scalar(json, at)).map(|s| s.text(json).into_owned())
    }

    #[test]
    fn finds_scalars_by_path_skipping_every_other_value() {
        let doc = json!({
            "a": {"name": "not this", "list": [{"x": "}{"}, "][", 1.5e3, null], "q": "say \"hi\"\\"},
            "metadata": {"labels": {"name": "label", "b": "ü"}, "name": "dolly", "n": 12, "t": true},
        });
        let bytes = serde_json::to_vec(&doc).unwrap();
        assert_eq!(text_at(&bytes, &["metadata", "name"]).as_deref(), Some("dolly"));
        assert_eq!(text_at(&bytes, &["metadata", "n"]).as_deref(), Some("12"));
        assert_eq!(text_at(&bytes, &["metadata", "t"]).as_deref(), Some("true"));
        assert_eq!(text_at(&bytes, &["a", "q"]).as_deref(), Some("say \"hi\"\\"));
        assert_eq!(text_at(&bytes, &["a", "list"]), None, "an array is not a scalar");
        assert_eq!(text_at(&bytes, &["metadata", "missing"]), None);
        let labels = find(&bytes, &["metadata", "labels"]).unwrap();
        let pairs: Vec<(String, String)> = string_members(&bytes, labels)
            .iter()
            .map(|(k, v)| (k.text(&bytes).into_owned(), v.text(&bytes).into_owned()))
            .collect();
        assert_eq!(pairs, [("b".to_string(), "ü".to_string()), ("name".to_string(), "label".to_string())]);
    }

    #[test]
    fn reads_json_with_whitespace_and_finds_nothing_in_what_is_not_json() {
        let pretty = serde_json::to_vec_pretty(&json!({"m": {"k": "v", "o": {}}})).unwrap();
        assert_eq!(text_at(&pretty, &["m", "k"]).as_deref(), Some("v"));
        for broken in [&b""[..], b"{", b"{\"m\"", b"{\"m\":{\"k\":\"v", b"[1,2]", b"\"m\"", b"{\"m\":{\"k\"}}"] {
            assert_eq!(text_at(broken, &["m", "k"]), None, "{:?}", String::from_utf8_lossy(broken));
        }
    }
}
