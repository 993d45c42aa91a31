//! The checker's errors, each at the expression it is about, written as cel-go's `Errors`
//! writes them: sorted by line and column, `ERROR: <input>:LINE:COLUMN: message`, the source
//! line and a caret under the column (full-width where the line has a multi-byte character),
//! at most 100 of them.

use super::super::error::{CompileError, Stage};
use super::validate::children;
use cel::common::ast::{Expr, IdedExpr, LiteralValue, SourceInfo};
use std::collections::HashSet;

/// cel-go's `maxErrorsToReport`.
const MAX_REPORTED: usize = 100;
/// cel-go's `maxSnippetLength`: a longer line is not quoted.
const MAX_SNIPPET: usize = 16384;

/// The errors reported so far, by expression id.
#[derive(Debug, Default)]
pub(super) struct Issues {
    reported: Vec<(u64, String)>,
}

impl Issues {
    /// Reports `message` about the expression `id`.
    pub fn report(&mut self, id: u64, message: String) {
        self.reported.push((id, message));
    }

    pub fn is_empty(&self) -> bool {
        self.reported.is_empty()
    }

    /// The error the issues make, positioned in `info`'s source (that of `expr`).
    pub fn into_error(self, info: &SourceInfo, expr: &IdedExpr) -> CompileError {
        let count = self.reported.len();
        let negative = negative_literals(expr);
        let located = self.reported.into_iter().take(MAX_REPORTED).map(|(id, message)| {
            let at = locate(info, id, negative.contains(&id));
            (at, message)
        });
        let mut located: Vec<(Location, String)> = located.collect();
        located.sort_by_key(|(location, _)| (location.line, location.column));
        let mut lines: Vec<String> = located.iter().map(|(at, message)| display(&info.source, at, message)).collect();
        if count > MAX_REPORTED {
            lines.push(format!("{} more errors were truncated", count - MAX_REPORTED));
        }
        CompileError { issues: lines.join("\n"), stage: Stage::Check }
    }
}

/// A position in the source: a line from 1 and a column from 0, in code points; -1 and -1 when
/// the expression has none (cel-go's `NoLocation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Location {
    line: isize,
    column: isize,
}

/// Where the expression `id` starts; a `negative` number literal at its minus sign, as cel-go's
/// grammar has it (the `cel` crate's parser places it at its digits).
fn locate(info: &SourceInfo, id: u64, negative: bool) -> Location {
    let nowhere = Location { line: -1, column: -1 };
    let Some((start, _)) = info.offset_for(id) else { return nowhere };
    let Some(mut before) = info.source.get(..start as usize) else { return nowhere };
    if negative {
        let sign = before.trim_end();
        before = sign.strip_suffix('-').unwrap_or(before);
    }
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() as isize + 1;
    Location { line, column: before[line_start..].chars().count() as isize }
}

/// The ids of the number literals written with a minus sign (`-1`, `-0.5`) in `expr`.
fn negative_literals(expr: &IdedExpr) -> HashSet<u64> {
    let mut found = HashSet::new();
    let mut pending = vec![expr];
    while let Some(e) = pending.pop() {
        match &e.expr {
            Expr::Literal(LiteralValue::Int(i)) if *i.inner() < 0 => {
                found.insert(e.id);
            }
            Expr::Literal(LiteralValue::Double(d)) if d.inner().is_sign_negative() => {
                found.insert(e.id);
            }
            _ => pending.extend(children(e)),
        }
    }
    found
}

/// One error as cel-go's `Error.ToDisplayString` writes it.
fn display(source: &str, at: &Location, message: &str) -> String {
    let mut text = format!("ERROR: <input>:{}:{}: {message}", at.line, at.column + 1);
    let snippet = usize::try_from(at.line - 1).ok().and_then(|line| source.split('\n').nth(line));
    let Some(snippet) = snippet.filter(|s| s.len() <= MAX_SNIPPET) else { return text };
    let snippet = snippet.replace('\t', " ");
    text.push_str("\n | ");
    text.push_str(&snippet);
    text.push_str("\n | ");
    let mut chars = snippet.chars();
    for c in chars.by_ref().take(at.column.max(0) as usize) {
        text.push(if c.len_utf8() > 1 { '\u{FF0E}' } else { '.' });
    }
    text.push(if chars.next().is_some_and(|c| c.len_utf8() > 1) { '\u{FF3E}' } else { '^' });
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_shows_its_line_and_a_caret_under_its_column() {
        let at = Location { line: 1, column: 2 };
        assert_eq!(display("1 == 1u", &at, "m"), "ERROR: <input>:1:3: m\n | 1 == 1u\n | ..^");
        let at = Location { line: 2, column: 1 };
        assert_eq!(display("a +\n\tb", &at, "m"), "ERROR: <input>:2:2: m\n |  b\n | .^");
    }

    #[test]
    fn multi_byte_characters_take_full_width_dots_and_caret() {
        let at = Location { line: 1, column: 1 };
        assert_eq!(display("'é' + 1", &at, "m"), "ERROR: <input>:1:2: m\n | 'é' + 1\n | .\u{FF3E}");
        let at = Location { line: 1, column: 4 };
        assert_eq!(display("'é' + 1", &at, "m"), "ERROR: <input>:1:5: m\n | 'é' + 1\n | .\u{FF0E}..^");
    }

    #[test]
    fn an_error_without_a_position_has_no_snippet() {
        assert_eq!(display("x", &Location { line: -1, column: -1 }, "m"), "ERROR: <input>:-1:0: m");
    }
}
