#!/usr/bin/env bash
# Mutation check: applies each deliberate small bug in scripts/mutations/*.txt
# one at a time, rebuilds the test executable it names and runs it; reports
# which mutants the tests kill. Exit 0 only when every mutant is killed.
#   bash scripts/mutation-check.sh [BUILD_DIR [MUTANT_FILE...]] [--only TEXT]
# BUILD_DIR defaults to build/ (configured and built by scripts/test.sh).
# Each mutant rebuilds one test executable: budget a few minutes per mutant
# on a 2-core machine. The sources are restored after every mutant.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${1:-$root/build}
[ $# -gt 0 ] && shift
[ -f "$build_dir/CMakeCache.txt" ] || {
  echo "mutation-check: $build_dir is not a configured build (run bash scripts/test.sh first)" >&2
  exit 1
}
exec python3 "$root/scripts/mutation_check.py" "$build_dir" "$@"
