# farm-apiserver: a small, non-root runtime image with a --locked release build.
#   docker build -t farm-apiserver:0.1.0 .      (make image)
#   scripts/image.sh build                      (buildah, no Docker engine and no registry: it makes
#                                               both bases locally and passes them as build arguments)
# The bases are build arguments; their defaults are the public images.
ARG BUILD_IMAGE=rust:1.95-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${BUILD_IMAGE} AS build
# The Cargo profile the binary is built with: `release`; the node tests build with `image-test`
# (Cargo.toml: release without LTO, at opt-level 1, which compiles in about half the time).
ARG CARGO_PROFILE=release
WORKDIR /src
# No system package is needed: etcd's gRPC client code is checked in
# (crates/apiserver-kit/src/store/etcd/grpc). The whole workspace is copied (.dockerignore leaves
# out tests, fuzzing, docs and build output) because cargo loads every member's manifest and
# targets. The registry and the target directory are cache mounts: a rebuild after a code change
# compiles only what changed, and neither ends up in a layer.
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --profile "$CARGO_PROFILE" --locked -p farm-apiserver \
    && cp "target/$CARGO_PROFILE/farm-apiserver" /farm-apiserver \
    && strip /farm-apiserver

FROM ${RUNTIME_IMAGE}
COPY --from=build /farm-apiserver /farm-apiserver
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/farm-apiserver"]
CMD ["serve"]
