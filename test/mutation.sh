#!/usr/bin/env bash
# Mutation testing of the critical packages with gremlins (pinned in
# test/tools.sh), against their fast unit tests (go test -short: tests that
# need a real server skip). Slow, so not part of test/run.sh.
#
#   test/mutation.sh [package...]     default: the critical packages below
#
# Writes mutation/<package>.json (gremlins' results) and prints a table per
# package; the mutants that survived go to mutation/survivors.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=("$@")
if [ ${#pkgs[@]} -eq 0 ]; then
  pkgs=(
    handlers/webhook   # receiver authentication and parsing
    handlers/events    # the CloudEvents endpoint
    sync/unpack        # paths, links, caps, whiteouts
    sync/fbc           # parse, normalise, validate
    storage/catalog    # pointer, lease, index, GC
    sync/status        # the status writer's rendering
  )
fi
bin=$(test/tools.sh path gremlins)
out=${MUTATION_OUT:-mutation}
mkdir -p "$out"
results=()
for p in "${pkgs[@]}"; do
  p=${p#./}
  f="$out/$(echo "$p" | tr / _).json"
  echo "== $p" >&2
  # Each mutant runs the package's -short tests; timeouts count as killed
  # (the test noticed something hung).
  GOFLAGS=-short "$bin" unleash --workers "${MUTATION_WORKERS:-2}" --timeout-coefficient 10 \
    --invert-logical --invert-loopctrl -o "$f" "./$p" >"$out/$(echo "$p" | tr / _).log" 2>&1 || true
  results+=("$p=$f")
done
go run ./test/mutation/report -survivors "$out/survivors.txt" "${results[@]}"
