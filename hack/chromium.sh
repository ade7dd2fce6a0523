#!/usr/bin/env bash
# hack/chromium.sh makes sure a Chromium is installed for the report's browser test
# (verify/report TestBrowser, which fails without one: it never skips). It does nothing when
# $VAPC_CHROMIUM, chromium, chromium-browser or google-chrome is found; otherwise it installs
# Debian's chromium package with apt-get, as root or through sudo. `make test` and `make unit`
# run it first, so a fresh Debian machine (CI's .ci/run, as root) gets the browser.
set -euo pipefail

for b in "${VAPC_CHROMIUM:-}" chromium chromium-browser google-chrome google-chrome-stable; do
	if [[ -n $b ]] && command -v "$b" >/dev/null 2>&1; then
		echo "chromium: $(command -v "$b")"
		exit 0
	fi
done

if ! command -v apt-get >/dev/null 2>&1; then
	echo "hack/chromium.sh: no Chromium found and no apt-get to install Debian's chromium:" >&2
	echo "  install Chromium or Chrome, or set VAPC_CHROMIUM to its binary" >&2
	exit 1
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "hack/chromium.sh: no Chromium found: run as root: apt-get install -y chromium" >&2
		exit 1
	fi
	sudo=(sudo)
fi
echo "hack/chromium.sh: installing Debian's chromium for the report's browser test"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq chromium >/dev/null
echo "chromium: $(command -v chromium)"
