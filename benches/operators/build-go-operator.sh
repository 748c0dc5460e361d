#!/usr/bin/env bash
# Builds the Kubebuilder operator of `cargo bench --bench operators` from the Go module proxy:
# kubebuilder v4.16.0 scaffolds a project (controller-runtime v0.25) with a Blog kind, this
# directory's blog_controller.go replaces the scaffolded reconcile, and the manager is built.
# Idempotent; prints the project directory (its bin/manager and config/crd/bases/).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="${KOPGEN_BENCH_ROOT:-$HOME/.cache/kopgen/bench}"
project="$root/go-operator"
export GOBIN="$root/bin" GOWORK=off
mkdir -p "$GOBIN"
[[ -x "$GOBIN/kubebuilder" ]] || go install sigs.k8s.io/kubebuilder/v4@v4.16.0 >&2
if [[ ! -f "$project/PROJECT" ]]; then
  rm -rf "$project" && mkdir -p "$project" && cd "$project"
  "$GOBIN/kubebuilder" init --domain example.com --repo example.com/gobench --project-name gobench >&2
  "$GOBIN/kubebuilder" create api --group apps --version v1 --kind Blog --resource --controller >&2
fi
cd "$project"
cp "$here/blog_controller.go" internal/controller/blog_controller.go
# The status carries observedGeneration beside the conditions, as kopgen's does.
if ! grep -q ObservedGeneration api/v1/blog_types.go; then
  sed -i 's|^\tConditions \[\]metav1.Condition `json:"conditions,omitempty"`|&\n\n\t// +optional\n\tObservedGeneration int64 `json:"observedGeneration,omitempty"`|' api/v1/blog_types.go
fi
make manifests generate >&2
go build -o bin/manager cmd/main.go >&2
echo "$project"
