#!/usr/bin/env bash
# Vendors the graph layout library the package page draws with: dagre
# (@dagrejs/dagre, MIT), pinned, from the npm registry through `npm pack`.
# The built file and its licence are committed beside this script and
# embedded in the binary; nothing is fetched at run time.
#
#   handlers/ui/assets/vendor.sh        # re-fetch the pinned version
set -euo pipefail
DAGRE_VERSION=3.1.3
# sha512 integrity of the package tarball, as npm records it.
DAGRE_INTEGRITY=sha512-X4aUTwOReZvthaZWOVHqlJ52/ZdhZFEM4+Lh/uR4XooUSLE6p71bcy7MPGzYnNUcNh+nj+i/qJQpCMIdQnSmrg==

here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm pack --silent "@dagrejs/dagre@$DAGRE_VERSION" >/dev/null
tgz=dagrejs-dagre-$DAGRE_VERSION.tgz
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
if [ "$got" != "$DAGRE_INTEGRITY" ]; then
  echo "vendor.sh: $tgz integrity $got, want $DAGRE_INTEGRITY" >&2
  exit 1
fi
tar xzf "$tgz"
cp package/dist/dagre.min.js "$here/dagre.min.js"
cp package/LICENSE "$here/dagre.LICENSE"
echo "vendored @dagrejs/dagre $DAGRE_VERSION into $here"
