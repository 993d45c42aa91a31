//! Who made a request, as authentication found it: what authorization asks about and what
//! admission webhooks are told (`userInfo`).

use std::collections::BTreeMap;

/// Who made a request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name.
    pub name: String,
    /// The user's UID, when the authenticator knows it.
    pub uid: Option<String>,
    /// Groups, `system:authenticated` included once authenticated.
    pub groups: Vec<String>,
    /// Extra attributes (keys lower-case).
    pub extra: BTreeMap<String, Vec<String>>,
}
