#!/usr/bin/env bash
# hack/image-test.sh builds vapc's container image from the Dockerfile (FROM scratch: no base
# image is pulled) with podman, or buildah where podman is missing, and smoke-tests it: the
# image holds one layer, runs as the unprivileged user 65532, and its vapc checks the in-tree
# policies (exit 0), fails a truncated audit log (exit 1) and refuses a wrong flag (exit 2) with
# the repository mounted read-only.
#
# On a machine where containers cannot run (no runtime, no permission), it says so and checks
# what it can: the image is built, and the binary it holds is run outside of a container.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
arch=$(go env GOARCH)
image=localhost/vapc:image-test

if command -v podman >/dev/null; then
  tool=podman
elif command -v buildah >/dev/null; then
  tool=buildah
else
  echo "image-test: neither podman nor buildah is installed: apt-get install podman (hack/ci-packages.sh does)" >&2
  exit 1
fi
make -s dist-linux ARCHES="$arch"
echo "image-test: building $image with $tool"
$tool build --quiet --build-arg TARGETARCH="$arch" -t "$image" -f Dockerfile . >/dev/null
trap '$tool rmi -f "$image" >/dev/null 2>&1 || true' EXIT

fail() { echo "image-test: FAIL: $*" >&2; exit 1; }
inspect() { $tool inspect --type image --format "$1" "$image" 2>/dev/null || $tool inspect --format "$1" "$image"; }
user=$(inspect '{{.Config.User}}')
[[ $user == 65532:65532 ]] || fail "the image runs as user '$user', want 65532:65532"
layers=$(inspect '{{len .RootFS.Layers}}')
[[ $layers == 1 ]] || fail "the image has $layers layers, want the binary's one (FROM scratch)"

# expect CODE ARGS...: run vapc in the image and check its exit code.
runner=()
if [[ $tool == podman ]]; then
  # runc runs where crun refuses hybrid cgroups; limits are lowered, never raised (no
  # CAP_SYS_RESOURCE in some sandboxes).
  rt=()
  command -v runc >/dev/null && rt=(--runtime runc)
  runner=(podman "${rt[@]}" run --rm --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 -v "$repo:/work:ro" "$image")
else
  runner=(buildah run --volume "$repo:/work:ro" "$(buildah from "$image")" /usr/local/bin/vapc)
fi
if ! "${runner[@]}" version >/tmp/image-test.out 2>&1; then
  echo "image-test: NOTE: $tool cannot run containers on this machine:" >&2
  sed 's/^/  /' /tmp/image-test.out >&2
  echo "image-test: the image is built (one layer, user 65532); its binary is run outside of a container instead" >&2
  runner=("$repo/dist/vapc-linux-$arch")
fi
expect() {
  local want=$1 got=0
  shift
  "${runner[@]}" "$@" >/tmp/image-test.out 2>&1 || got=$?
  if [[ $got != "$want" ]]; then
    cat /tmp/image-test.out >&2
    fail "vapc $* exited $got, want $want"
  fi
  echo "image-test: vapc $* exited $got as it should"
}
expect 0 version
expect 0 check policies/
expect 0 replay --policies testdata/audit/kosmos-basic/policy.yaml --check-recorded --fail-on any-change testdata/audit/kosmos-basic/audit.log.gz
head -c 45000 testdata/audit/kosmos-basic/audit.log.gz >"$repo/dist/truncated.log.gz"
expect 1 replay --policies policies/ dist/truncated.log.gz
rm -f "$repo/dist/truncated.log.gz"
expect 2 check --no-such-flag policies/
echo "image-test: ok"
