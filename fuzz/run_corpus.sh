#!/bin/bash
# Runs every fuzz target of BUILD_DIR (configured with -DOOMGUARD_FUZZ=ON)
# over its seed corpus: first a replay of fuzz/corpus/<target>/ (-runs=0),
# then SECONDS (default 10) of fuzzing from it with the target's dictionary.
# New inputs and crash artifacts go to a temporary folder, never into the
# repository. Exits non-zero on the first crash, leak, sanitizer report,
# timeout (5 s per input) or out-of-memory (2 GiB).
#
# Usage (from the repository root): fuzz/run_corpus.sh BUILD_DIR [SECONDS]
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [SECONDS]" >&2
  exit 2
fi
build=$1
seconds=${2:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

common=(-timeout=5 -rss_limit_mb=2048 -print_final_stats=1)
targets=0
for corpus in "$root"/fuzz/corpus/*/; do
  target=$(basename "$corpus")
  binary="$build/fuzz/$target"
  if [[ ! -x $binary ]]; then
    echo "missing $binary (build the oomguard_fuzzers target)" >&2
    exit 1
  fi
  dict=()
  if [[ -f $root/fuzz/dicts/${target%_fuzzer}.dict ]]; then
    dict=(-dict="$root/fuzz/dicts/${target%_fuzzer}.dict")
  fi
  mkdir -p "$work/$target/new" "$work/$target/artifacts"
  echo "== $target: replay of $(find "$corpus" -type f | wc -l) seeds"
  "$binary" "${common[@]}" -runs=0 -artifact_prefix="$work/$target/artifacts/" "$corpus" \
    >"$work/$target/replay.log" 2>&1 || {
    tail -40 "$work/$target/replay.log"
    echo "FAILED: $target on its seed corpus" >&2
    exit 1
  }
  echo "== $target: ${seconds}s of fuzzing"
  "$binary" "${common[@]}" "${dict[@]}" -max_total_time="$seconds" \
    -artifact_prefix="$work/$target/artifacts/" "$work/$target/new" "$corpus" \
    >"$work/$target/fuzz.log" 2>&1 || {
    tail -40 "$work/$target/fuzz.log"
    echo "FAILED: $target while fuzzing; the input, base64:" >&2
    for artifact in "$work/$target/artifacts/"*; do
      [[ -f $artifact ]] && echo "$(basename "$artifact"): $(base64 -w0 "$artifact")" >&2
    done
    exit 1
  }
  grep -E "^Done|stat::number_of_executed_units" "$work/$target/fuzz.log" | tail -1
  targets=$((targets + 1))
done
echo "all $targets fuzz targets passed"
