//! Llama at `farm.example.com/v1`, the preferred and storage version (the hub every other
//! version converts to and from): v1alpha's spec with the
//! colour moved into a `coat` that also has a `pattern` (see [`super::conversion`]).

use super::LlamaStatus;
use super::conversion::{self, COAT_ANNOTATION};
use crate::machinery::columns::{Column, ColumnType};
use crate::machinery::error::FieldError;
use crate::machinery::resource::ApiResource;
use crate::machinery::strategy::Strategy;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

/// The patterns a coat may have.
pub const PATTERNS: &[&str] = &["Solid", "Spotted", "Patched"];

/// LlamaSpec is the desired state of a Llama.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "farm.example.com",
    version = "v1",
    kind = "Llama",
    plural = "llamas",
    singular = "llama",
    shortname = "lm",
    category = "farm",
    namespaced,
    status = "LlamaStatus",
    selectable = ".spec.coat.color",
    derive = "PartialEq",
    doc = "Llama is a llama that lives on the farm. It is stored by farm-apiserver itself."
)]
#[serde(rename_all = "camelCase")]
pub struct LlamaSpec {
    /// Weight of the llama in kilograms. A finite number greater than 0.
    #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
    pub weight: f64,
    /// Height of the llama at the shoulder, in centimetres. A finite number greater than 0.
    #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
    pub height: f64,
    /// The llama's coat: its colour and pattern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coat: Option<Coat>,
}

/// Coat describes a llama's fleece.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Coat {
    /// Colour of the coat, free text (for example "white" or "brown and white"), not blank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = super::BLANK_COLOR)]
    pub color: Option<String>,
    /// Pattern of the coat: Solid, Spotted or Patched; a llama's for life, once given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["Solid", "Spotted", "Patched"]))]
    #[x_kube(validation = Rule::new("self == oldSelf")
        .message(Message::Expression("'a coat keeps its pattern for life: ' + oldSelf".into())))]
    pub pattern: Option<String>,
}

impl Llama {
    /// The coat's colour, when set.
    pub fn color(&self) -> Option<&str> {
        self.spec.coat.as_ref()?.color.as_deref()
    }
}

const COLUMNS: [Column<Llama>; 5] = [
    Column::computed("Weight", ColumnType::Number, super::WEIGHT, |l| l.spec.weight.into()),
    Column::computed("Height", ColumnType::Number, super::HEIGHT, |l| l.spec.height.into()),
    Column::computed("Ready", ColumnType::String, super::READY, |l| super::ready(l.status.as_ref())),
    Column::computed("Color", ColumnType::String, super::COLOR, |l: &Llama| super::text(l.color())).wide(),
    Column::computed("Pattern", ColumnType::String, "Pattern of the llama's coat.", |l: &Llama| {
        super::text(l.spec.coat.as_ref().and_then(|c| c.pattern.as_deref()))
    })
    .wide(),
];

impl Strategy for Llama {
    /// The spec's errors; the annotation that carries the coat at v1alpha is reserved to it.
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = validate_spec(&self.spec);
        if let Some(text) = self.metadata.annotations.as_ref().and_then(|a| a.get(COAT_ANNOTATION)) {
            let field = format!("metadata.annotations[{COAT_ANNOTATION}]");
            errors.push(FieldError::invalid(
                field,
                &serde_json::json!(text),
                "reserved for the v1alpha form of spec.coat",
            ));
        }
        errors
    }

    fn columns() -> Vec<Column<Self>> {
        COLUMNS.to_vec()
    }
}

impl ApiResource for Llama {
    /// Releases before v1 stored Llamas at v1alpha, under the same keys: those are converted.
    fn decode_stored(json: &[u8]) -> serde_json::Result<Self> {
        if Self::stored_current(json) {
            return serde_json::from_slice(json);
        }
        #[derive(serde::Deserialize)]
        struct Head<'a> {
            #[serde(rename = "apiVersion", borrow)]
            api_version: Option<std::borrow::Cow<'a, str>>,
        }
        let head: Head = serde_json::from_slice(json)?;
        if head.api_version.as_deref() != Some(conversion::V1ALPHA) {
            return serde_json::from_slice(json);
        }
        let object = conversion::to_v1(serde_json::from_slice(json)?).map_err(serde::de::Error::custom)?;
        serde_json::from_value(object)
    }

    /// What this release writes starts so (kube's derive puts apiVersion first).
    fn stored_current(json: &[u8]) -> bool {
        json.starts_with(br#"{"apiVersion":"farm.example.com/v1","#)
    }
}

/// Errors of a v1 spec: sizes finite and above 0, a known pattern.
pub fn validate_spec(spec: &LlamaSpec) -> Vec<FieldError> {
    let mut errors = super::validate_sizes(spec.weight, spec.height);
    if let Some(pattern) = spec.coat.as_ref().and_then(|c| c.pattern.as_deref())
        && !PATTERNS.contains(&pattern)
    {
        errors.push(FieldError::not_supported("spec.coat.pattern", &serde_json::json!(pattern), PATTERNS));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama(coat: Option<Coat>) -> Llama {
        Llama::new("dolly", LlamaSpec { weight: 120.0, height: 170.5, coat })
    }

    #[test]
    fn serializes_at_v1_with_the_coat() {
        let coat = Coat { color: Some("brown".into()), pattern: Some("Spotted".into()) };
        let value = serde_json::to_value(llama(Some(coat))).unwrap();
        assert_eq!(value["apiVersion"], "farm.example.com/v1");
        assert_eq!(value["spec"]["coat"], serde_json::json!({"color": "brown", "pattern": "Spotted"}));
        assert!(serde_json::to_value(llama(None)).unwrap()["spec"].get("coat").is_none());
    }

    #[test]
    fn a_pattern_outside_the_enum_is_not_supported_and_the_schema_says_so() {
        assert!(validate_spec(&llama(Some(Coat { color: None, pattern: Some("Solid".into()) })).spec).is_empty());
        let errors = validate_spec(&llama(Some(Coat { color: None, pattern: Some("Striped".into()) })).spec);
        assert_eq!(
            errors[0].to_string(),
            "spec.coat.pattern: Unsupported value: \"Striped\": supported values: \"Solid\", \"Spotted\", \"Patched\""
        );
        let schema = &crate::machinery::resource::body_schema::<Llama>().properties["spec"];
        assert_eq!(schema["properties"]["coat"]["properties"]["pattern"]["enum"], serde_json::json!(PATTERNS));
    }

    #[test]
    fn a_coat_keeps_its_pattern_and_a_colour_is_not_blank() {
        let rules = crate::validation_rules::of::<Llama>();
        assert_eq!(rules.problems(), [] as [String; 0]);
        let value = |coat: Coat| serde_json::to_value(llama(Some(coat))).unwrap();
        let spotted = value(Coat { color: Some("white".into()), pattern: Some("Spotted".into()) });
        let solid = value(Coat { color: Some(" ".into()), pattern: Some("Solid".into()) });
        let errors: Vec<String> = rules.validate(&solid, Some(&spotted)).errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            errors,
            [
                "spec.coat.color: Invalid value: \" \": must not be blank",
                "spec.coat.pattern: Invalid value: \"Solid\": a coat keeps its pattern for life: Spotted",
            ]
        );
        assert!(rules.validate(&solid, None).errors.len() == 1, "a create has no pattern to keep");
        let unpatterned = value(Coat { color: Some("white".into()), pattern: None });
        assert!(rules.validate(&spotted, Some(&unpatterned)).errors.is_empty(), "a pattern may be given later");
    }

    #[test]
    fn sizes_are_checked_as_at_v1alpha() {
        let mut spec = llama(None).spec;
        spec.weight = 0.0;
        assert_eq!(validate_spec(&spec)[0].field, "spec.weight");
    }
}
