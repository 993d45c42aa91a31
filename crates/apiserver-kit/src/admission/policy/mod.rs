//! Admission policies, enforced for this server's writes as k8s.io/apiserver's
//! `MutatingAdmissionPolicy` and `ValidatingAdmissionPolicy` plugins enforce them for every
//! server built on it. Either kind ([`kind`]): the cluster's policies and bindings ([`sources`],
//! compiled once per change by [`compiled`]) decide which writes they apply to ([`matching`],
//! [`request`]); each binding's params ([`params`]) and the request's variables feed the
//! policy's expressions ([`evaluate`]), whose authorizer checks the server's delegated
//! authorization answers ([`authorizer`]). [`validating`] turns validations ([`validator`]) into
//! the binding's `validationActions`: a denial (`Deny`), a `Warning` header (`Warn`), an audit
//! annotation (`Audit`); [`mutating`] applies mutations to the object ([`patches`]).

pub mod authorizer;
pub mod compiled;
pub mod evaluate;
pub mod kind;
pub mod matching;
pub mod mutating;
pub mod params;
pub mod patches;
pub mod request;
pub mod sources;
pub mod validating;
pub mod validator;

pub use mutating::MutatingPolicies;
pub use validating::ValidatingPolicies;
