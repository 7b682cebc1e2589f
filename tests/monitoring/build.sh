#!/usr/bin/env bash
# Builds the monitoring test tools from the Go module beside this script: promtool (Prometheus's own
# rule checker and unit-test runner) and dashcheck (loads the Grafana dashboard with Grafana's schema).
# Fetches the prometheus-operator CRDs (ServiceMonitor, PrometheusRule) at a pinned release through the
# Go module proxy, with their licence. All into a cache outside the repo keyed by this folder's content;
# prints that directory on its last line.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
operator_version=v0.90.1
key="$(cat "$here"/go.mod "$here"/go.sum "$here"/*.sh "$here"/dashcheck/*.go "$here/../go-build.sh" | sha256sum | cut -c1-16)"
cache_root="${RECONCILE_HOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reconcile-host}"
bin="$cache_root/monitoring/$key"
mkdir -p "$bin"

tools="monitoring tools"
# shellcheck source=../go-build.sh
source "$here/../go-build.sh"

go_build promtool "$here" github.com/prometheus/prometheus/cmd/promtool
go_build dashcheck "$here" ./dashcheck

if [ ! -f "$bin/crds/LICENSE" ]; then
  # Outside this module, so that the download changes neither go.mod nor go.sum; the checksum
  # database still verifies it.
  dir="$(cd "$(mktemp -d)" && go mod download -json "github.com/prometheus-operator/prometheus-operator@$operator_version" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -d "$dir" ] || { echo "$tools: cannot download prometheus-operator $operator_version" >&2; exit 1; }
  mkdir -p "$bin/crds.tmp"
  for crd in servicemonitors prometheusrules; do
    cp "$dir/example/prometheus-operator-crd/monitoring.coreos.com_$crd.yaml" "$bin/crds.tmp/"
  done
  cp "$dir/LICENSE" "$bin/crds.tmp/LICENSE"
  rm -rf "$bin/crds" && mv "$bin/crds.tmp" "$bin/crds"
fi
echo "$bin"
