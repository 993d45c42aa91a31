//! What the policy machinery reads of a kind of admission policy and its bindings
//! (k8s.io/apiserver's `PolicyAccessor` and `BindingAccessor`): ValidatingAdmissionPolicies
//! ([`Validating`]) and MutatingAdmissionPolicies ([`Mutating`]) are watched, matched and given
//! params the same way; only what their expressions do differs.

use super::compiled::{CompiledMutations, CompiledPolicy};
use k8s_openapi::api::admissionregistration::v1::{
    MatchResources, MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding, ParamKind, ParamRef,
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// A kind of admission policy and its bindings.
pub trait PolicyKind: Send + Sync + 'static {
    /// The policy's type.
    type Policy: kube::Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static;
    /// The binding's type.
    type Binding: kube::Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static;
    /// A policy's expressions, compiled.
    type Compiled: Send + Sync + 'static;

    /// The kind as denials name it (`ValidatingAdmissionPolicy`).
    const KIND: &'static str;

    /// The policy a binding names.
    fn policy_name(binding: &Self::Binding) -> Option<&str>;
    /// The policy's `paramKind`.
    fn param_kind(policy: &Self::Policy) -> Option<&ParamKind>;
    /// The policy's `matchConstraints`.
    fn match_constraints(policy: &Self::Policy) -> Option<&MatchResources>;
    /// The binding's `matchResources`.
    fn match_resources(binding: &Self::Binding) -> Option<&MatchResources>;
    /// The binding's `paramRef`.
    fn param_ref(binding: &Self::Binding) -> Option<&ParamRef>;
    /// Compiles every expression of `policy`.
    fn compile(policy: &Self::Policy) -> Self::Compiled;
}

/// ValidatingAdmissionPolicies.
pub struct Validating;

impl PolicyKind for Validating {
    type Policy = ValidatingAdmissionPolicy;
    type Binding = ValidatingAdmissionPolicyBinding;
    type Compiled = CompiledPolicy;
    const KIND: &'static str = "ValidatingAdmissionPolicy";

    fn policy_name(binding: &Self::Binding) -> Option<&str> {
        Some(binding.spec.policy_name.as_str())
    }

    fn param_kind(policy: &Self::Policy) -> Option<&ParamKind> {
        policy.spec.as_ref()?.param_kind.as_ref()
    }

    fn match_constraints(policy: &Self::Policy) -> Option<&MatchResources> {
        policy.spec.as_ref()?.match_constraints.as_ref()
    }

    fn match_resources(binding: &Self::Binding) -> Option<&MatchResources> {
        binding.spec.match_resources.as_ref()
    }

    fn param_ref(binding: &Self::Binding) -> Option<&ParamRef> {
        binding.spec.param_ref.as_ref()
    }

    fn compile(policy: &Self::Policy) -> CompiledPolicy {
        CompiledPolicy::compile(policy)
    }
}

/// MutatingAdmissionPolicies.
pub struct Mutating;

impl PolicyKind for Mutating {
    type Policy = MutatingAdmissionPolicy;
    type Binding = MutatingAdmissionPolicyBinding;
    type Compiled = CompiledMutations;
    const KIND: &'static str = "MutatingAdmissionPolicy";

    fn policy_name(binding: &Self::Binding) -> Option<&str> {
        binding.spec.as_ref()?.policy_name.as_deref()
    }

    fn param_kind(policy: &Self::Policy) -> Option<&ParamKind> {
        policy.spec.as_ref()?.param_kind.as_ref()
    }

    fn match_constraints(policy: &Self::Policy) -> Option<&MatchResources> {
        policy.spec.as_ref()?.match_constraints.as_ref()
    }

    fn match_resources(binding: &Self::Binding) -> Option<&MatchResources> {
        binding.spec.as_ref()?.match_resources.as_ref()
    }

    fn param_ref(binding: &Self::Binding) -> Option<&ParamRef> {
        binding.spec.as_ref()?.param_ref.as_ref()
    }

    fn compile(policy: &Self::Policy) -> CompiledMutations {
        CompiledMutations::compile(policy)
    }
}
