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

    /// The key of `object`, from its metadata.
    pub fn of<K: kube::Resource>(object: &K) -> Self {
        let meta = object.meta();
        Self::new(meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default())
    }
}

/// The order of two keys given as the bytes of (namespace, name): the order of the bytes of
/// `<namespace>/<name>`.
pub fn order(a: (&[u8], &[u8]), b: (&[u8], &[u8])) -> std::cmp::Ordering {
    if a.0 == b.0 {
        return a.1.cmp(b.1);
    }
    let (a_path, b_path) = (a.0.iter().chain(b"/").chain(a.1), b.0.iter().chain(b"/").chain(b.1));
    a_path.cmp(b_path)
}

impl Ord for ObjectKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        order((self.namespace.as_bytes(), self.name.as_bytes()), (other.namespace.as_bytes(), other.name.as_bytes()))
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
