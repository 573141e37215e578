#!/usr/bin/env bash
# Integration test of deploy/slurm/job_submit.lua on a real single-node Slurm:
# starts its own munged (own socket and key), slurmctld, slurmd and an
# `oomguard serve`, all under a fresh temporary directory on free ports, and
# submits with sbatch:
#   (a) an OOM-bound Megatron-LM job          -> rejected, reason on stderr
#   (b) a fitting one                          -> accepted silently
#   (c) a non-training script                  -> accepted
#   (e) one that fits only with a setting      -> accepted, the setting shown
#   (f) a hostile 10 MB script                 -> nothing executed, sane verdict
#   (d) the server stopped / hanging           -> policy=open accepts, closed refuses,
#                                                 never longer than the deadline
#   (h) the feedback loop, end to end: a job admitted through the hook gets
#       the check id in its admin_comment and its environment, runs (a
#       stand-in torchrun prints Megatron-LM's memory line and a CUDA OOM on
#       stderr, as measured on an H200, and exits 1), deploy/slurm/oomguard_jobcomp.sh (jobcomp/script)
#       reports it with `oomguard report`, the server keeps the CUDA_OOM
#       outcome (GET /v1/checks/ID), counts it in
#       oomguard_admitted_then_oom_total, and a real Prometheus loading
#       deploy/prometheus/rules/oomguard.rules.yml fires
#       OomguardAdmittedJobRanOutOfMemory
# The jobs of (a)-(g) are submitted held (-H): they never run, so nothing the
# scripts say can execute except through the hook; (h)'s jobs run the
# test's own scripts. Every daemon is stopped by its PID on exit.
#
# usage: slurm_integration_test.sh OOMGUARD_BINARY SOURCE_DIR
# Exit 77 (skipped) when not root or Slurm/munge are not installed.
set -uo pipefail

OOMGUARD=${1:?usage: $0 OOMGUARD_BINARY SOURCE_DIR}
SRC=${2:?usage: $0 OOMGUARD_BINARY SOURCE_DIR}
SKIP=77

skip() { echo "SKIPPED: $*"; exit "$SKIP"; }
[ "$(id -u)" = 0 ] || skip "needs root (slurmctld, slurmd and munged run here as root)"
for b in slurmctld slurmd sbatch scontrol sinfo munged mungekey munge timeout curl setpriv; do
  command -v "$b" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin command -v "$b" >/dev/null 2>&1 ||
    skip "$b not installed (apt-get install slurmctld slurmd slurm-client munge slurm-wlm-basic-plugins)"
done
export PATH=$PATH:/usr/sbin
LUA_PLUGIN=$(ls /usr/lib/*/slurm-wlm/job_submit_lua.so /usr/lib/slurm/job_submit_lua.so 2>/dev/null | head -1)
[ -n "$LUA_PLUGIN" ] || skip "job_submit_lua.so not found (slurm-wlm-basic-plugins)"
PROMETHEUS=/usr/bin/prometheus
[ -x "$PROMETHEUS" ] || skip "prometheus not installed (apt-get install prometheus)"
[ -x "$OOMGUARD" ] || { echo "FAIL: no oomguard binary at $OOMGUARD"; exit 1; }

T=$(mktemp -d /tmp/oomguard-slurm-test.XXXXXX)
chmod 755 "$T"  # munged (user munge) must reach its directory.
PIDS=()
FAILED=0
START=$(date +%s.%N)

stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  PIDS=()
}
cleanup() {
  stop_all
  if [ "$FAILED" != 0 ]; then
    echo "---- logs kept in $T ----"
    tail -n 30 "$T"/log/slurmctld.log 2>/dev/null
  else
    rm -rf "$T"
  fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() { echo "FAIL: $*"; FAILED=1; }
pass() { echo "ok: $*"; }

elapsed_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
less_than() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# A port free now, below the kernel's ephemeral range (free_port in
# tests/testing/python_client_server.py says why).
free_port() {
  PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$SRC/tests/testing" /usr/bin/python3 -c 'import python_client_server; print(python_client_server.free_port())'
}

mkdir -p "$T"/{etc,log,state,spool,munge,run,jobs,canary,bin,prometheus}
HOST=$(hostname -s)

# --- munge: our own daemon, key and socket -----------------------------------
mungekey --create --keyfile="$T/munge/munge.key" >/dev/null 2>&1 ||
  dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 2>/dev/null
chown -R munge:munge "$T/munge"
chmod 700 "$T/munge"
chmod 400 "$T/munge/munge.key"
MUNGE_SOCKET=$T/munge/munge.socket
runuser -u munge -- munged --foreground --force --socket="$MUNGE_SOCKET" \
  --key-file="$T/munge/munge.key" --pid-file="$T/munge/munged.pid" \
  --log-file="$T/munge/munged.log" --seed-file="$T/munge/munged.seed" \
  >"$T/log/munged.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$MUNGE_SOCKET" ] && [ -s "$T/munge/munged.pid" ] && break; sleep 0.1; done
# runuser forwards SIGTERM to munged; munged's own PID is stopped as well.
[ -s "$T/munge/munged.pid" ] && PIDS+=("$(cat "$T/munge/munged.pid")")
munge --socket="$MUNGE_SOCKET" -n | unmunge --socket="$MUNGE_SOCKET" >/dev/null 2>&1 ||
  { fail "munged did not start"; cat "$T/log/munged.out" "$T/munge/munged.log"; exit 1; }

# --- the oomguard service ------------------------------------------------------
# With a store (every check answered gets an id and is kept), the reports'
# bearer token (the jobcomp script's), /metrics and the HTTP API.
REPORT_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
echo "slurm-jobcomp $REPORT_TOKEN" >"$T/etc/report_tokens"
printf '%s\n' "$REPORT_TOKEN" >"$T/etc/report_token"
chmod 600 "$T/etc/report_tokens" "$T/etc/report_token"
start_server() {
  "$OOMGUARD" serve --grpc_address=127.0.0.1:0 --metrics_address=127.0.0.1:0 \
    --http_address=127.0.0.1:0 --store="sqlite:$T/state/oomguard.db" --cluster=slurmtest \
    --report_tokens_file="$T/etc/report_tokens" >"$T/log/serve.log" 2>&1 &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  for _ in $(seq 100); do
    GRPC_PORT=$(grep -o 'grpc_port=[0-9]*' "$T/log/serve.log" | head -1 | cut -d= -f2)
    METRICS_PORT=$(grep -o 'metrics_port=[0-9]*' "$T/log/serve.log" | head -1 | cut -d= -f2)
    HTTP_PORT=$(grep -o 'http_port=[0-9]*' "$T/log/serve.log" | head -1 | cut -d= -f2)
    [ -n "$GRPC_PORT" ] && return 0
    sleep 0.1
  done
  fail "oomguard serve did not start"; cat "$T/log/serve.log"; exit 1
}
start_server

# --- Slurm ------------------------------------------------------------------------
CTLD_PORT=$(free_port)
SLURMD_PORT=$(free_port)
NODE_LINE=$(slurmd -C | head -1)
cat >"$T/etc/slurm.conf" <<EOF
ClusterName=oomguardtest
SlurmctldHost=$HOST
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/run/slurmctld.pid
SlurmdPidFile=$T/run/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
SlurmctldDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=max_script_size=20000000
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MailProg=/bin/true
JobSubmitPlugins=lua
JobCompType=jobcomp/script
JobCompLoc=$T/etc/oomguard_jobcomp.sh
GresTypes=gpu
$NODE_LINE Gres=gpu:h100:8 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
PartitionName=big Nodes=$HOST MaxTime=INFINITE State=UP
EOF
# Eight stand-in GPU device files (character devices like /dev/null): the
# jobs never run, Slurm only counts them.
mkdir -p "$T/dev"
for i in $(seq 0 7); do mknod "$T/dev/nvidia$i" c 1 3; done
echo "NodeName=$HOST Name=gpu Type=h100 File=$T/dev/nvidia[0-7]" >"$T/etc/gres.conf"
cp "$SRC/deploy/slurm/job_submit.lua" "$T/etc/job_submit.lua"
install -m 0755 "$SRC/deploy/slurm/oomguard_jobcomp.sh" "$T/etc/oomguard_jobcomp.sh"
HOOK_DIR=$T/run/oomguard-slurm
write_hook_conf() {  # policy server deadline_ms [more config lines]
  cat >"$T/etc/oomguard_slurm.conf" <<EOF
server = $2
binary = $OOMGUARD
deadline_ms = $3
policy = $1
tmp_dir = $HOOK_DIR
partition.big = H200
report_token_file = $T/etc/report_token
report_log = $T/log/jobcomp.log
${4:-}
EOF
}
DEADLINE_MS=2000
write_hook_conf open "127.0.0.1:$GRPC_PORT" "$DEADLINE_MS"
export SLURM_CONF=$T/etc/slurm.conf

slurmctld -D -i >"$T/log/slurmctld.out" 2>&1 &
PIDS+=($!)
slurmd -D >"$T/log/slurmd.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 200); do
  STATE=$(sinfo -h -p debug -o %T 2>/dev/null | head -1)
  [ "$STATE" = idle ] && break
  sleep 0.1
done
[ "$STATE" = idle ] || { fail "Slurm did not come up (node state '$STATE')"; tail -n 20 "$T/log/slurmctld.log" "$T/log/slurmd.log"; exit 1; }
pass "munged, slurmctld, slurmd and oomguard serve (port $GRPC_PORT) up after $(elapsed_since "$START") s"

# --- the jobs ---------------------------------------------------------------------
# (a) Llama-3-70B on 8 GPUs with TP1 PP1: terabytes per GPU.
cat >"$T/jobs/oom.sh" <<'EOF'
#!/bin/bash
#SBATCH --job-name=llama70b
#OOMGUARD preset=llama3-70b
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPT_ARGS="--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 \
  --seq-length 8192 --micro-batch-size 4 --global-batch-size 128"
torchrun --nproc_per_node 8 pretrain_gpt.py $GPT_ARGS --bf16 --data-path $DATA_PATH
EOF
# (b) Llama-3-8B on 8 GPUs, distributed optimizer, full recompute, in
# Megatron-LM's examples/ style.
cat >"$T/jobs/fits.sh" <<'EOF'
#!/bin/bash
#OOMGUARD preset=llama3-8b
DISTRIBUTED_ARGS=(--nproc_per_node 8 --nnodes 1)
MODEL_PARALLEL_ARGS=(
  --tensor-model-parallel-size 1
  --pipeline-model-parallel-size 1
  --use-distributed-optimizer
)
TRAINING_ARGS=(
  --seq-length 4096 --micro-batch-size 1 --global-batch-size 128
  --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py ${MODEL_PARALLEL_ARGS[@]} ${TRAINING_ARGS[@]}
EOF
# (c) Not a training job.
cat >"$T/jobs/hello.sh" <<'EOF'
#!/bin/bash
echo "hello from $(hostname)"; python3 -c 'print(1)'
EOF

SUBMIT_OUT=""
SUBMIT_RC=0
SUBMIT_SECONDS=0
submit() {  # sbatch args...; sets SUBMIT_OUT (stdout+stderr), SUBMIT_RC, SUBMIT_SECONDS
  local t0
  t0=$(date +%s.%N)
  SUBMIT_OUT=$(cd "$T" && sbatch -H "$@" 2>&1)
  SUBMIT_RC=$?
  SUBMIT_SECONDS=$(elapsed_since "$t0")
}
expect_rejected() {  # what needle
  if [ "$SUBMIT_RC" != 0 ] && grep -qF -- "$2" <<<"$SUBMIT_OUT"; then
    pass "$1: rejected in ${SUBMIT_SECONDS}s"
  else
    fail "$1: expected a rejection containing '$2', got rc=$SUBMIT_RC: $SUBMIT_OUT"
  fi
}
expect_accepted() {  # what [needle | -silent]
  if [ "$SUBMIT_RC" != 0 ] || ! grep -q '^Submitted batch job' <<<"$SUBMIT_OUT"; then
    fail "$1: expected acceptance, got rc=$SUBMIT_RC: $SUBMIT_OUT"
  elif [ "${2:-}" = -silent ] && grep -q oomguard <<<"$SUBMIT_OUT"; then
    fail "$1: expected a silent acceptance, got: $SUBMIT_OUT"
  elif [ -n "${2:-}" ] && [ "${2:-}" != -silent ] && ! grep -qF -- "$2" <<<"$SUBMIT_OUT"; then
    fail "$1: accepted but without '$2': $SUBMIT_OUT"
  else
    pass "$1: accepted in ${SUBMIT_SECONDS}s"
  fi
}

submit --gres=gpu:h100:8 -N1 jobs/oom.sh
expect_rejected "(a) OOM-bound Megatron job" "oomguard: Does not fit: PP rank"
grep -q "Batch job submission failed" <<<"$SUBMIT_OUT" || fail "(a) sbatch did not report the failure"
echo "---- (a) sbatch printed (verbatim) ----"
printf '%s\n' "$SUBMIT_OUT"
echo "---------------------------------------"

# (a') Two nodes of 8: the hook asks about 16 GPUs (the hook rejects before
# Slurm finds that this one-node cluster has no second node).
submit -N 2 --gres=gpu:h100:8 jobs/oom.sh
expect_rejected "(a') OOM-bound job on 2 nodes" "oomguard: Does not fit: PP rank"
grep -q "checking gpus=16 gpus_per_node=8 gpu=h100 partition=debug" "$T/log/slurmctld.log" ||
  fail "(a') the hook did not count 2 x 8 GPUs"

submit --gres=gpu:h100:8 jobs/fits.sh
expect_accepted "(b) fitting Megatron job" -silent
submit --gpus=h100:8 jobs/fits.sh
expect_accepted "(b') fitting Megatron job, --gpus=h100:8" -silent
grep -q "checking gpus=8 gpu=h100 partition=debug" "$T/log/slurmctld.log" ||
  fail "(b') the hook did not read --gpus=h100:8"
grep -q "uid 0: FITS; accepted: oomguard: Fits: PP rank 0" "$T/log/slurmctld.log" ||
  fail "(b) slurmctld log lacks the FITS line"

submit jobs/hello.sh
expect_accepted "(c) non-training script" -silent

# (c') the partition -> GPU map: untyped GRES in partition "big" (H200).
submit -p big --gres=gpu:8 jobs/fits.sh
expect_accepted "(c') untyped GRES in a partition mapped to H200" -silent
grep -q "on H200-141GB" "$T/log/slurmctld.log" || fail "(c') the partition map was not used"

# (e) fits only with expandable segments: the first sequence length for which
# the service says so (the estimator's numbers may move; the client decides).
FWS_SEQ=""
for seq in 7168 6912 7424 7680 6656 7936 6400 8192; do
  "$OOMGUARD" check --server "127.0.0.1:$GRPC_PORT" --gpu H100 --gpus 8 --preset llama3-8b -- \
    --use-distributed-optimizer --seq-length "$seq" --micro-batch-size 2 --global-batch-size 128 \
    --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 \
    >/dev/null 2>&1
  if [ $? = 3 ]; then FWS_SEQ=$seq; break; fi
done
if [ -z "$FWS_SEQ" ]; then
  fail "(e) no FITS_WITH_SETTINGS job found among the candidate sequence lengths"
else
  cat >"$T/jobs/fws.sh" <<EOF
#!/bin/bash
#OOMGUARD preset=llama3-8b
SEQ=$FWS_SEQ
torchrun --nproc_per_node 8 pretrain_gpt.py --use-distributed-optimizer --seq-length \$SEQ \\
  --micro-batch-size 2 --global-batch-size 128 \\
  --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
EOF
  submit --gres=gpu:h100:8 jobs/fws.sh
  expect_accepted "(e) fits with settings" \
    "oomguard: add to the job script: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
  echo "---- (e) sbatch printed (verbatim) ----"
  printf '%s\n' "$SUBMIT_OUT"
  echo "---------------------------------------"
  # (e') The same job with the setting in the submission's environment fits.
  submit --gres=gpu:h100:8 --export=ALL,PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True jobs/fws.sh
  expect_accepted "(e') fits with the setting exported at submission" -silent
  grep -q "env.PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (script" "$T/log/slurmctld.log" ||
    fail "(e') the hook did not pass the submission's environment"
fi

# (f) Hostile: substitutions, backticks, separators, quotes, newlines in
# values, a 10 MB script. Nothing may run; the job is still judged (the
# 70B model on 8 GPUs does not fit, whatever the dropped words were).
C=$T/canary
{
  cat <<EOF
#!/bin/bash
#SBATCH --job-name=hostile
#OOMGUARD preset=llama3-70b
MBS=\$(touch $C/PWNED_assign; echo 4)
EVIL="\`touch $C/PWNED_backtick\`"
TP=1;touch $C/PWNED_separator; rm -rf $C/../etc
NOTE="multi
line \$(touch $C/PWNED_newline) 'quote' \"dq\"
"
Q='--seq-length'\\''\$(touch $C/PWNED_single)'
EOF
  # 10 MB of padding: comments and a long harmless assignment.
  /usr/bin/python3 -c '
import sys
line = "# " + "padding " * 12 + "$(touch " + sys.argv[1] + "/PWNED_pad) `x` ; | & \x27 \"\n"
sys.stdout.write(line * (10 * 1024 * 1024 // len(line)))
sys.stdout.write("PAD=\"" + "x" * 100000 + "\"\n")' "$C"
  cat <<EOF
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size \$TP \\
  --pipeline-model-parallel-size 1 --seq-length 8192 --micro-batch-size 2 \\
  --lr \$(touch $C/PWNED_flag) --global-batch-size \$MBS \\
  --hidden-dropout "\`touch $C/PWNED_bt2\`" \$EVIL "\$NOTE" \\
  --data-path "a'b\\"c;\$(touch $C/PWNED_dq)" --bf16 ; touch $C/PWNED_after
EOF
} >"$T/jobs/hostile.sh"
HOSTILE_BYTES=$(stat -c %s "$T/jobs/hostile.sh")
submit --gres=gpu:h100:8 -J '$(touch '"$C"'/PWNED_name)' --comment '`touch '"$C"'/PWNED_c2`' jobs/hostile.sh
expect_rejected "(f) hostile ${HOSTILE_BYTES}-byte script" "oomguard: Does not fit: PP rank"
[ "$HOSTILE_BYTES" -ge 10000000 ] || fail "(f) the hostile script is only $HOSTILE_BYTES bytes"
if ls "$C"/PWNED* >/dev/null 2>&1 || ls "$T"/PWNED* >/dev/null 2>&1 || [ ! -d "$T/etc" ]; then
  fail "(f) something was executed: $(ls "$C" "$T" 2>&1 | tr '\n' ' ')"
else
  pass "(f) no canary file exists, $T/etc intact"
fi
echo "---- (f) sbatch printed (verbatim) ----"
printf '%s\n' "$SUBMIT_OUT"
echo "---------------------------------------"

# (f2) The required --micro-batch-size only known at run time, from a command
# substitution: nothing runs, and the job cannot be judged before it runs, so
# it is accepted and logged.
cat >"$T/jobs/runtime_mbs.sh" <<EOF
#!/bin/bash
#OOMGUARD preset=llama3-70b
torchrun --nproc_per_node 8 pretrain_gpt.py --seq-length 8192 \\
  --micro-batch-size \$(touch $C/PWNED_x) --tensor-model-parallel-size 1; touch $C/PWNED_y
EOF
submit --gres=gpu:h100:8 jobs/runtime_mbs.sh
expect_accepted "(f2) --micro-batch-size \$(touch ...)" -silent
grep -q "not judged; accepted: oomguard: not judged: without what the script leaves to run time (--micro-batch-size \$(touch" \
  "$T/log/slurmctld.log" || fail "(f2) slurmctld log lacks the not-judged line"
if ls "$C"/PWNED* >/dev/null 2>&1; then fail "(f2) something was executed: $(ls "$C")"; else pass "(f2) no canary file exists"; fi

# (g) Issue 27: a flag oomguard does not know (a newer Megatron-LM's, a custom
# script's, a typo) makes the job not judged: accepted, the log naming the
# flag and why; notify_not_judged = yes tells the user; judge_unmodelled = yes
# judges it as if the flag were absent, and the verdict says so.
sed 's/--bf16 /--bf16 --no-such-flag 1 /' "$T/jobs/oom.sh" >"$T/jobs/oom_unknown_flag.sh"
submit --gres=gpu:h100:8 jobs/oom_unknown_flag.sh
expect_accepted "(g) OOM-bound job with an unknown flag, not judged" -silent
grep -q "not judged; accepted: oomguard: not judged: oomguard does not model --no-such-flag, so the job is not judged. --no-such-flag: not a flag of Megatron-LM" \
  "$T/log/slurmctld.log" || fail "(g) slurmctld log lacks the not-judged line naming the flag"
write_hook_conf open "127.0.0.1:$GRPC_PORT" "$DEADLINE_MS" "notify_not_judged = yes"
submit --gres=gpu:h100:8 jobs/oom_unknown_flag.sh
expect_accepted "(g) notify_not_judged = yes" "oomguard: not judged: oomguard does not model --no-such-flag"
write_hook_conf open "127.0.0.1:$GRPC_PORT" "$DEADLINE_MS" "judge_unmodelled = yes"
submit --gres=gpu:h100:8 jobs/oom_unknown_flag.sh
expect_rejected "(g) judge_unmodelled = yes" "oomguard: Does not fit, judged without modelling --no-such-flag: PP rank"
write_hook_conf open "127.0.0.1:$GRPC_PORT" "$DEADLINE_MS"

# The hook's files are always removed.
if [ -n "$(ls -A "$HOOK_DIR" 2>/dev/null)" ]; then
  fail "job files left in $HOOK_DIR: $(ls "$HOOK_DIR")"
else
  [ "$(stat -c %a "$HOOK_DIR")" = 700 ] && pass "hook directory is 0700 and empty" ||
    fail "hook directory mode $(stat -c %a "$HOOK_DIR")"
fi

# (h) The feedback loop, end to end (issue 29). A stand-in torchrun on the
# job's PATH dies as a training job did on an H200 (bench/device/
# oom_report_probe.py, tests/data/feedback): Megatron-LM's memory line of
# rank 0 (max allocated 8192.00 MiB) on stdout, then the uncaught CUDA OOM's
# traceback on stderr, exit 1. Another one prints the memory line and ends
# well. The jobs' stdout and stderr are separate files.
FEEDBACK_DATA=$SRC/tests/data/feedback
mkdir -p "$T/bin/oom" "$T/bin/ran"
cat >"$T/bin/oom/torchrun" <<EOF
#!/bin/sh
head -n 1 "$FEEDBACK_DATA/h200_memory_lines.txt"
cat "$FEEDBACK_DATA/h200_oom_stderr.txt" >&2
exit 1
EOF
cat >"$T/bin/ran/torchrun" <<EOF
#!/bin/sh
head -n 1 "$FEEDBACK_DATA/h200_memory_lines.txt"
EOF
chmod 755 "$T/bin/oom/torchrun" "$T/bin/ran/torchrun"
# The fitting job of (b), saying which check id its environment holds.
sed 's/^torchrun /echo "OOMGUARD_CHECK_ID=$OOMGUARD_CHECK_ID"\ntorchrun /' "$T/jobs/fits.sh" >"$T/jobs/e2e.sh"
job_field() {  # JOB KEY: the value of "   KEY=VALUE" in scontrol show job
  scontrol show job "$1" 2>/dev/null | sed -n "s/^   $2=\\(.*\\)\$/\\1/p" | sed 's/ *$//'
}
SUBMITTED_JOB="" SUBMITTED_CHECK_ID=""
submit_admitted() {  # NAME TORCHRUN_DIR: a held e2e job; sets SUBMITTED_JOB, SUBMITTED_CHECK_ID
  submit --gres=gpu:h100:8 -J "$1" --export=ALL,PATH="$2:/usr/bin:/bin" -o "$T/jobs/%x-%j.out" \
    -e "$T/jobs/%x-%j.err" jobs/e2e.sh
  expect_accepted "(h) $1: fitting job, held" -silent
  SUBMITTED_JOB=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' <<<"$SUBMIT_OUT")
  local admin_comment
  admin_comment=$(job_field "$SUBMITTED_JOB" AdminComment)
  SUBMITTED_CHECK_ID=$(sed -n 's/^oomguard_check_id=\([0-9a-f]\{32\}\)$/\1/p' <<<"$admin_comment")
  if [ -n "$SUBMITTED_CHECK_ID" ]; then
    pass "(h) $1: job $SUBMITTED_JOB: admin_comment '$admin_comment'"
  else
    fail "(h) $1: job $SUBMITTED_JOB: admin_comment '$admin_comment' is not oomguard_check_id=<32 hex digits>"
  fi
  grep -q "uid 0: check id $SUBMITTED_CHECK_ID in admin_comment and OOMGUARD_CHECK_ID" \
    "$T/log/slurmctld.log" || fail "(h) $1: slurmctld log lacks the check id line"
}
wait_job_done() {  # JOB: waits up to 60 s for the job to end; prints its state
  local state=""
  for _ in $(seq 600); do
    state=$(job_field "$1" JobState | sed 's/ .*//')
    case $state in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) break ;; esac
    sleep 0.1
  done
  printf '%s' "$state"
}
expect_ended() {  # NAME JOB STATE EXIT_CODE CHECK_ID
  local state exit_code
  state=$(wait_job_done "$2")
  exit_code=$(scontrol show job "$2" | grep -o ' ExitCode=[0-9:]*' | cut -d= -f2)
  if [ "$state" = "$3" ] && [ "$exit_code" = "$4" ]; then
    pass "(h) $1: job $2 ran, $state with exit code $exit_code"
  else
    fail "(h) $1: job $2: state '$state' exit code '$exit_code', expected $3 $4"
    tail -n 20 "$T/log/slurmd.log"
  fi
  grep -qx "OOMGUARD_CHECK_ID=$5" "$T/jobs/$1-$2.out" ||
    fail "(h) $1: the job's environment lacks OOMGUARD_CHECK_ID=$5: $(head -c 300 "$T/jobs/$1-$2.out")"
}
# The jobcomp script's report, kept with the check (GET /v1/checks/ID): the
# outcome, the Slurm job id, rank 0's 8192.00 MiB peak (the H200 probe's
# torch.cuda.max_memory_allocated()), and for a CUDA OOM its line.
expect_reported() {  # NAME JOB CHECK_ID STATE EXIT OUTCOME
  local record="" problems
  for _ in $(seq 300); do
    record=$(curl -sf "http://127.0.0.1:$HTTP_PORT/v1/checks/$3")
    grep -q "\"$6\"" <<<"$record" && break
    sleep 0.1
  done
  problems=$(/usr/bin/python3 -c '
import json, sys
record = json.loads(sys.argv[1] or "{}")
job, check_id, outcome = sys.argv[2:5]
problems = []
def want(what, got, expected):
    if got != expected:
        problems.append(f"{what}: {got!r}, expected {expected!r}")
want("checkId", record.get("checkId"), check_id)
want("cluster", record.get("cluster"), "slurmtest")
want("verdict", record.get("verdict"), "VERDICT_FITS")
want("outcome", record.get("outcome"), outcome)
want("handle.slurmJobId", record.get("handle", {}).get("slurmJobId"), job)
reports = record.get("reports", [])
want("reports", len(reports), 1)
for r in reports[:1]:
    want("reports[0].outcome", r.get("outcome"), outcome)
    detail = r.get("detail", "")
    if outcome == "JOB_OUTCOME_CUDA_OOM" and "CUDA out of memory" not in detail:
        problems.append(f"detail: {detail!r}")
    want("reports[0].ranks", [(m.get("rank"), m.get("maxAllocatedBytes")) for m in r.get("ranks", [])],
         [(0, str(8192 * 1024 * 1024))])
print("; ".join(problems) or "ok")
' "$record" "$2" "$3" "$6" 2>&1)
  if [ "$problems" = ok ]; then
    pass "(h) $1: GET /v1/checks/$3: $6 reported for Slurm job $2, rank 0 at 8192 MiB"
  else
    fail "(h) $1: the check's record: $problems; record: ${record:0:2000}"
    cat "$T/log/jobcomp.log" 2>/dev/null
  fi
  grep -q "job $2: check $3 state $4 exit $5 .*oomguard report exit 0" "$T/log/jobcomp.log" ||
    fail "(h) $1: jobcomp.log lacks the report line: $(cat "$T/log/jobcomp.log" 2>/dev/null)"
}

submit_admitted e2e "$T/bin/oom"
OOM_JOB=$SUBMITTED_JOB OOM_CHECK_ID=$SUBMITTED_CHECK_ID
submit_admitted e2e_ran "$T/bin/ran"
RAN_JOB=$SUBMITTED_JOB RAN_CHECK_ID=$SUBMITTED_CHECK_ID
[ "$OOM_CHECK_ID" != "$RAN_CHECK_ID" ] || fail "(h) two checks, one id: $OOM_CHECK_ID"
# What an admin (or another plugin) writes there too is kept by the jobcomp
# script's reading.
scontrol update jobid="$OOM_JOB" AdminComment="site=gold oomguard_check_id=$OOM_CHECK_ID queue=a100" ||
  fail "(h) scontrol update AdminComment"
# A job without a check id ends first: the jobcomp script leaves it alone
# (slurmctld runs these scripts one at a time, in the order jobs end, so
# its turn is over once a later job's report is logged), even with a job
# name that poses as an admin_comment line of `scontrol show job`.
HELLO_JOB=$(cd "$T" && sbatch --parsable -o "$T/jobs/hello-%j.out" \
  -J $'hello\n   AdminComment=oomguard_check_id='"$RAN_CHECK_ID" jobs/hello.sh 2>&1)
HELLO_STATE=$(wait_job_done "$HELLO_JOB")
[ "$HELLO_STATE" = COMPLETED ] || fail "(h) the job without a check id: state '$HELLO_STATE' ($HELLO_JOB)"
[ "$(scontrol show job "$HELLO_JOB" | grep -c "^   AdminComment=oomguard_check_id=$RAN_CHECK_ID")" = 1 ] ||
  fail "(h) the job name does not pose as an admin_comment line: $(scontrol show job "$HELLO_JOB" | head -3)"
scontrol release "$RAN_JOB" || fail "(h) scontrol release $RAN_JOB"
expect_ended e2e_ran "$RAN_JOB" COMPLETED 0:0 "$RAN_CHECK_ID"
expect_reported e2e_ran "$RAN_JOB" "$RAN_CHECK_ID" COMPLETED 0:0 JOB_OUTCOME_RAN
if grep -q "job $HELLO_JOB:" "$T/log/jobcomp.log"; then
  fail "(h) the jobcomp script reported job $HELLO_JOB, which has no check id"
else
  pass "(h) job $HELLO_JOB without a check id: nothing reported"
fi
scontrol release "$OOM_JOB" || fail "(h) scontrol release $OOM_JOB"
expect_ended e2e "$OOM_JOB" FAILED 1:0 "$OOM_CHECK_ID"
grep -q "CUDA out of memory" "$T/jobs/e2e-$OOM_JOB.err" || fail "(h) the job's stderr lacks the OOM line"
expect_reported e2e "$OOM_JOB" "$OOM_CHECK_ID" FAILED 1:0 JOB_OUTCOME_CUDA_OOM

# The metric: one admitted job ran out of GPU memory.
OOM_SERIES='oomguard_admitted_then_oom_total{family="dense",gpu="H100-SXM-80GB"} 1'
METRICS=""
for _ in $(seq 100); do  # (No `curl | grep -q`: pipefail and grep's early exit.)
  METRICS=$(curl -sf "http://127.0.0.1:$METRICS_PORT/metrics")
  grep -qxF "$OOM_SERIES" <<<"$METRICS" && break
  sleep 0.1
done
if grep -qxF "$OOM_SERIES" <<<"$METRICS"; then
  pass "(h) /metrics: $OOM_SERIES"
else
  fail "(h) /metrics lacks '$OOM_SERIES': $(grep '^oomguard_admitted_then_oom_total' <<<"$METRICS")"
fi

# The alert, in a real Prometheus scraping the server with the shipped rules.
PROM_PORT=$(free_port)
cat >"$T/prometheus/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $SRC/deploy/prometheus/rules/oomguard.rules.yml
scrape_configs:
  - job_name: oomguard
    static_configs:
      - targets: ['127.0.0.1:$METRICS_PORT']
EOF
"$PROMETHEUS" --config.file="$T/prometheus/prometheus.yml" --storage.tsdb.path="$T/prometheus/data" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$T/log/prometheus.log" 2>&1 &
PIDS+=($!)
ALERT=""
for _ in $(seq 600); do  # 60 s: Prometheus starts, scrapes, evaluates.
  ALERT=$(curl -sf "http://127.0.0.1:$PROM_PORT/api/v1/alerts" | /usr/bin/python3 -c '
import json, sys
for a in json.load(sys.stdin)["data"]["alerts"]:
    if a["labels"].get("alertname") == "OomguardAdmittedJobRanOutOfMemory" and a["state"] == "firing":
        print(a["labels"].get("gpu", ""), a["labels"].get("family", ""))' 2>/dev/null)
  [ -n "$ALERT" ] && break
  sleep 0.1
done
if [ -n "$ALERT" ]; then
  pass "(h) Prometheus: OomguardAdmittedJobRanOutOfMemory firing ($ALERT)"
else
  fail "(h) OomguardAdmittedJobRanOutOfMemory not firing in Prometheus within 60 s"
  tail -n 20 "$T/log/prometheus.log"
fi

# (d) Server stopped: fail-open accepts and logs; fail-closed refuses.
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
submit --gres=gpu:h100:8 jobs/oom.sh
expect_accepted "(d) server stopped, policy=open" -silent
grep -q "check unavailable (.*); accepted (policy=open)" "$T/log/slurmctld.log" ||
  fail "(d) slurmctld log lacks the fail-open line"
grep "check unavailable" "$T/log/slurmctld.log" | tail -1 | sed 's/^/    slurmctld.log: /'

write_hook_conf closed "127.0.0.1:$GRPC_PORT" "$DEADLINE_MS"
submit --gres=gpu:h100:8 jobs/oom.sh
expect_rejected "(d) server stopped, policy=closed" "policy=closed"
echo "---- (d) policy=closed, sbatch printed (verbatim) ----"
printf '%s\n' "$SUBMIT_OUT"
echo "------------------------------------------------------"

# (d') A service that accepts connections and never answers: the hook gives
# up within its deadline.
HANG_PORT=$(free_port)
/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)
' "$HANG_PORT" >/dev/null 2>&1 &
PIDS+=($!)
sleep 0.3
write_hook_conf open "127.0.0.1:$HANG_PORT" 1500
submit --gres=gpu:h100:8 jobs/oom.sh
expect_accepted "(d') hanging service, policy=open" -silent
if less_than "$SUBMIT_SECONDS" 2.5; then
  pass "(d') submission took ${SUBMIT_SECONDS}s with deadline_ms=1500"
else
  fail "(d') submission took ${SUBMIT_SECONDS}s with deadline_ms=1500"
fi
grep -q "check unavailable (.*DEADLINE_EXCEEDED\|no answer within" "$T/log/slurmctld.log" ||
  fail "(d') slurmctld log lacks the deadline line"

scancel --quiet --user=root 2>/dev/null
ELAPSED=$(elapsed_since "$START")
if [ "$FAILED" = 0 ]; then
  echo "PASS: Slurm job_submit integration in ${ELAPSED}s"
  exit 0
fi
echo "FAILED after ${ELAPSED}s"
exit 1
