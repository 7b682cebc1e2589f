# syntax=docker/dockerfile:1
# reconcile-host: a multi-stage build with the same steps as the Makefile (`make build`).
# No container engine runs on the development machines: `make lint-dockerfile` checks this file with
# hadolint, and it is kept in step with the Makefile by hand. The build stage runs `make build`, the
# runtime stage holds the host binary only (about 30 MiB stripped, on Debian's slim image).
FROM rust:1.95-bookworm AS build
WORKDIR /src
RUN rustup target add wasm32-wasip2 wasm32-unknown-unknown
COPY . .
# BuildKit cache mounts keep the cargo registry and the target directory from one build to the next:
# a source change recompiles our crates, not wasmtime and the rest of the dependency tree.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    make build CARGO_TARGET_DIR=/src/target \
 && mkdir -p /out \
 && cp target/release/reconcile-host /out/ \
 && strip /out/reconcile-host \
 && cp target/guests/wasm32-unknown-unknown/release/guest_myapp.wasm /out/myapp.wasm

# The guest component ships in a ConfigMap (deploy/), not in the image; /out/myapp.wasm is kept in the
# build stage for `docker build --target build` users who want to extract it.
FROM debian:bookworm-slim
RUN useradd --uid 65532 --user-group --no-create-home --shell /usr/sbin/nologin reconcile-host
COPY --from=build /out/reconcile-host /usr/local/bin/reconcile-host
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/reconcile-host"]
