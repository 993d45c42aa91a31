//! Property names as CEL identifiers, as k8s.io/apiserver's `cel.Escape` writes them: a name
//! that is a CEL keyword becomes `__keyword__`, `__` becomes `__underscores__`, and `.`, `-`,
//! `/` become `__dot__`, `__dash__`, `__slash__`. A name with any other character, or starting
//! with a digit, has no identifier (rules cannot select it).

/// The words CEL reserves (`celReservedSymbols`): a property so named is `__word__`.
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The identifier of the property `name`, `None` when it has none.
pub fn escape(name: &str) -> Option<String> {
    if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_escape_as_kubernetes_escapes_them() {
        let cases = [
            ("spec", Some("spec")),
            ("namespace", Some("__namespace__")),
            ("a-b.c/d", Some("a__dash__b__dot__c__slash__d")),
            ("a__b", Some("a__underscores__b")),
            ("a___b", Some("a__underscores___b")),
            ("_x", Some("_x")),
            ("1x", None),
            ("", None),
            ("a b", None),
            ("é", None),
        ];
        for (name, escaped) in cases {
            assert_eq!(escape(name).as_deref(), escaped, "{name}");
        }
    }
}
