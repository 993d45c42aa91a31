//! `meta.k8s.io` Table rendering (`v1`, or `v1beta1` of the same shape), as `kubectl get` asks for it.
//!
//! Every resource gets NAME first and AGE after its own priority-0 columns; priority-1 columns
//! (shown by `-o wide`) come last. The AGE cell is a human duration such as `5m` or `3d4h`,
//! rendered as `k8s.io/apimachinery/pkg/util/duration.HumanDuration` does.
//!
//! Rows are rendered from stored objects: the cells from the object decoded without its managed
//! fields (which no cell shows and which are most of decoding it), and the row's `object` copied
//! as stored (its `metadata` alone for a `PartialObjectMetadata`), never decoded and encoded again.

use crate::machinery::columns::{Cell, Column, ColumnType};
use crate::machinery::error::{Error, Result};
use crate::machinery::stored::Stored;
use crate::machinery::strategy::Strategy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::LazyLock;

/// `TableColumnDefinition`.
#[derive(Serialize, Debug)]
pub struct ColumnDefinition {
    name: &'static str,
    #[serde(rename = "type")]
    kind: &'static str,
    format: &'static str,
    description: &'static str,
    priority: i32,
}

impl<K> From<&Column<K>> for ColumnDefinition {
    fn from(c: &Column<K>) -> Self {
        Self { name: c.name, kind: c.kind.as_str(), format: c.format, description: c.description, priority: c.priority }
    }
}

/// `TableRow`.
#[derive(Serialize, Debug)]
pub struct Row {
    cells: Vec<serde_json::Value>,
    /// `null` without an object, as Go writes an empty `RawExtension`.
    object: Option<RowObject>,
}

/// A row's object: its JSON as stored, or parsed for pretty output (which indents it).
#[derive(Serialize, Debug)]
#[serde(untagged)]
enum RowObject {
    Raw(Box<RawValue>),
    Parsed(serde_json::Value),
}

/// `meta.k8s.io/v1` `Table`.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Table {
    kind: &'static str,
    api_version: &'static str,
    metadata: ListMeta,
    /// `null` in a watch's frames after the first (`NoHeaders`).
    column_definitions: Option<Vec<ColumnDefinition>>,
    rows: Vec<Row>,
}

impl Table {
    /// Removes the column definitions: a watch's frames after the first carry rows only, and
    /// `columnDefinitions: null`, as the kube-apiserver writes them (`NoHeaders`).
    pub fn drop_column_definitions(&mut self) {
        self.column_definitions = None;
    }

    /// Parses the rows' objects, so that pretty output indents them with the rest (raw JSON is
    /// written as it is).
    pub fn indent_objects(&mut self) -> Result<()> {
        for object in self.rows.iter_mut().filter_map(|row| row.object.as_mut()) {
            if let RowObject::Raw(raw) = object {
                let parsed = serde_json::from_str(raw.get())
                    .map_err(|e| Error::Internal(format!("a table row's object: {e}")))?;
                *object = RowObject::Parsed(parsed);
            }
        }
        Ok(())
    }
}

/// What each row carries in `object`, from the `includeObject` query parameter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// No object.
    None,
    /// A `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses the query value; anything else is a 400 for the caller.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "None" => Some(Self::None),
            "Metadata" | "" => Some(Self::Metadata),
            "Object" => Some(Self::Object),
            _ => None,
        }
    }
}

const NAME_COLUMN: ColumnDefinition = ColumnDefinition {
    name: "Name",
    kind: "string",
    format: "name",
    description: "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
    priority: 0,
};

const AGE_COLUMN: ColumnDefinition = ColumnDefinition {
    name: "Age",
    kind: "date",
    format: "",
    description: "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
    priority: 0,
};

/// A column of a table: NAME, AGE or one of the resource's.
enum Slot<K: 'static> {
    Name,
    Age,
    Own(&'static Column<K>),
}

/// A type's columns, type-erased.
type Erased = &'static (dyn Any + Send + Sync);

/// `K`'s own columns ([`Strategy::columns`]), read once per type; each thread keeps those it
/// asked for, as rows ask for them one by one and a shared lock would be touched per row.
fn own_columns<K: Strategy>() -> &'static [Column<K>] {
    type Columns = parking_lot::RwLock<HashMap<TypeId, Erased>>;
    static COLUMNS: LazyLock<Columns> = LazyLock::new(Columns::default);
    thread_local! {
        static KNOWN: std::cell::RefCell<Vec<(TypeId, Erased)>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let id = TypeId::of::<K>();
    let known = KNOWN.with_borrow(|known| known.iter().find(|(k, _)| *k == id).map(|(_, columns)| *columns));
    let columns = known.unwrap_or_else(|| {
        let cached = COLUMNS.read().get(&id).copied();
        let columns = cached.unwrap_or_else(|| {
            let leaked: &'static Vec<Column<K>> = Box::leak(Box::new(K::columns()));
            *COLUMNS.write().entry(id).or_insert(leaked)
        });
        KNOWN.with_borrow_mut(|known| known.push((id, columns)));
        columns
    });
    columns.downcast_ref::<Vec<Column<K>>>().map_or(&[], Vec::as_slice)
}

/// The columns of `K`'s table, in order: NAME, K's default columns, AGE, K's wide columns.
fn ordered_columns<K: Strategy>() -> impl Iterator<Item = Slot<K>> {
    let own = own_columns::<K>();
    let default = own.iter().filter(|c| c.priority == 0).map(Slot::Own);
    let wide = own.iter().filter(|c| c.priority != 0).map(Slot::Own);
    std::iter::once(Slot::Name).chain(default).chain(std::iter::once(Slot::Age)).chain(wide)
}

impl<K: Strategy> Slot<K> {
    fn definition(&self) -> ColumnDefinition {
        match self {
            Self::Name => NAME_COLUMN,
            Self::Age => AGE_COLUMN,
            Self::Own(column) => (*column).into(),
        }
    }
}

/// Renders `objects` as a Table. `now` is passed in so ages are computed once per response.
pub fn render<'a, K: Strategy>(
    objects: impl IntoIterator<Item = &'a Stored<K>>,
    metadata: ListMeta,
    include: IncludeObject,
    version: super::negotiate::MetaVersion,
    now: k8s_openapi::jiff::Timestamp,
) -> Result<Table> {
    let column_definitions = Some(ordered_columns::<K>().map(|c| c.definition()).collect());
    let rows = objects.into_iter().map(|stored| row(stored, include, version, now)).collect::<Result<_>>()?;
    Ok(Table { kind: "Table", api_version: version.api_version(), metadata, column_definitions, rows })
}

/// The Table of a watch's bookmark, as the kube-apiserver converts a bookmark's object (its
/// kind and metadata alone) with a custom resource's columns: one row, whose name is empty and
/// whose other cells are null, carrying the bookmark's metadata as a `PartialObjectMetadata`
/// (always for the end of the initial events; else as `include` says, the whole bookmark for
/// [`IncludeObject::Object`]).
pub fn bookmark<K: Strategy>(
    bookmark: &Value,
    initial_events_end: bool,
    include: IncludeObject,
    version: super::negotiate::MetaVersion,
) -> Table {
    let cells = ordered_columns::<K>().map(|slot| match slot {
        Slot::Name => Value::String(String::new()),
        _ => Value::Null,
    });
    let object = match include {
        _ if initial_events_end || include == IncludeObject::Metadata => {
            let partial = serde_json::json!({"apiVersion": version.api_version(), "kind": "PartialObjectMetadata",
                "metadata": bookmark["metadata"]});
            Some(RowObject::Parsed(partial))
        }
        IncludeObject::Object => Some(RowObject::Parsed(bookmark.clone())),
        IncludeObject::Metadata | IncludeObject::None => None,
    };
    let resource_version = bookmark["metadata"]["resourceVersion"].as_str().map(str::to_string);
    let metadata = ListMeta { resource_version, ..Default::default() };
    let column_definitions = Some(ordered_columns::<K>().map(|c| c.definition()).collect());
    let rows = vec![Row { cells: cells.collect(), object }];
    Table { kind: "Table", api_version: version.api_version(), metadata, column_definitions, rows }
}

/// The head of a Table (`kind`, `apiVersion`, `metadata`, `columnDefinitions`), before its rows.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TableHead<'a> {
    kind: &'static str,
    api_version: &'static str,
    metadata: &'a ListMeta,
    column_definitions: Vec<ColumnDefinition>,
}

/// A Table of `K` encoded up to its rows' `[`: the rows follow, each as [`write_row`] writes it.
pub fn head<K: Strategy>(metadata: &ListMeta, version: super::negotiate::MetaVersion) -> Result<Vec<u8>> {
    let column_definitions = ordered_columns::<K>().map(|c| c.definition()).collect();
    let head = TableHead { kind: "Table", api_version: version.api_version(), metadata, column_definitions };
    super::list_body::open_array(&head, "rows")
}

/// Appends the row of `stored` to `out`, as a Table's `rows` hold it.
pub fn write_row<K: Strategy>(
    stored: &Stored<K>,
    include: IncludeObject,
    version: super::negotiate::MetaVersion,
    now: k8s_openapi::jiff::Timestamp,
    out: &mut Vec<u8>,
) -> Result<()> {
    let row = row(stored, include, version, now)?;
    crate::machinery::json::to_writer(out, &row).map_err(|e| Error::Internal(format!("encoding a table row: {e}")))
}

/// The row of `stored`.
fn row<K: Strategy>(
    stored: &Stored<K>,
    include: IncludeObject,
    version: super::negotiate::MetaVersion,
    now: k8s_openapi::jiff::Timestamp,
) -> Result<Row> {
    let object = stored.decode_without_managed_fields()?;
    let mut json = None;
    let cells = ordered_columns::<K>()
        .map(|slot| match slot {
            Slot::Name => Ok(serde_json::json!(object.meta().name.as_deref().unwrap_or(""))),
            Slot::Age => Ok(serde_json::json!(age(object.meta(), now))),
            Slot::Own(Column { cell: Cell::Computed(cell), .. }) => Ok(cell(&object)),
            Slot::Own(column @ Column { cell: Cell::Path(path), .. }) => {
                let json = match &mut json {
                    Some(json) => json,
                    None => json.insert(
                        serde_json::from_slice(&stored.json())
                            .map_err(|e| Error::Internal(format!("a stored object's JSON: {e}")))?,
                    ),
                };
                Ok(path_cell(column.kind, path, json, now))
            }
        })
        .collect::<Result<_>>()?;
    let object = match include {
        IncludeObject::None => return Ok(Row { cells, object: None }),
        IncludeObject::Metadata => {
            let metadata = raw_json(stored.metadata_json())?;
            let partial =
                PartialMetadata { api_version: version.api_version(), kind: "PartialObjectMetadata", metadata };
            raw_json(serde_json::to_vec(&partial).map_err(|e| Error::Internal(format!("a table row's object: {e}")))?)?
        }
        IncludeObject::Object => raw_json(stored.json().to_vec())?,
    };
    Ok(Row { cells, object: Some(RowObject::Raw(object)) })
}

/// kube-core's `PartialObjectMeta` (as `negotiate::partial_metadata_in` gives it) with the
/// metadata as stored.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PartialMetadata<'a> {
    api_version: &'a str,
    kind: &'static str,
    metadata: Box<RawValue>,
}

/// Stored JSON, to be written as it is.
fn raw_json(bytes: Vec<u8>) -> Result<Box<RawValue>> {
    let text = String::from_utf8(bytes).map_err(|e| Error::Internal(format!("a stored object is not UTF-8: {e}")))?;
    RawValue::from_string(text).map_err(|e| Error::Internal(format!("a stored object's JSON: {e}")))
}

/// The cell of a column whose values are at `path` of `object`, as the kube-apiserver's table
/// of a custom resource makes it (apiextensions' `tableconvertor`): the first value found, none
/// an empty cell; a string column prints what it finds (a list or an object as JSON), the
/// others keep a value of their type (an integer column truncates a float), a date column shows
/// the time since the timestamp.
fn path_cell(kind: ColumnType, path: &str, object: &Value, now: k8s_openapi::jiff::Timestamp) -> Value {
    use jsonpath_rust::JsonPath;
    let found = object.query(&format!("${path}")).ok().and_then(|values| values.first().copied());
    let Some(value) = found.filter(|v| !v.is_null()) else { return Value::Null };
    match (kind, value) {
        (ColumnType::String, Value::String(_)) => value.clone(),
        (ColumnType::String, Value::Array(_) | Value::Object(_)) => crate::machinery::json::to_vec(value)
            .ok()
            .and_then(|t| String::from_utf8(t).ok())
            .map_or(Value::Null, Value::String),
        (ColumnType::String, other) => Value::String(other.to_string()),
        (ColumnType::Integer, Value::Number(n)) => {
            n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)).map_or(Value::Null, Value::from)
        }
        (ColumnType::Number, Value::Number(_)) | (ColumnType::Boolean, Value::Bool(_)) => value.clone(),
        (ColumnType::Date, Value::String(text)) => match text.parse::<k8s_openapi::jiff::Timestamp>() {
            Ok(at) => Value::String(human_duration(now.as_second().saturating_sub(at.as_second()))),
            Err(_) => Value::String("<invalid>".into()),
        },
        _ => Value::Null,
    }
}

fn age(meta: &ObjectMeta, now: k8s_openapi::jiff::Timestamp) -> String {
    match &meta.creation_timestamp {
        Some(created) => {
            let seconds = now.as_second().saturating_sub(created.0.as_second());
            human_duration(seconds)
        }
        None => "<unknown>".to_string(),
    }
}

/// `duration.HumanDuration` of apimachinery: short, with at most two units.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    let s = seconds.max(0);
    let (minute, hour, day, year) = (60, 3600, 86_400, 31_536_000);
    if s < minute * 2 {
        return format!("{s}s");
    }
    let minutes = s / minute;
    if minutes < 10 {
        let rem = s % minute;
        return if rem == 0 { format!("{minutes}m") } else { format!("{minutes}m{rem}s") };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = s / hour;
    if hours < 8 {
        let m = (s % hour) / minute;
        return if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = (s % day) / hour;
        let d = s / day;
        return if h == 0 { format!("{d}d") } else { format!("{d}d{h}h") };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", s / day);
    }
    if hours < 24 * 365 * 8 {
        let d = (s % year) / day;
        let y = s / year;
        return if d == 0 { format!("{y}y") } else { format!("{y}y{d}d") };
    }
    format!("{}y", s / year)
}

#[cfg(test)]
mod tests {
    use super::human_duration;

    #[test]
    fn human_durations_match_apimachinery() {
        let cases = [
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (125, "2m5s"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 120, "3h2m"),
            (47 * 3600, "47h"),
            (2 * 86_400 + 3600, "2d1h"),
            (30 * 86_400, "30d"),
            (3 * 31_536_000 + 86_400, "3y1d"),
            (10 * 31_536_000, "10y"),
            (-5, "<invalid>"),
        ];
        for (seconds, want) in cases {
            assert_eq!(human_duration(seconds), want, "{seconds}s");
        }
    }
}
