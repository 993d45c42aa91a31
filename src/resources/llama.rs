//! Llama: a namespaced resource kept in the server's own store.
//!
//! The spec carries the seed tutorial's `weight` and `height` (finite, greater than 0, required)
//! and an optional `color`. The status (`observedGeneration`, `conditions`) is written through the
//! `/status` subresource only, by a controller; users own the spec.
//!
//! This file is `farm.example.com/v1alpha`, deprecated and served from objects stored at [`v1`],
//! the next version, where the colour moved into a coat that also has a pattern; [`conversion`]
//! converts between the two.

pub mod conversion;
pub mod v1;

use crate::machinery::columns::{Column, ColumnType};
use crate::machinery::error::{Error, FieldError, Result};
use crate::machinery::resource::ApiResource;
use crate::machinery::stored::Stored;
use crate::machinery::strategy::Strategy;
use crate::machinery::version::Served;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

/// LlamaSpec is the desired state of a Llama.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "farm.example.com",
    version = "v1alpha",
    kind = "Llama",
    plural = "llamas",
    singular = "llama",
    shortname = "lm",
    category = "farm",
    namespaced,
    status = "LlamaStatus",
    selectable = ".spec.color",
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
    /// Colour of the llama's coat, free text (for example "white" or "brown and white"), not blank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = BLANK_COLOR)]
    pub color: Option<String>,
}

/// The validation rule of a colour, at both versions: not blank (a schema's `minLength` would
/// let spaces through).
pub(crate) const BLANK_COLOR: (&str, &str) = ("self.trim().size() > 0", "must not be blank");

/// LlamaStatus is the observed state of a Llama, written by its controller through `/status`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
// (A negative observedGeneration is the schema's to refuse: its `minimum` does not keep the rules
// from running, and the rule leaves it alone rather than report it twice.)
#[x_kube(validation = Rule::new(
    "!has(self.conditions) || !has(self.observedGeneration) || self.observedGeneration < 0 \
     || self.conditions.all(c, !has(c.observedGeneration) || c.observedGeneration <= self.observedGeneration)"
)
    .message("a condition cannot have observed a newer generation than the status")
    .field_path(".conditions"))]
pub struct LlamaStatus {
    /// The `metadata.generation` of the spec this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 0))]
    pub observed_generation: Option<i64>,
    /// The latest observations of the llama's state, one per `type` (e.g. `Ready`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::machinery::conditions::list_schema")]
    pub conditions: Vec<Condition>,
}

/// The descriptions of the columns both versions show: weight, height, readiness and colour.
const WEIGHT: &str = "Weight of the llama in kilograms.";
const HEIGHT: &str = "Height of the llama at the shoulder, in centimetres.";
const READY: &str =
    "The status of the llama's Ready condition (True, False or Unknown), empty until its controller has written one.";
const COLOR: &str = "Colour of the llama's coat.";

/// A text cell: null (kubectl prints `<none>`) when unset, as a CRD's printer column.
fn text(value: Option<&str>) -> serde_json::Value {
    value.map_or(serde_json::Value::Null, serde_json::Value::from)
}

/// The status of a Ready condition, a text cell.
fn ready(status: Option<&LlamaStatus>) -> serde_json::Value {
    text(status.and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready")).map(|c| c.status.as_str()))
}

const COLUMNS: [Column<Llama>; 4] = [
    Column::computed("Weight", ColumnType::Number, WEIGHT, |l| l.spec.weight.into()),
    Column::computed("Height", ColumnType::Number, HEIGHT, |l| l.spec.height.into()),
    Column::computed("Ready", ColumnType::String, READY, |l| ready(l.status.as_ref())),
    Column::computed("Color", ColumnType::String, COLOR, |l: &Llama| text(l.spec.color.as_deref())).wide(),
];

impl Llama {
    /// The condition of `type_` in the status, if the controller wrote one.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.status.as_ref()?.conditions.iter().find(|c| c.type_ == type_)
    }
}

/// Errors of a llama's sizes, the same at every version: each finite and greater than 0.
pub fn validate_sizes(weight: f64, height: f64) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (field, value) in [("spec.weight", weight), ("spec.height", height)] {
        if !value.is_finite() {
            errors.push(FieldError::invalid(field, &serde_json::json!(value.to_string()), "must be a finite number"));
        } else if value <= 0.0 {
            errors.push(FieldError::invalid(field, &serde_json::json!(value), "must be greater than 0"));
        }
    }
    errors
}

impl ApiResource for Llama {}

impl Strategy for Llama {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = validate_sizes(self.spec.weight, self.spec.height);
        errors.extend(conversion::annotation_error(self.metadata.annotations.as_ref()));
        errors
    }

    fn columns() -> Vec<Column<Self>> {
        COLUMNS.to_vec()
    }
}

/// The heads of both versions' encodings, up to metadata's brace (escaped).
const V1_HEAD: &[u8] = b"\x7b\"apiVersion\":\"farm.example.com/v1\",\"kind\":\"Llama\",\"metadata\":\x7b";
const V1ALPHA_HEAD: &[u8] = b"\x7b\"apiVersion\":\"farm.example.com/v1alpha\",\"kind\":\"Llama\",\"metadata\":\x7b";

/// The edit of a stored v1 llama's body that makes it v1alpha's under [`V1ALPHA_HEAD`] (`None`
/// inside for no coat), when its bytes allow it: the head is v1's, the coat a colour alone.
/// Read from the index where the colour sits, else found by a scan of the body.
fn spliced_coat(stored: &Stored<v1::Llama>) -> Option<Option<crate::machinery::stored::Edit<'_>>> {
    if stored.head() != V1_HEAD {
        return None;
    }
    let colour = stored.field_span("spec.coat.color");
    match colour.and_then(|colour| conversion::colour_alone_edit(stored.body(), colour)) {
        Some(edit) => Some(Some(edit)),
        None => conversion::coat_edit(stored.body()),
    }
}

/// v1alpha, served from the stored v1: converted on the way in and out.
impl Served<v1::Llama> for Llama {
    fn value_from_hub(object: serde_json::Value) -> Result<serde_json::Value> {
        Ok(conversion::to_v1alpha(object))
    }

    /// Written straight into a list's body, edited there when the bytes allow it.
    fn write_from_hub(stored: &std::sync::Arc<Stored<v1::Llama>>, out: &mut Vec<u8>) -> Result<()> {
        let spliced = match spliced_coat(stored) {
            Some(edit) => stored.write_json_with(out, V1ALPHA_HEAD, edit.as_ref()),
            None => false,
        };
        if !spliced {
            crate::machinery::version::through_values::<_, Self>(stored)?.write_json(out);
        }
        Ok(())
    }

    /// Most llamas convert by moving bytes ([`conversion::coat_edit`]); one whose coat needs
    /// the annotation, through JSON values.
    fn stored_from_hub(stored: &std::sync::Arc<Stored<v1::Llama>>) -> Result<std::sync::Arc<Stored<Self>>> {
        match spliced_coat(stored).and_then(|edit| stored.edited(V1ALPHA_HEAD, edit.as_ref())) {
            Some(converted) => Ok(std::sync::Arc::new(converted)),
            None => crate::machinery::version::through_values(stored),
        }
    }

    /// Fails only on a coat annotation that is not a JSON object (422).
    fn value_to_hub(object: serde_json::Value) -> Result<serde_json::Value> {
        let name = object.pointer("/metadata/name").and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
        conversion::to_v1(object).map_err(|cause| Error::Invalid {
            kind: "Llama",
            group: super::GROUP,
            name,
            causes: vec![cause],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama(weight: f64, height: f64) -> Llama {
        Llama::new("dolly", LlamaSpec { weight, height, color: None })
    }

    #[test]
    fn a_positive_llama_is_valid() {
        assert!(llama(120.0, 170.5).validate().is_empty());
    }

    #[test]
    fn a_colour_is_not_blank_and_a_condition_not_newer_than_its_status() {
        let rules = crate::validation_rules::of::<Llama>();
        assert_eq!(rules.problems(), [] as [String; 0]);
        let mut blank = llama(120.0, 170.5);
        blank.spec.color = Some(" \t".into());
        let condition = |generation: i64| Condition {
            type_: "Ready".into(),
            status: "True".into(),
            reason: "Grazing".into(),
            message: String::new(),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ),
            observed_generation: Some(generation),
        };
        blank.status = Some(LlamaStatus { observed_generation: Some(2), conditions: vec![condition(3)] });
        let errors = rules.validate(&serde_json::to_value(&blank).unwrap(), None).errors;
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            errors,
            [
                "spec.color: Invalid value: \" \\t\": must not be blank",
                "status.conditions: Invalid value: a condition cannot have observed a newer generation than the status",
            ]
        );
        blank.spec.color = Some("white".into());
        blank.status = Some(LlamaStatus { observed_generation: Some(3), conditions: vec![condition(3)] });
        assert!(rules.validate(&serde_json::to_value(&blank).unwrap(), None).errors.is_empty());
    }

    #[test]
    fn zero_and_negative_sizes_are_each_reported_with_their_path() {
        let errors = llama(0.0, -3.0).validate();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["spec.weight", "spec.height"]);
        assert_eq!(errors[1].to_string(), "spec.height: Invalid value: -3: must be greater than 0");
    }

    #[test]
    fn infinite_weight_is_invalid() {
        assert_eq!(llama(f64::INFINITY, 1.0).validate().len(), 1);
    }

    #[test]
    fn serializes_with_api_version_and_kind() {
        let v = serde_json::to_value(llama(1.0, 2.0)).unwrap();
        assert_eq!(v["apiVersion"], "farm.example.com/v1alpha");
        assert_eq!(v["kind"], "Llama");
        assert_eq!(v["spec"]["weight"], 1.0);
    }
}
