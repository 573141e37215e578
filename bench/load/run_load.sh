#!/usr/bin/env bash
# Load benchmark of `oomguard serve` (not a test; see README.md).
#
# h2load drives Check with a realistic DeepSeek-V3 job, then the same h2load
# drives ListGpus, a trivial handler of the same server, as the ceiling.
# Reports req/s of both, their ratio, p50/p99 latency, the server's RSS
# before and after, and cross-checks the gRPC status codes in /metrics
# (h2load counts every HTTP 200 as a success, gRPC errors included).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$root/build}
SERVER=${SERVER:-$BUILD_DIR/tools/oomguard_server_for_test}
DURATION=${DURATION:-60}        # seconds of measurement per method
WARMUP=${WARMUP:-2}             # seconds of warm-up per method
CLIENTS=${CLIENTS:-1}           # h2load connections
STREAMS=${STREAMS:-8}           # concurrent streams per connection
THREADS=${THREADS:-0}           # server --threads (0: one per core)
PORT=${PORT:-50151}
METRICS_PORT=${METRICS_PORT:-9465}
EXTRA_FLAGS=${EXTRA_FLAGS:-}    # more server flags, e.g. --response_cache_mb=0

for tool in h2load python3; do
  command -v "$tool" >/dev/null || { echo "run_load.sh: $tool not found" >&2; exit 2; }
done
[ -x "$SERVER" ] || { echo "run_load.sh: no server at $SERVER (set BUILD_DIR or SERVER)" >&2; exit 2; }

work=$(mktemp -d /tmp/oomguard-load-XXXXXX)
python3 "$here/make_requests.py" "$work"

# Request logs stay on (their cost is part of a request) but are dropped.
# shellcheck disable=SC2086
"$SERVER" --grpc_address=127.0.0.1:$PORT --metrics_address=127.0.0.1:$METRICS_PORT \
  --threads=$THREADS $EXTRA_FLAGS 2>/dev/null &
server_pid=$!
trap 'kill $server_pid 2>/dev/null || true; rm -rf "$work"' EXIT

for _ in $(seq 100); do
  (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break
  sleep 0.1
done

rss_mib() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$server_pid/status"; }

metrics() {
  exec 3<>/dev/tcp/127.0.0.1/$METRICS_PORT
  printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  cat <&3
  exec 3<&-
}

# h2load METHOD BODY [h2load options...]: writes $work/METHOD.{out,tsv}.
drive() {
  local method=$1 body=$2
  shift 2
  h2load "$@" -c "$CLIENTS" -m "$STREAMS" -t 1 -d "$work/$body" \
    -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://127.0.0.1:$PORT/oomguard.v1.Oomguard/$method"
}

# Warm up both paths (allocator, caches), then measure RSS.
drive ListGpus list_gpus.bin -n 2000 >/dev/null
drive Check check.bin -n 2000 >/dev/null
drive Check check_report.bin -n 2000 >/dev/null
rss_before=$(rss_mib)

# label method body
for run in "ListGpus ListGpus list_gpus.bin" "Check Check check.bin" \
           "Check+report Check check_report.bin"; do
  set -- $run
  drive "$2" "$3" -D "$DURATION" --warm-up-time="$WARMUP" --log-file="$work/$1.tsv" \
    > "$work/$1.out"
done
rss_after=$(rss_mib)
metrics > "$work/metrics.txt"

kill -TERM "$server_pid"
wait "$server_pid" && server_exit=0 || server_exit=$?
trap 'rm -rf "$work"' EXIT

# req/s from h2load; latency percentiles from its per-request log (column 3, us).
rate() { sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' "$work/$1.out"; }
succeeded() { sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' "$work/$1.out"; }
percentile() {
  cut -f3 "$work/$1.tsv" | sort -n | awk -v p="$2" '{v[NR] = $1}
    END {i = int(NR * p / 100); if (i < 1) i = 1; printf "%.3f", v[i] / 1000}'
}
grpc_count() {
  sed -n "s/^oomguard_requests_total{code=\"$1\",method=\"$2\",transport=\"grpc\"} \([0-9.e+]*\)$/\1/p" \
    "$work/metrics.txt" | awk '{printf "%d", $1}'
}
non_ok=$(grep '^oomguard_requests_total{' "$work/metrics.txt" | grep -vc 'code="OK"' || true)

echo "oomguard load benchmark: ${DURATION}s per method, h2load -c$CLIENTS -m$STREAMS," \
     "server --threads=$THREADS $EXTRA_FLAGS on $(nproc) cores shared with h2load"
printf '%-13s %10s %9s %9s %12s %20s\n' method req/s p50_ms p99_ms h2load_ok grpc_OK_incl_warmup
# Both Check runs count under method="Check": the total is on the first row.
for m in ListGpus Check Check+report; do
  count=$(grpc_count OK "$m")
  printf '%-13s %10s %9s %9s %12s %20s\n' "$m" "$(rate $m)" "$(percentile $m 50)" \
    "$(percentile $m 99)" "$(succeeded $m)" "${count:-"(above)"}"
done
awk -v c="$(rate Check)" -v r="$(rate Check+report)" -v t="$(rate ListGpus)" \
  'BEGIN {printf "Check / ListGpus throughput: %.3f (target >= 0.9); with the report: %.3f\n", c / t, r / t}'
echo "server RSS: ${rss_before} MiB before, ${rss_after} MiB after"
# Which path the Checks took: each cache's hits and misses over the run
# (oomguard_cache_lookups_total; a cache that is off has no series).
awk -F'[{}" ]+' '/^oomguard_cache_lookups_total\{/ {n[$3] = n[$3] (n[$3] ? ", " : "") $5 " " $6}
  END {printf "cache lookups incl. warm-up:"; for (c in n) printf " %s: %s;", c, n[c]; print ""}' \
  "$work/metrics.txt"
echo "series with a non-OK gRPC status: $non_ok; server exit code after SIGTERM: $server_exit"
