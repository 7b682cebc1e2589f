#!/usr/bin/env bash
# Builds the JavaScript MyApp guest (contract 0.1.0) into a reconciler component:   build.sh OUT.wasm
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../toolchain/js/componentize.sh" myapp-js "$here/myapp.js" "$here/../../wit/v0.1.0" reconciler "${1:?usage: build.sh OUT.wasm}"
