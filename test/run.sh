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
# The compute-heavy ones first (go test starts packages in the order
# given); the rest mostly wait on their servers, so four run at once.
plain=(./test/e2e ./test/chaos ./test/hostile ./test/deploy ./test/fleet ./test/oracle ./test/imagebuild ./bench ./test/load)
# Tests run plainly although their package is race-checked, one line per
# package: one goroutine computing, or volume (the 12 MB community
# catalog, hundreds of MB of parts) through code that a smaller test of
# the same package, named in the comment, race-checks. There the race
# detector finds nothing more and makes them several times slower.
# The raced run skips these patterns in every package: a name here must
# be unique in the module.
declare -A plainTests=(
  # Argument parsing and every setting's check: one goroutine.
  [./cmd/catalogsync]='^TestOneCommandParsesAsAll$|^TestEverySettingRefusesGarbage$'
  # Hashing 150 MB of ids in one goroutine.
  [./handlers/webhook]='^TestDedupeBoundedInBytes$'
  # The community catalog's volume; the small catalogs' subtests are raced.
  [./handlers/content]='^TestMetasIsFilterOfAll$/^community-v4.21$'
  [./handlers/graphql]='^TestSameAsCatalogd$/^community-v4.21$|^TestWorstCaseBoundsAnswer$/^community-v4.21$'
  # Volume through Put and Get against MinIO: concurrent parts stay raced
  # in TestPutPartsCompleteInOrder and TestPutSendsAtMostConcurrencyParts,
  # the suite in its bucket subtest.
  [./storage/s3]='^TestPutPartBoundaries$|^TestPutMemoryFlat$|^TestConformance$/^prefix$'
  # One goroutine: 100k Queries, a 64 MB catalog through the static layout;
  # publishers race in TestPublishRace and
  # TestStaticLayoutConvergesWhenPublishersRace.
  [./storage/catalog]='^TestQueryReadsOnlyMatches$|^TestStaticLayoutStreamsLargeCatalogs$'
  # Chromium's work, or the community catalog's 33 packages: every page
  # type stays raced in TestBrowserPages and TestHostileCatalog, the graphs
  # against opm in TestEveryPackagePageDraws/edge-cases.
  [./handlers/ui]='^TestLayoutNeverBreaksWords$|^TestAccessibility$|^TestGraphHeadInViewAndNodesFocusable$|^TestEveryPackagePageDraws$/^community$|^TestGraphsMatchOPM$'
)
volume=$(IFS='|'; echo "${plainTests[*]}")
# sync/fbc starts no goroutine: but for its concurrent-parse test, raced
# on its own, its tests are one goroutine parsing catalogs.
oneGoroutine=(./sync/fbc)
# Longest first, so that the last package to start is a short one and both
# cores stay busy to the end; go test starts packages in the order given.
first=(./handlers/content ./cmd/catalogsync ./handlers/ui ./storage/s3 ./handlers/graphql ./sync/status ./sync/pipeline ./storage/catalog)
mapfile -t raced < <(go list "${first[@]}"; go list ./... | grep -v -x -F -f <(go list "${plain[@]}" "${oneGoroutine[@]}" "${first[@]}"))
# Three batches side by side, in go test -json: the race-checked packages
# printed as each ends, the end-to-end packages and the tests named above
# printed whole when all are done; then the slowest tests of all three.
racedLog=$(mktemp) plainLog=$(mktemp) restLog=$(mktemp) bin=$(mktemp -d)
trap 'rm -rf "$racedLog" "$plainLog" "$restLog" "$bin"' EXIT
# One binary of each command for every package that starts it as a process.
# As the Dockerfile builds them (test/servers' build too).
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$bin/catalogsync" ./cmd/catalogsync
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$bin/catalogsync-reader" ./cmd/catalogsync-reader
go build -o "$bin/slowest" ./test/slowest
export CATALOGSYNC_TEST_BINARY="$bin/catalogsync"
export CATALOGSYNC_TEST_READER_BINARY="$bin/catalogsync-reader"
go test -json -p 4 -count=1 -timeout 25m "${plain[@]}" >"$plainLog" 2>&1 &
plain_pid=$!
(
  st=0
  go test -json -count=1 -timeout 25m -run "$volume" "${!plainTests[@]}" || st=$?
  go test -json -count=1 -timeout 25m "${oneGoroutine[@]}" || st=$?
  go test -json -race -count=1 -timeout 25m -run '^TestParseConcurrent$' ./sync/fbc || st=$?
  exit "$st"
) >"$restLog" 2>&1 &
rest_pid=$!
status=0
go test -json -race -count=1 -timeout 25m -skip "$volume" "${raced[@]}" 2>&1 | tee "$racedLog" | "$bin/slowest" || status=$?
wait "$plain_pid" || status=$?
wait "$rest_pid" || status=$?
echo "== go test (end-to-end packages, without the race detector)"
"$bin/slowest" "$plainLog"
echo "== go test (plain tests of raced packages and one-goroutine tests, without the race detector; the concurrent parse with it)"
"$bin/slowest" "$restLog"
"$bin/slowest" -print=false -top 15 "$racedLog" "$plainLog" "$restLog"
exit "$status"
