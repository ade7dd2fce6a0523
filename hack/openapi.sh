#!/usr/bin/env bash
# Regenerates cel/schema/openapi/v<major>.<minor>/ from the OpenAPI v3 documents that
# Kubernetes publishes in the k8s.io/kubernetes module (api/openapi-spec/v3).
#
# Usage: hack/openapi.sh [KUBERNETES_VERSION]    (default v1.37.0)
#
# The module is fetched with `go mod download` (from the module cache when present). The
# output is deterministic: running this twice produces byte-identical files.
set -euo pipefail

kube_version="${1:-v1.37.0}"
if [[ ! "${kube_version}" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]]; then
  echo "openapi.sh: version must look like v1.37.0, got ${kube_version}" >&2
  exit 2
fi
minor="v${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

# Download outside the vapc module so that go.mod and go.sum are left alone.
if ! info="$(cd "${tmp}" && GOFLAGS= GO111MODULE=on go mod download -json "k8s.io/kubernetes@${kube_version}")"; then
  echo "openapi.sh: go mod download k8s.io/kubernetes@${kube_version} failed:" >&2
  echo "${info}" >&2
  exit 1
fi
field() { printf '%s\n' "${info}" | sed -n "s/^[[:space:]]*\"$1\": \"\\(.*\\)\",\\{0,1\\}\$/\\1/p" | head -n 1; }
dir="$(field Dir)"
sum="$(field Sum)"
if [[ -z "${dir}" || ! -d "${dir}/api/openapi-spec/v3" ]]; then
  echo "openapi.sh: no api/openapi-spec/v3 in the downloaded module (Dir=${dir:-unknown})" >&2
  exit 1
fi

cd "${root}"
go run ./cel/schema/internal/openapigen \
  -src "${dir}/api/openapi-spec/v3" \
  -out "cel/schema/openapi/${minor}" \
  -source "k8s.io/kubernetes@${kube_version} ${sum}"
# The index of the documents' paths and kinds (cel/schema/index.go), which TestDocumentIndex
# holds to the documents.
go test ./cel/schema -run TestDocumentIndex -update
echo "openapi.sh: wrote cel/schema/openapi/${minor} from k8s.io/kubernetes@${kube_version}" >&2
