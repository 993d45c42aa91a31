//! The versions a resource is served at, its objects stored at one of them (the hub), as
//! k8s.io/apimachinery's scheme converts every version to and from one internal version: a
//! request at another version is decoded and checked at its own version, then converted to the
//! hub for the registry's rules and the store; an answer is converted back from the hub.
//!
//! Every [`Strategy`] is served at its own version as it is stored ([`Served`] for `K` as
//! `K`, converting nothing); another version implements [`Served`] with its conversion.

use super::error::{Error, Result};
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

    /// A stored hub object at this version.
    fn stored_from_hub(stored: &Arc<Stored<Hub>>) -> Result<Arc<Stored<Self>>> {
        let value = serde_json::from_slice(&stored.json())
            .map_err(|e| Error::Internal(format!("decoding a stored object to convert it: {e}")))?;
        let value = Self::value_from_hub(value)?;
        let object: Self = from_value(value)?;
        Ok(Arc::new(Stored::new(object)?))
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

fn to_value<T: serde::Serialize>(object: &T) -> Result<Value> {
    serde_json::to_value(object).map_err(|e| Error::Internal(format!("encoding an object to convert it: {e}")))
}

fn from_value<T: serde::de::DeserializeOwned>(value: Value) -> Result<T> {
    serde_json::from_value(value).map_err(|e| Error::Internal(format!("decoding a converted object: {e}")))
}

/// The field a field selector names at version `V`, at the hub version: selectable fields are
/// listed in the same order at every version (`spec.color` at one, `spec.coat.color` at the
/// next), so the one at the same place.
pub fn hub_field<Hub: Strategy, V: Served<Hub>>(field: &str) -> Option<&'static str> {
    let at = V::INFO.selectable_fields.iter().position(|f| *f == field)?;
    Hub::INFO.selectable_fields.get(at).copied()
}
