//! Why an expression failed to evaluate, worded as cel-go words it (`no such key: spec`,
//! `division by zero`, `operation cancelled: actual cost limit exceeded`).

use std::fmt;

/// An evaluation error: cel-go's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvalError {
    message: String,
    /// The evaluation ran out of its cost limit (it is cancelled, not an error of the value).
    pub cost_exceeded: bool,
}

impl EvalError {
    /// An error with cel-go's `message`.
    pub fn new(message: impl Into<String>) -> EvalError {
        EvalError { message: message.into(), cost_exceeded: false }
    }

    /// cel-go's error for a function or operator with no overload for its arguments' types.
    pub fn no_such_overload() -> EvalError {
        EvalError::new("no such overload")
    }

    /// A map without `key` (`no such key: spec`).
    pub fn no_such_key(key: &super::Value) -> EvalError {
        EvalError::new(format!("no such key: {}", key.display()))
    }

    /// A 64-bit integer result out of range.
    pub fn overflow() -> EvalError {
        EvalError::new("integer overflow")
    }

    /// The runtime cost passed the expression's limit.
    pub fn cost_limit_exceeded() -> EvalError {
        EvalError { message: "operation cancelled: actual cost limit exceeded".into(), cost_exceeded: true }
    }

    /// cel-go's message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EvalError {}

/// Why an expression does not compile: the parser's or checker's issues, as cel-go writes them
/// (`ERROR: <input>:1:5: ...` with the line and a caret), or why its program could not be
/// planned (cel-go's `program instantiation failed: ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError {
    /// The issues, one `ERROR: ...` each.
    pub issues: String,
    /// The step that refused the expression.
    pub stage: Stage,
}

/// The steps of compiling an expression, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Parsing (syntax, macros, nesting depth).
    Parse,
    /// Type checking and the checks cel-go runs on a checked expression (homogeneous literals,
    /// literal durations, timestamps and regular expressions).
    Check,
    /// Planning the program (cel-go's program instantiation: constant conversions).
    Plan,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.issues)
    }
}

impl std::error::Error for CompileError {}
