#!/usr/bin/env bash
# Builds the test OCI registry (main.go: go-containerregistry's registry with blobs on disk and optional
# basic auth) and the image tool (image/: `make image` builds the host's image with it, the tests push,
# pull and unpack it) from the Go module beside this script, into a cache outside the repo keyed by this
# folder's content; prints that directory on its last line.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
key="$(cat "$here"/go.mod "$here"/go.sum "$here"/*.go "$here"/image/*.go "$here"/*.sh "$here/../go-build.sh" | sha256sum | cut -c1-16)"
cache_root="${RECONCILE_HOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reconcile-host}"
bin="$cache_root/registry/$key"
mkdir -p "$bin"

tools="test registry"
# shellcheck source=../go-build.sh
source "$here/../go-build.sh"

go_build registry "$here" .
go_build image "$here" ./image
echo "$bin"
