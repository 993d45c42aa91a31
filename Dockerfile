# farm-apiserver: a small, non-root runtime image with a --locked release build.
#   docker build -t farm-apiserver:0.1.0 .      (make image)

FROM rust:1.95-bookworm AS build
WORKDIR /src
# No system package is needed: etcd's gRPC client code is checked in
# (crates/apiserver-kit/src/store/etcd/grpc).
# Dependencies first, so code changes do not rebuild them. Every workspace member's manifest is
# needed to load the workspace; only farm-apiserver is built.
COPY Cargo.toml Cargo.lock ./
COPY crates/apiserver-kit/Cargo.toml crates/apiserver-kit/
COPY crates/conformance/Cargo.toml crates/conformance/
COPY examples/ops-apiserver/Cargo.toml examples/ops-apiserver/
RUN mkdir -p src crates/apiserver-kit/src crates/conformance/src examples/ops-apiserver/src \
    && echo 'fn main() {}' > src/main.rs \
    && cp src/main.rs examples/ops-apiserver/src/main.rs \
    && touch src/lib.rs crates/apiserver-kit/src/lib.rs crates/conformance/src/lib.rs \
    && cargo build --release --locked -p farm-apiserver \
    && rm -rf src crates/apiserver-kit/src crates/conformance/src
COPY crates ./crates
COPY src ./src
RUN touch src/main.rs src/lib.rs crates/apiserver-kit/src/lib.rs && cargo build --release --locked -p farm-apiserver \
    && strip target/release/farm-apiserver

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/farm-apiserver /farm-apiserver
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/farm-apiserver"]
CMD ["serve"]
