//! The admission step of a write, as the registry sees it: after the registry has decided what a
//! create, update or delete would store, and before it stores it, the cluster's admission
//! webhooks may change the object (mutating) and then refuse it (validating), as k8s.io/apiserver
//! runs its admission chain around the storage of every write.
//!
//! What calls the webhooks is behind [`Admission`] (in aggregated mode, `crate::admission`
//! implements it over the cluster's webhook configurations); without one, or when no webhook's
//! rules match a write ([`Admission::may_call`]), writes take their usual path with no admission
//! cost at all.

use super::error::Result;
use super::resource::{ResourceInfo, Subresource};
use super::user::UserInfo;
use super::version::Conversion;
use serde_json::Value;

/// The operation a request performs, as admission names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// An object is created (`CREATE`).
    Create,
    /// An object is updated, patched or applied (`UPDATE`).
    Update,
    /// An object is deleted (`DELETE`).
    Delete,
    /// A connect request to a subresource (`CONNECT`).
    Connect,
}

impl Operation {
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
            Self::Connect => "CONNECT",
        }
    }

    /// The kind of the options the operation takes (`CreateOptions`, …), as the review carries
    /// them.
    pub fn options_kind(self) -> &'static str {
        match self {
            Self::Create => "CreateOptions",
            Self::Update => "UpdateOptions",
            Self::Delete => "DeleteOptions",
            Self::Connect => "ConnectOptions",
        }
    }
}

/// What one write asks of admission, besides the objects.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// The resource written.
    pub resource: &'static ResourceInfo,
    /// Through which subresource.
    pub subresource: Subresource,
    /// What the write does (a patch or an apply of an existing object is an update).
    pub operation: Operation,
    /// The request's namespace.
    pub namespace: &'a str,
    /// The object's name; empty for a create that generates it.
    pub name: &'a str,
    /// Who writes.
    pub user: &'a UserInfo,
    /// Whether nothing will be stored.
    pub dry_run: bool,
    /// The operation's options as the review carries them (`meta.k8s.io/v1` CreateOptions,
    /// UpdateOptions or DeleteOptions).
    pub options: &'a Value,
    /// The version the request was made at (`v1alpha`).
    pub version: &'a str,
    /// Every version the resource is served at, the stored one first, with the conversions of
    /// its objects: the objects of [`Admission::mutate`] and [`Admission::validate`] are at the
    /// stored version, and a webhook sees them at the version it matched.
    pub versions: &'a [Conversion],
}

/// What the mutating webhooks did to an object.
#[derive(Debug, Default)]
pub struct Mutated {
    /// The object as they left it, when one of them changed it.
    pub object: Option<Value>,
    /// `Warning` header texts they sent.
    pub warnings: Vec<String>,
}

/// Where a write's admission happens.
#[async_trait::async_trait]
pub trait Admission: Send + Sync {
    /// Whether some webhook's rules may match `call` (its selectors are not looked at yet):
    /// when none does, the write skips admission.
    fn may_call(&self, call: &Call) -> bool;

    /// Whether some mutating step may match `call`: when none does, [`Admission::mutate`] is
    /// not called (and the objects are not prepared for it).
    fn may_mutate(&self, call: &Call) -> bool {
        self.may_call(call)
    }

    /// Runs the mutating webhooks `call` matches on `object` (the object a create or update
    /// would store; `None` for a delete) over `old` (the stored one; `None` for a create).
    async fn mutate(&self, call: &Call, object: Option<&Value>, old: Option<&Value>) -> Result<Mutated>;

    /// Runs the validating webhooks `call` matches, all at once; any refusal fails the write.
    /// Returns their warnings.
    async fn validate(&self, call: &Call, object: Option<&Value>, old: Option<&Value>) -> Result<Vec<String>>;
}

/// The options of `operation` as a review carries them: `dryRun` and `fieldManager` when set.
pub fn options(operation: Operation, dry_run: bool, field_manager: Option<&str>) -> Value {
    let mut options = serde_json::Map::new();
    options.insert("kind".into(), operation.options_kind().into());
    options.insert("apiVersion".into(), "meta.k8s.io/v1".into());
    if dry_run {
        options.insert("dryRun".into(), Value::Array(vec!["All".into()]));
    }
    if let Some(manager) = field_manager.filter(|m| !m.is_empty()) {
        options.insert("fieldManager".into(), manager.into());
    }
    Value::Object(options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_name_their_kind_and_carry_what_was_set() {
        assert_eq!(
            options(Operation::Create, false, None),
            json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"})
        );
        assert_eq!(
            options(Operation::Update, true, Some("kubectl")),
            json!({"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"], "fieldManager": "kubectl"})
        );
        assert_eq!(options(Operation::Delete, false, Some(""))["kind"], "DeleteOptions");
    }
}
