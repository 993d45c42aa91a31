//! What a request asks to do, in the terms of a SubjectAccessReview: the verb mapping and the
//! namespace, resource, name and subresource of resource requests, or the path of non-resource
//! requests, as the kube-apiserver's `RequestInfoFactory` derives them.

use crate::api::query::Query;

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

/// Derives the attributes of `method` on `path` with `query`.
pub fn attributes(method: &http::Method, path: &str, query: &Query) -> Attributes {
    let parts: Vec<&str> = path.trim_matches('/').split('/').filter(|p| !p.is_empty()).collect();
    let (group, version, rest) = match parts.as_slice() {
        ["apis", group, version, rest @ ..] if !rest.is_empty() => (*group, *version, rest),
        ["api", version, rest @ ..] if !rest.is_empty() => ("", *version, rest),
        _ => return non_resource(method, path),
    };
    let (namespace, rest): (&str, &[&str]) = match rest {
        ["namespaces", ns, more @ ..] if !more.is_empty() => (ns, more),
        other => ("", other),
    };
    let resource = rest[0];
    let name = rest.get(1).copied().unwrap_or_default();
    let subresource = rest.get(2).copied().unwrap_or_default();
    let watch = query.flag("watch").unwrap_or(false);
    let verb = match (method.as_str(), name.is_empty()) {
        ("GET" | "HEAD", _) if watch => "watch",
        ("GET" | "HEAD", true) => "list",
        ("GET" | "HEAD", false) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "deletecollection",
        ("DELETE", false) => "delete",
        (other, _) => return Attributes::NonResource { verb: other.to_ascii_lowercase(), path: path.to_string() },
    };
    // A list or watch of one object by name is authorized as that object.
    let name = if name.is_empty() && (verb == "list" || verb == "watch") {
        query
            .get("fieldSelector")
            .and_then(|fs| super::super::api::selector::parse_field_selector(fs, &[]).ok())
            .and_then(|fs| fs.exact("metadata.name").map(str::to_string))
            .unwrap_or_default()
    } else {
        name.to_string()
    };
    Attributes::Resource {
        verb: verb.into(),
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
        let ns = "/apis/farm.example.com/v1alpha/namespaces/a/llamas";
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
            ("GET", "/apis/farm.example.com/v1alpha/llamas", "", "list"),
        ];
        for (method, path, query, want) in cases {
            assert_eq!(verb(&of(method, path, query)), want, "{method} {path}?{query}");
        }
    }

    #[test]
    fn namespace_name_and_subresource_are_extracted() {
        let a = of("GET", "/apis/farm.example.com/v1alpha/namespaces/a/llamas/dolly/status", "");
        assert_eq!(
            a,
            Attributes::Resource {
                verb: "get".into(),
                group: "farm.example.com".into(),
                version: "v1alpha".into(),
                resource: "llamas".into(),
                subresource: "status".into(),
                namespace: "a".into(),
                name: "dolly".into(),
            }
        );
        let Attributes::Resource { name, verb, .. } = of(
            "GET",
            "/apis/farm.example.com/v1alpha/namespaces/a/llamas",
            "watch=true&fieldSelector=metadata.name%3Ddolly",
        ) else {
            panic!()
        };
        assert_eq!((verb.as_str(), name.as_str()), ("watch", "dolly"));
    }

    #[test]
    fn discovery_and_openapi_are_non_resource_requests() {
        for path in
            ["/apis", "/apis/farm.example.com", "/apis/farm.example.com/v1alpha", "/openapi/v2", "/version", "/api"]
        {
            assert_eq!(
                of("GET", path, ""),
                Attributes::NonResource { verb: "get".into(), path: path.into() },
                "{path}"
            );
        }
    }
}
