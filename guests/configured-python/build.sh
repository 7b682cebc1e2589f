#!/usr/bin/env bash
# Builds the Python ConfiguredApp guest (contract 0.2.0, world relating-reconciler):   build.sh OUT.wasm
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../toolchain/python/componentize.sh" configured-python "$here/configured.py" "$here/../../wit" relating-reconciler "${1:?usage: build.sh OUT.wasm}"
