//! Query parameters of resource requests: write options (`dryRun`, `fieldValidation`,
//! `fieldManager`), read options (`includeObject`, `pretty`) and, for later use by list and
//! watch, the raw pairs.
//!
//! Invalid option values are refused as the kube-apiserver refuses them: a 422 `Invalid` Status
//! about the options kind (`CreateOptions.meta.k8s.io ""`), naming the parameter.

use super::error::{Error, FieldError, Result};
use super::table::IncludeObject;

/// The decoded query string of one request. Unknown parameters are ignored, as by Kubernetes.
#[derive(Debug, Default, Clone)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses a raw query string (`a=1&b=2`); percent-decoding is applied.
    pub fn parse(raw: Option<&str>) -> Self {
        let pairs = raw
            .map(|q| form_urlencoded::parse(q.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
            .unwrap_or_default();
        Self { pairs }
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Every value of `name`, in order.
    pub fn all(&self, name: &str) -> impl Iterator<Item = &str> {
        self.pairs.iter().filter(move |(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// A boolean parameter: present with an empty value, `true` or `1` means true.
    pub fn flag(&self, name: &str) -> Result<bool> {
        match self.get(name) {
            None | Some("false") | Some("0") => Ok(false),
            Some("") | Some("true") | Some("1") => Ok(true),
            Some(other) => Err(Error::BadRequest(format!("invalid boolean value for {name}: {other:?}"))),
        }
    }

    /// `pretty=true` asks for indented JSON.
    pub fn pretty(&self) -> bool {
        self.flag("pretty").unwrap_or(false)
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
    /// Reads and validates the write options of `query`.
    pub fn parse(query: &Query, kind: OptionsKind) -> Result<Self> {
        let mut causes = Vec::new();
        let mut dry_run = false;
        for value in query.all("dryRun") {
            if value == "All" {
                dry_run = true;
            } else {
                causes.push(FieldError::not_supported("dryRun", &serde_json::json!(value), &["All"]));
            }
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
    fn dry_run_all_and_strict_validation_are_read() {
        let q = Query::parse(Some("dryRun=All&fieldValidation=Strict&fieldManager=kubectl-client-side-apply"));
        let opts = WriteOptions::parse(&q, OptionsKind::Create).unwrap();
        assert!(opts.dry_run);
        assert_eq!(opts.field_validation, FieldValidation::Strict);
        assert_eq!(opts.field_manager.as_deref(), Some("kubectl-client-side-apply"));
    }

    #[test]
    fn unknown_option_values_are_all_reported() {
        let q = Query::parse(Some("dryRun=Some&fieldValidation=Loose"));
        let err = WriteOptions::parse(&q, OptionsKind::Update).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::UNPROCESSABLE_ENTITY);
        let msg = err.to_string();
        assert!(
            msg.starts_with("UpdateOptions.meta.k8s.io \"\" is invalid: [dryRun: Unsupported value: \"Some\""),
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
