//! The API verbs, as the kube-apiserver names them. One enum drives the routes a resource
//! serves, discovery's verb lists, OpenAPI operations, authorization attributes and the `verb`
//! label of request metrics, so a verb is spelled once.

/// A verb of the Kubernetes API on a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET with `watch=true`, of a collection or one object.
    Watch,
    /// POST to a collection.
    Create,
    /// PUT of one object.
    Update,
    /// PATCH of one object.
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
}

impl Verb {
    /// Every verb, in the order discovery lists a custom resource's verbs (a resource that
    /// serves them all, as a CustomResourceDefinition does).
    pub const ALL: &'static [Verb] = &[
        Self::Create,
        Self::Delete,
        Self::DeleteCollection,
        Self::Get,
        Self::List,
        Self::Patch,
        Self::Update,
        Self::Watch,
    ];

    /// Whether the verb writes: create, update, patch, delete or deletecollection.
    pub const fn is_write(self) -> bool {
        !matches!(self, Self::Get | Self::List | Self::Watch)
    }

    /// The name in authorization attributes, RBAC rules and discovery.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::List => "list",
            Self::Watch => "watch",
            Self::Create => "create",
            Self::Update => "update",
            Self::Patch => "patch",
            Self::Delete => "delete",
            Self::DeleteCollection => "deletecollection",
        }
    }

    /// The `verb` label of request metrics, as the kube-apiserver's `apiserver_request_total`
    /// spells it (the HTTP method, except `LIST`, `WATCH` and `DELETECOLLECTION`).
    pub const fn metric_label(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::List => "LIST",
            Self::Watch => "WATCH",
            Self::Create => "POST",
            Self::Update => "PUT",
            Self::Patch => "PATCH",
            Self::Delete => "DELETE",
            Self::DeleteCollection => "DELETECOLLECTION",
        }
    }

    /// The `x-kubernetes-action` of the verb's OpenAPI operation.
    pub const fn openapi_action(self) -> &'static str {
        match self {
            Self::Create => "post",
            Self::Update => "put",
            other => other.as_str(),
        }
    }

    /// The verb of `method` on a collection (`named` false) or an object, as the kube-apiserver's
    /// `RequestInfoFactory` maps it; `None` for a method no verb maps to.
    pub fn of_request(method: &http::Method, named: bool, watch: bool) -> Option<Self> {
        Some(match (method.as_str(), named) {
            ("GET" | "HEAD", _) if watch => Self::Watch,
            ("GET" | "HEAD", false) => Self::List,
            ("GET" | "HEAD", true) => Self::Get,
            ("POST", _) => Self::Create,
            ("PUT", _) => Self::Update,
            ("PATCH", _) => Self::Patch,
            ("DELETE", false) => Self::DeleteCollection,
            ("DELETE", true) => Self::Delete,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Verb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
