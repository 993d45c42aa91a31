//! The front proxy's identity headers (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-*`,
//! or whatever names the `extension-apiserver-authentication` ConfigMap gives), read as the
//! kube-apiserver's request-header authenticator reads them, and stripped from every request so
//! no handler ever sees identity headers a client made up.

use super::UserInfo;
use http::HeaderMap;
use std::collections::BTreeMap;

/// The header names of the front-proxy protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderNames {
    /// Headers carrying the user name; the first non-empty one wins.
    pub username: Vec<String>,
    /// Headers carrying groups; every value of every one is a group.
    pub group: Vec<String>,
    /// Prefixes of headers carrying extras: `<prefix><percent-encoded key>: value`.
    pub extra_prefix: Vec<String>,
}

impl Default for HeaderNames {
    fn default() -> Self {
        Self {
            username: vec!["X-Remote-User".into()],
            group: vec!["X-Remote-Group".into()],
            extra_prefix: vec!["X-Remote-Extra-".into()],
        }
    }
}

/// The user the headers name, if a username header is present.
pub fn user_from_headers(names: &HeaderNames, headers: &HeaderMap) -> Option<UserInfo> {
    let name = names
        .username
        .iter()
        .find_map(|h| headers.get(h.as_str()).and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty()))?
        .to_string();
    let mut groups = Vec::new();
    for header in &names.group {
        for value in headers.get_all(header.as_str()) {
            if let Ok(v) = value.to_str() {
                groups.push(v.to_string());
            }
        }
    }
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (header, value) in headers {
        let header = header.as_str();
        for prefix in &names.extra_prefix {
            let prefix = prefix.to_ascii_lowercase();
            if let Some(encoded) = header.strip_prefix(prefix.as_str()) {
                let key = percent_decode(encoded).to_ascii_lowercase();
                if let Ok(v) = value.to_str() {
                    extra.entry(key).or_default().push(v.to_string());
                }
            }
        }
    }
    Some(UserInfo { name, uid: None, groups, extra })
}

/// Decodes `%XX` escapes (extra keys may hold characters headers cannot).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Removes every identity header named by `names` (and the protocol's default names).
pub fn strip(names: &HeaderNames, headers: &mut HeaderMap) {
    let defaults = HeaderNames::default();
    for set in [names, &defaults] {
        for h in set.username.iter().chain(&set.group) {
            headers.remove(h.as_str());
        }
        let prefixes: Vec<String> = set.extra_prefix.iter().map(|p| p.to_ascii_lowercase()).collect();
        let doomed: Vec<http::HeaderName> =
            headers.keys().filter(|k| prefixes.iter().any(|p| k.as_str().starts_with(p.as_str()))).cloned().collect();
        for h in doomed {
            headers.remove(h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    #[test]
    fn user_groups_and_escaped_extras_are_read() {
        let h = headers(&[
            ("X-Remote-User", "alice"),
            ("X-Remote-Group", "devs"),
            ("X-Remote-Group", "system:authenticated"),
            ("X-Remote-Extra-Scopes", "read"),
            ("X-Remote-Extra-Scopes", "write"),
            ("X-Remote-Extra-Example.com%2fteam", "widgets"),
        ]);
        let user = user_from_headers(&HeaderNames::default(), &h).unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["devs", "system:authenticated"]);
        assert_eq!(user.extra["scopes"], ["read", "write"]);
        assert_eq!(user.extra["example.com/team"], ["widgets"]);
    }

    #[test]
    fn configured_names_replace_the_defaults_and_the_first_username_wins() {
        let names = HeaderNames {
            username: vec!["X-User".into(), "X-Remote-User".into()],
            group: vec!["X-Groups".into()],
            extra_prefix: vec!["X-Ex-".into()],
        };
        let h = headers(&[
            ("X-Remote-User", "second"),
            ("X-User", "first"),
            ("X-Groups", "g"),
            ("X-Remote-Group", "ignored"),
        ]);
        let user = user_from_headers(&names, &h).unwrap();
        assert_eq!(user.name, "first");
        assert_eq!(user.groups, ["g"]);
        assert!(user_from_headers(&names, &headers(&[("X-Groups", "g")])).is_none());
    }

    #[test]
    fn stripping_removes_configured_and_default_identity_headers_only() {
        let names = HeaderNames {
            username: vec!["X-User".into()],
            group: vec!["X-Groups".into()],
            extra_prefix: vec!["X-Ex-".into()],
        };
        let mut h = headers(&[
            ("X-User", "a"),
            ("X-Groups", "b"),
            ("X-Ex-Key", "c"),
            ("X-Remote-User", "forged"),
            ("X-Remote-Group", "system:masters"),
            ("X-Remote-Extra-A", "x"),
            ("Accept", "application/json"),
        ]);
        strip(&names, &mut h);
        assert_eq!(h.len(), 1);
        assert!(h.contains_key("accept"));
    }
}
