//! What a server makes up for an object (its uid, resourceVersion, creation and deletion times)
//! renamed on each side by the object it belongs to and by order of appearance, instead of
//! erased: the first uid a side shows for `ns/dolly` is `<uid ns/dolly #1>`, the next one (the
//! object deleted and made again, or a write that wrongly issued a new one) `#2`; likewise its
//! resourceVersions and its times. Two servers that make up different values then answer with
//! the same names exactly when they agree on what is equal, what changed and what stayed: a
//! no-op write that bumps the resourceVersion, a patch that issues a new uid or resets the
//! creation time, a stale read, all show as a difference.
//!
//! Names are kept per object (not one counter per side), so that a write one side made and the
//! other refused (an allowed difference) renames nothing of the other objects. A list's own
//! resourceVersion names no object: it is `<list-rv>`, checked to be no older than any item it
//! holds. A uid met elsewhere than in its object's metadata (a Status's details or message, an
//! owner reference) takes the name its object gave it.

use serde_json::{Map, Value};
use std::collections::HashMap;

/// One side's names.
#[derive(Default)]
pub struct Identities {
    /// Per object (`namespace/name`): the values seen, each kind in order of appearance.
    objects: HashMap<String, Seen>,
    /// Each uid's name, by its value.
    uids: HashMap<String, String>,
}

/// The values a side showed for one object.
#[derive(Default)]
struct Seen {
    uids: Vec<String>,
    resource_versions: Vec<String>,
    /// Creation and deletion times, per uid.
    times: HashMap<(String, &'static str), Vec<String>>,
}

/// The position of `value` among `seen` (from 1), added at the end when new.
fn position(seen: &mut Vec<String>, value: &str) -> usize {
    match seen.iter().position(|v| v == value) {
        Some(i) => i + 1,
        None => {
            seen.push(value.to_string());
            seen.len()
        }
    }
}

impl Identities {
    /// Renames, in `body`, what the server made up (see the module's documentation).
    pub fn rename(&mut self, body: &mut Value) {
        match body {
            Value::Object(map) => {
                self.rename_object(map);
                map.values_mut().for_each(|v| self.rename(v));
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.rename(v)),
            Value::String(text) => {
                if let Some(name) = self.uids.get(text.as_str()) {
                    *text = name.clone();
                }
            }
            _ => {}
        }
    }

    /// An object with metadata: a list's resourceVersion, or an object's identities; a Status's
    /// message naming uids.
    fn rename_object(&mut self, map: &mut Map<String, Value>) {
        let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
        if kind == "Status" {
            self.rename_in_message(map);
        }
        if kind.ends_with("List") || kind == "Table" {
            let newest = newest_item(map);
            if let Some(Value::String(rv)) = map.get_mut("metadata").and_then(|m| m.get_mut("resourceVersion")) {
                let older = rv.parse::<u64>().ok().zip(newest).is_some_and(|(list, item)| list < item);
                *rv = if older { "<list-rv older than an item>" } else { "<list-rv>" }.into();
            }
            return;
        }
        let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) else { return };
        let Some(name) = metadata.get("name").and_then(Value::as_str) else { return };
        let namespace = metadata.get("namespace").and_then(Value::as_str).unwrap_or_default();
        let key = format!("{namespace}/{name}");
        let seen = self.objects.entry(key.clone()).or_default();
        let uid = match metadata.get_mut("uid") {
            Some(Value::String(uid)) => {
                let raw = std::mem::take(uid);
                *uid = format!("<uid {key} #{}>", position(&mut seen.uids, &raw));
                self.uids.insert(raw.clone(), uid.clone());
                raw
            }
            _ => String::new(),
        };
        if let Some(Value::String(rv)) = metadata.get_mut("resourceVersion")
            && !rv.is_empty()
        {
            *rv = format!("<rv {key} #{}>", position(&mut seen.resource_versions, rv));
        }
        for field in ["creationTimestamp", "deletionTimestamp"] {
            if let Some(Value::String(time)) = metadata.get_mut(field) {
                let times = seen.times.entry((uid.clone(), field)).or_default();
                *time = format!("<{field} #{}>", position(times, time));
            }
        }
    }

    /// A Status's message with the uids it names renamed.
    fn rename_in_message(&self, map: &mut Map<String, Value>) {
        if let Some(Value::String(message)) = map.get_mut("message") {
            for (raw, name) in &self.uids {
                if message.contains(raw.as_str()) {
                    *message = message.replace(raw.as_str(), name);
                }
            }
        }
    }
}

/// The newest resourceVersion among a list's items, when they are numbers.
fn newest_item(list: &Map<String, Value>) -> Option<u64> {
    let items = list.get("items").or_else(|| list.get("rows"))?.as_array()?;
    let of = |item: &Value| {
        let object = item.get("object").unwrap_or(item);
        object["metadata"]["resourceVersion"].as_str()?.parse::<u64>().ok()
    };
    items.iter().filter_map(of).max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn llama(uid: &str, rv: &str, created: &str) -> Value {
        json!({"kind": "Llama", "metadata": {"name": "dolly", "namespace": "ns", "uid": uid, "resourceVersion": rv,
            "creationTimestamp": created}})
    }

    fn renamed(identities: &mut Identities, mut value: Value) -> Value {
        identities.rename(&mut value);
        value
    }

    #[test]
    fn values_are_named_by_their_object_and_order_of_appearance() {
        let mut side = Identities::default();
        let first = renamed(&mut side, llama("u-1", "10", "2026-01-01T00:00:00Z"));
        assert_eq!(first["metadata"]["uid"], "<uid ns/dolly #1>");
        assert_eq!(first["metadata"]["resourceVersion"], "<rv ns/dolly #1>");
        assert_eq!(first["metadata"]["creationTimestamp"], "<creationTimestamp #1>");
        let again = renamed(&mut side, llama("u-1", "10", "2026-01-01T00:00:00Z"));
        assert_eq!(again, first, "unchanged values keep their names");
        let bumped = renamed(&mut side, llama("u-1", "11", "2026-01-01T00:00:05Z"));
        assert_eq!(bumped["metadata"]["resourceVersion"], "<rv ns/dolly #2>");
        assert_eq!(bumped["metadata"]["creationTimestamp"], "<creationTimestamp #2>", "a reset creation time shows");
        let stale = renamed(&mut side, llama("u-1", "10", "2026-01-01T00:00:00Z"));
        assert_eq!(stale["metadata"]["resourceVersion"], "<rv ns/dolly #1>", "a stale read shows");
        let again = renamed(&mut side, llama("u-2", "12", "2026-01-01T00:00:09Z"));
        assert_eq!(again["metadata"]["uid"], "<uid ns/dolly #2>");
        assert_eq!(again["metadata"]["creationTimestamp"], "<creationTimestamp #1>", "a new object's own time");
    }

    #[test]
    fn another_objects_values_do_not_shift_the_names() {
        let (mut ours, mut theirs) = (Identities::default(), Identities::default());
        renamed(
            &mut ours,
            json!({"kind": "Llama", "metadata": {"name": "only-ours", "uid": "x", "resourceVersion": "5"}}),
        );
        assert_eq!(renamed(&mut ours, llama("a", "7", "t")), renamed(&mut theirs, llama("b", "90", "s")));
    }

    #[test]
    fn a_uid_elsewhere_takes_its_objects_name_and_a_lists_version_is_checked_against_its_items() {
        let mut side = Identities::default();
        renamed(&mut side, llama("u-1", "10", "t"));
        let status = json!({"kind": "Status", "message": "Precondition failed: UID in object meta: u-1", "details": {"uid": "u-1"}});
        let status = renamed(&mut side, status);
        assert_eq!(status["details"]["uid"], "<uid ns/dolly #1>");
        assert_eq!(status["message"], "Precondition failed: UID in object meta: <uid ns/dolly #1>");
        let list = |rv: &str| json!({"kind": "LlamaList", "metadata": {"resourceVersion": rv}, "items": [llama("u-1", "10", "t")]});
        assert_eq!(renamed(&mut side, list("12"))["metadata"]["resourceVersion"], "<list-rv>");
        assert_eq!(renamed(&mut side, list("9"))["metadata"]["resourceVersion"], "<list-rv older than an item>");
    }
}
