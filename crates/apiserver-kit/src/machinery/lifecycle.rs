//! Namespace lifecycle on create, as the kube-apiserver's `NamespaceLifecycle` admission plugin
//! (`k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle`) applies it to every namespaced
//! resource: nothing is created in a namespace that does not exist (404 `namespaces "x" not
//! found`) or that is being deleted (403 with a `NamespaceTerminating` cause), so a namespace's
//! deletion always finds all of its content. Updates, deletes and reads are never refused here,
//! and neither is anything in the namespaces that always exist.
//!
//! Where the namespaces come from is behind [`Namespaces`]: the cluster's, through a watch cache
//! (`crate::namespaces`), in aggregated mode; none at all standalone, where namespaces are just
//! names.

use super::error::{Error, GroupResource, Result};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::StatusCause;

/// A namespace's phase, as `Namespace.status.phase` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamespacePhase {
    /// Objects may be created in it.
    Active,
    /// Being deleted: its content is being removed, and nothing new may be created.
    Terminating,
}

/// Where the lifecycle check learns about namespaces.
#[async_trait::async_trait]
pub trait Namespaces: Send + Sync {
    /// The phase of `namespace`, or `None` when it does not exist; an error when nobody can tell.
    async fn phase(&self, namespace: &str) -> Result<Option<NamespacePhase>>;
}

/// Namespaces the kube-apiserver never lets anyone delete; creates in them are never refused.
pub const IMMORTAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

/// The resource of namespaces, for the 404.
const NAMESPACES: GroupResource = GroupResource { group: "", resource: "namespaces" };

/// Whether `name` of `resource` may be created in `namespace`.
pub async fn admit_create(
    namespaces: &dyn Namespaces,
    namespace: &str,
    resource: GroupResource,
    name: &str,
) -> Result<()> {
    if IMMORTAL_NAMESPACES.contains(&namespace) {
        return Ok(());
    }
    match namespaces.phase(namespace).await? {
        Some(NamespacePhase::Active) => Ok(()),
        None => Err(Error::NotFound { resource: NAMESPACES, name: namespace.to_string() }),
        Some(NamespacePhase::Terminating) => Err(Error::ForbiddenObject {
            resource,
            name: name.to_string(),
            detail: format!("unable to create new content in namespace {namespace} because it is being terminated"),
            causes: vec![StatusCause {
                reason: Some("NamespaceTerminating".into()),
                message: Some(format!("namespace {namespace} is being terminated")),
                field: Some("metadata.namespace".into()),
            }],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;

    #[async_trait::async_trait]
    impl Namespaces for Fixed {
        async fn phase(&self, namespace: &str) -> Result<Option<NamespacePhase>> {
            match namespace {
                "pasture" => Ok(Some(NamespacePhase::Active)),
                "leaving" => Ok(Some(NamespacePhase::Terminating)),
                "broken" => Err(Error::Internal("the cluster did not answer".into())),
                _ => Ok(None),
            }
        }
    }

    const WIDGETS: GroupResource = GroupResource { group: "test.example.com", resource: "widgets" };

    #[tokio::test]
    async fn creates_need_an_active_namespace() {
        assert!(admit_create(&Fixed, "pasture", WIDGETS, "dolly").await.is_ok());
        assert!(admit_create(&Fixed, "default", WIDGETS, "dolly").await.is_ok(), "immortal, never asked");
        let missing = admit_create(&Fixed, "nowhere", WIDGETS, "dolly").await.unwrap_err().to_status();
        assert_eq!(missing.code, Some(404));
        assert_eq!(missing.message.as_deref(), Some(r#"namespaces "nowhere" not found"#));
        let details = missing.details.unwrap();
        assert_eq!((details.kind.as_deref(), details.group), (Some("namespaces"), None));
        assert_eq!(admit_create(&Fixed, "broken", WIDGETS, "dolly").await.unwrap_err().code(), 500);
    }

    #[tokio::test]
    async fn a_terminating_namespace_refuses_with_the_kube_apiserver_s_words() {
        let status = admit_create(&Fixed, "leaving", WIDGETS, "dolly").await.unwrap_err().to_status();
        assert_eq!((status.code, status.reason.as_deref()), (Some(403), Some("Forbidden")));
        assert_eq!(
            status.message.as_deref(),
            Some(
                r#"widgets.test.example.com "dolly" is forbidden: unable to create new content in namespace leaving because it is being terminated"#
            )
        );
        let details = status.details.unwrap();
        assert_eq!(details.group.as_deref(), Some("test.example.com"));
        let cause = &details.causes.unwrap()[0];
        assert_eq!(cause.reason.as_deref(), Some("NamespaceTerminating"));
        assert_eq!(cause.field.as_deref(), Some("metadata.namespace"));
        let unnamed = admit_create(&Fixed, "leaving", WIDGETS, "").await.unwrap_err();
        assert!(unnamed.to_string().starts_with("widgets.test.example.com is forbidden: "), "{unnamed}");
    }
}
