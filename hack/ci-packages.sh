#!/usr/bin/env bash
# hack/ci-packages.sh installs, with apt-get, the Debian packages CI needs beyond Go and the
# Go module proxy: podman and runc for the container image's smoke test (make image-test),
# zsh and fish for the completion scripts' test. It installs only what is missing, and only as
# root on a Debian-like machine; elsewhere it says what to install and succeeds, and the tests
# that need them say what they did not check.
set -euo pipefail
want=()
for c in podman:podman runc:runc zsh:zsh fish:fish; do
  command -v "${c%%:*}" >/dev/null || want+=("${c##*:}")
done
((${#want[@]})) || { echo "ci-packages: podman, runc, zsh and fish are installed"; exit 0; }
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
  echo "ci-packages: install ${want[*]} (not root, or no apt-get here)" >&2
  exit 0
fi
echo "ci-packages: installing ${want[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
