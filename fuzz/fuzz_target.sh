# Sourced by run_corpus.sh and campaign.sh: `fuzz_target ROOT BUILD CORPUS`
# sets `target` (the corpus folder's name), `binary` (BUILD/fuzz/<target>,
# which must exist) and `dict` (its -dict= flag, when fuzz/dicts has one).
fuzz_target() {
  target=$(basename "$3")
  binary="$2/fuzz/$target"
  if [[ ! -x $binary ]]; then
    echo "missing $binary (build the oomguard_fuzzers target)" >&2
    exit 1
  fi
  dict=()
  if [[ -f $1/fuzz/dicts/${target%_fuzzer}.dict ]]; then
    dict=(-dict="$1/fuzz/dicts/${target%_fuzzer}.dict")
  fi
}
