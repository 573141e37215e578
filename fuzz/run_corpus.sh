#!/bin/bash
# CI's fuzz stage, deterministic: every fuzz target of BUILD_DIR (configured
# with -DOOMGUARD_FUZZ=ON) replays its seed corpus fuzz/corpus/<target>/
# (-runs=0; every finding is kept there); then the targets whose runs are
# reproducible run RUNS inputs (default 20000) mutated from it with a fixed
# seed (-seed=1) and the target's dictionary: the same commit gives the same
# inputs, the same coverage and the same answer on every run. CI cannot fail
# on a commit that changed nothing. Open-ended fuzzing, with random seeds
# and for as long as you like, is fuzz/campaign.sh.
#
# Reproducible (checked: three runs, the same corpus and coverage) are the
# targets whose entry point keeps nothing between inputs: the estimator, the
# HF config, the layout pattern, the argument line, the RL config and the
# training log reader. The job-script and
# the three service targets replay only: what one input covers there
# depends on the inputs before it in the process (the service's plan cache,
# once-per-process and once-a-minute paths), so their coverage-guided runs
# differ from run to run and are left to campaign.sh.
#
# New inputs and crash artifacts go to a temporary folder, never into the
# repository. Exits non-zero on the first crash, leak, sanitizer report,
# failed expectation (fuzz/fuzz_checks.h), hang (60 s per input: only a real
# hang, not a slow shared machine) or out-of-memory (2 GiB).
#
# Usage (from the repository root): fuzz/run_corpus.sh BUILD_DIR [RUNS]
# (BUILD_DIR relative to the root, as CI gives it, keeps the arguments'
# lengths the same in every clone).
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [RUNS]" >&2
  exit 2
fi
build=$1
runs=${2:-20000}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=fuzz/fuzz_target.sh
source "$root/fuzz/fuzz_target.sh"
work=$(mktemp -d /tmp/oomguard-fuzz.XXXXXXXXXX)
trap 'rm -rf "$work"' EXIT

common=(-timeout=60 -rss_limit_mb=2048 -print_final_stats=1)
# The same order and inputs every run: a fixed seed; no reload of the
# corpus folders on a timer (-reload=0); no comparison operands fed back
# into the mutations (-use_cmp=0: they include pointers, which move with the
# environment's size); no address randomisation (setarch -R, where the
# kernel allows it); a fixed environment and arguments of fixed lengths
# (relative paths from the repository root, mktemp's fixed-length names).
fixed=(-reload=0 -use_cmp=0)
run_fixed() { env -i PATH=/usr/bin:/bin "${same_addresses[@]}" "$@"; }
seeded=" estimator_fuzzer hf_config_fuzzer layout_pattern_fuzzer megatron_args_fuzzer rl_config_fuzzer "
seeded+="training_log_reader_fuzzer "
same_addresses=()
if setarch "$(uname -m)" -R true 2>/dev/null; then
  same_addresses=(setarch "$(uname -m)" -R)
else
  echo "note: setarch -R is refused here: the fuzzing runs may differ between machines" >&2
fi
targets=0
for corpus in fuzz/corpus/*/; do
  fuzz_target . "$build" "$corpus"
  mkdir -p "$work/$target/new" "$work/$target/artifacts"
  echo "== $target: replay of $(find "$corpus" -type f | wc -l) seeds"
  run_fixed "$binary" "${common[@]}" "${fixed[@]}" -seed=1 -runs=0 \
    -artifact_prefix="$work/$target/artifacts/" "$corpus" \
    >"$work/$target/replay.log" 2>&1 || {
    tail -40 "$work/$target/replay.log"
    echo "FAILED: $target on its seed corpus" >&2
    exit 1
  }
  if [[ $seeded != *" $target "* ]]; then
    targets=$((targets + 1))
    continue
  fi
  echo "== $target: $runs inputs from seed 1"
  run_fixed "$binary" "${common[@]}" "${fixed[@]}" "${dict[@]}" -seed=1 -runs="$runs" \
    -artifact_prefix="$work/$target/artifacts/" "$work/$target/new" "$corpus" \
    >"$work/$target/fuzz.log" 2>&1 || {
    tail -40 "$work/$target/fuzz.log"
    echo "FAILED: $target at seed 1; the input, base64 (keep it in $corpus and as a test):" >&2
    for artifact in "$work/$target/artifacts/"*; do
      [[ -f $artifact ]] && echo "$(basename "$artifact"): $(base64 -w0 "$artifact")" >&2
    done
    exit 1
  }
  # The run's final coverage, the same on every run of this commit.
  grep -E '^#[0-9]+[[:space:]]+DONE' "$work/$target/fuzz.log" | sed 's/ exec\/s.*//'
  targets=$((targets + 1))
done
echo "all $targets fuzz targets passed"
