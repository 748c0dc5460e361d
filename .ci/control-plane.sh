#!/usr/bin/env bash
# Builds a Kubernetes control plane for tests from source modules, the way Kubebuilder's
# KUBEBUILDER_ASSETS directory holds one: etcd, kube-apiserver and kubectl (plus
# kube-controller-manager, which runs the garbage collector envtest lacks).
#
#   .ci/control-plane.sh            # builds once, then prints the assets directory
#   export KUBEBUILDER_ASSETS=$(.ci/control-plane.sh)
#
# Only Go and the Go module proxy are needed. The binaries land in
# ${KOPGEN_ASSETS_ROOT:-~/.cache/kopgen/assets}/<version>-<os>-<arch>/; a second run finds
# them there and does nothing. Progress goes to stderr, the directory to stdout.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.37.2}"
# The etcd release k8s.io/kubernetes v1.37.x itself requires (go.etcd.io/etcd/*/v3 in its go.mod).
ETCD_VERSION="${ETCD_VERSION:-3.7.0}"

staging_version="v0.${K8S_VERSION#1.}"
os="$(go env GOOS)"
arch="$(go env GOARCH)"
root="${KOPGEN_ASSETS_ROOT:-$HOME/.cache/kopgen/assets}"
assets="$root/$K8S_VERSION-$os-$arch"
binaries=(etcd kube-apiserver kube-controller-manager kubectl)
stamp="kubernetes v$K8S_VERSION, etcd v$ETCD_VERSION"

if [[ -f "$assets/.stamp" && "$(cat "$assets/.stamp")" == "$stamp" ]]; then
  complete=1
  for bin in "${binaries[@]}"; do [[ -x "$assets/$bin" ]] || complete=0; done
  if [[ $complete == 1 ]]; then
    echo "$assets"
    exit 0
  fi
fi

say() { echo "control-plane: $*" >&2; }
work="$root/build-$K8S_VERSION"
mkdir -p "$work/kubernetes" "$work/etcd" "$work/bin"
# The build needs no VCS stamping and must not pick up a go.work above the cache.
export GOFLAGS="-buildvcs=false -mod=mod" GOWORK=off CGO_ENABLED=0

say "building Kubernetes v$K8S_VERSION into $assets (cold: about 6 minutes on 2 cores)"
cd "$work/kubernetes"
# k8s.io/kubernetes refers to its staging modules (k8s.io/api, ...) as ./staging/...; a module
# that requires it must pin each of them to the published v0.x release of the same tag.
go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" >/dev/null
modfile="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/v$K8S_VERSION.mod"
{
  echo "module kopgen.local/control-plane"
  echo
  echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/')"
  echo
  echo "require k8s.io/kubernetes v$K8S_VERSION"
  echo
  echo "replace ("
  grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$modfile" \
    | awk -v v="$staging_version" '{ print "\t" $1 " => " $1 " " v }'
  echo ")"
} >go.mod
cat >tools.go <<'EOF'
package main

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubectl/pkg/cmd"
)

func main() {}
EOF
go mod tidy >&2
version_flags="-X k8s.io/component-base/version.gitVersion=v$K8S_VERSION"
version_flags+=" -X k8s.io/component-base/version.gitMajor=1"
version_flags+=" -X k8s.io/component-base/version.gitMinor=${K8S_VERSION#1.}"
version_flags+=" -X k8s.io/component-base/version.gitTreeState=clean"
version_flags+=" -X k8s.io/client-go/pkg/version.gitVersion=v$K8S_VERSION"
go build -trimpath -ldflags "-s -w $version_flags" -o "$work/bin/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kubectl

say "building etcd v$ETCD_VERSION"
cd "$work/etcd"
cat >go.mod <<EOF
module kopgen.local/etcd

go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/')

require go.etcd.io/etcd/server/v3 v$ETCD_VERSION
EOF
cat >main.go <<'EOF'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
go mod tidy >&2
go build -trimpath -ldflags "-s -w" -o "$work/bin/etcd" .

# Install all four at once, so an interrupted build never leaves a half-filled directory that
# the stamp would vouch for.
mkdir -p "$root"
rm -rf "$assets.new"
mkdir "$assets.new"
for bin in "${binaries[@]}"; do mv "$work/bin/$bin" "$assets.new/$bin"; done
echo "$stamp" >"$assets.new/.stamp"
rm -rf "$assets"
mv "$assets.new" "$assets"
say "done"
echo "$assets"
