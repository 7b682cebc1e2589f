#!/usr/bin/env bash
# Builds the Go MyApp guest (contract 0.2.0, world converting-reconciler) into a component:   build.sh OUT.wasm
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../toolchain/go/componentize.sh" myapp-go "$here" "$here/../../wit" converting-reconciler "${1:?usage: build.sh OUT.wasm}"
