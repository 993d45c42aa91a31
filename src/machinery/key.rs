//! Object keys: namespace and name, ordered as etcd orders its keys.

/// Identifies an object: namespace and name. Orders as the bytes of `<namespace>/<name>`, the
/// order of etcd keys, in which the kube-apiserver lists (namespace `a-b` comes before `a`, as
/// `-` sorts before `/`): both stores list and page in this one order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectKey {
    /// The namespace.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl ObjectKey {
    /// A key for `namespace`/`name`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self { namespace: namespace.into(), name: name.into() }
    }

    /// The bytes of `<namespace>/<name>`, one by one.
    fn path_bytes(&self) -> impl Iterator<Item = &u8> {
        self.namespace.as_bytes().iter().chain(b"/").chain(self.name.as_bytes())
    }

    /// The key of `object`, from its metadata.
    pub fn of<K: kube::Resource>(object: &K) -> Self {
        let meta = object.meta();
        Self::new(meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default())
    }
}

impl Ord for ObjectKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if self.namespace == other.namespace {
            return self.name.cmp(&other.name);
        }
        self.path_bytes().cmp(other.path_bytes())
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
