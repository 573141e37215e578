// `oomguard check`: asks a running oomguard service (its Check RPC) whether
// a job fits its GPUs, and prints the verdict. This is the client the Slurm
// job_submit hook runs (deploy/slurm/job_submit.lua): the hook writes the job
// to a file (the envelope, job_envelope.h) and runs a fixed command line, so
// that no job text ever reaches a shell.
//
//   oomguard check --server HOST:PORT [--deadline-ms 2000]
//       [--gpu NAME | --gpu-memory-gib G] [--gpus N] [--gpus-per-node K]
//       [--preset P] [--safety-margin F] [--env NAME=VALUE ...] [--ignore-skip]
//       [--judge-unmodelled | --no-judge-unmodelled]
//       [--tls-ca PEM [--tls-cert PEM --tls-key PEM]] [--json]
//       (--script FILE | --job-file FILE | -- <Megatron-LM args>)
//
// Where each value comes from, first found wins: a command-line flag, then
// the envelope header (what Slurm allocates: GRES count and type, or the
// partition's GPU), then the script's `#OOMGUARD` directive, then the
// script's own lines (the launch's world size; without an envelope, what
// its #SBATCH lines allocate and the GPU type they name), then the
// envelope's default_gpu (check_plan.h). A value that overrides a different
// one is noted on stderr, never silently.
//
// Output (stdout): the first line is "oomguard: " and the service's one-line
// summary (verdict, worst rank, its peak and the capacity, the first thing
// to try); then, for FITS_WITH_SETTINGS, "oomguard: add to the job script:
// ..." lines, for DOES_NOT_FIT the recommended steps, the alternatives, the
// incompatibilities, and "oomguard: note: ..." for each of the estimate's
// notes (one per setting oomguard does not model first); "oomguard: not
// judged: ..." for exit 5 (a job with a setting oomguard does not model,
// unless --judge-unmodelled or the server's --judge_unmodelled: then the
// summary says "judged without modelling --X"). With --json, the CheckResponse as protobuf JSON
// instead (verdict_format.h). stderr: "oomguard check: note: ..." lines, "oomguard check: ..."
// errors and, when the server keeps its checks (`serve --store`), the line
// "oomguard check: check-id: ID" (ID: 32 lowercase hex digits, the verdict's
// CheckResponse.check_id), which the Slurm hook carries with the job.
#ifndef OOMGUARD_TOOLS_CHECK_COMMAND_H_
#define OOMGUARD_TOOLS_CHECK_COMMAND_H_

#include <string>
#include <vector>

namespace oomguard {

// Exit codes of `oomguard check`.
enum CheckExitCode : int {
  kCheckFits = 0,
  // Bad flags or job file, or an invalid job (the parser's or the server's
  // INVALID_ARGUMENT, with its message).
  kCheckUsage = 2,
  kCheckFitsWithSettings = 3,
  kCheckDoesNotFit = 4,
  // Nothing to judge: no Megatron-LM launch, `#OOMGUARD skip`, no GPU count
  // or type known, a GPU the service does not know from the scheduler, or a
  // job oomguard does not model (the service's UNIMPLEMENTED with the reason
  // JOB_NOT_MODELLED, e.g. FSDP, or a Megatron-LM flag or choice value
  // oomguard does not model or know, without --judge-unmodelled).
  kCheckNotJudged = 5,
  // The service did not answer: unavailable, too slow (deadline exceeded),
  // overloaded or over its size limit (RESOURCE_EXHAUSTED), failed, or not
  // oomguard at all (an UNIMPLEMENTED without oomguard's reason); or the job
  // script is one oomguard cannot read within its bounds (its expansions pass
  // jobscript/shell_variables.h kMaxExpansionWork) or before --deadline-ms.
  // The Slurm hook's policy decides.
  kCheckUnavailable = 6,
};

// Starts the stderr line that gives the verdict's check id: the hook reads
// the id after it.
inline constexpr char kCheckIdLinePrefix[] = "check-id: ";

// Runs the command; `args` excludes the program and subcommand names.
// Returns the exit code; `out` gets stdout, `err` gets whole stderr lines.
int RunCheckCommand(const std::vector<std::string>& args, std::string& out, std::string& err);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_CHECK_COMMAND_H_
