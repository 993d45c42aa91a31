//! What a request asks to do, in the terms of a SubjectAccessReview: the verb mapping and the
//! namespace, resource, name and subresource of resource requests, or the path of non-resource
//! requests, as the kube-apiserver's `RequestInfoFactory` derives them.

use crate::api::query::Query;
use crate::machinery::verb::Verb;

/// The authorization attributes of one request.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Attributes {
    /// A request for an API resource.
    Resource {
        /// get, list, watch, create, update, patch, delete or deletecollection.
        verb: String,
        /// API group.
        group: String,
        /// API version.
        version: String,
        /// Plural resource.
        resource: String,
        /// Subresource, if any.
        subresource: String,
        /// Namespace, if any.
        namespace: String,
        /// Object name, if any (for list/watch from a `metadata.name` field selector).
        name: String,
    },
    /// Anything else (discovery, OpenAPI, version).
    NonResource {
        /// The lower-case HTTP method.
        verb: String,
        /// The path.
        path: String,
    },
}

/// The parts of a resource request's path (`/apis/<group>/<version>/[namespaces/<ns>/]<resource>
/// [/<name>[/<subresource>]]`, or `/api/<version>/…` for the core group), borrowed from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourcePath<'a> {
    /// API group (empty for the core group).
    pub group: &'a str,
    /// API version.
    pub version: &'a str,
    /// Namespace, or empty.
    pub namespace: &'a str,
    /// Plural resource.
    pub resource: &'a str,
    /// Object name, or empty.
    pub name: &'a str,
    /// Subresource, or empty.
    pub subresource: &'a str,
}

/// The resource parts of `path`; `None` for a non-resource path. Allocates nothing, so the
/// request metrics can call it on every request.
pub fn resource_path(path: &str) -> Option<ResourcePath<'_>> {
    let mut parts = path.split('/').filter(|p| !p.is_empty());
    let (group, version) = match parts.next()? {
        "apis" => (parts.next()?, parts.next()?),
        "api" => ("", parts.next()?),
        _ => return None,
    };
    let (namespace, resource, name) = match (parts.next()?, parts.next()) {
        // `namespaces/<ns>` alone is the namespace object itself.
        ("namespaces", Some(ns)) => match parts.next() {
            Some(resource) => (ns, resource, parts.next()),
            None => ("", "namespaces", Some(ns)),
        },
        (resource, name) => ("", resource, name),
    };
    let subresource = parts.next();
    Some(ResourcePath {
        group,
        version,
        namespace,
        resource,
        name: name.unwrap_or_default(),
        subresource: subresource.unwrap_or_default(),
    })
}

/// Derives the attributes of `method` on `path` with `query`.
pub fn attributes(method: &http::Method, path: &str, query: &Query) -> Attributes {
    let Some(ResourcePath { group, version, namespace, resource, name, subresource }) = resource_path(path) else {
        return non_resource(method, path);
    };
    let watch = query.flag("watch");
    let Some(verb) = Verb::of_request(method, !name.is_empty(), watch) else {
        return non_resource(method, path);
    };
    // A list or watch of one object by name is authorized as that object.
    let name = if name.is_empty() && matches!(verb, Verb::List | Verb::Watch) {
        query
            .get("fieldSelector")
            .and_then(|fs| crate::machinery::selector::parse_field_selector(fs, &[]).ok())
            .and_then(|fs| fs.exact("metadata.name").map(str::to_string))
            .unwrap_or_default()
    } else {
        name.to_string()
    };
    Attributes::Resource {
        verb: verb.as_str().into(),
        group: group.into(),
        version: version.into(),
        resource: resource.into(),
        subresource: subresource.into(),
        namespace: namespace.into(),
        name,
    }
}

fn non_resource(method: &http::Method, path: &str) -> Attributes {
    Attributes::NonResource { verb: method.as_str().to_ascii_lowercase(), path: path.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_paths_split_as_the_kube_apiserver_splits_them() {
        let p =
            |path| resource_path(path).map(|r| (r.group, r.version, r.namespace, r.resource, r.name, r.subresource));
        assert_eq!(
            p("/apis/test.example.com/v1alpha/namespaces/a/widgets/x/status"),
            Some(("test.example.com", "v1alpha", "a", "widgets", "x", "status"))
        );
        assert_eq!(
            p("/apis/test.example.com/v1alpha/widgets"),
            Some(("test.example.com", "v1alpha", "", "widgets", "", ""))
        );
        // A cluster-scoped resource's object and subresource: no namespace.
        assert_eq!(
            p("/apis/test.example.com/v1/gadgets/x/status"),
            Some(("test.example.com", "v1", "", "gadgets", "x", "status"))
        );
        assert_eq!(p("/api/v1/namespaces/a"), Some(("", "v1", "", "namespaces", "a", "")));
        assert_eq!(p("/api/v1/pods/"), Some(("", "v1", "", "pods", "", "")));
        assert_eq!(p("/apis/test.example.com/v1alpha"), None);
        assert_eq!(p("/api/v1"), None);
        assert_eq!(p("/metrics"), None);
    }

    fn of(method: &str, path: &str, query: &str) -> Attributes {
        attributes(&method.parse().unwrap(), path, &Query::parse(Some(query)))
    }

    fn verb(a: &Attributes) -> &str {
        match a {
            Attributes::Resource { verb, .. } | Attributes::NonResource { verb, .. } => verb,
        }
    }

    #[test]
    fn verbs_map_as_on_the_kube_apiserver() {
        let ns = "/apis/test.example.com/v1alpha/namespaces/a/widgets";
        let cases = [
            ("GET", ns, "", "list"),
            ("GET", ns, "watch=true", "watch"),
            ("GET", &format!("{ns}/dolly") as &str, "", "get"),
            ("GET", &format!("{ns}/dolly") as &str, "watch=1", "watch"),
            ("POST", ns, "", "create"),
            ("PUT", &format!("{ns}/dolly") as &str, "", "update"),
            ("PATCH", &format!("{ns}/dolly") as &str, "", "patch"),
            ("DELETE", &format!("{ns}/dolly") as &str, "", "delete"),
            ("DELETE", ns, "", "deletecollection"),
            ("GET", "/apis/test.example.com/v1alpha/widgets", "", "list"),
        ];
        for (method, path, query, want) in cases {
            assert_eq!(verb(&of(method, path, query)), want, "{method} {path}?{query}");
        }
    }

    #[test]
    fn namespace_name_and_subresource_are_extracted() {
        let a = of("GET", "/apis/test.example.com/v1alpha/namespaces/a/widgets/dolly/status", "");
        assert_eq!(
            a,
            Attributes::Resource {
                verb: "get".into(),
                group: "test.example.com".into(),
                version: "v1alpha".into(),
                resource: "widgets".into(),
                subresource: "status".into(),
                namespace: "a".into(),
                name: "dolly".into(),
            }
        );
        let Attributes::Resource { name, verb, .. } = of(
            "GET",
            "/apis/test.example.com/v1alpha/namespaces/a/widgets",
            "watch=true&fieldSelector=metadata.name%3Ddolly",
        ) else {
            panic!()
        };
        assert_eq!((verb.as_str(), name.as_str()), ("watch", "dolly"));
    }

    #[test]
    fn discovery_and_openapi_are_non_resource_requests() {
        for path in
            ["/apis", "/apis/test.example.com", "/apis/test.example.com/v1alpha", "/openapi/v2", "/version", "/api"]
        {
            assert_eq!(
                of("GET", path, ""),
                Attributes::NonResource { verb: "get".into(), path: path.into() },
                "{path}"
            );
        }
    }
}
