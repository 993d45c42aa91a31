//! Field paths: where an error is (k8s.io/apimachinery's `field.Path`, whose root is `<nil>`
//! when a custom resource's rules are validated), and a rule's `fieldPath`, checked against the
//! schema and normalized as apiextensions' `ValidFieldPath` does (`.spec['a.b'].c` → `spec[a.b].c`).

use serde_json::Value;
use std::fmt;

/// A path into an object; the empty path is the root, written `<nil>` as Go writes a nil path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Path(Option<String>);

impl Path {
    /// The root.
    pub fn root() -> Path {
        Path(None)
    }

    /// The field `name` of this path's object (`spec.weight`).
    pub fn child(&self, name: &str) -> Path {
        Path(Some(match &self.0 {
            None => name.to_string(),
            Some(path) => format!("{path}.{name}"),
        }))
    }

    /// The item `index` of this path's list (`spec.items[0]`).
    pub fn index(&self, index: usize) -> Path {
        self.subscript(&index.to_string())
    }

    /// The entry `key` of this path's map (`metadata.labels[app]`).
    pub fn key(&self, key: &str) -> Path {
        self.subscript(key)
    }

    fn subscript(&self, text: &str) -> Path {
        Path(Some(format!("{}[{text}]", self.0.as_deref().unwrap_or_default())))
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_deref().unwrap_or("<nil>"))
    }
}

/// The path `json_path` (a rule's `fieldPath`: `.a.b`, `.a['b.c']`) names in `schema`, relative
/// to it, normalized (`a.b`, `a[b.c]`); the reason when it names nothing of the schema.
pub fn valid_field_path(json_path: &str, schema: &Value) -> Result<String, String> {
    let tokens = tokens(json_path);
    let mut tokens = tokens.iter().map(String::as_str);
    let (mut path, mut schema) = (Path::root(), schema);
    while let Some(token) = tokens.next() {
        let name = match token {
            "[" => {
                let quoted = tokens.next().ok_or("unexpected end of JSON path")?;
                let inner = quoted.strip_prefix('\'').and_then(|q| q.strip_suffix('\'')).filter(|_| quoted.len() >= 2);
                let inner = inner.ok_or_else(|| format!("expected single quoted string but got {quoted}"))?;
                let name = unescape_single_quoted(inner).map_err(|e| format!("invalid string literal: {e}"))?;
                let (next_path, next_schema) = step(&path, schema, &name)?;
                match tokens.next() {
                    Some("]") => {}
                    Some(other) => return Err(format!("expected ] but got {other}")),
                    None => return Err("unexpected end of JSON path".into()),
                }
                (path, schema) = (next_path, next_schema);
                continue;
            }
            "." => tokens.next().ok_or("unexpected end of JSON path")?.to_string(),
            other => return Err(format!("expected [ or . but got: {other}")),
        };
        (path, schema) = step(&path, schema, &name)?;
    }
    Ok(path.0.unwrap_or_default())
}

/// One step of [`valid_field_path`]: a property of an object with properties, or a key of a map.
fn step<'a>(path: &Path, schema: &'a Value, name: &str) -> Result<(Path, &'a Value), String> {
    if let Some(properties) = schema.get("properties") {
        let property = properties.get(name).ok_or("does not refer to a valid field")?;
        return Ok((path.child(name), property));
    }
    match schema.get("additionalProperties") {
        Some(additional) => Ok((path.key(name), additional)),
        None => Err("does not refer to a valid field".into()),
    }
}

/// The JSON path's tokens: `.`, `[` and `]` alone, a single-quoted string whole (delimiters
/// inside it included), and the text between delimiters.
fn tokens(json_path: &str) -> Vec<String> {
    let chars: Vec<char> = json_path.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let end = if chars[i] == '\'' {
            let close = (i + 1..chars.len()).find(|&j| chars[j] == '\'' && chars[j - 1] != '\\');
            close.map_or(chars.len(), |j| j + 1)
        } else if matches!(chars[i], '.' | '[' | ']') {
            i + 1
        } else {
            (i..chars.len()).find(|&j| matches!(chars[j], '.' | '[' | ']')).unwrap_or(chars.len())
        };
        out.push(chars[i..end].iter().collect());
        i = end;
    }
    out
}

/// A single-quoted string's escapes (`\'`, `\\`, `\n`, ...) undone.
fn unescape_single_quoted(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = match chars.next() {
            Some('a') => '\u{7}',
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('v') => '\u{b}',
            Some('\'') => '\'',
            Some('\\') => '\\',
            Some(other) => return Err(format!("invalid escape char \\{other}")),
            None => {
                out.push('\\');
                break;
            }
        };
        out.push(escaped);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_are_written_as_go_writes_them() {
        let root = Path::root();
        assert_eq!(root.to_string(), "<nil>");
        assert_eq!(root.child("spec").child("items").index(2).key("a.b").to_string(), "spec.items[2][a.b]");
    }

    #[test]
    fn field_paths_are_checked_against_the_schema_and_normalized() {
        let schema = json!({"type": "object", "properties": {
            "host": {"type": "string"},
            "a.b": {"type": "object", "properties": {"c": {"type": "string"}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        }});
        assert_eq!(valid_field_path(".host", &schema).unwrap(), "host");
        assert_eq!(valid_field_path("['a.b'].c", &schema).unwrap(), "a.b.c");
        assert_eq!(valid_field_path(".labels['x.y']", &schema).unwrap(), "labels[x.y]");
        assert_eq!(valid_field_path(".labels.app", &schema).unwrap(), "labels[app]");
        assert_eq!(valid_field_path(".nope", &schema).unwrap_err(), "does not refer to a valid field");
        assert_eq!(valid_field_path("host", &schema).unwrap_err(), "expected [ or . but got: host");
        assert_eq!(valid_field_path(".host.x", &schema).unwrap_err(), "does not refer to a valid field");
        assert!(valid_field_path("[host]", &schema).is_err());
        assert!(valid_field_path(".", &schema).is_err());
    }
}
