#!/usr/bin/env bash
# Vendors axe-core (MPL-2.0), the accessibility engine the browser tests
# run on every page type, pinned, from the npm registry through
# `npm pack`. Test data only: it is not embedded in the binary.
#
#   handlers/ui/testdata/axe/vendor.sh        # re-fetch the pinned version
set -euo pipefail
AXE_VERSION=4.14.1
# sha512 integrity of the package tarball, as npm records it.
AXE_INTEGRITY=sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==

here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm pack --silent "axe-core@$AXE_VERSION" >/dev/null
tgz=axe-core-$AXE_VERSION.tgz
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
if [ "$got" != "$AXE_INTEGRITY" ]; then
  echo "vendor.sh: $tgz integrity $got, want $AXE_INTEGRITY" >&2
  exit 1
fi
tar xzf "$tgz"
cp package/axe.min.js package/LICENSE package/LICENSE-3RD-PARTY.txt "$here/"
# The tests check the file against this before running it.
(cd "$here" && sha256sum axe.min.js > SHA256SUMS)
echo "vendored axe-core $AXE_VERSION into $here"
