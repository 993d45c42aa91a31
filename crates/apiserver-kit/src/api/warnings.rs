//! `Warning` headers as the kube-apiserver writes them (k8s.io/apiserver's warning recorder,
//! `endpoints/filters/warning.go`): `299 - "text"`, each text once and in the order given; up
//! to [`TOTAL_CHARS`] characters of text in all. Past that, every warning, those already
//! written included, is cut to [`ITEM_CHARS`] characters, and warnings are written until the
//! total is reached again; the rest are dropped.
//!
//! One limit more than the kube-apiserver's: at most [`MAX_HEADERS`] headers, the last of which
//! says how many warnings were dropped (by either limit). Short warnings fill 4,096 characters
//! with some 190 headers, which Go's clients read but hyper's (kube-rs, reqwest) refuse past 100
//! headers in all. So 60,000 unknown fields give 50 headers, not 60,000.

use http::HeaderValue;
use std::collections::HashSet;

/// Characters of warning text a response carries before warnings are cut and then dropped
/// (the kube-apiserver's `truncateAtTotalRunes`).
pub const TOTAL_CHARS: usize = 4 * 1024;

/// What each warning is cut to once the total is exceeded (the kube-apiserver's
/// `truncateItemRunes`).
pub const ITEM_CHARS: usize = 256;

/// The most `Warning` headers an answer carries, the count of those dropped included.
pub const MAX_HEADERS: usize = 50;

/// A `Warning` header value for `text`, escaped as the kube-apiserver escapes it.
pub fn header(text: &str) -> Option<HeaderValue> {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    HeaderValue::from_str(&format!("299 - \"{escaped}\"")).ok()
}

/// `text` cut to [`ITEM_CHARS`] characters, and its length in characters.
fn cut(text: &str) -> (&str, usize) {
    match text.char_indices().nth(ITEM_CHARS) {
        Some((end, _)) => (&text[..end], ITEM_CHARS),
        None => (text, text.chars().count()),
    }
}

/// The headers of `texts`, deduplicated, capped and cut as the module documentation says.
pub fn headers<S: AsRef<str>>(texts: &[S]) -> Vec<HeaderValue> {
    let (mut seen, mut ordered) = (HashSet::new(), Vec::new());
    let (mut out, mut written, mut truncating) = (Vec::new(), 0, false);
    for text in texts.iter().map(AsRef::as_ref).filter(|t| !t.is_empty()) {
        if !seen.insert(text) || (truncating && written >= TOTAL_CHARS) {
            continue;
        }
        ordered.push(text);
        let (text, length) = if truncating { cut(text) } else { (text, text.chars().count()) };
        let Some(value) = header(text) else { continue };
        if truncating || written + length <= TOTAL_CHARS {
            written += length;
            out.push(value);
            continue;
        }
        // Over the total for the first time: start again with every warning cut.
        (truncating, written) = (true, 0);
        out.clear();
        for (text, length) in ordered.iter().map(|t| cut(t)) {
            if let Some(value) = header(text) {
                written += length;
                out.push(value);
            }
        }
    }
    if out.len() < seen.len() || out.len() > MAX_HEADERS {
        out.truncate(MAX_HEADERS - 1);
        let dropped = seen.len() - out.len();
        out.extend(header(&format!("{dropped} more warnings were dropped")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(values: &[HeaderValue]) -> Vec<String> {
        values.iter().map(|v| v.to_str().unwrap().to_string()).collect()
    }

    #[test]
    fn warnings_are_escaped_and_written_once_in_order() {
        let written = headers(&["b", "a \"quoted\" \\", "b", ""]);
        assert_eq!(texts(&written), [r#"299 - "b""#, r#"299 - "a \"quoted\" \\""#]);
    }

    #[test]
    fn past_the_total_every_warning_is_cut_and_the_rest_dropped() {
        let unknown: Vec<String> = (0..60_000).map(|i| format!("unknown field \"spec.f{i}\"")).collect();
        let written = texts(&headers(&unknown));
        assert_eq!(written.len(), MAX_HEADERS);
        assert_eq!(written[0], r#"299 - "unknown field \"spec.f0\"""#);
        assert_eq!(written[MAX_HEADERS - 2], r#"299 - "unknown field \"spec.f48\"""#);
        assert_eq!(written[MAX_HEADERS - 1], r#"299 - "59951 more warnings were dropped""#);
        // Under the count, the total alone drops warnings, and says so.
        let long: Vec<String> = (0..40).map(|i| format!("{i:03}{}", "x".repeat(297))).collect();
        let written = texts(&headers(&long));
        let kept = (TOTAL_CHARS).div_ceil(ITEM_CHARS);
        assert_eq!(written.len(), kept + 1, "{written:?}");
        assert_eq!(written[kept], format!("299 - \"{} more warnings were dropped\"", 40 - kept));
        let (x, y) = ("x".repeat(3000), "y".repeat(3000));
        let written = headers(&[x.as_str(), x.as_str(), y.as_str(), "short", y.as_str()]);
        let cut = |c: &str| format!("299 - \"{}\"", c.repeat(ITEM_CHARS));
        assert_eq!(texts(&written), [cut("x"), cut("y"), r#"299 - "short""#.to_string()]);
    }

    #[test]
    fn characters_not_bytes_are_counted_and_cut_on_their_boundaries() {
        let wide = "é".repeat(3000);
        let written = headers(&[wide.as_str(), "ü".repeat(2000).as_str()]);
        assert_eq!(written.len(), 2);
        let first = String::from_utf8_lossy(written[0].as_bytes());
        assert_eq!(first.chars().filter(|c| *c == 'é').count(), ITEM_CHARS);
    }
}
