#!/usr/bin/env bash
# hack/sarif-schema.sh fetches again the published SARIF 2.1.0 JSON schema (rtm.5, the one
# https://json.schemastore.org/sarif-2.1.0.json serves) that cel/sarif's test validates vapc
# check --output sarif against, from the npm package that ships it (MIT), with npm.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent @microsoft/jest-sarif@1.0.0-beta.0 >/dev/null && tar xzf microsoft-jest-sarif-1.0.0-beta.0.tgz)
cp "$tmp/package/lib/schemas/sarif-2.1.0-rtm.5.json" "$repo/cel/sarif/testdata/sarif-2.1.0-rtm.5.json"
echo "wrote cel/sarif/testdata/sarif-2.1.0-rtm.5.json"
