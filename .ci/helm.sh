#!/usr/bin/env bash
# Builds Helm from its Go module (the Go module proxy is all it needs), once, into
# ${KOPGEN_ASSETS_ROOT:-~/.cache/kopgen}/helm-<version>/, and prints that directory: the chart
# tests run `helm lint`, `helm template` and `helm install` with it.
#
#   export PATH="$(.ci/helm.sh):$PATH"
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v4.3.2}"
dir="${KOPGEN_HELM_ROOT:-$HOME/.cache/kopgen}/helm-$HELM_VERSION"
if [[ ! -x "$dir/helm" ]]; then
  echo "helm: building helm.sh/helm/v4 $HELM_VERSION into $dir (cold: about 3 minutes on 2 cores)" >&2
  mkdir -p "$dir"
  GOFLAGS="-buildvcs=false" GOWORK=off CGO_ENABLED=0 GOBIN="$dir" \
    go install "helm.sh/helm/v4/cmd/helm@$HELM_VERSION" >&2
fi
echo "$dir"
