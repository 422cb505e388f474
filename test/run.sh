#!/usr/bin/env bash
# Runs every test: builds the real servers once (cached outside the repo),
# then vet, the linter and the whole Go test suite against them.
#
#   test/run.sh [go test flags...]     e.g. test/run.sh -run Pipeline ./sync/...
#
# With arguments, go test runs them under the race detector; without, the
# whole suite runs as described at "go test" below.
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
# Every sync the suite runs in a process of its own checks what an
# incremental sync reuses against a parse of the same files.
export CATALOGSYNC_VERIFY_INCREMENTAL=1
if [ $# -gt 0 ]; then
  exec go test -race -count=1 -timeout 25m "$@"
fi

# The race detector where it finds things: on the packages whose code runs
# inside the test binary. The end-to-end packages below run catalogsync and
# the servers as processes of their own, built without it, so there it
# would check only the harness while slowing every scenario: they run
# plainly. Their scenarios mostly wait on those processes, so they run
# beside the race-checked packages, which mostly compute.
plain=(./test/e2e ./test/oracle ./test/chaos ./test/deploy ./test/hostile ./test/imagebuild ./bench ./test/load)
# Tests whose work is one goroutine computing (argument parsing) or the
# volume of the 12 MB community catalog through code a small catalog's
# subtest already race-checks: the race detector finds nothing more there
# and makes them ten times slower. They run plainly, after the end-to-end
# packages; the rest of their packages stays race-checked.
volume='^TestOneCommandParsesAsAll$|^TestEverySettingRefusesGarbage$|^TestMetasIsFilterOfAll$/^community-v4.21$'
volumePkgs=(./cmd/catalogsync ./handlers/content)
# Longest first, so that the last package to start is a short one and both
# cores stay busy to the end; go test starts packages in the order given.
first=(./handlers/content ./cmd/catalogsync ./handlers/ui ./sync/fbc ./storage/s3 ./handlers/graphql ./sync/status ./sync/pipeline ./storage/catalog)
mapfile -t raced < <(go list "${first[@]}"; go list ./... | grep -v -x -F -f <(go list "${plain[@]}" "${first[@]}"))
log=$(mktemp)
trap 'rm -f "$log"' EXIT
(
  st=0
  go test -count=1 -timeout 25m "${plain[@]}" || st=$?
  go test -count=1 -timeout 25m -run "$volume" "${volumePkgs[@]}" || st=$?
  exit "$st"
) >"$log" 2>&1 &
plain_pid=$!
status=0
go test -race -count=1 -timeout 25m -skip "$volume" "${raced[@]}" || status=$?
wait "$plain_pid" || status=$?
echo "== go test (end-to-end packages and the volume tests, without the race detector)"
cat "$log"
exit "$status"
