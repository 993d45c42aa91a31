//! The resource a run compares: its group and the reference CustomResourceDefinition's, its
//! names, scope and versions, what a valid object of it is, and the fields generated requests
//! change. Everything the rest of the crate knows of a resource comes from here.

use serde_json::{Map, Value, json};

/// A resource served by the server under test and, in another group, by a CRD of the same
/// schema on the kube-apiserver.
pub struct Subject {
    /// The group of the server under test; requests and answers are written in its name.
    pub group: &'static str,
    /// The group of the reference CRD (its answers are rewritten to name `group`).
    pub reference_group: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    /// The served versions: in a request's path `{gv}` is the first one's `/apis/<group>/<version>`,
    /// `{gv2}` the second one's.
    pub versions: &'static [&'static str],
    /// A valid object named `name` at `version`, without labels or a namespace.
    pub object: fn(name: &str, version: &str) -> Value,
    /// The fields generated bodies change; the first holds a number (merge and JSON patches
    /// write it).
    pub fields: &'static [Field],
    /// Values of `status` generated bodies carry (valid and not).
    pub statuses: fn() -> Vec<Value>,
    /// The fields the server under test declares selectable (beyond metadata.name and namespace).
    pub selectable_fields: &'static [&'static str],
    /// Texts naming `group` that must be sent as they are to both sides (an annotation both
    /// sides' conversion names the same).
    pub unrenamed: &'static [&'static str],
}

/// A field of the object generated requests give other values.
pub struct Field {
    /// Where it is at a version (`None`: the version has no such field).
    pub path: fn(version: &str) -> Option<&'static [&'static str]>,
    pub values: Values,
}

/// The kind of values a generated body gives a field (valid ones and mistakes).
#[derive(Clone, Copy, Debug)]
pub enum Values {
    /// Numbers, and what is not one.
    Number,
    /// Strings, and what is not one.
    Text,
    /// These strings (list valid and invalid ones), and a number.
    OneOf(&'static [&'static str]),
    /// A list of strings, and what is not one.
    Strings,
}

/// The placeholders of the first and second versions' `/apis/<group>/<version>` in a path.
const PLACEHOLDERS: [&str; 2] = ["{gv}", "{gv2}"];

impl Subject {
    /// `/apis/<group>/<version>` of `{gv}` or `{gv2}` at the start of `path`, for `group`.
    pub fn expand(&self, path: &str, group: &str) -> String {
        let mut path = path.to_string();
        for (placeholder, version) in PLACEHOLDERS.into_iter().zip(self.versions) {
            path = path.replace(placeholder, &format!("/apis/{group}/{version}"));
        }
        path
    }

    /// The placeholder of the `index`th version (`{gv}`, `{gv2}`).
    pub fn placeholder(index: usize) -> &'static str {
        PLACEHOLDERS[index.min(PLACEHOLDERS.len() - 1)]
    }

    /// The collection path under `gv` (a placeholder), in `namespace` when the resource is namespaced.
    pub fn collection(&self, gv: &str, namespace: &str) -> String {
        if self.namespaced {
            format!("{gv}/namespaces/{namespace}/{}", self.plural)
        } else {
            format!("{gv}/{}", self.plural)
        }
    }

    /// Whether `path` (under a placeholder) names one object: `<plural>/<name>`, under its
    /// namespace when the resource is namespaced.
    pub fn is_object_path(&self, path: &str) -> bool {
        let segments: Vec<&str> = path.split('/').skip(1).collect();
        match segments.as_slice() {
            ["namespaces", _, plural, _] => self.namespaced && *plural == self.plural,
            [plural, _] => !self.namespaced && *plural == self.plural,
            _ => false,
        }
    }

    /// Whether `path` (under a placeholder) names the collection.
    pub fn is_collection_path(&self, path: &str) -> bool {
        path.ends_with(&format!("/{}", self.plural))
    }

    /// `apiVersion` of `version` in the subject's group.
    pub fn api_version(&self, version: &str) -> String {
        format!("{}/{version}", self.group)
    }

    /// The kind of the subject's lists.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }
}

impl Field {
    /// Sets the field of `object` at `version` to `value` (nothing when the version has no such field).
    pub fn set(&self, object: &mut Value, version: &str, value: Value) {
        let Some(path) = (self.path)(version) else { return };
        let Some((last, parents)) = path.split_last() else { return };
        let mut at = object;
        for parent in parents {
            if !at[*parent].is_object() {
                at[*parent] = Value::Object(Map::new());
            }
            at = &mut at[*parent];
        }
        at[*last] = value;
    }

    /// Removes the field from `object` at `version`.
    pub fn remove(&self, object: &mut Value, version: &str) {
        let Some(path) = (self.path)(version) else { return };
        let Some((last, parents)) = path.split_last() else { return };
        if let Some(map) = member_mut(object, parents).and_then(Value::as_object_mut) {
            map.remove(*last);
        }
    }

    /// A merge patch setting the field to `value` at `version`.
    pub fn merge_patch(&self, version: &str, value: Value) -> Value {
        let mut patch = json!({});
        self.set(&mut patch, version, value);
        patch
    }

    /// The field's JSON Pointer at `version` (`/spec/weight`).
    pub fn pointer(&self, version: &str) -> String {
        (self.path)(version).unwrap_or_default().iter().map(|p| format!("/{p}")).collect()
    }
}

/// The member at `path` of `value`, when each step is an object that has it (indexing a
/// `Value` mutably panics on anything but an object or null, and answers may be text or lists).
pub(crate) fn member_mut<'a>(value: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |at, key| at.get_mut(*key))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn nested(version: &str) -> Option<&'static [&'static str]> {
        (version == "v2").then_some(&["spec", "coat", "color"][..])
    }

    const COLOR: Field = Field { path: nested, values: Values::Text };

    fn widget(name: &str, version: &str) -> Value {
        json!({"apiVersion": format!("test.example.com/{version}"), "kind": "Widget", "metadata": {"name": name}})
    }

    /// A cluster-scoped subject of two versions, for the crate's unit tests.
    pub(crate) const WIDGETS: Subject = Subject {
        group: "test.example.com",
        reference_group: "ref.example.com",
        kind: "Widget",
        plural: "widgets",
        namespaced: false,
        versions: &["v1", "v2"],
        object: widget,
        fields: &[],
        statuses: Vec::new,
        selectable_fields: &[],
        unrenamed: &[],
    };

    #[test]
    fn a_field_is_set_and_removed_at_its_path_of_each_version() {
        let mut object = json!({"spec": {"size": 1}});
        COLOR.set(&mut object, "v2", json!("white"));
        assert_eq!(object, json!({"spec": {"size": 1, "coat": {"color": "white"}}}));
        COLOR.set(&mut object, "v1", json!("black"));
        COLOR.remove(&mut object, "v2");
        assert_eq!(object, json!({"spec": {"size": 1, "coat": {}}}));
        assert_eq!(COLOR.merge_patch("v2", json!(1)), json!({"spec": {"coat": {"color": 1}}}));
        assert_eq!(COLOR.pointer("v2"), "/spec/coat/color");
    }

    #[test]
    fn paths_follow_the_scope_and_the_versions() {
        assert_eq!(WIDGETS.collection("{gv2}", "ignored"), "{gv2}/widgets");
        assert_eq!(WIDGETS.expand("{gv2}/widgets/a", "g.io"), "/apis/g.io/v2/widgets/a");
        assert!(WIDGETS.is_object_path("{gv}/widgets/a"));
        assert!(!WIDGETS.is_object_path("{gv}/namespaces/n/widgets/a"));
        assert!(WIDGETS.is_collection_path("{gv}/widgets"));
        let namespaced = Subject { namespaced: true, ..WIDGETS };
        assert!(namespaced.is_object_path("{gv}/namespaces/n/widgets/a"));
        assert_eq!((namespaced.object)("a", "v1")["kind"], "Widget");
    }
}
