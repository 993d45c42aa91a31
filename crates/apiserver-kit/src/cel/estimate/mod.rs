//! Static cost estimation, as cel-go's `checker.Cost` estimates a checked expression with
//! Kubernetes' `CostEstimator` (k8s.io/apiserver's library/cost.go): the range of what an
//! expression may cost before it runs, from the sizes its inputs may have. The kube-apiserver
//! refuses a CustomResourceDefinition whose rules' estimated cost is over its limits
//! (crate::validation_rules says which sizes a schema allows).
//!
//! Layout: `range` (the arithmetic of size and cost ranges), `path` (field paths, shared as
//! Go slices are), `coster` (the walk of the
//! expression: identifiers, selections, literals, comprehensions), `sizes` (what is known of a
//! subexpression's size: its field path, its computed size, the comprehension variables),
//! `calls` (cel-go's cost of each call by overload id), `kubernetes` (Kubernetes' cost of its
//! libraries' functions by name), `extensions` (the lists and sets extensions' estimators).

mod calls;
mod coster;
mod extensions;
mod kubernetes;
mod path;
mod range;
mod sizes;

pub use range::Estimate;

use super::Program;
use super::decls::CelType;
use cel::common::ast::IdedExpr;
use std::sync::Arc;

/// What the environment knows of its variables' sizes: the size of what `path` reaches from a
/// variable (its name first, then field names, `@items`, `@keys`, `@values`), if known
/// (cel-go's `CostEstimator.EstimateSize`).
pub trait Sizes {
    /// The size of what `path` reaches, if known.
    fn size(&self, path: &[Arc<str>]) -> Option<Estimate>;
}

/// The estimated cost of running `program`, its variables' sizes told by `sizes`.
pub fn estimate(program: &Program, sizes: &dyn Sizes) -> Estimate {
    coster::Coster::new(&program.checked, sizes).cost(&program.parsed)
}

/// What an estimator reads of an operand of a call (cel-go's `AstNode`): its path from a
/// variable (empty when it has none), its type, its expression (none for a list's element)
/// and its size when the expression tells it.
#[derive(Clone, Debug)]
pub(crate) struct Operand<'e> {
    pub path: path::Path,
    pub t: CelType,
    pub expr: Option<&'e IdedExpr>,
    pub computed: Option<Estimate>,
}

impl Operand<'_> {
    /// A list's element, by the list's path (`@items` added) and its element type
    /// (Kubernetes' `listElementNode`), if it is a type with parameters.
    pub fn element(&self) -> Option<Operand<'static>> {
        let t = self.t.parameters().first().map(|t| (*t).clone())?;
        let mut names = self.path.names();
        if !names.is_empty() {
            names.push(Arc::from("@items"));
        }
        Some(Operand { path: path::Path::copied(names), t, expr: None, computed: None })
    }
}

/// A call's estimate: its cost, and the size of its result when it tells it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CallEstimate {
    pub cost: Estimate,
    pub size: Option<Estimate>,
}

impl CallEstimate {
    pub fn cost(cost: Estimate) -> CallEstimate {
        CallEstimate { cost, size: None }
    }

    pub fn sized(cost: Estimate, size: Estimate) -> CallEstimate {
        CallEstimate { cost, size: Some(size) }
    }
}

/// cel-go's cost constants (common/cost.go).
pub(crate) mod costs {
    pub const SELECT_AND_IDENT: u64 = 1;
    pub const LIST_CREATE: u64 = 10;
    pub const MAP_CREATE: u64 = 30;
    pub const STRUCT_CREATE: u64 = 40;
    pub const STRING_TRAVERSAL: f64 = 0.1;
    pub const REGEX_STRING_LENGTH: f64 = 0.25;
}

#[cfg(test)]
mod tests;
