//! Kubernetes' CEL URL library (`url(s)`, `isURL(s)` and the `kubernetes.URL` accessors): Go's
//! `net/url` parsing (`ParseRequestURI` to validate, `Parse` for the value), escaping, query
//! decoding and `URL.String`, with Go's error messages, as k8s.io/apiserver/pkg/cel/library's
//! urls.go uses them.

use std::fmt;

use super::network::{go_parse_addr, go_quote, quote_bytes};

/// A URL value, the fields of Go's `url.URL`; decoded parts are bytes, as Go's strings are.
#[derive(Clone, Debug, Default)]
pub struct Url {
    scheme: String,
    opaque: String,
    user: Option<Userinfo>,
    host: Vec<u8>,
    path: Vec<u8>,
    raw_path: String,
    raw_query: String,
    fragment: Vec<u8>,
    raw_fragment: String,
    force_query: bool,
    omit_host: bool,
}

/// Go's `url.Userinfo`: a decoded user name and maybe a password.
#[derive(Clone, Debug)]
struct Userinfo {
    username: Vec<u8>,
    password: Option<Vec<u8>>,
}

/// `url(s)`: `s` checked by Go's `url.ParseRequestURI` (an absolute URL or an absolute path,
/// the fragment not split off) and then parsed by `url.Parse`. The error is the message of the
/// CEL error.
pub fn parse(s: &str) -> Result<Url, String> {
    let error =
        |url: &str, e: String| format!("URL parse error during conversion from string: parse {}: {e}", go_quote(url));
    go_parse(s, true).map_err(|e| error(s, e))?;
    let (without_fragment, fragment) = s.split_once('#').map_or((s, ""), |(u, f)| (u, f));
    let mut url = go_parse(without_fragment, false).map_err(|e| error(without_fragment, e))?;
    if !fragment.is_empty() {
        url.set_fragment(fragment).map_err(|e| error(s, e))?;
    }
    Ok(url)
}

/// Go's `url.ParseRequestURI(s)` with its error's text after `parse "s": ` (the `uri` format's
/// validation).
pub(crate) fn parse_request_uri(s: &str) -> Result<(), String> {
    go_parse(s, true).map(|_| ())
}

/// `isURL(s)`: whether Go's `url.ParseRequestURI` accepts `s` (a fragment is not split off, so
/// it must be a valid path or query part).
pub fn is_url(s: &str) -> bool {
    go_parse(s, true).is_ok()
}

impl Url {
    /// `getScheme()`: the scheme, lower-cased; empty for a path.
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// `getHost()`: the decoded host with its port (`[::1]:80`).
    pub fn host(&self) -> String {
        go_string(&self.host)
    }

    /// `getHostname()`: the host without a valid port and without an IPv6 literal's brackets.
    pub fn hostname(&self) -> String {
        go_string(split_host_port(&self.host).0)
    }

    /// `getPort()`: the port's digits, empty when there is none.
    pub fn port(&self) -> String {
        go_string(split_host_port(&self.host).1)
    }

    /// `getEscapedPath()`: Go's `URL.EscapedPath`: the path as written when that is a valid
    /// escaping of it, else escaped again.
    pub fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty()
            && valid_encoded(&self.raw_path, Mode::Path)
            && unescape(&self.raw_path, Mode::Path).is_ok_and(|p| p == self.path)
        {
            return self.raw_path.clone();
        }
        if self.path == b"*" {
            return "*".to_string();
        }
        escape(&self.path, Mode::Path)
    }

    /// `getQuery()`: Go's `URL.Query`: each key with its values, keys in their first
    /// appearance's order, values in order; malformed pairs (bad escapes, `;`) left out.
    pub fn query(&self) -> Vec<(String, Vec<String>)> {
        let mut entries: Vec<(String, Vec<String>)> = Vec::new();
        if self.raw_query.matches('&').count() + 1 > MAX_QUERY_PARAMS {
            return entries;
        }
        for pair in self.raw_query.split('&') {
            if pair.contains(';') || pair.is_empty() {
                continue;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let (Ok(key), Ok(value)) = (unescape(key, Mode::QueryComponent), unescape(value, Mode::QueryComponent))
            else {
                continue;
            };
            let (key, value) = (go_string(&key), go_string(&value));
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some((_, values)) => values.push(value),
                None => entries.push((key, vec![value])),
            }
        }
        entries
    }

    /// Go's `URL.EscapedFragment`.
    fn escaped_fragment(&self) -> String {
        if !self.raw_fragment.is_empty()
            && valid_encoded(&self.raw_fragment, Mode::Fragment)
            && unescape(&self.raw_fragment, Mode::Fragment).is_ok_and(|f| f == self.fragment)
        {
            return self.raw_fragment.clone();
        }
        escape(&self.fragment, Mode::Fragment)
    }

    /// Go's `setPath`: the decoded path, and the path as written when it is not the default
    /// escaping of it.
    fn set_path(&mut self, p: &str) -> Result<(), String> {
        self.path = unescape(p, Mode::Path)?;
        self.raw_path = if escape(&self.path, Mode::Path) == p { String::new() } else { p.to_string() };
        Ok(())
    }

    /// Go's `setFragment`.
    fn set_fragment(&mut self, f: &str) -> Result<(), String> {
        self.fragment = unescape(f, Mode::Fragment)?;
        self.raw_fragment = if escape(&self.fragment, Mode::Fragment) == f { String::new() } else { f.to_string() };
        Ok(())
    }

    /// The `//userinfo@host` part of Go's `URL.String` (nothing for an omitted host).
    fn write_authority(&self, out: &mut String) {
        if self.scheme.is_empty() && self.host.is_empty() && self.user.is_none() {
            return;
        }
        if self.omit_host && self.host.is_empty() && self.user.is_none() {
            return;
        }
        if !self.host.is_empty() || !self.path.is_empty() || self.user.is_some() {
            out.push_str("//");
        }
        if let Some(user) = &self.user {
            out.push_str(&escape(&user.username, Mode::UserPassword));
            if let Some(password) = &user.password {
                out.push(':');
                out.push_str(&escape(password, Mode::UserPassword));
            }
            out.push('@');
        }
        out.push_str(&escape(&self.host, Mode::Host));
    }
}

/// The value's printed form, Go's `URL.String`: `scheme:opaque?query#fragment` or
/// `scheme://userinfo@host/path?query#fragment`, re-escaped.
impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        if !self.scheme.is_empty() {
            out.push_str(&self.scheme);
            out.push(':');
        }
        if !self.opaque.is_empty() {
            out.push_str(&self.opaque);
        } else {
            self.write_authority(&mut out);
            let path = self.escaped_path();
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                out.push('/');
            }
            if out.is_empty() && path.split('/').next().is_some_and(|segment| segment.contains(':')) {
                out.push_str("./");
            }
            out.push_str(&path);
        }
        if self.force_query || !self.raw_query.is_empty() {
            out.push('?');
            out.push_str(&self.raw_query);
        }
        if !self.fragment.is_empty() {
            out.push('#');
            out.push_str(&self.escaped_fragment());
        }
        f.write_str(&out)
    }
}

/// CEL's `==` on URLs compares their strings.
impl PartialEq for Url {
    fn eq(&self, other: &Url) -> bool {
        self.to_string() == other.to_string()
    }
}

/// Go's default limit on the number of query parameters (`urlmaxqueryparams`).
const MAX_QUERY_PARAMS: usize = 10000;

/// Go's `url.parse`: `via_request` for `ParseRequestURI` (an absolute URL or path only). The
/// error is Go's, without the `parse "…": ` of `url.Error`.
fn go_parse(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".to_string());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".to_string());
    }
    let mut url = Url::default();
    if raw == "*" {
        url.path = b"*".to_vec();
        return Ok(url);
    }
    let (scheme, mut rest) = get_scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        url.force_query = true;
        rest = &rest[..rest.len() - 1];
    } else if let Some((before, query)) = rest.split_once('?') {
        (rest, url.raw_query) = (before, query.to_string());
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.to_string();
            return Ok(url);
        }
        if via_request {
            return Err("invalid URI for request".to_string());
        }
        if rest.split('/').next().is_some_and(|segment| segment.contains(':')) {
            return Err("first path segment in URL cannot contain colon".to_string());
        }
    }
    if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///")) && rest.starts_with("//") {
        let authority = &rest[2..];
        let (authority, path) = authority.find('/').map_or((authority, ""), |i| authority.split_at(i));
        (url.user, url.host) = parse_authority(&url.scheme, authority)?;
        rest = path;
    } else if !url.scheme.is_empty() && rest.starts_with('/') {
        url.omit_host = true;
    }
    url.set_path(rest)?;
    Ok(url)
}

/// Go's `getScheme`: `[a-zA-Z][a-zA-Z0-9+.-]*` before a colon, else no scheme.
fn get_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".to_string()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// Go's `parseAuthority`: `[userinfo@]host[:port]`, the host checked first.
fn parse_authority(scheme: &str, authority: &str) -> Result<(Option<Userinfo>, Vec<u8>), String> {
    let Some(at) = authority.rfind('@') else {
        return Ok((None, parse_host(scheme, authority)?));
    };
    let host = parse_host(scheme, &authority[at + 1..])?;
    let userinfo = &authority[..at];
    if !userinfo.bytes().all(valid_userinfo_byte) {
        return Err("net/url: invalid userinfo".to_string());
    }
    let user = match userinfo.split_once(':') {
        None => Userinfo { username: unescape(userinfo, Mode::UserPassword)?, password: None },
        Some((username, password)) => Userinfo {
            username: unescape(username, Mode::UserPassword)?,
            password: Some(unescape(password, Mode::UserPassword)?),
        },
    };
    Ok((Some(user), host))
}

/// RFC 3986's userinfo characters, and `@` (Go's `validUserinfo`).
fn valid_userinfo_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&b)
}

/// Go's `parseHost`: an IPv6 literal in brackets (with an optional `%25zone`) and an optional
/// port, or a host name whose only `%` escapes are of non-ASCII bytes; for http and https at
/// most one colon.
fn parse_host(scheme: &str, host: &str) -> Result<Vec<u8>, String> {
    match host.rfind('[') {
        Some(0) => return parse_ip_literal(host),
        Some(_) => return Err("invalid IP-literal".to_string()),
        None => {}
    }
    if let Some(first) = host.find(':') {
        let last = host.rfind(':').unwrap_or(first);
        let colon = if scheme == "http" || scheme == "https" { first } else { last };
        let port = &host[colon..];
        if !valid_optional_port(port.as_bytes()) {
            return Err(format!("invalid port {} after host", go_quote(port)));
        }
    }
    unescape(host, Mode::Host)
}

/// The bracketed branch of Go's `parseHost`: `[address%25zone]:port`, the address an IPv6 one.
fn parse_ip_literal(host: &str) -> Result<Vec<u8>, String> {
    let Some(close) = host.rfind(']') else {
        return Err("missing ']' in host".to_string());
    };
    let colon_port = &host[close + 1..];
    if !valid_optional_port(colon_port.as_bytes()) {
        return Err(format!("invalid port {} after host", go_quote(colon_port)));
    }
    let hostname = &host[1..close];
    let mut unescaped = match hostname.find("%25") {
        Some(zone) => {
            let mut address = unescape(&hostname[..zone], Mode::Host)?;
            address.extend(unescape(&hostname[zone..], Mode::Zone)?);
            address
        }
        None => unescape(hostname, Mode::Host)?,
    };
    let (address, _) = go_parse_addr(&unescaped).map_err(|e| format!("invalid host: {e}"))?;
    if address.is_ipv4() {
        return Err("invalid IP-literal".to_string());
    }
    unescaped.insert(0, b'[');
    unescaped.push(b']');
    unescaped.extend_from_slice(colon_port.as_bytes());
    Ok(unescaped)
}

/// Empty or `:` and digits.
fn valid_optional_port(port: &[u8]) -> bool {
    match port.split_first() {
        None => true,
        Some((colon, digits)) => *colon == b':' && digits.iter().all(u8::is_ascii_digit),
    }
}

/// Go's `splitHostPort`: host and port at the last colon when a valid port follows it, the
/// host's brackets removed.
fn split_host_port(host_port: &[u8]) -> (&[u8], &[u8]) {
    let (mut host, mut port): (&[u8], &[u8]) = (host_port, b"");
    if let Some(colon) = host_port.iter().rposition(|&b| b == b':')
        && valid_optional_port(&host_port[colon..])
    {
        (host, port) = (&host_port[..colon], &host_port[colon + 1..]);
    }
    if host.len() >= 2 && host.starts_with(b"[") && host.ends_with(b"]") {
        host = &host[1..host.len() - 1];
    }
    (host, port)
}

/// The parts of a URL, which escape different characters (Go's `encoding`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// Go's `shouldEscape`: whether `c` must be %-escaped in the part `mode`.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone) && b"!$&'()*+,;=:[]<>\"".contains(&c) {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => c == b'?',
            Mode::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::QueryComponent => true,
            Mode::Fragment => false,
            Mode::Host | Mode::Zone => true,
        },
        b'!' | b'(' | b')' | b'*' => mode != Mode::Fragment,
        _ => true,
    }
}

/// Go's `escape` (outside of query components): bytes that must be escaped as `%XX`.
fn escape(s: &[u8], mode: Mode) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s {
        if should_escape(c, mode) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(char::from(c));
        }
    }
    out
}

/// Go's `validEncoded`: whether `s` holds no byte that escaping would change, sub-delims,
/// brackets and `%` allowed.
fn valid_encoded(s: &str, mode: Mode) -> bool {
    s.bytes().all(|c| b"!$&'()*+,;=:@[]%".contains(&c) || !should_escape(c, mode))
}

/// Go's `unescape`: `%XX` decoded (in hosts only non-ASCII bytes and `%25`, in zones only bytes
/// a host may hold), `+` as a space in query components; hosts and zones hold no other ASCII
/// byte that needs escaping.
fn unescape(s: &str, mode: Mode) -> Result<Vec<u8>, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'%' => {
                let hex = |j: usize| bytes.get(j).and_then(|d| char::from(*d).to_digit(16));
                let (Some(high), Some(low)) = (hex(i + 1), hex(i + 2)) else {
                    return Err(escape_error(&bytes[i..bytes.len().min(i + 3)]));
                };
                let (escaped, value) = (&bytes[i..i + 3], (high << 4 | low) as u8);
                if mode == Mode::Host && high < 8 && escaped != b"%25" {
                    return Err(escape_error(escaped));
                }
                let host_byte = value == b' ' || !should_escape(value, Mode::Host);
                if mode == Mode::Zone && escaped != b"%25" && !host_byte {
                    return Err(escape_error(escaped));
                }
                out.push(value);
                i += 3;
            }
            b'+' => {
                out.push(if mode == Mode::QueryComponent { b' ' } else { b'+' });
                i += 1;
            }
            _ => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!("invalid character {} in host name", go_quote(&char::from(c).to_string())));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Go's `EscapeError`.
fn escape_error(escape: &[u8]) -> String {
    format!("invalid URL escape {}", quote_bytes(escape))
}

/// A decoded part as a CEL string: invalid UTF-8 bytes each replaced by U+FFFD, as Go's
/// encoders print them.
fn go_string(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        out.extend(chunk.invalid().iter().map(|_| char::REPLACEMENT_CHARACTER));
    }
    out
}

#[cfg(test)]
mod tests {
    // Every expected value and error message below is what the reference kube-apiserver CEL
    // (tools/cel-oracle: k8s.io/apiserver v0.37.2, Go 1.26) answered for the expression the
    // table's comment names, applied to the row's input.
    use super::*;

    /// `url(s)`: `isURL(s)`, then the value's string, `getScheme()`, `getHost()`, `getHostname()`, `getPort()`,
    /// `getEscapedPath()`, or the CEL error.
    #[rustfmt::skip]
    #[allow(clippy::type_complexity)]
    const URLS: &[(&str, bool, Result<[&str; 6], &str>)] = &[
        ("https://example.com", true, Ok(["https://example.com", "https", "example.com", "example.com", "", ""])),
        ("https://example.com/", true, Ok(["https://example.com/", "https", "example.com", "example.com", "", "/"])),
        ("https://user:pass@example.com:8080/a/b?x=1&y=2#frag", true, Ok(["https://user:pass@example.com:8080/a/b?x=1&y=2#frag", "https", "example.com:8080", "example.com", "8080", "/a/b"])),
        ("HTTPS://Example.COM/Path", true, Ok(["https://Example.COM/Path", "https", "Example.COM", "Example.COM", "", "/Path"])),
        ("/absolute/path", true, Ok(["/absolute/path", "", "", "", "", "/absolute/path"])),
        ("/a/b?x=1#f", true, Ok(["/a/b?x=1#f", "", "", "", "", "/a/b"])),
        ("/a:b", true, Ok(["/a:b", "", "", "", "", "/a:b"])),
        ("*", true, Ok(["*", "", "", "", "", "*"])),
        ("relative/path", false, Err("URL parse error during conversion from string: parse \"relative/path\": invalid URI for request")),
        ("", false, Err("URL parse error during conversion from string: parse \"\": empty url")),
        ("?q", false, Err("URL parse error during conversion from string: parse \"?q\": invalid URI for request")),
        ("#frag", false, Err("URL parse error during conversion from string: parse \"#frag\": invalid URI for request")),
        ("1http://x", false, Err("URL parse error during conversion from string: parse \"1http://x\": invalid URI for request")),
        (":foo", false, Err("URL parse error during conversion from string: parse \":foo\": missing protocol scheme")),
        ("a:b:c", true, Ok(["a:b:c", "a", "", "", "", ""])),
        ("mailto:someone@example.com", true, Ok(["mailto:someone@example.com", "mailto", "", "", "", ""])),
        ("urn:isbn:0451450523", true, Ok(["urn:isbn:0451450523", "urn", "", "", "", ""])),
        ("file:///etc/passwd", true, Ok(["file:///etc/passwd", "file", "", "", "", "/etc/passwd"])),
        ("http:", true, Ok(["http:", "http", "", "", "", ""])),
        ("http:/a", true, Ok(["http:/a", "http", "", "", "", "/a"])),
        ("http:///a", true, Ok(["http:///a", "http", "", "", "", "/a"])),
        ("//host/path", true, Ok(["//host/path", "", "host", "host", "", "/path"])),
        ("///a", true, Ok(["///a", "", "", "", "", "///a"])),
        ("//a b/x#f", true, Err("URL parse error during conversion from string: parse \"//a b/x\": invalid character \" \" in host name")),
        ("http://[::1]:80/", true, Ok(["http://[::1]:80/", "http", "[::1]:80", "::1", "80", "/"])),
        ("http://[::1]", true, Ok(["http://[::1]", "http", "[::1]", "::1", "", ""])),
        ("http://[::1]:/", true, Ok(["http://[::1]:/", "http", "[::1]:", "::1", "", "/"])),
        ("http://[fe80::1%25en0]:8080/", true, Ok(["http://[fe80::1%25en0]:8080/", "http", "[fe80::1%en0]:8080", "fe80::1%en0", "8080", "/"])),
        ("http://[fe80::1%25%65n0]/", true, Ok(["http://[fe80::1%25en0]/", "http", "[fe80::1%en0]", "fe80::1%en0", "", "/"])),
        ("http://[::ffff:1.2.3.4]/", true, Ok(["http://[::ffff:1.2.3.4]/", "http", "[::ffff:1.2.3.4]", "::ffff:1.2.3.4", "", "/"])),
        ("https://u:p@[2001:db8::1]:8443/p/a%2Fb?q=1#f", true, Ok(["https://u:p@[2001:db8::1]:8443/p/a%2Fb?q=1#f", "https", "[2001:db8::1]:8443", "2001:db8::1", "8443", "/p/a%2Fb"])),
        ("http://[1.2.3.4]/", false, Err("URL parse error during conversion from string: parse \"http://[1.2.3.4]/\": invalid IP-literal")),
        ("http://[::1/", false, Err("URL parse error during conversion from string: parse \"http://[::1/\": missing ']' in host")),
        ("http://a[b]/", false, Err("URL parse error during conversion from string: parse \"http://a[b]/\": invalid IP-literal")),
        ("http://[::1]x/", false, Err("URL parse error during conversion from string: parse \"http://[::1]x/\": invalid port \"x\" after host")),
        ("http://[zz]/", false, Err("URL parse error during conversion from string: parse \"http://[zz]/\": invalid host: ParseAddr(\"zz\"): unable to parse IP")),
        ("http://[]/", false, Err("URL parse error during conversion from string: parse \"http://[]/\": invalid host: ParseAddr(\"\"): unable to parse IP")),
        ("http://[::1%25]/", false, Err("URL parse error during conversion from string: parse \"http://[::1%25]/\": invalid host: ParseAddr(\"::1%\"): zone must be a non-empty string")),
        ("http://[fe80::1%en0]/", false, Err("URL parse error during conversion from string: parse \"http://[fe80::1%en0]/\": invalid URL escape \"%en\"")),
        ("http://[::1%25a%2Fb]/", false, Err("URL parse error during conversion from string: parse \"http://[::1%25a%2Fb]/\": invalid URL escape \"%2F\"")),
        ("http://[%3A%3A1]/", false, Err("URL parse error during conversion from string: parse \"http://[%3A%3A1]/\": invalid URL escape \"%3A\"")),
        ("http://host:port/", false, Err("URL parse error during conversion from string: parse \"http://host:port/\": invalid port \":port\" after host")),
        ("http://host:80:90/", false, Err("URL parse error during conversion from string: parse \"http://host:80:90/\": invalid port \":80:90\" after host")),
        ("ftp://host:80:90/", true, Ok(["ftp://host:80:90/", "ftp", "host:80:90", "host:80", "90", "/"])),
        ("http://h:/", true, Ok(["http://h:/", "http", "h:", "h", "", "/"])),
        ("http://h:99999/", true, Ok(["http://h:99999/", "http", "h:99999", "h", "99999", "/"])),
        ("http://h:80 /", false, Err("URL parse error during conversion from string: parse \"http://h:80 /\": invalid port \":80 \" after host")),
        ("http://exa mple.com/", false, Err("URL parse error during conversion from string: parse \"http://exa mple.com/\": invalid character \" \" in host name")),
        ("http://h{}/", false, Err("URL parse error during conversion from string: parse \"http://h{}/\": invalid character \"{\" in host name")),
        ("http://h%/", false, Err("URL parse error during conversion from string: parse \"http://h%/\": invalid URL escape \"%\"")),
        ("http://ex%41mple.com/", false, Err("URL parse error during conversion from string: parse \"http://ex%41mple.com/\": invalid URL escape \"%41\"")),
        ("http://ex%C3%A9mple.com/", true, Ok(["http://ex%C3%A9mple.com/", "http", "exémple.com", "exémple.com", "", "/"])),
        ("http://ex%FFmple.com/", true, Ok(["http://ex%FFmple.com/", "http", "ex�mple.com", "ex�mple.com", "", "/"])),
        ("http://h%25/", true, Ok(["http://h%25/", "http", "h%", "h%", "", "/"])),
        ("http://éxample.com/", true, Ok(["http://%C3%A9xample.com/", "http", "éxample.com", "éxample.com", "", "/"])),
        ("http://h#f", false, Err("URL parse error during conversion from string: parse \"http://h#f\": invalid character \"#\" in host name")),
        ("http://h\u{200b}:x/", false, Err("URL parse error during conversion from string: parse \"http://h\\u200b:x/\": invalid port \":x\" after host")),
        ("http://user%40x:p%3Ass@host/", true, Ok(["http://user%40x:p%3Ass@host/", "http", "host", "host", "", "/"])),
        ("http://us er@host/", false, Err("URL parse error during conversion from string: parse \"http://us er@host/\": net/url: invalid userinfo")),
        ("http://u@v@host/", true, Ok(["http://u%40v@host/", "http", "host", "host", "", "/"])),
        ("http://a:b@c:d@host/", true, Ok(["http://a:b%40c%3Ad@host/", "http", "host", "host", "", "/"])),
        ("http://@h/", true, Ok(["http://@h/", "http", "h", "h", "", "/"])),
        ("http://:b@h/", true, Ok(["http://:b@h/", "http", "h", "h", "", "/"])),
        ("http://a%zz@h/", false, Err("URL parse error during conversion from string: parse \"http://a%zz@h/\": invalid URL escape \"%zz\"")),
        ("http://example.com/a b", true, Ok(["http://example.com/a%20b", "http", "example.com", "example.com", "", "/a%20b"])),
        ("http://example.com/%zz", false, Err("URL parse error during conversion from string: parse \"http://example.com/%zz\": invalid URL escape \"%zz\"")),
        ("http://example.com/%2F%41", true, Ok(["http://example.com/%2F%41", "http", "example.com", "example.com", "", "/%2F%41"])),
        ("http://a/b%2fc", true, Ok(["http://a/b%2fc", "http", "a", "a", "", "/b%2fc"])),
        ("http://a/b%2Fc d", true, Ok(["http://a/b/c%20d", "http", "a", "a", "", "/b/c%20d"])),
        ("http://a/%7e", true, Ok(["http://a/%7e", "http", "a", "a", "", "/%7e"])),
        ("http://example.com/é", true, Ok(["http://example.com/%C3%A9", "http", "example.com", "example.com", "", "/%C3%A9"])),
        ("http://h/a\\b", true, Ok(["http://h/a%5Cb", "http", "h", "h", "", "/a%5Cb"])),
        ("http://h/a^b`c{d}", true, Ok(["http://h/a%5Eb%60c%7Bd%7D", "http", "h", "h", "", "/a%5Eb%60c%7Bd%7D"])),
        ("http://h/![]", true, Ok(["http://h/![]", "http", "h", "h", "", "/![]"])),
        ("http://a/b;c,d", true, Ok(["http://a/b;c,d", "http", "a", "a", "", "/b;c,d"])),
        ("http://h/%4", false, Err("URL parse error during conversion from string: parse \"http://h/%4\": invalid URL escape \"%4\"")),
        ("http://h/%", false, Err("URL parse error during conversion from string: parse \"http://h/%\": invalid URL escape \"%\"")),
        ("http://example.com/?", true, Ok(["http://example.com/?", "http", "example.com", "example.com", "", "/"])),
        ("http://example.com/path?q=a b", true, Ok(["http://example.com/path?q=a b", "http", "example.com", "example.com", "", "/path"])),
        ("http://h?a=1?b=2", true, Ok(["http://h?a=1?b=2", "http", "h", "h", "", ""])),
        ("http://h/??", true, Ok(["http://h/??", "http", "h", "h", "", "/"])),
        ("http://h/?#", true, Ok(["http://h/?", "http", "h", "h", "", "/"])),
        ("http://x/?q=é", true, Ok(["http://x/?q=é", "http", "x", "x", "", "/"])),
        ("https://example.com/#", true, Ok(["https://example.com/", "https", "example.com", "example.com", "", "/"])),
        ("https://example.com/#a#b", true, Ok(["https://example.com/#a%23b", "https", "example.com", "example.com", "", "/"])),
        ("https://example.com/#a b", true, Ok(["https://example.com/#a%20b", "https", "example.com", "example.com", "", "/"])),
        ("https://example.com/#%zz", false, Err("URL parse error during conversion from string: parse \"https://example.com/#%zz\": invalid URL escape \"%zz\"")),
        ("http://a/?x#/%zz", true, Err("URL parse error during conversion from string: parse \"http://a/?x#/%zz\": invalid URL escape \"%zz\"")),
        ("http://a/#?%zz", true, Err("URL parse error during conversion from string: parse \"http://a/#?%zz\": invalid URL escape \"%zz\"")),
        ("http://h/#!$&'()*+,;=", true, Ok(["http://h/#!$&'()*+,;=", "http", "h", "h", "", "/"])),
        ("http://h/#é", true, Ok(["http://h/#%C3%A9", "http", "h", "h", "", "/"])),
        ("https://example.com?x#y", true, Ok(["https://example.com?x#y", "https", "example.com", "example.com", "", ""])),
        ("http://\u{1}", false, Err("URL parse error during conversion from string: parse \"http://\\x01\": net/url: invalid control character in URL")),
        ("http://example.com/\u{7f}", false, Err("URL parse error during conversion from string: parse \"http://example.com/\\x7f\": net/url: invalid control character in URL")),
        ("HTTP+x-y.z://h/", true, Ok(["http+x-y.z://h/", "http+x-y.z", "h", "h", "", "/"])),
        ("git+ssh://git@github.com/o/r.git", true, Ok(["git+ssh://git@github.com/o/r.git", "git+ssh", "github.com", "github.com", "", "/o/r.git"])),
        ("s://", true, Ok(["s:", "s", "", "", "", ""])),
        ("x:*", true, Ok(["x:*", "x", "", "", "", ""])),
    ];
    /// `url(s).getQuery()`, keys sorted (as the oracle prints maps), values in order.
    #[rustfmt::skip]
    #[allow(clippy::type_complexity)]
    const QUERIES: &[(&str, &[(&str, &[&str])])] = &[
        ("http://h/?b=2&a=1&b=3&c", &[("a", &["1"]), ("b", &["2", "3"]), ("c", &[""])]),
        ("http://h/?a+b=c+d&e=%41", &[("a b", &["c d"]), ("e", &["A"])]),
        ("http://h/?a;b=1&c=2", &[("c", &["2"])]),
        ("http://h/?a=%zz&c=2", &[("c", &["2"])]),
        ("http://h/?x=%ff", &[("x", &["�"])]),
        ("http://h/?=v&&k=", &[("", &["v"]), ("k", &[""])]),
        ("http://h/?a%3Db=c", &[("a=b", &["c"])]),
        ("http://h/?%61=%62", &[("a", &["b"])]),
        ("http://h/?a=b=c", &[("a", &["b=c"])]),
        ("http://h/?a;b", &[]),
        ("http://h?a=1?b=2", &[("a", &["1?b=2"])]),
        ("http://h/a?b#c", &[("b", &[""])]),
        ("http://h/", &[]),
        ("http://h/?", &[]),
        ("http://h/?&&&", &[]),
        ("http://h/?=", &[("", &[""])]),
        ("http://h/?a==", &[("a", &["="])]),
        ("http://h/?%=1", &[]),
        ("http://h/?a=%", &[]),
        ("http://h/?a=%4", &[]),
        ("http://h/?a=1&a=2&a=3", &[("a", &["1", "2", "3"])]),
        ("http://h/?a=3&a=1&a=2", &[("a", &["3", "1", "2"])]),
        ("http://h/?k=v1&other=x&k=v2", &[("k", &["v1", "v2"]), ("other", &["x"])]),
        ("http://h/?a=&a=", &[("a", &["", ""])]),
        ("http://h/?a&a=1", &[("a", &["", "1"])]),
        ("http://h/?q=a+b%2Bc", &[("q", &["a b+c"])]),
        ("http://h/?q=%20", &[("q", &[" "])]),
        ("http://h/?q=é", &[("q", &["é"])]),
        ("http://h/?%C3%A9=1", &[("é", &["1"])]),
        ("http://h/?q=%C3%A9", &[("q", &["é"])]),
        ("http://h/?q=%e9", &[("q", &["�"])]),
        ("http://h/?a=1#b=2", &[("a", &["1"])]),
        ("http://h/?a=1#", &[("a", &["1"])]),
        ("mailto:a@b?subject=hi&x=%41", &[("subject", &["hi"]), ("x", &["A"])]),
        ("s:x?a=1&b=2", &[("a", &["1"]), ("b", &["2"])]),
        ("/p?x=1&y=2&x=3", &[("x", &["1", "3"]), ("y", &["2"])]),
        ("*", &[]),
        ("http://h/?a=1&;&b=2", &[("a", &["1"]), ("b", &["2"])]),
        ("http://h/?a=1&b;=2", &[("a", &["1"])]),
        ("http://h/?a=%2526", &[("a", &["%26"])]),
        ("http://h/?a=%26&b=%3D", &[("a", &["&"]), ("b", &["="])]),
        ("http://h/?a[]=1&a[]=2", &[("a[]", &["1", "2"])]),
        ("http://h/?a.b=1&a_b=2", &[("a.b", &["1"]), ("a_b", &["2"])]),
        ("http://h/?Z=1&z=2", &[("Z", &["1"]), ("z", &["2"])]),
        ("http://h/?b&a&b", &[("a", &[""]), ("b", &["", ""])]),
        ("http://h/?a=1&&a=2", &[("a", &["1", "2"])]),
        ("http://h/?x=1?y=2", &[("x", &["1?y=2"])]),
        ("http://h/??a=1", &[("?a", &["1"])]),
        ("http://h/?a=+", &[("a", &[" "])]),
        ("http://h/?+=+", &[(" ", &[" "])]),
        ("http://h/?%zz&a=1", &[("a", &["1"])]),
    ];

    #[test]
    fn urls_parse_and_print_as_cel_does() {
        for (input, want_is_url, want) in URLS {
            assert_eq!(is_url(input), *want_is_url, "isURL({input:?})");
            match (parse(input), want) {
                (Ok(url), Ok([string, scheme, host, hostname, port, path])) => {
                    assert_eq!(url.to_string(), *string, "{input:?}");
                    assert_eq!(url.scheme(), *scheme, "{input:?}");
                    assert_eq!(url.host(), *host, "{input:?}");
                    assert_eq!(url.hostname(), *hostname, "{input:?}");
                    assert_eq!(url.port(), *port, "{input:?}");
                    assert_eq!(url.escaped_path(), *path, "{input:?}");
                }
                (Err(got), Err(want)) => assert_eq!(got, *want, "{input:?}"),
                (got, want) => panic!("url({input:?}): {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn queries_decode_as_cel_does() {
        for (input, want) in QUERIES {
            let Ok(url) = parse(input) else { panic!("url({input:?}) failed") };
            let mut got = url.query();
            got.sort();
            let want: Vec<(String, Vec<String>)> =
                want.iter().map(|(k, vs)| (k.to_string(), vs.iter().map(|v| v.to_string()).collect())).collect();
            assert_eq!(got, want, "{input:?}");
        }
    }

    #[test]
    fn query_keys_keep_their_first_appearance_order() {
        let Ok(url) = parse("http://h/?b=2&a=1&b=3&c") else { panic!("parse failed") };
        let want = [("b", vec!["2", "3"]), ("a", vec!["1"]), ("c", vec![""])];
        let want: Vec<(String, Vec<String>)> =
            want.into_iter().map(|(k, vs)| (k.to_string(), vs.into_iter().map(String::from).collect())).collect();
        assert_eq!(url.query(), want);
    }

    #[test]
    fn queries_past_go_parameter_limit_are_dropped() {
        // The oracle: 10000 parameters decode (size 10000), 10001 give an empty map.
        let query = |n: usize| format!("http://h/?{}", vec!["a=1"; n].join("&"));
        let Ok(url) = parse(&query(10000)) else { panic!("parse failed") };
        assert_eq!(url.query().first().map(|(_, values)| values.len()), Some(10000));
        let Ok(url) = parse(&query(10001)) else { panic!("parse failed") };
        assert!(url.query().is_empty());
    }

    #[test]
    fn urls_compare_by_their_strings() {
        let (Ok(a), Ok(b)) = (parse("HTTP://h/a%20b"), parse("http://h/a b")) else { panic!("parse failed") };
        assert_eq!(a, b);
    }
}
