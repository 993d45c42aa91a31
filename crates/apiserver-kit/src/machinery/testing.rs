//! A resource for the generic layers' own tests, so they need none of the product's: the
//! namespaced `Widget` of `test.example.com/v1`, with a size and an optional colour (selectable),
//! also served at `v1beta1` ([`WidgetV1beta1`]), where the colour has another name.

use crate::machinery::columns::{Column, ColumnType};
use crate::machinery::error::{FieldError, Result};
use crate::machinery::resource::ApiResource;
use crate::machinery::strategy::Strategy;
use crate::machinery::version::Served;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The Widget's spec.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "test.example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    shortname = "wd",
    selectable = ".spec.color",
    derive = "PartialEq",
    doc = "A widget, for tests."
)]
pub struct WidgetSpec {
    /// How big it is: a finite number greater than 0.
    #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
    pub size: f64,
    /// Its colour, free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

impl ApiResource for Widget {}

/// A Widget of `size` named `name` in `namespace`.
pub fn widget(namespace: &str, name: &str, size: f64) -> Widget {
    let mut widget = Widget::new(name, WidgetSpec { size, color: None });
    widget.metadata.namespace = Some(namespace.into());
    widget
}

/// A Widget's size must be a finite number greater than 0.
impl Strategy for Widget {
    fn validate(&self) -> Vec<FieldError> {
        let size = self.spec.size;
        if size.is_finite() && size > 0.0 {
            return Vec::new();
        }
        vec![FieldError::invalid("spec.size", &serde_json::json!(size), "must be greater than 0")]
    }

    fn columns() -> Vec<Column<Self>> {
        vec![Column::computed("Size", ColumnType::Number, "How big it is.", |w| super::number::json(w.spec.size))]
    }
}

/// The Widget's spec at `v1beta1`, an older version served from the stored `v1`: the colour was
/// `spec.colour`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "test.example.com",
    version = "v1beta1",
    kind = "Widget",
    root = "WidgetV1beta1",
    namespaced,
    shortname = "wd",
    selectable = ".spec.colour",
    derive = "PartialEq",
    doc = "A widget, for tests."
)]
pub struct WidgetV1beta1Spec {
    /// How big it is: a finite number greater than 0.
    #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
    pub size: f64,
    /// Its colour, free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub colour: Option<String>,
}

impl ApiResource for WidgetV1beta1 {}

impl Strategy for WidgetV1beta1 {
    fn validate(&self) -> Vec<FieldError> {
        Widget::new("", WidgetSpec { size: self.spec.size, color: None }).validate()
    }

    fn columns() -> Vec<Column<Self>> {
        vec![Column::path("Size", ColumnType::Number, "How big it is.", ".spec.size")]
    }
}

/// `v1beta1`, converted from and to the stored `v1` through JSON values.
impl Served<Widget> for WidgetV1beta1 {
    fn value_from_hub(object: serde_json::Value) -> Result<serde_json::Value> {
        Ok(renamed(object, "v1beta1", "color", "colour"))
    }

    fn value_to_hub(object: serde_json::Value) -> Result<serde_json::Value> {
        Ok(renamed(object, "v1", "colour", "color"))
    }
}

/// `object` at `version`, its `spec.<from>` moved to `spec.<to>`.
fn renamed(mut object: serde_json::Value, version: &str, from: &str, to: &str) -> serde_json::Value {
    object["apiVersion"] = serde_json::json!(format!("test.example.com/{version}"));
    if let Some(spec) = object.get_mut("spec").and_then(serde_json::Value::as_object_mut)
        && let Some(value) = spec.remove(from)
    {
        spec.insert(to.into(), value);
    }
    object
}
