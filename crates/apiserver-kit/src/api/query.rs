//! Query parameters of resource requests: write options (`dryRun`, `fieldValidation`,
//! `fieldManager`), read options (`includeObject`, `pretty`, which a human client's `User-Agent`
//! implies) and, for later use by list and watch, the raw pairs.
//!
//! Invalid option values are refused as the kube-apiserver refuses them: a 422 `Invalid` Status
//! about the options kind (`CreateOptions.meta.k8s.io ""`), naming the parameter.

use super::table::IncludeObject;
use crate::machinery::error::{Error, FieldError, Result};
use axum::http::{HeaderMap, header};

/// The decoded query string of one request. Unknown parameters are ignored, as by Kubernetes.
#[derive(Debug, Default, Clone)]
pub struct Query {
    pairs: Vec<(String, String)>,
    /// The client is a browser or a command-line HTTP tool ([`human_client`]).
    human_client: bool,
}

impl Query {
    /// Parses a raw query string (`a=1&b=2`); percent-decoding is applied.
    pub fn parse(raw: Option<&str>) -> Self {
        let pairs = raw
            .map(|q| form_urlencoded::parse(q.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
            .unwrap_or_default();
        Self { pairs, human_client: false }
    }

    /// [`Query::parse`] of a request's query, noting whether its client is a human's
    /// ([`human_client`]), for [`Query::pretty`].
    pub fn of_request(raw: Option<&str>, headers: &HeaderMap) -> Self {
        Self { human_client: human_client(headers), ..Self::parse(raw) }
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Every value of `name`, in order.
    pub fn all(&self, name: &str) -> impl Iterator<Item = &str> {
        self.pairs.iter().filter(move |(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// A boolean parameter, as apimachinery converts one: absent, `0` and `false` (in any case)
    /// are false, and any other value, even an empty or unknown one, is true.
    pub fn flag(&self, name: &str) -> bool {
        self.get(name).is_some_and(|value| value != "0" && !value.eq_ignore_ascii_case("false"))
    }

    /// Whether the answer is indented JSON, as the kube-apiserver decides it
    /// (`isPrettyPrint`, k8s.io/apiserver): a non-empty `pretty` says so as Go's
    /// `strconv.ParseBool` reads it (`pretty=yes` is false); without one, a human client
    /// ([`Query::of_request`]) gets indented JSON.
    pub fn pretty(&self) -> bool {
        match self.get("pretty") {
            Some(value) if !value.is_empty() => matches!(value, "1" | "t" | "T" | "true" | "TRUE" | "True"),
            _ => self.human_client,
        }
    }

    /// `includeObject` for Table responses.
    pub fn include_object(&self) -> Result<IncludeObject> {
        let raw = self.get("includeObject").unwrap_or("");
        IncludeObject::parse(raw).ok_or_else(|| {
            Error::BadRequest(format!(
                "includeObject: Unsupported value: {raw:?}: supported values: \"None\", \"Metadata\", \"Object\""
            ))
        })
    }
}

/// Whether the request comes from a browser or a command-line HTTP tool, whose users read the
/// answer: a `User-Agent` starting `curl`, `Wget` or `Mozilla/5.0`, as the kube-apiserver tells
/// them.
pub fn human_client(headers: &HeaderMap) -> bool {
    let agent = headers.get(header::USER_AGENT).map(|v| v.as_bytes()).unwrap_or_default();
    [&b"curl"[..], b"Wget", b"Mozilla/5.0"].iter().any(|prefix| agent.starts_with(prefix))
}

/// How unknown and duplicate fields in a body are treated (`fieldValidation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Dropped silently.
    Ignore,
    /// Dropped, with a `Warning` header naming each (the server default).
    #[default]
    Warn,
    /// The request fails with 400 naming every unknown field.
    Strict,
}

/// Which options kind a write request carries; it names the kind in option errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionsKind {
    /// POST
    Create,
    /// PUT
    Update,
    /// PATCH
    Patch,
    /// DELETE
    Delete,
}

impl OptionsKind {
    fn kind(self) -> &'static str {
        match self {
            Self::Create => "CreateOptions",
            Self::Update => "UpdateOptions",
            Self::Patch => "PatchOptions",
            Self::Delete => "DeleteOptions",
        }
    }

    /// A 422 about these options.
    pub fn invalid(self, causes: Vec<FieldError>) -> Error {
        Error::Invalid { kind: self.kind(), group: "meta.k8s.io", name: String::new(), causes }
    }
}

/// Options shared by create, update, patch and delete.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and answer, store nothing.
    pub dry_run: bool,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `fieldManager`, kept for when managed fields are tracked.
    pub field_manager: Option<String>,
}

impl WriteOptions {
    /// Reads and validates the write options of `query`, in apimachinery's order (`fieldManager`,
    /// `dryRun`, `fieldValidation`) after the `leading` causes the caller found (a patch's).
    pub fn parse(query: &Query, kind: OptionsKind, leading: Vec<FieldError>) -> Result<Self> {
        let mut causes = leading;
        let field_manager = query.get("fieldManager").map(str::to_string);
        if let Some(manager) = &field_manager {
            if manager.len() > 128 {
                causes.push(FieldError::too_long("fieldManager", 128));
            }
            if manager.chars().any(|c| c.is_control()) {
                causes.push(FieldError::invalid(
                    "fieldManager",
                    &serde_json::json!(manager),
                    "must only contain printable characters",
                ));
            }
        }
        let dry_runs: Vec<&str> = query.all("dryRun").collect();
        let dry_run = !dry_runs.is_empty();
        if dry_runs.iter().any(|value| *value != "All") {
            // As apimachinery shows the whole list: `Unsupported value: []string{"All", "bogus"}`.
            let mut cause = FieldError::not_supported("dryRun", &serde_json::Value::Null, &["All"]);
            cause.value = Some(crate::machinery::error::go_string_slice(&dry_runs));
            causes.push(cause);
        }
        let field_validation = match query.get("fieldValidation") {
            None | Some("") => FieldValidation::default(),
            Some("Ignore") => FieldValidation::Ignore,
            Some("Warn") => FieldValidation::Warn,
            Some("Strict") => FieldValidation::Strict,
            Some(other) => {
                causes.push(FieldError::not_supported(
                    "fieldValidation",
                    &serde_json::json!(other),
                    &["Ignore", "Warn", "Strict"],
                ));
                FieldValidation::default()
            }
        };
        if causes.is_empty() {
            Ok(Self { dry_run, field_validation, field_manager })
        } else {
            Err(kind.invalid(causes))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_is_read_as_the_kube_apiserver_reads_it() {
        let curl = HeaderMap::from_iter([(header::USER_AGENT, http::HeaderValue::from_static("curl/8.5.0"))]);
        let kubectl = HeaderMap::from_iter([(header::USER_AGENT, http::HeaderValue::from_static("kubectl/v1.32.0"))]);
        for (query, headers, pretty) in [
            ("", &kubectl, false),
            ("", &curl, true),
            ("pretty", &kubectl, false),
            ("pretty=", &curl, true),
            ("pretty=true", &kubectl, true),
            ("pretty=1", &kubectl, true),
            ("pretty=T", &kubectl, true),
            ("pretty=yes", &kubectl, false),
            ("pretty=yes", &curl, false),
            ("pretty=0", &curl, false),
            ("pretty=false&pretty=true", &kubectl, false),
        ] {
            assert_eq!(Query::of_request(Some(query), headers).pretty(), pretty, "{query} {headers:?}");
        }
        let browser = HeaderMap::from_iter([(header::USER_AGENT, http::HeaderValue::from_static("Mozilla/5.0 (X11)"))]);
        let wget = HeaderMap::from_iter([(header::USER_AGENT, http::HeaderValue::from_static("Wget/1.21"))]);
        assert!(human_client(&browser) && human_client(&wget) && !human_client(&HeaderMap::new()));
        assert!(!Query::parse(None).pretty(), "a query without its request knows no client");
    }

    #[test]
    fn export_is_refused_unless_its_first_value_is_false() {
        for refused in ["export=true", "export=1", "export=", "export=no", "export=true&export=false"] {
            let err = refuse_export(&Query::parse(Some(refused))).unwrap_err();
            assert_eq!(err.code(), http::StatusCode::BAD_REQUEST, "{refused}");
        }
        for kept in ["", "export=0", "export=False", "export=false&export=true", "exported=true"] {
            assert!(refuse_export(&Query::parse(Some(kept))).is_ok(), "{kept}");
        }
    }

    #[test]
    fn dry_run_all_and_strict_validation_are_read() {
        let q = Query::parse(Some("dryRun=All&fieldValidation=Strict&fieldManager=kubectl-client-side-apply"));
        let opts = WriteOptions::parse(&q, OptionsKind::Create, Vec::new()).unwrap();
        assert!(opts.dry_run);
        assert_eq!(opts.field_validation, FieldValidation::Strict);
        assert_eq!(opts.field_manager.as_deref(), Some("kubectl-client-side-apply"));
    }

    #[test]
    fn unknown_option_values_are_all_reported() {
        let q = Query::parse(Some("dryRun=Some&fieldValidation=Loose"));
        let err = WriteOptions::parse(&q, OptionsKind::Update, Vec::new()).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::UNPROCESSABLE_ENTITY);
        let msg = err.to_string();
        assert!(
            msg.starts_with(
                "UpdateOptions.meta.k8s.io \"\" is invalid: [dryRun: Unsupported value: []string{\"Some\"}"
            ),
            "{msg}"
        );
        assert!(msg.contains("fieldValidation: Unsupported value: \"Loose\""), "{msg}");
    }

    #[test]
    fn percent_encoding_is_decoded() {
        let q = Query::parse(Some("labelSelector=a%3Db%2Cc"));
        assert_eq!(q.get("labelSelector"), Some("a=b,c"));
    }
}

/// A GET of one object refuses `export` (400) unless its first value is false (`0` or `false`
/// in any case), as the kube-apiserver does since 1.21: it stripped fields until 1.20.
pub fn refuse_export(query: &Query) -> Result<()> {
    match query.get("export") {
        Some(value) if value != "0" && !value.eq_ignore_ascii_case("false") => {
            Err(Error::BadRequest("the export parameter, deprecated since v1.14, is no longer supported".into()))
        }
        _ => Ok(()),
    }
}

/// `resourceVersion` of a read: `None` when unset or empty, `Some(0)` for "0"; 400 when it is not
/// a revision.
pub fn resource_version(query: &Query) -> Result<Option<u64>> {
    match query.get("resourceVersion") {
        None | Some("") => Ok(None),
        Some(raw) => {
            raw.parse::<u64>().map(Some).map_err(|_| Error::BadRequest(format!("invalid resource version: {raw:?}")))
        }
    }
}

/// `resourceVersionMatch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceVersionMatch {
    /// Data at least as new as `resourceVersion`.
    NotOlderThan,
    /// Data exactly at `resourceVersion`.
    Exact,
}

/// Options of list, watch and deletecollection requests, validated as `ValidateListOptions` does.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// `labelSelector`.
    pub label_selector: crate::machinery::selector::LabelSelector,
    /// `fieldSelector`.
    pub field_selector: crate::machinery::selector::FieldSelector,
    /// `limit`, when positive.
    pub limit: Option<usize>,
    /// `continue`, raw.
    pub continue_token: Option<String>,
    /// `resourceVersion`: `None` when unset, `Some(0)` for "0".
    pub resource_version: Option<u64>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `watch`.
    pub watch: bool,
    /// `allowWatchBookmarks`.
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents`, when given.
    pub send_initial_events: Option<bool>,
    /// `timeoutSeconds`, when given and positive.
    pub timeout_seconds: Option<u64>,
}

impl ListOptions {
    /// Reads, defaults and validates list options; `fields` are the resource's selectable fields
    /// besides `metadata.name` and `metadata.namespace`.
    pub fn parse(query: &Query, fields: &[&str]) -> Result<Self> {
        let (mut options, unsupported, unparsable_resource_version) = Self::read(query)?;
        let given = query.get("resourceVersionMatch").is_some_and(|m| !m.is_empty());
        let raw_resource_version = query.get("resourceVersion").unwrap_or_default();
        // `SetListOptionsDefaults` with WatchList on (the default since Kubernetes 1.32): a watch
        // from no resourceVersion, or 0, that names neither is a watch list.
        if options.watch && !given && options.send_initial_events.is_none() && matches!(raw_resource_version, "" | "0")
        {
            options.send_initial_events = Some(true);
            options.resource_version_match = Some(ResourceVersionMatch::NotOlderThan);
        }
        let causes = if options.watch {
            options.watch_violations(given, query.get("resourceVersionMatch").unwrap_or_default())
        } else {
            options.list_violations(given, unsupported, !raw_resource_version.is_empty())
        };
        if !causes.is_empty() {
            return Err(Error::Invalid { kind: "ListOptions", group: "meta.k8s.io", name: String::new(), causes });
        }
        // Which fields the resource selects by is asked once the options are valid; the storage
        // reads the resourceVersion after that.
        options.field_selector.check_fields(fields)?;
        if let Some(error) = unparsable_resource_version {
            return Err(error);
        }
        if options.continue_token.is_some() && options.resource_version.is_some_and(|rv| rv != 0) {
            return Err(Error::BadRequest("specifying resource version is not allowed when using continue".into()));
        }
        Ok(options)
    }

    /// Each option's value, the cause of an unsupported `resourceVersionMatch`, and why the
    /// `resourceVersion` does not parse (which the kube-apiserver finds only once the options
    /// are validated).
    fn read(query: &Query) -> Result<(Self, Option<FieldError>, Option<Error>)> {
        let label_selector =
            crate::machinery::selector::parse_label_selector(query.get("labelSelector").unwrap_or(""))?;
        let field_selector =
            crate::machinery::selector::parse_field_selector_syntax(query.get("fieldSelector").unwrap_or(""))?;
        let number = |name: &str| -> Result<Option<i64>> {
            // An empty value is as invalid as any other non-number (Go's strconv.ParseInt).
            match query.get(name) {
                None => Ok(None),
                Some(raw) => raw
                    .parse::<i64>()
                    .map(Some)
                    .map_err(|_| Error::BadRequest(format!("invalid value for {name}: {raw:?}: must be an integer"))),
            }
        };
        let limit = number("limit")?.filter(|l| *l > 0).map(|l| l as usize);
        let timeout_seconds = number("timeoutSeconds")?.filter(|t| *t > 0).map(|t| t as u64);
        let (resource_version, unparsable_resource_version) = match resource_version(query) {
            Ok(rv) => (rv, None),
            Err(error) => (None, Some(error)),
        };
        let watch = query.flag("watch");
        let allow_watch_bookmarks = query.flag("allowWatchBookmarks");
        let send_initial_events = query.get("sendInitialEvents").map(|_| query.flag("sendInitialEvents"));
        let mut unsupported = None;
        let resource_version_match = match query.get("resourceVersionMatch") {
            None | Some("") => None,
            Some("NotOlderThan") => Some(ResourceVersionMatch::NotOlderThan),
            Some("Exact") => Some(ResourceVersionMatch::Exact),
            Some(other) => {
                // As apimachinery lists them, the empty value (no match rule) included.
                let supported = &["Exact", "NotOlderThan", ""];
                unsupported =
                    Some(FieldError::not_supported("resourceVersionMatch", &serde_json::json!(other), supported));
                None
            }
        };
        let options = Self {
            label_selector,
            field_selector,
            limit,
            continue_token: query.get("continue").filter(|c| !c.is_empty()).map(str::to_string),
            resource_version,
            resource_version_match,
            watch,
            allow_watch_bookmarks,
            send_initial_events,
            timeout_seconds,
        };
        Ok((options, unsupported, unparsable_resource_version))
    }

    /// What is wrong with the options of a list, in apimachinery's order (`ValidateListOptions`):
    /// where a given `resourceVersionMatch` may not be used, its value (`unsupported`), and
    /// `sendInitialEvents`, which is for watches.
    fn list_violations(
        &self,
        given: bool,
        unsupported: Option<FieldError>,
        resource_version_given: bool,
    ) -> Vec<FieldError> {
        let forbidden = |message: &str| FieldError::forbidden("resourceVersionMatch", message);
        let mut causes = Vec::new();
        if given {
            if !resource_version_given {
                causes.push(forbidden("resourceVersionMatch is forbidden unless resourceVersion is provided"));
            }
            if self.continue_token.is_some() {
                causes.push(forbidden("resourceVersionMatch is forbidden when continue is provided"));
            }
            causes.extend(unsupported);
            if self.resource_version_match == Some(ResourceVersionMatch::Exact) && self.resource_version == Some(0) {
                causes.push(forbidden("resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
            }
        }
        if self.send_initial_events.is_some() {
            causes.push(FieldError::forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
        }
        causes
    }

    /// What is wrong with the options of a watch, defaults applied (`validateWatchOptions`):
    /// `sendInitialEvents` wants `resourceVersionMatch=NotOlderThan`, which wants it in turn and
    /// no `continue`.
    fn watch_violations(&self, given: bool, raw_match: &str) -> Vec<FieldError> {
        let forbidden = |message: &str| FieldError::forbidden("resourceVersionMatch", message);
        let not_older_than = self.resource_version_match == Some(ResourceVersionMatch::NotOlderThan);
        let mut causes = Vec::new();
        if self.send_initial_events.is_some() && !not_older_than {
            causes.push(forbidden("sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
        }
        if given || self.resource_version_match.is_some() {
            if self.send_initial_events.is_none() {
                causes.push(forbidden(
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if !not_older_than {
                causes.push(FieldError::not_supported(
                    "resourceVersionMatch",
                    &serde_json::json!(raw_match),
                    &["NotOlderThan"],
                ));
            }
            if self.continue_token.is_some() {
                causes.push(forbidden("resourceVersionMatch is forbidden when continue is provided"));
            }
        }
        causes
    }

    /// Whether any selector restricts the result.
    pub fn has_selectors(&self) -> bool {
        !self.label_selector.is_empty() || !self.field_selector.is_empty()
    }
}

#[cfg(test)]
mod list_tests {
    use super::*;

    fn parse(q: &str) -> Result<ListOptions> {
        ListOptions::parse(&Query::parse(Some(q)), &[])
    }

    #[test]
    fn streaming_list_options_are_accepted() {
        let o =
            parse("watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true").unwrap();
        assert_eq!(o.send_initial_events, Some(true));
        assert_eq!(o.resource_version, None);
    }

    #[test]
    fn a_watch_from_no_resource_version_or_zero_is_a_watch_list() {
        for q in ["watch=true", "watch=true&resourceVersion=0&allowWatchBookmarks=true"] {
            let o = parse(q).unwrap();
            assert_eq!(
                (o.send_initial_events, o.resource_version_match),
                (Some(true), Some(ResourceVersionMatch::NotOlderThan)),
                "{q}"
            );
        }
        for q in [
            "watch=true&resourceVersion=7",
            "watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan",
            "limit=1",
        ] {
            assert_ne!(parse(q).unwrap().send_initial_events, Some(true), "{q}");
        }
        // Defaulted, it refuses what a watch list refuses.
        let err = parse("watch=true&continue=abc").unwrap_err();
        assert_eq!(
            err.to_string(),
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided"
        );
        let Error::Invalid { causes, .. } =
            parse("watch=true&resourceVersion=5&resourceVersionMatch=Exact").unwrap_err()
        else {
            panic!()
        };
        let shown: Vec<String> = causes.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                "resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"",
            ]
        );
    }

    #[test]
    fn inconsistent_resource_version_options_are_invalid() {
        for q in [
            "resourceVersionMatch=Exact",
            "resourceVersion=0&resourceVersionMatch=Exact",
            "resourceVersion=5&resourceVersionMatch=Sometimes",
            "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
            "watch=true&sendInitialEvents=true&allowWatchBookmarks=true",
            "watch=true&resourceVersion=4&resourceVersionMatch=NotOlderThan",
        ] {
            let err = parse(q).unwrap_err();
            assert_eq!(err.code(), 422, "{q}");
            assert!(err.to_string().starts_with("ListOptions.meta.k8s.io"), "{q}: {err}");
        }
    }

    #[test]
    fn options_are_validated_before_the_resource_version_is_read() {
        // apimachinery validates the options (422); the storage parses the resourceVersion later.
        assert_eq!(parse("resourceVersion=bogus&resourceVersionMatch=bogus").unwrap_err().code(), 422);
        assert_eq!(parse("resourceVersion=bogus&resourceVersionMatch=NotOlderThan").unwrap_err().code(), 400);
        assert_eq!(parse("resourceVersion=bogus&fieldSelector=bogus%3Dx").unwrap_err().code(), 400);
        let err = parse("resourceVersion=bogus").unwrap_err();
        assert_eq!(err.to_string(), "invalid resource version: \"bogus\"");
    }

    #[test]
    fn malformed_numbers_are_bad_requests() {
        assert_eq!(parse("limit=ten").unwrap_err().code(), 400);
        assert_eq!(parse("resourceVersion=abc").unwrap_err().code(), 400);
        assert_eq!(parse("timeoutSeconds=x").unwrap_err().code(), 400);
        assert_eq!(parse("continue=abc&resourceVersion=5").unwrap_err().code(), 400);
        assert_eq!(parse("limit=0").unwrap().limit, None);
    }
}
