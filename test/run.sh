#!/usr/bin/env bash
# Runs every test: builds the real servers once (cached outside the repo),
# then vet, the linter and the whole Go test suite against them.
#
#   test/run.sh [go test flags...]     e.g. test/run.sh -run Pipeline ./sync/...
set -euo pipefail
cd "$(dirname "$0")/.."

command -v go >/dev/null || { echo "test/run.sh: Go is required (https://go.dev/dl)" >&2; exit 1; }

# Build what the tests start; a no-op when the cache already holds them.
test/tools.sh build registry etcd minio kube-apiserver chromium golangci-lint redocly

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2; echo "$unformatted" >&2; exit 1
fi
echo "== go vet"
go vet ./...
echo "== golangci-lint"
test/lint.sh
echo "== redocly lint (openapi/openapi.yaml, recommended rules: errors fail, warnings are shown)"
# No telemetry or update check: the tests reach nothing outside this machine.
REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true "$(test/tools.sh path redocly)" lint --extends recommended openapi/openapi.yaml
echo "== go test"
if [ $# -eq 0 ]; then set -- ./...; fi
# Every sync the suite runs in a process of its own checks what an
# incremental sync reuses against a parse of the same files.
export CATALOGSYNC_VERIFY_INCREMENTAL=1
# The race detector on the whole suite: it caught what the plain runs did not.
go test -race -count=1 -timeout 25m "$@"
