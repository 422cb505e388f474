#!/usr/bin/env bash
# Lints the whole tree with the pinned golangci-lint and the checks set in
# .golangci.yml; test/tools.sh builds the linter into the tools cache once.
#
#   test/lint.sh [golangci-lint run flags...] [packages]   e.g. test/lint.sh ./storage/...
set -euo pipefail
cd "$(dirname "$0")/.."

lint=$(test/tools.sh path golangci-lint)
# Without packages golangci-lint lints ./..., the whole tree. A second
# run started meanwhile (another checkout's test/run.sh) waits for the
# first instead of failing the suite.
exec "$lint" run --allow-serial-runners "$@"
