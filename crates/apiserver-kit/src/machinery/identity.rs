//! Who the server is: its name and version, as `/version`, the OpenAPI documents, the CA it
//! generates, the kubeconfig it writes and its own metrics' names give them.

/// A server's name and version (e.g. `widget-apiserver`, `0.1.0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The program's name, in the words of a Kubernetes object's name.
    pub name: &'static str,
    /// Its version (the package's `CARGO_PKG_VERSION`, say).
    pub version: &'static str,
}

impl Identity {
    /// `name` at `version`.
    pub const fn new(name: &'static str, version: &'static str) -> Self {
        Self { name, version }
    }

    /// The prefix of the server's own metrics: the name with every character a Prometheus
    /// metric name cannot hold as `_` (`widget-apiserver` → `widget_apiserver`).
    pub fn metric_prefix(&self) -> String {
        self.name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
    }

    /// The common name of the CA the server generates when given no certificate.
    pub fn ca_name(&self) -> String {
        format!("{}-ca", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_derive_from_the_program_name() {
        let identity = Identity::new("my.api-server", "1.2.3");
        assert_eq!(identity.metric_prefix(), "my_api_server");
        assert_eq!(identity.ca_name(), "my.api-server-ca");
    }
}
