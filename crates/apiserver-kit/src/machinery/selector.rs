//! Label and field selectors of list, watch and deletecollection requests.
//!
//! Label selectors follow apimachinery's grammar (`=`, `==`, `!=`, `in`, `notin`, `key`, `!key`,
//! `key>n`, `key<n`, comma-separated, keys and values validated) and parse into kube-core's
//! [`Expression`]s where it has one, matched with Kubernetes' semantics (`!=` and `notin` match
//! objects without the key; `>` and `<` only labels that are integers). Field
//! selectors accept `=`, `==` and `!=` on `metadata.name`, `metadata.namespace` and the fields a
//! resource declares; anything else is a 400 naming it.

use super::error::{Error, Result};
use super::validation::{label_value, qualified_name};
use kube::core::{Expression, Selector};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

/// One requirement of a label selector: one of kube-core's expressions, or one of
/// apimachinery's numeric comparisons (`key>n`, `key<n`), which kube-core has no expression for.
#[derive(Clone, Debug, PartialEq)]
enum Requirement {
    Expression(Expression),
    /// `key>n`: the label is an integer greater than `n`.
    GreaterThan(String, i64),
    /// `key<n`: the label is an integer less than `n`.
    LessThan(String, i64),
}

impl std::fmt::Display for Requirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Expression(expression) => expression.fmt(f),
            Self::GreaterThan(key, n) => write!(f, "{key}>{n}"),
            Self::LessThan(key, n) => write!(f, "{key}<{n}"),
        }
    }
}

/// A parsed label selector; empty matches everything.
#[derive(Clone, Debug, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        self.matches_by(|key| labels.and_then(|l| l.get(key)).map(|v| Cow::Borrowed(v.as_str())))
    }

    /// Whether the labels that `label` looks up satisfy every requirement (kube-core's
    /// [`SelectorExt`](kube::core::SelectorExt) semantics: `!=` and `notin` match objects without the key; a comparison
    /// matches only a label that is an integer).
    pub fn matches_by<'a>(&self, label: impl Fn(&str) -> Option<Cow<'a, str>>) -> bool {
        let number = |key: &str| label(key).and_then(|v| v.parse::<i64>().ok());
        self.requirements.iter().all(|r| match r {
            Requirement::Expression(e) => match e {
                Expression::In(key, values) => label(key).is_some_and(|v| values.contains(v.as_ref())),
                Expression::NotIn(key, values) => label(key).is_none_or(|v| !values.contains(v.as_ref())),
                Expression::Exists(key) => label(key).is_some(),
                Expression::DoesNotExist(key) => label(key).is_none(),
                Expression::Equal(key, value) => label(key).is_some_and(|v| v == value.as_str()),
                Expression::NotEqual(key, value) => label(key).is_none_or(|v| v != value.as_str()),
            },
            Requirement::GreaterThan(key, n) => number(key).is_some_and(|v| v > *n),
            Requirement::LessThan(key, n) => number(key).is_some_and(|v| v < *n),
        })
    }

    /// As a kube-core [`Selector`], when kube-core can say it (it has no numeric comparisons).
    pub fn to_selector(&self) -> Option<Selector> {
        self.requirements
            .iter()
            .map(|r| match r {
                Requirement::Expression(e) => Some(e.clone()),
                Requirement::GreaterThan(..) | Requirement::LessThan(..) => None,
            })
            .collect::<Option<Vec<Expression>>>()
            .map(Selector::from_iter)
    }
}

/// As a client writes it in a `labelSelector`.
impl std::fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let texts: Vec<String> = self.requirements.iter().map(ToString::to_string).collect();
        f.write_str(&texts.join(","))
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Eq,
    DoubleEq,
    NotEq,
    Greater,
    Less,
    Bang,
    Open,
    Close,
    Comma,
}

fn describe(token: &Token) -> String {
    match token {
        Token::Ident(s) => format!("{s:?}"),
        Token::Eq => "'='".into(),
        Token::DoubleEq => "'=='".into(),
        Token::NotEq => "'!='".into(),
        Token::Greater => "'>'".into(),
        Token::Less => "'<'".into(),
        Token::Bang => "'!'".into(),
        Token::Open => "'('".into(),
        Token::Close => "')'".into(),
        Token::Comma => "','".into(),
    }
}

fn tokenize(input: &str) -> Result<Vec<Token>> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = input.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' => i += 1,
            '(' => (tokens.push(Token::Open), i += 1).1,
            ')' => (tokens.push(Token::Close), i += 1).1,
            ',' => (tokens.push(Token::Comma), i += 1).1,
            '=' if chars.get(i + 1) == Some(&'=') => (tokens.push(Token::DoubleEq), i += 2).1,
            '=' => (tokens.push(Token::Eq), i += 1).1,
            '!' if chars.get(i + 1) == Some(&'=') => (tokens.push(Token::NotEq), i += 2).1,
            '!' => (tokens.push(Token::Bang), i += 1).1,
            '>' => (tokens.push(Token::Greater), i += 1).1,
            '<' => (tokens.push(Token::Less), i += 1).1,
            _ => {
                let start = i;
                while i < chars.len()
                    && !matches!(chars[i], ' ' | '\t' | '\n' | '(' | ')' | ',' | '=' | '!' | '>' | '<')
                {
                    i += 1;
                }
                tokens.push(Token::Ident(chars[start..i].iter().collect()));
            }
        }
    }
    Ok(tokens)
}

fn requirement_error(message: impl std::fmt::Display) -> Error {
    Error::BadRequest(format!("unable to parse requirement: {message}"))
}

fn check_key(key: &str) -> Result<()> {
    match qualified_name(key).first() {
        None => Ok(()),
        Some(problem) => Err(requirement_error(format!("invalid label key {key:?}: {problem}"))),
    }
}

fn check_value(value: &str) -> Result<()> {
    match label_value(value).first() {
        None => Ok(()),
        Some(problem) => Err(requirement_error(format!("invalid label value: {value:?}: {problem}"))),
    }
}

/// Parses a `labelSelector` query value.
pub fn parse_label_selector(input: &str) -> Result<LabelSelector> {
    let mut parser = Parser { tokens: tokenize(input)?, pos: 0 };
    if parser.tokens.is_empty() {
        return Ok(LabelSelector::default());
    }
    let mut requirements = Vec::new();
    loop {
        requirements.push(parser.requirement()?);
        match parser.next() {
            None => break,
            Some(Token::Comma) => continue,
            Some(other) => {
                return Err(requirement_error(format!("found {}, expected: ',' or end of string", describe(&other))));
            }
        }
    }
    Ok(LabelSelector { requirements })
}

/// What was found instead of what a rule expected, for error messages.
fn found(token: Option<&Token>) -> String {
    token.map(describe).unwrap_or_else(|| "end of string".into())
}

/// A recursive-descent parser over the tokens of a label selector, one method per rule of
/// `k8s.io/apimachinery/pkg/labels`' grammar.
struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        token
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    /// `!key`, `key`, `key op value` or `key in|notin (values)`.
    fn requirement(&mut self) -> Result<Requirement> {
        match self.next() {
            Some(Token::Bang) => match self.next() {
                Some(Token::Ident(key)) => {
                    check_key(&key)?;
                    Ok(Requirement::Expression(Expression::DoesNotExist(key)))
                }
                other => {
                    Err(requirement_error(format!("found {}, expected: identifier after '!'", found(other.as_ref()))))
                }
            },
            Some(Token::Ident(key)) => {
                check_key(&key)?;
                self.after_key(key)
            }
            other => Err(requirement_error(format!(
                "found {}, expected: !, identifier, or end of string",
                found(other.as_ref())
            ))),
        }
    }

    /// What follows a key: nothing (exists), an equality, a comparison or a set.
    fn after_key(&mut self, key: String) -> Result<Requirement> {
        let expression = match self.peek() {
            None | Some(Token::Comma) => Expression::Exists(key),
            Some(Token::Eq | Token::DoubleEq | Token::NotEq) => {
                let op = self.next();
                let value = self.equality_value()?;
                check_value(&value)?;
                if op == Some(Token::NotEq) { Expression::NotEqual(key, value) } else { Expression::Equal(key, value) }
            }
            Some(Token::Greater | Token::Less) => {
                let greater = self.next() == Some(Token::Greater);
                let value = self.equality_value()?;
                check_value(&value)?;
                let Ok(n) = value.parse::<i64>() else {
                    return Err(requirement_error(format!(
                        "for 'Gt', 'Lt' operators, the value must be an integer: {value:?}"
                    )));
                };
                return Ok(if greater { Requirement::GreaterThan(key, n) } else { Requirement::LessThan(key, n) });
            }
            Some(Token::Ident(op)) if op == "in" || op == "notin" => {
                let op = op.clone();
                self.pos += 1;
                let values = self.value_set(&op)?;
                if op == "in" { Expression::In(key, values) } else { Expression::NotIn(key, values) }
            }
            Some(other) => {
                return Err(requirement_error(format!(
                    "found {}, expected: in, notin, =, ==, !=, gt, lt, or end of string",
                    describe(other)
                )));
            }
        };
        Ok(Requirement::Expression(expression))
    }

    /// The value after `=`, `==` or `!=` (empty when none follows).
    fn equality_value(&mut self) -> Result<String> {
        match self.peek() {
            Some(Token::Ident(value)) => {
                let value = value.clone();
                self.pos += 1;
                Ok(value)
            }
            None | Some(Token::Comma) => Ok(String::new()),
            Some(other) => Err(requirement_error(format!("found {}, expected: identifier", describe(other)))),
        }
    }

    /// `(v1, v2, ...)` after `in` or `notin`: at least one value.
    fn value_set(&mut self, op: &str) -> Result<BTreeSet<String>> {
        if self.next() != Some(Token::Open) {
            return Err(requirement_error(format!("found {op} without '(', expected: '('")));
        }
        let mut values = BTreeSet::new();
        loop {
            match self.next() {
                Some(Token::Ident(value)) => {
                    check_value(&value)?;
                    values.insert(value);
                    match self.next() {
                        Some(Token::Comma) => continue,
                        Some(Token::Close) => return Ok(values),
                        other => {
                            return Err(requirement_error(format!(
                                "found {}, expected: ',' or ')'",
                                found(other.as_ref())
                            )));
                        }
                    }
                }
                Some(Token::Close) if values.is_empty() => {
                    return Err(requirement_error("for 'in', 'notin' operators, values set can't be empty"));
                }
                other => {
                    return Err(requirement_error(format!("found {}, expected: identifier", found(other.as_ref()))));
                }
            }
        }
    }
}

/// One field requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field path, e.g. `metadata.name`.
    pub field: String,
    /// `true` for `!=`.
    pub negated: bool,
    /// The value compared with.
    pub value: String,
}

/// A parsed field selector; empty matches everything.
#[derive(Clone, Debug, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether the object's fields, looked up by `value_of`, satisfy every requirement.
    pub fn matches<'a>(&self, value_of: impl Fn(&str) -> Option<Cow<'a, str>>) -> bool {
        self.requirements.iter().all(|r| {
            let actual = value_of(&r.field).unwrap_or_default();
            (actual == r.value.as_str()) != r.negated
        })
    }

    /// Refuses (400) a field other than `metadata.name`, `metadata.namespace` and `extra`.
    pub fn check_fields(&self, extra: &[&str]) -> Result<()> {
        let supported =
            |field: &str| field == "metadata.name" || field == "metadata.namespace" || extra.contains(&field);
        match self.requirements.iter().find(|r| !supported(&r.field)) {
            Some(r) => Err(Error::BadRequest(format!("field label not supported: {}", r.field))),
            None => Ok(()),
        }
    }

    /// The selector with each field renamed by `rename` (a field it leaves as it is when it
    /// gives `None`): the same selection at another version of the resource.
    pub fn rename_fields(mut self, rename: impl Fn(&str) -> Option<&'static str>) -> Self {
        for requirement in &mut self.requirements {
            if let Some(renamed) = rename(&requirement.field) {
                requirement.field = renamed.to_string();
            }
        }
        self
    }

    /// The value an `=` requirement pins `field` to, if any (e.g. `metadata.name` for `kubectl get NAME -w`).
    pub fn exact(&self, field: &str) -> Option<&str> {
        self.requirements.iter().find(|r| r.field == field && !r.negated).map(|r| r.value.as_str())
    }
}

/// Splits on unescaped `sep`, keeping escapes for the next stage.
fn split_unescaped(input: &str, sep: char) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut escaped = false;
    for c in input.chars() {
        if escaped {
            if let Some(p) = parts.last_mut() {
                p.push('\\');
                p.push(c);
            }
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(String::new());
        } else if let Some(p) = parts.last_mut() {
            p.push(c);
        }
    }
    parts
}

fn unescape(value: &str) -> Result<String> {
    let mut out = String::new();
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('\\' | ',' | '=' | '!')) => out.push(e),
                Some(other) => {
                    return Err(Error::BadRequest(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    )));
                }
                None => return Err(Error::BadRequest("invalid field selector: unterminated escape".into())),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// Parses a `fieldSelector` query value, allowing `metadata.name`, `metadata.namespace` and `extra`.
pub fn parse_field_selector(input: &str, extra: &[&str]) -> Result<FieldSelector> {
    let selector = parse_field_selector_syntax(input)?;
    selector.check_fields(extra)?;
    Ok(selector)
}

/// Parses a `fieldSelector` query value without asking whether the resource supports its fields
/// (the kube-apiserver parses it with the other options, and converts its fields later).
pub fn parse_field_selector_syntax(input: &str) -> Result<FieldSelector> {
    let mut requirements = Vec::new();
    for part in split_unescaped(input, ',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (field, negated, value) = if let Some((f, v)) = part.split_once("!=") {
            (f, true, v)
        } else if let Some((f, v)) = part.split_once("==") {
            (f, false, v)
        } else if let Some((f, v)) = part.split_once('=') {
            (f, false, v)
        } else {
            return Err(Error::BadRequest(format!(
                "invalid field selector: {part:?}: expected field=value, field==value or field!=value"
            )));
        };
        requirements.push(FieldRequirement {
            field: field.trim().to_string(),
            negated,
            value: unescape(value.trim())?,
        });
    }
    Ok(FieldSelector { requirements })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn every_operator_of_the_grammar_parses_and_matches() {
        let s = parse_label_selector("herd=a,color==white,tier!=top,env in (prod, dev),zone notin (x),shorn,!sick")
            .unwrap();
        let good = labels(&[("herd", "a"), ("color", "white"), ("env", "dev"), ("shorn", "yes")]);
        assert!(s.matches(Some(&good)));
        let mut sick = good.clone();
        sick.insert("sick".into(), "".into());
        assert!(!s.matches(Some(&sick)));
        let mut wrong_env = good.clone();
        wrong_env.insert("env".into(), "test".into());
        assert!(!s.matches(Some(&wrong_env)));
        assert_eq!(s.to_string(), "herd=a,color=white,tier!=top,env in (dev,prod),zone notin (x),shorn,!sick");
    }

    #[test]
    fn numeric_comparisons_match_integer_labels_only() {
        let s = parse_label_selector("herd>1,age<10").unwrap();
        assert!(s.matches(Some(&labels(&[("herd", "2"), ("age", "9")]))));
        assert!(!s.matches(Some(&labels(&[("herd", "1"), ("age", "9")]))));
        assert!(!s.matches(Some(&labels(&[("herd", "many"), ("age", "9")]))));
        assert!(!s.matches(Some(&labels(&[("age", "9")]))));
        assert_eq!(s.to_string(), "herd>1,age<10");
        assert!(s.to_selector().is_none(), "kube-core cannot say it");
        for bad in ["herd>x", "herd>", ">1", "herd>1.5"] {
            assert_eq!(parse_label_selector(bad).unwrap_err().code(), 400, "{bad}");
        }
    }

    #[test]
    fn not_equal_and_notin_match_missing_keys() {
        let s = parse_label_selector("a!=1,b notin (2)").unwrap();
        assert!(s.matches(None));
    }

    #[test]
    fn empty_selector_matches_everything_and_empty_value_is_allowed() {
        assert!(parse_label_selector("").unwrap().matches(None));
        let s = parse_label_selector("a=").unwrap();
        assert!(s.matches(Some(&labels(&[("a", "")]))));
    }

    #[test]
    fn malformed_label_selectors_are_bad_requests() {
        for bad in ["a in b", "a in ()", "=a", "a b", "a=(", "bad key!=x", "a=b c", "a in (x", "!", "a,,b", "a=-x"] {
            let err = parse_label_selector(bad).unwrap_err();
            assert_eq!(err.code(), 400, "{bad}");
            assert!(err.to_string().starts_with("unable to parse requirement"), "{bad}: {err}");
        }
    }

    #[test]
    fn field_selectors_allow_metadata_and_declared_fields() {
        let s = parse_field_selector("metadata.name=dolly,spec.color!=brown", &["spec.color"]).unwrap();
        assert_eq!(s.exact("metadata.name"), Some("dolly"));
        assert!(s.matches(|f| match f {
            "metadata.name" => Some("dolly".into()),
            _ => Some("white".into()),
        }));
        assert!(!s.matches(|f| Some(if f == "metadata.name" { "dolly" } else { "brown" }.into())));
        let err = parse_field_selector("spec.weight=1", &["spec.color"]).unwrap_err();
        assert_eq!(err.to_string(), "field label not supported: spec.weight");
        assert_eq!(parse_field_selector("nonsense", &[]).unwrap_err().code(), 400);
    }

    #[test]
    fn field_selector_values_may_escape_separators() {
        let s = parse_field_selector(r"metadata.name=a\,b", &[]).unwrap();
        assert_eq!(s.exact("metadata.name"), Some("a,b"));
        assert!(parse_field_selector(r"metadata.name=a\q", &[]).is_err());
    }
}
