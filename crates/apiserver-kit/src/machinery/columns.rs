//! The columns a resource adds to its `kubectl get` table (rendered by `crate::api::table`),
//! each declared once, with its cell: a JSONPath into the object, as a CustomResourceDefinition's
//! `additionalPrinterColumns` has (kube's `#[kube(printcolumn(...))]` writes these, and they are
//! a [`super::strategy::Strategy`]'s columns unless it says others), or a function of the typed
//! object, for a cell no path gives.
//!
//! ```
//! # use apiserver_kit::prelude::*;
//! # #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, derive = "PartialEq")]
//! # pub struct WidgetSpec { size: f64, parts: Vec<String> }
//! const SIZE: Column<Widget> = Column::path("Size", ColumnType::Number, "How big it is.", ".spec.size");
//! // A closure's parameter is named with its type before a method such as `wide`.
//! const PARTS: Column<Widget> =
//!     Column::computed("Parts", ColumnType::String, "Its parts.", |w: &Widget| w.spec.parts.join(",").into()).wide();
//! ```

use super::definition::Definition;
use serde_json::Value;

/// The JSON type of a column's cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// `string`
    String,
    /// `number`
    Number,
    /// `integer`
    Integer,
    /// `boolean`
    Boolean,
    /// `date`: a timestamp, shown as the time since it (`5m`), as AGE is.
    Date,
}

impl ColumnType {
    /// The type's name in a table's column definitions: `string`, `number`, `integer`,
    /// `boolean` or `date`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Number => "number",
            Self::Integer => "integer",
            Self::Boolean => "boolean",
            Self::Date => "date",
        }
    }

    /// The type a printer column's `type` names.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::String, Self::Number, Self::Integer, Self::Boolean, Self::Date].into_iter().find(|t| t.as_str() == name)
    }
}

/// Where a column's cell comes from.
pub enum Cell<K> {
    /// The value at a JSONPath of the object (kubectl's, as a printer column writes it:
    /// `.spec.weight`, `.status.conditions[?(@.type=="Ready")].status`); none is an empty cell.
    Path(&'static str),
    /// A function of the typed object.
    Computed(fn(&K) -> Value),
}

impl<K> Clone for Cell<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Cell<K> {}

impl<K> std::fmt::Debug for Cell<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Path(path) => write!(f, "Path({path})"),
            Self::Computed(_) => f.write_str("Computed"),
        }
    }
}

/// A column a resource adds to its table, between NAME and AGE (or after AGE with `-o wide`).
#[derive(Debug)]
pub struct Column<K> {
    /// Header, e.g. `Weight` (kubectl upper-cases it).
    pub name: &'static str,
    /// Cell type.
    pub kind: ColumnType,
    /// Optional format hint, e.g. `name`.
    pub format: &'static str,
    /// What the column shows (in the Table's column definitions).
    pub description: &'static str,
    /// 0 for the default view, 1 for `-o wide`.
    pub priority: i32,
    /// Its cell.
    pub cell: Cell<K>,
}

impl<K> Clone for Column<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Column<K> {}

impl<K> Column<K> {
    /// A column whose cell is the value at `json_path` of the object, as a printer column's.
    pub const fn path(
        name: &'static str,
        kind: ColumnType,
        description: &'static str,
        json_path: &'static str,
    ) -> Self {
        Self { name, kind, format: "", description, priority: 0, cell: Cell::Path(json_path) }
    }

    /// A column whose cell `cell` computes from the typed object (`Value::Null` for an empty one).
    pub const fn computed(
        name: &'static str,
        kind: ColumnType,
        description: &'static str,
        cell: fn(&K) -> Value,
    ) -> Self {
        Self { name, kind, format: "", description, priority: 0, cell: Cell::Computed(cell) }
    }

    /// The same column, shown by `kubectl get -o wide` only (priority 1).
    pub const fn wide(self) -> Self {
        Self { priority: 1, ..self }
    }

    /// The same column with a format hint.
    pub const fn format(self, format: &'static str) -> Self {
        Self { format, ..self }
    }

    /// The printer columns of `definition`, each a [`Cell::Path`] column (a column of an
    /// unknown type is a string column, as kubectl shows an unknown type).
    pub fn of_definition(definition: &Definition) -> Vec<Self> {
        let text = |column: &Value, field: &str| leak(column[field].as_str().unwrap_or_default());
        let columns = definition.printer_columns().iter().map(|column| Self {
            name: text(column, "name"),
            kind: column["type"].as_str().and_then(ColumnType::parse).unwrap_or(ColumnType::String),
            format: text(column, "format"),
            description: text(column, "description"),
            priority: column["priority"].as_i64().and_then(|p| i32::try_from(p).ok()).unwrap_or_default(),
            cell: Cell::Path(text(column, "jsonPath")),
        });
        columns.collect()
    }
}

/// `text` kept for the life of the program (a resource's columns are read once).
fn leak(text: &str) -> &'static str {
    Box::leak(text.to_string().into_boxed_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_s_printer_columns_are_path_columns() {
        let definition = Definition::new(
            serde_json::json!({"spec": {"versions": [{"name": "v1", "additionalPrinterColumns": [
                {"name": "Size", "type": "number", "jsonPath": ".spec.size", "description": "How big."},
                {"name": "Ready", "type": "string", "priority": 1,
                    "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}]}]}}),
            "v1",
        );
        let columns = Column::<()>::of_definition(&definition);
        assert_eq!(
            (columns[0].name, columns[0].kind, columns[0].description),
            ("Size", ColumnType::Number, "How big.")
        );
        assert!(matches!(columns[0].cell, Cell::Path(".spec.size")));
        assert_eq!((columns[1].priority, columns[1].kind), (1, ColumnType::String));
    }

    #[test]
    fn constructors_say_each_part_once() {
        const COLUMN: Column<u8> =
            Column::computed("N", ColumnType::Integer, "n.", |n: &u8| (*n).into()).wide().format("x");
        assert_eq!((COLUMN.priority, COLUMN.format), (1, "x"));
        let Cell::Computed(cell) = COLUMN.cell else { panic!("a computed cell") };
        assert_eq!(cell(&7), 7);
    }
}
