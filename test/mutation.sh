#!/usr/bin/env bash
# Mutation testing of the critical packages with gremlins (pinned in
# test/tools.sh), against their fast unit tests (go test -short: tests that
# need a real server skip). Slow, so not part of test/run.sh.
#
#   test/mutation.sh [package...]     default: the critical packages below
#
# Writes mutation/<package>.json (gremlins' results) and prints a table per
# package; the mutants that survived go to mutation/survivors.txt, those no
# -short test reaches to mutation/not-covered.txt. Only the package's own
# files are mutated, not its subpackages'. See docs/testing.md.
#
#   MUTATION_WORKERS=2       mutants tested at once
#   MUTATION_TIMEOUT=10      a mutant's test run times out after this many
#                            times the unmutated run (which includes a build)
#   MUTATION_EXCLUDE='re..'  space-separated regexps of the package's files
#                            not to mutate (e.g. 'gc.go browse.go')
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
  # Each mutant runs the package's -short tests, stopping at the first
  # failure (a killed mutant needs no more); timeouts count as killed
  # (the test noticed something hung). -count=1: gremlins times the
  # coverage run to set the timeout, and a cached run takes no time.
  excl=(-E /)  # file paths are relative to the package: a "/" is a subpackage
  read -ra more <<<"${MUTATION_EXCLUDE:-}"
  for e in ${more[@]+"${more[@]}"}; do excl+=(-E "$e"); done
  GOFLAGS="-short -failfast -count=1" "$bin" unleash --workers "${MUTATION_WORKERS:-2}" \
    --timeout-coefficient "${MUTATION_TIMEOUT:-10}" "${excl[@]}" \
    --invert-logical --invert-loopctrl -o "$f" "./$p" >"$out/$(echo "$p" | tr / _).log" 2>&1 || true
  results+=("$p=$f")
done
go run ./test/mutation/report -survivors "$out/survivors.txt" \
  -not-covered "$out/not-covered.txt" "${results[@]}"
