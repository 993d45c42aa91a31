//! The official Kubernetes Python client, unmodified (the version scripts/install-tools.sh
//! installs), against the standalone server in both storage modes: tests/python/clients.py
//! creates, patches, writes the status, applies server-side through the dynamic client and
//! watches, asserting what the kube-apiserver returns. tests/e2e.rs runs it through the aggregator.

mod common;

use common::{Backend, Server, backends};
use rstest_reuse::apply;

#[apply(backends)]
async fn the_python_client_creates_patches_applies_and_watches(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let home = tempfile::tempdir().unwrap();
    common::clients::python_clients(&s, "default", home.path());
}
