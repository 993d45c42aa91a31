//! The versions a resource is served at, its objects stored at one of them (the hub), as
//! k8s.io/apimachinery's scheme converts every version to and from one internal version: a
//! request at another version is decoded and checked at its own version, then converted to the
//! hub for the registry's rules and the store; an answer is converted back from the hub.
//!
//! Every [`Strategy`] is served at its own version as it is stored ([`Served`] for `K` as
//! `K`, converting nothing); another version implements [`Served`] with its conversion.

use super::error::{Error, Result};
use super::resource::{BodySchema, body_schema};
use super::stored::Stored;
use super::strategy::Strategy;
use serde_json::Value;
use std::sync::Arc;

/// A version of a resource whose objects are stored as `Hub`: how its objects convert.
pub trait Served<Hub: Strategy>: Strategy {
    /// The JSON of a hub object at this version.
    fn value_from_hub(object: Value) -> Result<Value>;

    /// The JSON of an object of this version at the hub version; an object that cannot be
    /// converted is the client's error (422).
    fn value_to_hub(object: Value) -> Result<Value>;

    /// A stored hub object at this version ([`through_values`] unless a version knows a
    /// quicker way).
    fn stored_from_hub(stored: &Arc<Stored<Hub>>) -> Result<Arc<Stored<Self>>> {
        through_values(stored)
    }

    /// Appends a stored hub object's encoding at this version to `out` (a list's item).
    fn write_from_hub(stored: &Arc<Stored<Hub>>, out: &mut Vec<u8>) -> Result<()> {
        Self::stored_from_hub(stored)?.write_json(out);
        Ok(())
    }

    /// An object of this version at the hub version.
    fn object_to_hub(object: Self) -> Result<Hub> {
        from_value(Self::value_to_hub(to_value(&object)?)?)
    }
}

/// The hub at its own version: nothing converts, a stored object is served as it is.
impl<K: Strategy> Served<K> for K {
    fn value_from_hub(object: Value) -> Result<Value> {
        Ok(object)
    }

    fn value_to_hub(object: Value) -> Result<Value> {
        Ok(object)
    }

    fn stored_from_hub(stored: &Arc<Stored<K>>) -> Result<Arc<Stored<K>>> {
        Ok(stored.clone())
    }

    fn object_to_hub(object: K) -> Result<K> {
        Ok(object)
    }
}

/// A stored hub object at version `V`, converted as JSON values: decoded, converted, encoded.
pub fn through_values<Hub: Strategy, V: Served<Hub>>(stored: &Arc<Stored<Hub>>) -> Result<Arc<Stored<V>>> {
    let value = serde_json::from_slice(&stored.json())
        .map_err(|e| Error::Internal(format!("decoding a stored object to convert it: {e}")))?;
    let object: V = from_value(V::value_from_hub(value)?)?;
    Ok(Arc::new(Stored::new(object)?))
}

fn to_value<T: serde::Serialize>(object: &T) -> Result<Value> {
    super::json::to_value(object).map_err(|e| Error::Internal(format!("encoding an object to convert it: {e}")))
}

fn from_value<T: serde::de::DeserializeOwned>(value: Value) -> Result<T> {
    serde_json::from_value(value).map_err(|e| Error::Internal(format!("decoding a converted object: {e}")))
}

/// One version a resource is served at, as conversions of its objects' JSON from and to the
/// stored version: what admission (a webhook registered for another version) and server-side
/// apply (a manager of another version) convert objects with.
#[derive(Clone, Debug)]
pub struct Conversion {
    /// The version (`v1alpha`).
    pub version: String,
    /// `group/version`.
    pub api_version: String,
    /// A stored object's JSON at this version.
    pub from_hub: fn(Value) -> Result<Value>,
    /// The JSON of an object of this version at the stored version.
    pub to_hub: fn(Value) -> Result<Value>,
    /// The schema of its objects.
    pub schema: fn() -> Arc<BodySchema>,
}

impl Conversion {
    /// Version `V` of objects stored as `Hub`.
    pub fn of<Hub: Strategy, V: Served<Hub>>() -> Self {
        Self {
            version: V::version(&()).into_owned(),
            api_version: V::api_version(&()).into_owned(),
            from_hub: V::value_from_hub,
            to_hub: V::value_to_hub,
            schema: body_schema::<V>,
        }
    }
}

/// The field a field selector names at version `V`, at the hub version: selectable fields are
/// listed in the same order at every version (`spec.color` at one, `spec.coat.color` at the
/// next), so the one at the same place.
pub fn hub_field<Hub: Strategy, V: Served<Hub>>(field: &str) -> Option<&'static str> {
    let at = V::info().selectable_fields.iter().position(|f| *f == field)?;
    Hub::info().selectable_fields.get(at).copied()
}
