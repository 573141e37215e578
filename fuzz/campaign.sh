#!/bin/bash
# Open-ended fuzzing, run by a person (never by CI): every fuzz target of
# BUILD_DIR (configured with -DOOMGUARD_FUZZ=ON) for SECONDS each (default
# 600), from its seed corpus, with a random seed and the target's
# dictionary, one target after the other. The whole campaign takes
# 8 x SECONDS (80 minutes at the default) plus the replays.
#
# Each target's new inputs go to OUT/<target>/new and its findings (crash,
# leak, sanitizer report, failed expectation, timeout, out-of-memory) to
# OUT/<target>/artifacts; the script carries on past a finding and lists
# them all at the end. A finding is fixed in the source, and its input joins
# the seed corpus (fuzz/corpus/<target>/, named by its SHA-1) and becomes a
# unit test in tests/<folder>/, so that CI's deterministic replay
# (fuzz/run_corpus.sh) keeps it fixed.
#
# Usage (from the repository root): fuzz/campaign.sh BUILD_DIR [SECONDS] [OUT]
set -uo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [SECONDS] [OUT]" >&2
  exit 2
fi
build=$1
seconds=${2:-600}
out=${3:-$(mktemp -d /tmp/oomguard-fuzz.XXXXXX)}
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=fuzz/fuzz_target.sh
source "$root/fuzz/fuzz_target.sh"

findings=0
for corpus in "$root"/fuzz/corpus/*/; do
  fuzz_target "$root" "$build" "$corpus"
  mkdir -p "$out/$target/new" "$out/$target/artifacts"
  echo "== $target: ${seconds}s (log: $out/$target/fuzz.log)"
  "$binary" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 "${dict[@]}" \
    -max_total_time="$seconds" -artifact_prefix="$out/$target/artifacts/" \
    "$out/$target/new" "$corpus" >"$out/$target/fuzz.log" 2>&1
  grep -E "stat::number_of_executed_units|^Done" "$out/$target/fuzz.log" | tail -1
  for artifact in "$out/$target/artifacts/"*; do
    [[ -f $artifact ]] || continue
    echo "FINDING: $artifact (replay: $binary $artifact)"
    findings=$((findings + 1))
  done
done
echo "$findings finding(s); new inputs under $out"
[[ $findings -eq 0 ]]
