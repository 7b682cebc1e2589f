#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd,
# kwok) from the Go wrapper modules beside this script, into a cache outside the repo keyed by the
# wrapper modules' content, and prints the directory holding the binaries on its last line.
# A binary already in the cache is reused; a failed build names the component and shows the tail of its log.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
k8s_version=v1.36.3
key="$(cat "$here"/*/go.mod "$here"/*/go.sum "$here/build.sh" "$here/../go-build.sh" | sha256sum | cut -c1-16)"
cache_root="${RECONCILE_HOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reconcile-host}"
bin="$cache_root/controlplane/$k8s_version-$key"
mkdir -p "$bin"

version_flags="-X k8s.io/component-base/version.gitVersion=$k8s_version"
version_flags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"
version_flags+=" -X k8s.io/component-base/version.gitTreeState=clean"

tools="control plane"
# shellcheck source=../go-build.sh
source "$here/../go-build.sh"

go_build etcd "$here/etcd" go.etcd.io/etcd/server/v3
go_build kube-apiserver "$here/kube" k8s.io/kubernetes/cmd/kube-apiserver "$version_flags"
go_build kube-controller-manager "$here/kube" k8s.io/kubernetes/cmd/kube-controller-manager "$version_flags"
go_build kube-scheduler "$here/kube" k8s.io/kubernetes/cmd/kube-scheduler "$version_flags"
go_build kubectl "$here/kube" k8s.io/kubernetes/cmd/kubectl "$version_flags"
go_build kwok "$here/kwok" sigs.k8s.io/kwok/cmd/kwok
echo "$bin"
