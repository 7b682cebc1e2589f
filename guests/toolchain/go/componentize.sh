#!/usr/bin/env bash
# Builds one Go guest into a reconciler component:
#   componentize.sh NAME GUEST_DIR WIT_DIR WORLD OUT.wasm
#
# The guests' own build.sh call this, so that every Go guest is built by one toolchain, the Go guest kit:
#  1. go-guest-kit (this directory's Rust tool, pinned by its Cargo.lock, built once into a cache outside
#     the repo) writes the Go bindings of WORLD with wit-bindgen's Go generator: a module `wit_component`
#     whose wit_exports.go calls the guest's `export_wit_world` package;
#  2. the guest's packages (GUEST_DIR) are put beside them, and the standard Go toolchain builds a wasip1
#     reactor (`-buildmode=c-shared`: `_initialize`, no `main`);
#  3. go-guest-kit turns that core module into a component, with WASI preview1 adapted to WASI 0.2.
# The generated code imports wit-bindgen's Go runtime package, go.bytecodealliance.org/pkg, which is not
# served by the Go module proxy: it ships inside the wit-bindgen-go crate, and is copied from there into
# the cache and used through a `replace`. Nothing is fetched by `go build`. An unchanged guest is not
# rebuilt: OUT.wasm.key records what it was built from. NAME prefixes the progress lines, on stderr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name="$1" guest="$2" wit="$3" world="$4" out="$5"
tools="${RECONCILE_HOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reconcile-host}/go-kit"
mkdir -p "$tools" "$(dirname "$out")"
exec 9>"$tools.lock" && flock 9 # one install or build at a time

command -v go >/dev/null || { echo "$name: the Go guest kit needs Go 1.25 or later" >&2; exit 1; }
tools_key="$(cat "$here/Cargo.toml" "$here/Cargo.lock" "$here"/src/*.rs | sha256sum | cut -c1-16)"
if [ "$(cat "$tools/.installed" 2>/dev/null)" != "$tools_key" ]; then
  echo "$name: building the Go guest kit into $tools" >&2
  cargo build --release --locked --quiet --manifest-path "$here/Cargo.toml" --target-dir "$tools/target" >&2
  cp "$tools/target/release/go-guest-kit" "$tools/go-guest-kit"
  # The Go runtime package from the wit-bindgen-go crate that cargo fetched for the tool. Its go.mod asks
  # for a newer Go than it needs; the generated module's own `go 1.25` is what the generator targets.
  crate="$(cargo metadata --locked --format-version 1 --manifest-path "$here/Cargo.toml" |
    python3 -c 'import json, sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == "wit-bindgen-go"))')"
  rm -rf "$tools/pkg" && cp -r "$(dirname "$crate")/src/pkg" "$tools/pkg"
  go mod edit -go=1.25 "$tools/pkg/go.mod"
  echo "$tools_key" >"$tools/.installed"
fi

key="$({ find "$guest" "$here/reconcilekit" -name '*.go' -print0 | sort -z | xargs -0 cat; cat "$0" "$wit"/*.wit "$tools/.installed";
  go version; echo "$world"; } | sha256sum | cut -c1-16)"
if [ -f "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
  exit 0
fi
echo "$name: building $(basename "$guest") into $out" >&2
build="$out.build"
rm -rf "$build" && mkdir -p "$build"
"$tools/go-guest-kit" bindings "$wit" "$world" "$build"
(cd "$guest" && find . -name '*.go' -exec cp --parents {} "$build/" \;)
cp -r "$here/reconcilekit" "$build/"
go mod edit -replace "go.bytecodealliance.org/pkg=$tools/pkg" "$build/go.mod"
# -buildmode=c-shared: a reactor, whose `_initialize` (run by the component when instantiated) starts the
# runtime, and whose exports can then be called any number of times. -checklinkname=0: the runtime
# package's `cabi_realloc` reaches `runtime.sbrk` (for calls made before the Go runtime is initialized).
GOOS=wasip1 GOARCH=wasm GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod \
  go build -C "$build" -trimpath -buildmode=c-shared -ldflags=-checklinkname=0 -o core.wasm . >&2
"$tools/go-guest-kit" componentize "$build/core.wasm" "$wit" "$world" "$out.tmp"
mv "$out.tmp" "$out"
echo "$key" >"$out.key"
