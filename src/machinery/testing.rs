//! A resource for the generic layers' own tests, so they need none of the product's: the
//! namespaced `Widget` of `test.example.com/v1`, with a size and an optional colour (selectable).

use crate::machinery::columns::{Column, ColumnType};
use crate::machinery::error::FieldError;
use crate::machinery::resource::{ApiResource, ResourceInfo};
use crate::machinery::strategy::Strategy;
use crate::machinery::verb::Verb;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The Widget's spec.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(group = "test.example.com", version = "v1", kind = "Widget", namespaced, derive = "PartialEq")]
pub struct WidgetSpec {
    /// How big it is: a finite number greater than 0.
    #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
    pub size: f64,
    /// Its colour, free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

impl ApiResource for Widget {
    const INFO: ResourceInfo = ResourceInfo {
        group: "test.example.com",
        kind: "Widget",
        list_kind: "WidgetList",
        plural: "widgets",
        singular: "widget",
        short_names: &["wd"],
        categories: &[],
        namespaced: true,
        verbs: &[
            Verb::Get,
            Verb::List,
            Verb::Watch,
            Verb::Create,
            Verb::Update,
            Verb::Patch,
            Verb::Delete,
            Verb::DeleteCollection,
        ],
        description: "A widget, for tests.",
        selectable_fields: &["spec.color"],
        subresources: &[],
    };

    fn body_properties() -> (serde_json::Map<String, serde_json::Value>, Vec<&'static str>) {
        let mut properties = serde_json::Map::new();
        properties.insert("spec".into(), crate::machinery::schema::inline_schema::<WidgetSpec>());
        (properties, vec!["spec"])
    }
}

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

    fn spec_changed(&self, old: &Self) -> bool {
        self.spec != old.spec
    }

    fn columns() -> &'static [Column] {
        &[Column { name: "Size", kind: ColumnType::Number, format: "", description: "How big it is.", priority: 0 }]
    }

    fn cells(&self) -> Vec<serde_json::Value> {
        vec![serde_json::json!(self.spec.size)]
    }
}
