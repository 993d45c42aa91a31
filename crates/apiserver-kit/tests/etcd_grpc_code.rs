//! The etcd gRPC client code in `src/store/etcd/grpc/` is generated from the `.proto` files
//! beside it and checked in, so that building the server needs no `protoc`. This test generates
//! it anew, with `protox` (a protobuf compiler written in Rust) and `tonic-prost-build`, and
//! fails when a checked-in file differs.
//!
//! After changing a `.proto` file or upgrading tonic/prost, rewrite the files with
//! `UPDATE_GRPC=1 cargo test -p apiserver-kit --test etcd_grpc_code`.

use std::path::{Path, PathBuf};

/// The generated files kept: the packages of etcd's KV and Watch services and what they use.
const PACKAGES: [&str; 3] = ["etcdserverpb", "mvccpb", "authpb"];

fn grpc_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/etcd/grpc")
}

/// Generates the client code of etcd's API into `out`.
fn generate(out: &Path) {
    let protos = grpc_dir().join("proto");
    let files = protox::compile([protos.join("etcd/api/etcdserverpb/rpc.proto")], [&protos])
        .unwrap_or_else(|e| panic!("compiling etcd's .proto files: {e:?}"));
    tonic_prost_build::configure()
        .build_server(false)
        .build_transport(false)
        .emit_rerun_if_changed(false)
        .out_dir(out)
        .compile_fds(files)
        .expect("generating the gRPC code");
}

#[test]
fn the_checked_in_etcd_grpc_code_is_what_the_proto_files_generate() {
    let out = tempfile::tempdir().unwrap();
    generate(out.path());
    let update = std::env::var_os("UPDATE_GRPC").is_some();
    let mut stale = Vec::new();
    for package in PACKAGES {
        let file = format!("{package}.rs");
        let generated = std::fs::read_to_string(out.path().join(&file)).expect("a generated file per package");
        let checked_in = grpc_dir().join(&file);
        if update {
            std::fs::write(&checked_in, &generated).unwrap();
        } else if std::fs::read_to_string(&checked_in).ok().as_deref() != Some(generated.as_str()) {
            stale.push(checked_in.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "{stale:?} differ from what the .proto files generate; run UPDATE_GRPC=1 cargo test -p apiserver-kit --test etcd_grpc_code"
    );
}
