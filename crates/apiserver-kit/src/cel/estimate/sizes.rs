//! What the estimator knows of a subexpression's size (cel-go's `computeSize`,
//! `computeEntrySize` and the scopes of comprehension variables): a size found before, a
//! literal's, the environment's for a field path from a variable, 1 for a scalar type, a
//! comprehension variable's; and the sizes of a list's or map's entries.

use super::Operand;
use super::coster::{Coster, Iterated};
use super::path::Path;
use super::range::Estimate;
use crate::cel::decls::CelType;
use cel::common::ast::{Expr, IdedExpr, LiteralValue};
use std::sync::Arc;

/// A comprehension variable: the path of what it holds, and its size and its entries' when
/// known.
#[derive(Clone, Debug)]
pub(crate) struct Local {
    pub path: Path,
    pub size: Option<Estimate>,
    pub entry: Option<EntrySize>,
}

/// The sizes of the keys (a list's indexes) and values of a list or map expression.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EntrySize {
    pub list: bool,
    pub key: Estimate,
    pub value: Estimate,
}

impl EntrySize {
    /// Both entries' sizes covered (`nil` when either is unknown).
    pub fn union(a: Option<EntrySize>, b: Option<EntrySize>) -> Option<EntrySize> {
        let (a, b) = (a?, b?);
        Some(EntrySize { list: a.list, key: a.key.union(b.key), value: a.value.union(b.value) })
    }
}

impl Coster<'_> {
    pub(super) fn peek(&self, name: &str) -> Option<&Local> {
        self.locals.get(name).and_then(|stack| stack.last())
    }

    pub(super) fn pop(&mut self, name: &str) {
        if let Some(stack) = self.locals.get_mut(name) {
            stack.pop();
        }
    }

    fn push(&mut self, name: &str, local: Local) {
        self.locals.entry(name.to_string()).or_default().push(local);
    }

    /// An accumulator or a binding, of `init`'s path, size and entries.
    pub(super) fn push_local(&mut self, name: &str, init: &IdedExpr) {
        let (path, entry) = (self.path_of(init), self.entry_size(init));
        let size = self.size(init);
        self.push(name, Local { path, size, entry });
    }

    /// An iteration variable over `range` (`pushIterKey`, `pushIterValue`, `pushIterSingle`).
    pub(super) fn push_iteration(&mut self, name: &str, range: &IdedExpr, iterated: Iterated) {
        let entry = self.entry_size(range);
        let list = match entry {
            Some(entry) => entry.list,
            None => matches!(self.type_of(range), CelType::List(_)),
        };
        let (within, size) = match (iterated, list) {
            (Iterated::Key, true) => ("@indices", entry.map(|e| e.key)),
            (Iterated::Key | Iterated::Single, false) => ("@keys", entry.map(|e| e.key)),
            (Iterated::Value | Iterated::Single, true) => ("@items", entry.map(|e| e.value)),
            (Iterated::Value, false) => ("@values", entry.map(|e| e.value)),
        };
        let path = self.path_of(range).append(within);
        self.push(name, Local { path, size, entry: None });
    }

    /// `e`'s field path from a variable (empty when it has none).
    pub(super) fn path_of(&self, e: &IdedExpr) -> Path {
        if let Expr::Ident(name) = &e.expr
            && let Some(local) = self.peek(name)
        {
            return local.path.clone();
        }
        self.paths.get(&e.id).cloned().unwrap_or_default()
    }

    /// `e`'s size, if anything tells it (`computeSize`).
    pub(super) fn size(&mut self, e: &IdedExpr) -> Option<Estimate> {
        if let Some(size) = self.computed.get(&e.id) {
            return Some(*size);
        }
        if let Some(size) = literal_size(e) {
            return Some(size);
        }
        let path = self.path_of(e);
        if let Some(size) = self.estimated(&path.names()) {
            self.computed.insert(e.id, size);
            return Some(size);
        }
        if is_scalar(&self.type_of(e)) {
            return Some(Estimate::fixed(1));
        }
        match &e.expr {
            Expr::Ident(name) => self.peek(name).and_then(|local| local.size),
            _ => None,
        }
    }

    pub(super) fn size_or_unknown(&mut self, e: &IdedExpr) -> Estimate {
        self.size(e).unwrap_or(Estimate::UNKNOWN)
    }

    /// The environment's size of what `path` reaches, none for no path.
    pub(super) fn estimated(&self, path: &[Arc<str>]) -> Option<Estimate> {
        if path.is_empty() { None } else { self.sizes.size(path) }
    }

    /// An operand's size as the libraries' estimators read it: the size its expression tells,
    /// else the environment's for its path, else unknown.
    pub(super) fn operand_size(&self, operand: &Operand<'_>) -> Estimate {
        operand.computed.or_else(|| self.estimated(&operand.path.names())).unwrap_or(Estimate::UNKNOWN)
    }

    /// The sizes of `e`'s entries, if known (`computeEntrySize`).
    pub(super) fn entry_size(&self, e: &IdedExpr) -> Option<EntrySize> {
        if let Some(entry) = self.entries.get(&e.id) {
            return Some(*entry);
        }
        match &e.expr {
            Expr::Ident(name) => self.peek(name).and_then(|local| local.entry),
            _ => None,
        }
    }

    /// `src`'s sizes are `dst`'s too.
    pub(super) fn copy_sizes(&mut self, dst: &IdedExpr, src: &IdedExpr) {
        if let Some(size) = self.size(src) {
            self.computed.insert(dst.id, size);
        }
        if let Some(entry) = self.entry_size(src) {
            self.entries.insert(dst.id, entry);
        }
    }
}

/// A literal's size, or a list's or map's literal count (`computeExprSize`).
fn literal_size(e: &IdedExpr) -> Option<Estimate> {
    let n = match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => s.inner().chars().count() as u64,
        Expr::Literal(LiteralValue::Bytes(b)) => b.inner().len() as u64,
        Expr::Literal(_) => 1,
        Expr::List(list) => list.elements.len() as u64,
        Expr::Map(map) => map.entries.len() as u64,
        _ => return None,
    };
    Some(Estimate::fixed(n))
}

/// Whether values of `t` have a size of 1 (`isScalar`).
pub(crate) fn is_scalar(t: &CelType) -> bool {
    use CelType::*;
    match t {
        Bool | Double | Duration | Int | Timestamp | Uint => true,
        Opaque(name, parameters) if &**name == "optional_type" => parameters.first().is_some_and(is_scalar),
        _ => false,
    }
}
