#!/bin/bash
# oomguard job-completion script for Slurm (JobCompType=jobcomp/script,
# JobCompLoc=/etc/slurm/oomguard_jobcomp.sh; Slurm 22.05+).
#
# slurmctld runs it once per finished job, with the job's record in the
# environment (src/plugins/jobcomp/script/jobcomp_script.c: JOBID, JOBSTATE,
# EXITCODE "code:signal", BATCH, ...). For a job that job_submit.lua admitted
# with a check id ("oomguard_check_id=ID" in its admin_comment), it sends
# what the job's end says to the oomguard service:
#   oomguard report --server S --check-id ID --slurm-job-id JOBID
#       --slurm-state JOBSTATE --exit-code EXITCODE [--log COPY_OF_ITS_OUTPUT] ...
# `oomguard report` reads the CUDA OOM line (and Megatron-LM's memory lines)
# from the log and tells the outcome: CUDA_OOM, RAN, FAILED, HOST_OOM,
# CANCELLED.
#
# The admin_comment comes from squeue, the job's stderr and stdout paths
# (patterns expanded) and its user from `scontrol show job`: jobcomp/script
# does not pass them. Each file is read as the job's user (setpriv, when this runs as root)
# and only when it is a regular file, whole up to 32 MiB, else its first and
# last 16 MiB, into a private copy that the report reads; the bearer token
# never reaches the user's side.
#
# Bounded in time (squeue and scontrol 10 s each, each file 10 s, the report deadline_ms + 2 s:
# slurmctld runs these scripts one at a time) and it never fails the job: it
# always exits 0 and says what it did in report_log (or syslog).
#
# Configuration: oomguard_slurm.conf next to this script (server, binary,
# timeout_binary, tls_ca, report_token_file, report_deadline_ms, report_log).
# slurm.conf next to this script, when there, is the one scontrol reads.
set -u
umask 077
export PATH=/usr/bin:/bin:/usr/sbin:/sbin

LOG_BYTES=$((16 * 1024 * 1024))  # The first and the last 16 MiB of a larger file.
HERE=$(dirname -- "$(readlink -f -- "$0")")
CONF=$HERE/oomguard_slurm.conf
JOB=${JOBID:-}
REPORT_LOG=""

log() {
  local line="oomguard_jobcomp: job ${JOB:-?}: $*"
  line=${line//[$'\n\r\t']/ }
  if [ -n "$REPORT_LOG" ]; then
    printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${line:0:2000}" >>"$REPORT_LOG" 2>/dev/null
  else
    logger -t oomguard-jobcomp -- "${line:0:2000}" 2>/dev/null
  fi
}
done_() { log "$*"; exit 0; }

# --- configuration (the hook's file; the same character sets) --------------
server=127.0.0.1:50051 binary=/usr/local/bin/oomguard timeout_binary=/usr/bin/timeout
tls_ca="" report_token_file="" report_deadline_ms=5000
is_path() { [[ $1 =~ ^/[A-Za-z0-9._/-]+$ && $1 != *..* && ${#1} -le 4096 ]]; }
if [ -r "$CONF" ]; then
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line%%#*}
    [[ $line =~ ^[[:space:]]*([A-Za-z0-9._-]+)[[:space:]]*=[[:space:]]*(.*[^[:space:]])?[[:space:]]*$ ]] ||
      continue
    value=${BASH_REMATCH[2]}
    case ${BASH_REMATCH[1]} in
      server) server=$value ;;
      binary) binary=$value ;;
      timeout_binary) timeout_binary=$value ;;
      tls_ca) tls_ca=$value ;;
      report_token_file) report_token_file=$value ;;
      report_deadline_ms) report_deadline_ms=$value ;;
      report_log) is_path "$value" && REPORT_LOG=$value ;;
    esac
  done <"$CONF"
fi
server_re='^[][A-Za-z0-9.:-]+$'
[[ $server =~ $server_re && ${#server} -le 256 ]] || done_ "bad server in $CONF"
is_path "$binary" || done_ "bad binary in $CONF"
is_path "$timeout_binary" || done_ "bad timeout_binary in $CONF"
[ -z "$tls_ca" ] || is_path "$tls_ca" || done_ "bad tls_ca in $CONF"
[ -z "$report_token_file" ] || is_path "$report_token_file" || done_ "bad report_token_file in $CONF"
if ! [[ $report_deadline_ms =~ ^[1-9][0-9]{2,4}$ ]] ||
  ((report_deadline_ms < 500 || report_deadline_ms > 60000)); then
  done_ "bad report_deadline_ms in $CONF"
fi

# --- the job ------------------------------------------------------------------
[[ $JOB =~ ^[0-9]+$ ]] || exit 0
[ "${BATCH:-}" = yes ] || exit 0  # The hook checks batch jobs only.
state=${JOBSTATE:-}
[[ $state =~ ^[A-Z_]{1,32}$ ]] || done_ "no job state ('$state')"
# Slurm's "code:signal", as `oomguard report --exit-code` reads it.
exit_code=${EXITCODE:-}
[[ $exit_code =~ ^[0-9]{1,3}:[0-9]{1,3}$ ]] || done_ "no exit code ('${exit_code:0:40}')"

[ -z "${SLURM_CONF:-}" ] && [ -r "$HERE/slurm.conf" ] && export SLURM_CONF=$HERE/slurm.conf
# The admin_comment alone (squeue prints only the field asked for, so no
# value a user chose can pose as it); most jobs end here.
admin_comment=$(timeout -k 1 10 squeue -h -j "$JOB" --states=all -O admin_comment:16384 2>/dev/null) ||
  done_ "squeue failed (the job left slurmctld's memory? MinJobAge)"
[[ " ${admin_comment//[$'\n\t']/ } " =~ \ oomguard_check_id=([0-9a-f]{32})\  ]] || exit 0
check_id=${BASH_REMATCH[1]}

record=$(timeout -k 1 10 scontrol show job "$JOB" 2>/dev/null) ||
  done_ "scontrol show job failed (the job left slurmctld's memory? MinJobAge)"
# One line per field group, each starting with three blanks; a value the user
# chose (a job name or a directory with a newline) could pose as a line: a
# field found other than exactly once is not used (UserId, StdErr and StdOut
# are always there).
only_line() {  # KEY: the value of the one line "   KEY=VALUE"
  local lines
  lines=$(grep -a -- "^   $1=" <<<"$record")
  [ -n "$lines" ] && [ "$(grep -c '' <<<"$lines")" = 1 ] || return 1
  printf '%s' "${lines#"   $1="}"
}

# --- the job's output, copied ------------------------------------------------------
# Its stderr (the CUDA OOM line) and, when it is another file, its stdout
# (Megatron-LM prints its memory lines there): each a regular file read as
# the job's user, whole up to 2 x LOG_BYTES, else its first and last LOG_BYTES.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/oomguard-jobcomp.XXXXXX") || done_ "cannot make a private directory"
trap 'rm -rf -- "$tmp"' EXIT
copy=$tmp/log
: >"$copy"
as_user=()
can_read=yes
if [ "$(id -u)" = 0 ]; then
  if [[ $(only_line UserId) =~ ^[^\ ]*\(([0-9]+)\)\ GroupId=[^\ ]*\(([0-9]+)\) ]]; then
    as_user=(setpriv --reuid="${BASH_REMATCH[1]}" --regid="${BASH_REMATCH[2]}" --clear-groups --)
  else
    can_read=no
    log "no UserId/GroupId in scontrol's record; reporting without the log"
  fi
fi
# shellcheck disable=SC2016 # Expanded by that shell, from its arguments.
read_log='f=$1 n=$2
[ -f "$f" ] && [ -r "$f" ] || exit 3
s=$(stat -L -c %s -- "$f") || exit 3
if [ "$s" -le $((2 * n)) ]; then cat -- "$f"; else head -c "$n" -- "$f"; echo; tail -c "$n" -- "$f"; fi
echo'
logs=()
for key in StdErr StdOut; do
  [ "$can_read" = yes ] || break
  path=$(only_line "$key") || continue
  if [[ $path != /* || $path == *%* ]]; then
    log "$key '${path:0:300}' not read (not absolute, or a pattern scontrol does not expand)"
    continue
  fi
  [ "$key" = StdOut ] && [ "$path" = "$(only_line StdErr)" ] && continue  # The same file.
  if timeout -k 1 10 "${as_user[@]}" /bin/sh -c "$read_log" sh "$path" "$LOG_BYTES" \
    </dev/null >>"$copy" 2>/dev/null; then
    logs+=("$path")
  else
    log "cannot read $key $path as the job's user"
  fi
done

# --- the report ------------------------------------------------------------------------
args=(report --server "$server" --check-id "$check_id" --slurm-job-id "$JOB"
  --slurm-state "$state" --exit-code "$exit_code" --deadline-ms "$report_deadline_ms")
[ -s "$copy" ] && args+=(--log "$copy")
[ -n "$report_token_file" ] && args+=(--token-file "$report_token_file")
[ -n "$tls_ca" ] && args+=(--tls-ca "$tls_ca")
out=$("$timeout_binary" -k 1 $((report_deadline_ms / 1000 + 2)) "$binary" "${args[@]}" </dev/null 2>&1)
rc=$?
done_ "check $check_id state $state exit $exit_code log '${logs[*]}': oomguard report exit $rc: ${out:0:1000}"
