//! The columns a resource adds to its `kubectl get` table (rendered by `crate::api::table`).

/// The JSON type of a column's cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// `string`
    String,
    /// `number`
    Number,
    /// `integer`
    Integer,
    /// `date`
    Date,
}

impl ColumnType {
    /// The type's name in a table's column definitions: `string`, `number`, `integer` or `date`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Number => "number",
            Self::Integer => "integer",
            Self::Date => "date",
        }
    }
}

/// A column a resource adds to its table.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    /// Header, e.g. `Weight` (kubectl upper-cases it).
    pub name: &'static str,
    /// Cell type.
    pub kind: ColumnType,
    /// Optional format hint, e.g. `name`.
    pub format: &'static str,
    /// Shown by `kubectl explain`-like tools.
    pub description: &'static str,
    /// 0 for the default view, 1 for `-o wide`.
    pub priority: i32,
}
