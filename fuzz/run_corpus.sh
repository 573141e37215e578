#!/bin/bash
# CI's fuzz stage, deterministic: every fuzz target of BUILD_DIR (configured
# with -DOOMGUARD_FUZZ=ON) replays its seed corpus fuzz/corpus/<target>/
# (-runs=0; every finding is kept there), then runs RUNS inputs (default
# 2000) mutated from it with a fixed seed (-seed=1) and the target's
# dictionary. The same commit gives the same inputs on every machine: CI
# cannot fail on a commit that changed nothing. Open-ended fuzzing, with
# random seeds and for as long as you like, is fuzz/campaign.sh.
#
# New inputs and crash artifacts go to a temporary folder, never into the
# repository. Exits non-zero on the first crash, leak, sanitizer report,
# failed expectation (fuzz/fuzz_checks.h), hang (60 s per input: only a real
# hang, not a slow shared machine) or out-of-memory (2 GiB).
#
# Usage (from the repository root): fuzz/run_corpus.sh BUILD_DIR [RUNS]
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [RUNS]" >&2
  exit 2
fi
build=$1
runs=${2:-2000}
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=fuzz/fuzz_target.sh
source "$root/fuzz/fuzz_target.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

common=(-timeout=60 -rss_limit_mb=2048 -print_final_stats=1)
targets=0
for corpus in "$root"/fuzz/corpus/*/; do
  fuzz_target "$root" "$build" "$corpus"
  mkdir -p "$work/$target/new" "$work/$target/artifacts"
  echo "== $target: replay of $(find "$corpus" -type f | wc -l) seeds"
  "$binary" "${common[@]}" -runs=0 -artifact_prefix="$work/$target/artifacts/" "$corpus" \
    >"$work/$target/replay.log" 2>&1 || {
    tail -40 "$work/$target/replay.log"
    echo "FAILED: $target on its seed corpus" >&2
    exit 1
  }
  echo "== $target: $runs inputs from seed 1"
  "$binary" "${common[@]}" "${dict[@]}" -seed=1 -runs="$runs" \
    -artifact_prefix="$work/$target/artifacts/" "$work/$target/new" "$corpus" \
    >"$work/$target/fuzz.log" 2>&1 || {
    tail -40 "$work/$target/fuzz.log"
    echo "FAILED: $target at seed 1; the input, base64 (keep it in $corpus and as a test):" >&2
    for artifact in "$work/$target/artifacts/"*; do
      [[ -f $artifact ]] && echo "$(basename "$artifact"): $(base64 -w0 "$artifact")" >&2
    done
    exit 1
  }
  grep -E "^Done|stat::number_of_executed_units" "$work/$target/fuzz.log" | tail -1
  targets=$((targets + 1))
done
echo "all $targets fuzz targets passed"
