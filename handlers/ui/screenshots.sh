#!/usr/bin/env bash
# Regenerates docs/ui/*.png, the screenshots docs/ui.md shows, at 1400 px
# and 390 px wide: the browser tests that visit each page type save them
# (browser.screenshot) when CATALOGSYNC_UI_SCREENSHOTS is set.
#
#   handlers/ui/screenshots.sh        # needs chromium: test/tools.sh path chromium
set -euo pipefail
cd "$(dirname "$0")/../.."
out=docs/ui
rm -f "$out"/*.png
mkdir -p "$out"
CATALOGSYNC_UI_SCREENSHOTS="$PWD/$out" go test -count=1 -timeout 20m ./handlers/ui \
  -run '^(TestBrowserPages|TestHostileCatalog|TestUnpublishedCatalogPage|TestGraphHeadInViewAndNodesFocusable)$'
ls "$out"
