//! CEL, the Common Expression Language, as the kube-apiserver evaluates it for admission
//! policies and schemas' validation rules: expressions parsed by the `cel` crate (cel-rust),
//! type-checked (as cel-go's checker does, against [`Declarations`] of the variables' types),
//! planned and evaluated here with cel-go's semantics, error messages and runtime cost, so that
//! a policy the cluster enforces for its own resources is enforced the same way for ours; its
//! cost is estimated before it runs as cel-go and Kubernetes estimate it ([`estimate`]).
//! tools/cel-oracle (k8s.io/apiserver's compiler) is the reference of the tests.

mod arithmetic;
pub mod authz;
mod checker;
mod collections;
mod conversions;
pub mod decls;
pub mod error;
pub mod estimate;
mod eval;
mod format;
mod formats;
mod functions;
mod kubernetes;
pub(crate) mod list_types;
mod lists;
mod macros;
pub mod mutation;
mod network;
pub mod objects;
mod overloads;
mod pricing;
mod program;
mod quantity;
mod semver;
mod strings;
mod timestamps;
mod urls;
pub mod value;

pub use decls::{CelType, Declarations, ObjectType};
pub use error::{CompileError, EvalError, Stage};
pub use eval::{Environment, Evaluation, LazyMap, PER_CALL_LIMIT, evaluate, evaluate_with};
pub use overloads::signatures;
pub use program::Program;
pub use value::{List, Map, Opaque, Type, Value};
