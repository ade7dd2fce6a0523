#!/usr/bin/env bash
# hack/e2e-tools.sh [--check] [outdir] builds the binaries the end-to-end tests run a
# real control plane with: kube-apiserver, kube-controller-manager, kube-scheduler and
# kubectl v1.37.0 from the module in verify/e2e/tools, and etcd v3.6 from
# verify/e2e/tools/etcd.
#
# They go to outdir (default <repo>/.cache/e2e/bin, which git ignores). A
# binary is rebuilt only when its stamp file does not match: the stamp records
# the sha256 of its module's go.mod and go.sum and of its build flags, and the
# Go version. Builds use the ordinary GOCACHE, so a rebuild after a stamp
# change is cheap unless the dependencies changed. Concurrent runs (go test builds packages in parallel) serialize on
# a lock in outdir. Prints one line per binary: built or up to date.
#
# With --check it builds nothing: it exits 1, naming each binary that is missing or stale,
# unless all are up to date (the e2e harness runs it before a test starts a server, so
# that a test without its binaries fails at once with the command that builds them).
set -euo pipefail

check=
if [[ ${1:-} == --check ]]; then
  check=1
  shift
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-"$repo/.cache/e2e/bin"}
tools="$repo/verify/e2e/tools"

if [[ -n $check ]]; then
  missing=()
  for name in kube-apiserver kube-controller-manager kube-scheduler kubectl etcd; do
    [[ -x "$out/$name" ]] || missing+=("$out/$name")
  done
  if ((${#missing[@]})); then
    echo "e2e-tools: missing ${missing[*]}" >&2
    exit 1
  fi
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The tool modules are not part of the root module; a go.work must not pull
# them into one. Static binaries, as upstream releases them.
export GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=readonly

if [[ -z $check ]]; then
  exec 9>"$out/.lock"
  flock 9
fi

goversion=$(go env GOVERSION)
buildflags=(-trimpath -buildvcs=false)

# stamp_for MODULE_DIR LDFLAGS prints the stamp of the binaries built from
# MODULE_DIR with LDFLAGS.
stamp_for() {
  local modules flags
  modules=$(cat "$1/go.mod" "$1/go.sum" | sha256sum | cut -d' ' -f1)
  flags=$(printf '%s\n' "${buildflags[@]}" "$2" "$CGO_ENABLED" | sha256sum | cut -d' ' -f1)
  printf 'modules=%s flags=%s go=%s\n' "$modules" "$flags" "$goversion"
}

# stale NAME STAMP succeeds when $out/NAME is missing or was built otherwise.
stale() {
  [[ ! -x "$out/$1" ]] || [[ "$(cat "$out/.stamp-$1" 2>/dev/null)" != "$2" ]]
}

# build MODULE_DIR LDFLAGS NAME=PACKAGE... builds the stale binaries of one
# module with one go build, so their shared packages compile once.
build() {
  local dir=$1 ldflags=$2 stamp names=() pkgs=() name pkg
  shift 2
  stamp=$(stamp_for "$dir" "$ldflags")
  for arg in "$@"; do
    name=${arg%%=*} pkg=${arg#*=}
    if stale "$name" "$stamp"; then
      names+=("$name") pkgs+=("$pkg")
    elif [[ -z $check ]]; then
      echo "e2e-tools: $name up to date"
    fi
  done
  ((${#names[@]})) || return 0
  if [[ -n $check ]]; then
    echo "e2e-tools: stale ${names[*]} (built from other modules, flags or Go)" >&2
    stale_found=1
    return 0
  fi

  local tmp="$out/.build" start=$SECONDS
  rm -rf "$tmp"
  echo "e2e-tools: building ${names[*]} ($goversion) ..."
  (cd "$dir" && go build "${buildflags[@]}" -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}")
  for name in "${names[@]}"; do
    # go build -o DIR/ names each binary after the last element of its package.
    mv -f "$tmp/$(basename "$(pkg_of "$name" "$@")")" "$out/$name"
    echo "$stamp" >"$out/.stamp-$name"
    echo "e2e-tools: built $out/$name"
  done
  rm -rf "$tmp"
  echo "e2e-tools: ${names[*]} took $((SECONDS - start))s"
}

# pkg_of NAME NAME=PACKAGE... prints the package NAME is built from.
pkg_of() {
  local want=$1 arg
  shift
  for arg in "$@"; do
    [[ ${arg%%=*} == "$want" ]] && { echo "${arg#*=}"; return; }
  done
}

# Stamp the Kubernetes binaries as kube::version::ldflags in the Kubernetes
# source (hack/lib/version.sh) does for a release build, for both
# k8s.io/component-base/version and k8s.io/client-go/pkg/version. The binary
# version decides the apiserver's emulation and CEL compatibility versions, so
# it must be the release's, not the unstamped v0.0.0-master. The module zip
# carries no commit, so gitCommit stays empty; the build date is the release's
# commit time from the module proxy, so builds are reproducible.
kube_version=$(cd "$tools" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
kube_time=$(cd "$tools" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
if [[ ! $kube_version =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]]; then
  echo "e2e-tools: k8s.io/kubernetes $kube_version is not a release version" >&2
  exit 1
fi
kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$kube_version"
  kube_ldflags+=" -X $pkg.gitMajor=${BASH_REMATCH[1]}"
  kube_ldflags+=" -X $pkg.gitMinor=${BASH_REMATCH[2]}"
  kube_ldflags+=" -X $pkg.gitCommit="
  kube_ldflags+=" -X $pkg.gitTreeState=clean"
  kube_ldflags+=" -X $pkg.buildDate=$kube_time"
done

build "$tools" "$kube_ldflags" \
  kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
  kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
  kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler \
  kubectl=k8s.io/kubernetes/cmd/kubectl
build "$tools/etcd" "-s -w" \
  etcd=github.com/vapc-dev/vapc/verify/e2e/tools/etcd
if [[ -n ${stale_found:-} ]]; then
  exit 1
fi
