//! Request bodies nested deeper than serde_json recurses, read as the kube-apiserver reads them.
//!
//! Go's `encoding/json` (which decodes every request body of the kube-apiserver) accepts up to
//! [`GO_MAX_DEPTH`] levels of arrays and objects; serde_json stops at 128 to keep its recursion,
//! and that of everything that later walks or drops the value, within a thread's stack. No field
//! of an object this server stores nests anywhere near that deep, so whatever lies deeper than
//! [`KEPT_DEPTH`] can only be inside a field the server drops (an unknown field, pruned) or below
//! a field of the wrong type (refused, its message naming only the type of that field's value).
//! [`shallow`] therefore checks the whole body's syntax and depth without recursing, and hands on
//! a copy in which every array or object that starts deeper than [`KEPT_DEPTH`] is empty: the
//! copy parses with serde_json's limit and is judged exactly as the whole body would be.
//!
//! One field is kept whole whatever it holds: a managed fields entry's `fieldsV1`, under
//! `metadata`. Rather than store it cut, a body with a container deeper than [`KEPT_DEPTH`]
//! under its top-level `metadata` is refused (no typed field of `metadata` nests that deep, so
//! nothing a decoder would accept is refused).

use std::borrow::Cow;

/// The deepest nesting Go's `encoding/json` reads (its `maxNestingDepth`).
pub const GO_MAX_DEPTH: usize = 10_000;

/// Bodies nested at most this deep are parsed as they are.
pub const PARSED_AS_IS: usize = 127;

/// How deep the copy of a deeper body keeps its containers (inner ones are left empty).
pub const KEPT_DEPTH: usize = 64;

/// Why a deep body cannot be read: the message of Go's scanner, or the first syntax error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DepthError(pub String);

/// `bytes` as they are when they nest at most [`PARSED_AS_IS`] levels (serde_json then checks
/// their syntax); otherwise checked whole and copied with the containers deeper than
/// [`KEPT_DEPTH`] emptied, or refused when they are not JSON or nest deeper than Go reads.
pub fn shallow(bytes: &[u8]) -> Result<Cow<'_, [u8]>, DepthError> {
    if max_depth(bytes) <= PARSED_AS_IS {
        return Ok(Cow::Borrowed(bytes));
    }
    Scanner {
        bytes,
        at: 0,
        out: Vec::with_capacity(bytes.len().min(64 * 1024)),
        open: Vec::new(),
        first: false,
        in_metadata: false,
    }
    .run()
    .map(Cow::Owned)
}

/// The deepest nesting of arrays and objects outside strings, whether or not `bytes` are JSON.
pub fn max_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// A validating, non-recursive pass over a JSON text that writes the shallow copy.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
    out: Vec<u8>,
    /// The closing byte of each open container, outermost first.
    open: Vec<u8>,
    /// Whether the innermost container was just opened (its first member comes next, or its end).
    first: bool,
    /// Whether what is read now lies under the top-level object's `metadata`.
    in_metadata: bool,
}

impl Scanner<'_> {
    fn run(mut self) -> Result<Vec<u8>, DepthError> {
        self.value()?;
        while let Some(&close) = self.open.last() {
            if std::mem::take(&mut self.first) {
                // Just opened: its first member, or its end.
                self.skip_ws();
                if self.bytes.get(self.at) == Some(&close) {
                    self.at += 1;
                    self.close();
                    continue;
                }
            } else {
                match self.next_byte()? {
                    b',' => self.emit(b","),
                    b if b == close => {
                        self.close();
                        continue;
                    }
                    b => return Err(self.unexpected(b, "after a value")),
                }
            }
            if close == b'}' {
                self.key()?;
            }
            self.value()?;
        }
        self.skip_ws();
        match self.bytes.get(self.at) {
            None => Ok(self.out),
            Some(&b) => Err(self.unexpected(b, "after top-level value")),
        }
    }

    /// Whether what is read now lies inside an emptied container (and is not copied).
    fn hidden(&self) -> bool {
        self.open.len() > KEPT_DEPTH
    }

    fn emit(&mut self, bytes: &[u8]) {
        if !self.hidden() {
            self.out.extend_from_slice(bytes);
        }
    }

    /// Ends the innermost container (copied when the container itself was).
    fn close(&mut self) {
        if let Some(close) = self.open.pop() {
            self.emit(&[close]);
        }
    }

    fn skip_ws(&mut self) {
        while self.bytes.get(self.at).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn next_byte(&mut self) -> Result<u8, DepthError> {
        self.skip_ws();
        let b = *self.bytes.get(self.at).ok_or_else(|| DepthError("unexpected end of JSON input".into()))?;
        self.at += 1;
        Ok(b)
    }

    fn unexpected(&self, b: u8, context: &str) -> DepthError {
        DepthError(format!("invalid character {:?} {context} at byte {}", b as char, self.at))
    }

    /// An object's key and its colon.
    fn key(&mut self) -> Result<(), DepthError> {
        let start = match self.next_byte()? {
            b'"' => {
                let start = self.at - 1;
                self.string()?;
                start
            }
            b => return Err(self.unexpected(b, "looking for beginning of object key string")),
        };
        if self.open.len() == 1 {
            // A key of the top-level object, escaped or not.
            let key = &self.bytes[start..self.at];
            self.in_metadata = key == b"\"metadata\""
                || (key.contains(&b'\\') && serde_json::from_slice::<String>(key).is_ok_and(|k| k == "metadata"));
        }
        match self.next_byte()? {
            b':' => {
                self.emit(b":");
                Ok(())
            }
            b => Err(self.unexpected(b, "after object key")),
        }
    }

    /// One value: a scalar whole, or the opening of a container (whose members [`Self::run`]'s
    /// loop reads, so nesting never recurses).
    fn value(&mut self) -> Result<(), DepthError> {
        match self.next_byte()? {
            open @ (b'[' | b'{') => {
                if self.open.len() == GO_MAX_DEPTH {
                    // Go's scanner's words.
                    return Err(DepthError(format!("invalid character '{}' exceeded max depth", open as char)));
                }
                if self.open.len() == KEPT_DEPTH && self.in_metadata {
                    return Err(DepthError(format!(
                        "metadata nests deeper than {KEPT_DEPTH} levels (at byte {}) in a body deeper than {PARSED_AS_IS}: more than this server keeps of a managed fields entry",
                        self.at
                    )));
                }
                self.emit(&[open]);
                self.open.push(if open == b'[' { b']' } else { b'}' });
                self.first = true;
                Ok(())
            }
            b'"' => self.string(),
            b't' => self.literal(b"rue"),
            b'f' => self.literal(b"alse"),
            b'n' => self.literal(b"ull"),
            b'-' | b'0'..=b'9' => {
                self.at -= 1;
                self.number()
            }
            b => Err(self.unexpected(b, "looking for beginning of value")),
        }
    }

    fn literal(&mut self, rest: &[u8]) -> Result<(), DepthError> {
        let start = self.at - 1;
        if self.bytes.get(self.at..self.at + rest.len()) != Some(rest) {
            return Err(DepthError(format!("invalid literal at byte {start}")));
        }
        self.at += rest.len();
        let text = &self.bytes[start..self.at];
        self.emit(text);
        Ok(())
    }

    fn string(&mut self) -> Result<(), DepthError> {
        let start = self.at - 1;
        loop {
            let b = *self.bytes.get(self.at).ok_or_else(|| DepthError("unexpected end of JSON input".into()))?;
            self.at += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let escape = self.bytes.get(self.at).copied();
                    self.at += 1;
                    match escape {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {}
                        Some(b'u') => {
                            let digits = self.bytes.get(self.at..self.at + 4).unwrap_or_default();
                            if digits.len() != 4 || !digits.iter().all(u8::is_ascii_hexdigit) {
                                return Err(DepthError(format!("invalid \\u escape in string at byte {}", self.at)));
                            }
                            self.at += 4;
                        }
                        _ => return Err(DepthError(format!("invalid escape in string at byte {}", self.at))),
                    }
                }
                0..0x20 => return Err(DepthError(format!("invalid control character in string at byte {}", self.at))),
                _ => {}
            }
        }
        let text = &self.bytes[start..self.at];
        self.emit(text);
        Ok(())
    }

    fn number(&mut self) -> Result<(), DepthError> {
        let start = self.at;
        let digits = |s: &mut Self| {
            let from = s.at;
            while s.bytes.get(s.at).is_some_and(u8::is_ascii_digit) {
                s.at += 1;
            }
            s.at - from
        };
        if self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let invalid = |at: usize| DepthError(format!("invalid number at byte {at}"));
        match self.bytes.get(self.at) {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return Err(invalid(start)),
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            if digits(self) == 0 {
                return Err(invalid(start));
            }
        }
        if matches!(self.bytes.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.bytes.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits(self) == 0 {
                return Err(invalid(start));
            }
        }
        let text = &self.bytes[start..self.at];
        // Go (and serde_json) refuse a number no float64 holds, also where the copy leaves it out.
        let finite = std::str::from_utf8(text).ok().and_then(|t| t.parse::<f64>().ok()).is_some_and(f64::is_finite);
        if !finite {
            return Err(DepthError(format!("number out of range at byte {start}")));
        }
        self.emit(text);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn nested(levels: usize, inner: &str) -> String {
        format!(
            r#"{{"spec": {{"weight": 1, "x": {}{inner}{}}}, "after": true}}"#,
            "[".repeat(levels),
            "]".repeat(levels)
        )
    }

    #[test]
    fn shallow_bodies_are_handed_on_as_they_are() {
        let body = nested(100, "1");
        assert!(matches!(shallow(body.as_bytes()), Ok(Cow::Borrowed(_))));
        // Not JSON, but shallow: serde_json is left to say why.
        assert!(matches!(shallow(b"nul"), Ok(Cow::Borrowed(_))));
    }

    #[test]
    fn deep_bodies_keep_their_shallow_part_and_empty_what_lies_deeper() {
        let body = nested(5000, r#"{"a": "]]]\"[[", "b": [1, 2.5e-3, -0, null, false]}"#);
        let copy = shallow(body.as_bytes()).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&copy).unwrap();
        assert_eq!(value["after"], true);
        assert_eq!(value["spec"]["weight"], 1);
        let mut inner = &value["spec"]["x"];
        let mut depth = 2;
        while let Some(first) = inner.get(0) {
            inner = first;
            depth += 1;
        }
        assert_eq!(depth, KEPT_DEPTH);
        assert_eq!(*inner, serde_json::json!([]));
    }

    #[test]
    fn a_deep_body_is_refused_rather_than_cut_under_metadata() {
        let arrays = |levels: usize| format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
        let fields = arrays(KEPT_DEPTH + 10);
        let entry =
            |key: &str| format!(r#"{{"{key}":{{"managedFields":[{{"fieldsV1":{fields}}}]}},"x":{}}}"#, arrays(200));
        let refused = shallow(entry("metadata").as_bytes()).unwrap_err();
        assert!(refused.0.contains("metadata nests deeper than 64 levels"), "{refused}");
        assert!(shallow(entry("metad\\u0061ta").as_bytes()).is_err(), "an escaped key is the same key");
        assert!(shallow(entry("spec").as_bytes()).is_ok(), "what is cut elsewhere is pruned or refused later");
        let shallow_metadata = format!(r#"{{"metadata":{{"name":"a"}},"spec":{}}}"#, arrays(200));
        assert!(shallow(shallow_metadata.as_bytes()).is_ok());
    }

    #[test]
    fn nesting_beyond_go_s_limit_is_refused() {
        assert!(shallow(nested(GO_MAX_DEPTH - 2, "1").as_bytes()).is_ok());
        let err = shallow(nested(GO_MAX_DEPTH - 1, "1").as_bytes()).unwrap_err();
        assert_eq!(err.0, "invalid character '[' exceeded max depth");
    }

    #[test]
    fn syntax_errors_deep_inside_are_found() {
        for inner in ["1,,2", "[1", "tru", "\"\u{1}\"", "01", "1.", "-", "\"\\x\"", "{\"a\" 1}", "{1: 2}", "2E2254"] {
            let body = nested(300, inner);
            assert!(shallow(body.as_bytes()).is_err(), "{inner} was accepted");
        }
        assert!(shallow(format!("{} x", nested(300, "1")).as_bytes()).is_err());
    }

    /// Any JSON value, possibly nested.
    fn json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(serde_json::Value::from),
            ".*".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(8, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
                prop::collection::btree_map(".*", inner, 0..6)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Wrapped deep enough to be scanned, a value comes out unchanged (the wrapping emptied
        /// only where it is deeper than the copy keeps).
        #[test]
        fn a_deep_body_is_copied_exactly_down_to_the_kept_depth(value in json(), pretty in any::<bool>()) {
            let text = if pretty { serde_json::to_string_pretty(&value) } else { serde_json::to_string(&value) }.unwrap();
            let body = format!(r#"{{"v": {text}, "deep": {}{}}}"#, "[".repeat(200), "]".repeat(200));
            let copy = shallow(body.as_bytes()).unwrap();
            let parsed: serde_json::Value = serde_json::from_slice(&copy).unwrap();
            prop_assert_eq!(&parsed["v"], &value);
        }

        /// On any text, the scan agrees with serde_json on whether it is JSON. (Wrapped in
        /// more brackets than the text has characters, its validity no longer depends on how
        /// many: the scan sees it 130 deep, serde_json 60 deep, within its limit.)
        #[test]
        fn the_scan_accepts_what_serde_json_accepts(text in "[\\[\\]{}\",:0-9a-tv-z.eE+\\- \\\\]{0,40}") {
            let wrapped = |levels: usize| format!("{}{text}{}", "[".repeat(levels), "]".repeat(levels));
            let ours = shallow(wrapped(130).as_bytes()).is_ok();
            let theirs = serde_json::from_str::<serde::de::IgnoredAny>(&wrapped(60)).is_ok();
            prop_assert_eq!(ours, theirs, "{}", text);
        }
    }
}
