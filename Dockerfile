# syntax=docker/dockerfile:1
# reconcile-host: the image `make image` builds, for those who have a container engine. No engine runs on
# the development machines: `make image` assembles the same layout without one (tests/registry/image, on
# go-containerregistry) and the tests run it; this file is checked with hadolint (`make lint-dockerfile`)
# and kept in step with the Makefile and that tool by hand.
#
# The layout: the host linked statically against glibc (no loader, no shared library, no shell), at
# /reconcile-host; /etc/passwd and /etc/group naming the non-root user 65532; /etc/nsswitch.conf (names
# from /etc/hosts, then DNS); Debian's CA certificates; an empty /tmp. Nothing else: FROM scratch.
FROM rust:1.95-bookworm AS build
WORKDIR /src
RUN rustup target add wasm32-wasip2 wasm32-unknown-unknown
COPY . .
# BuildKit cache mounts keep the cargo registry and the target directory from one build to the next:
# a source change recompiles our crates, not wasmtime and the rest of the dependency tree. The binary
# crate is linked again with crt-static (the library and every dependency are `make build`'s).
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    make build CARGO_TARGET_DIR=/src/target \
 && cargo rustc --release --locked -p reconcile-host --bin reconcile-host --target-dir /src/target \
      -- -C target-feature=+crt-static -C strip=symbols \
 && mkdir -p /out/etc/ssl/certs /out/tmp \
 && cp target/release/reconcile-host /out/reconcile-host \
 && cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/ \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nreconcile-host:x:65532:65532:reconcile-host:/nonexistent:/sbin/nologin\n' >/out/etc/passwd \
 && printf 'root:x:0:\nreconcile-host:x:65532:\n' >/out/etc/group \
 && printf 'hosts: files dns\n' >/out/etc/nsswitch.conf \
 && chmod 1777 /out/tmp \
 && cp target/guests/wasm32-unknown-unknown/release/guest_myapp.wasm /myapp.wasm

# The guest component ships in a ConfigMap (deploy/), not in the image; /myapp.wasm is kept in the
# build stage for `docker build --target build` users who want to extract it.
FROM scratch
COPY --from=build /out/ /
USER 65532:65532
ENTRYPOINT ["/reconcile-host"]
