#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd,
# kwok) from the Go wrapper modules beside this script, into a cache outside the repo keyed by the
# wrapper modules' content, and prints the directory holding the binaries on its last line.
# A binary already in the cache is reused; a failed build names the component and shows the tail of its log.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
k8s_version=v1.36.3
key="$(cat "$here"/*/go.mod "$here"/*/go.sum "$here/build.sh" | sha256sum | cut -c1-16)"
cache_root="${RECONCILE_HOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reconcile-host}"
bin="$cache_root/controlplane/$k8s_version-$key"
mkdir -p "$bin"

version_flags="-X k8s.io/component-base/version.gitVersion=$k8s_version"
version_flags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"
version_flags+=" -X k8s.io/component-base/version.gitTreeState=clean"

# build COMPONENT MODULE_DIR PACKAGE [LDFLAGS]
build() {
  local name=$1 dir=$2 pkg=$3 ldflags=${4:-}
  if [ -x "$bin/$name" ]; then return 0; fi
  local log="$bin/$name.build.log" start=$SECONDS
  echo "control plane: building $name ($pkg)" >&2
  if ! (cd "$here/$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$bin/$name.tmp" "$pkg") >"$log" 2>&1; then
    echo "control plane: building $name FAILED (module $dir, package $pkg); last lines of $log:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  mv "$bin/$name.tmp" "$bin/$name"
  echo "control plane: built $name in $((SECONDS - start)) s" >&2
}

build etcd etcd go.etcd.io/etcd/server/v3
build kube-apiserver kube k8s.io/kubernetes/cmd/kube-apiserver "$version_flags"
build kube-controller-manager kube k8s.io/kubernetes/cmd/kube-controller-manager "$version_flags"
build kube-scheduler kube k8s.io/kubernetes/cmd/kube-scheduler "$version_flags"
build kubectl kube k8s.io/kubernetes/cmd/kubectl "$version_flags"
build kwok kwok sigs.k8s.io/kwok/cmd/kwok
echo "$bin"
