# farm-apiserver: a small, non-root runtime image with a --locked release build.
#   docker build -t farm-apiserver:0.1.0 .      (make image)

FROM rust:1.95-bookworm AS build
WORKDIR /src
# No system package is needed: etcd's gRPC client code is checked in (src/store/etcd/grpc).
# Dependencies first, so code changes do not rebuild them.
COPY Cargo.toml Cargo.lock ./
COPY crates/apiserver-kit/Cargo.toml crates/apiserver-kit/
RUN mkdir -p src crates/apiserver-kit/src && echo 'fn main() {}' > src/main.rs \
    && touch src/lib.rs crates/apiserver-kit/src/lib.rs \
    && cargo build --release --locked \
    && rm -rf src crates/apiserver-kit/src
COPY crates ./crates
COPY src ./src
RUN touch src/main.rs src/lib.rs crates/apiserver-kit/src/lib.rs && cargo build --release --locked \
    && strip target/release/farm-apiserver

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/farm-apiserver /farm-apiserver
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/farm-apiserver"]
CMD ["serve"]
