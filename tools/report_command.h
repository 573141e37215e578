// `oomguard report`: tells the server that admitted a job (its Check's
// check_id) what the job really used and how it ended, through the Report
// RPC. The Slurm job-completion script (deploy/slurm/) runs it with the
// job's stderr, exit code, state and id.
//
//   oomguard report --server HOST:PORT --check-id ID [--log FILE]
//       [--exit-code N[:SIGNAL]] [--slurm-state STATE] [--slurm-job-id ID]
//       [--token-file FILE] [--tls-ca PEM [--tls-cert PEM --tls-key PEM]]
//       [--deadline-ms 5000]
//
// The request (report_request.h): the per-rank peaks of the log's memory
// lines, the outcome from its CUDA OOM line, the exit status and Slurm's
// state, checked with the server's own rule before it is sent. The server
// knows the reporter by the bearer token of --token-file or the client
// certificate of --tls-cert.
//
// Output (stdout): "oomguard: stored ..." (the check, the measurements kept,
// the outcome, the source). stderr: "oomguard report: note: ..." about the
// log (no memory and no OOM line, lines over the bound, ranks left out) and
// "oomguard report: ..." errors.
#ifndef OOMGUARD_TOOLS_REPORT_COMMAND_H_
#define OOMGUARD_TOOLS_REPORT_COMMAND_H_

#include <string>
#include <vector>

namespace oomguard {

// Exit codes of `oomguard report`.
enum ReportExitCode : int {
  kReportStored = 0,
  // The server refused the report (an unknown check id: NOT_FOUND; no
  // credential it accepts: UNAUTHENTICATED; no store: FAILED_PRECONDITION),
  // or did not answer within --deadline-ms.
  kReportRefused = 1,
  // Bad flags, a --log or --token-file that cannot be read, a report the
  // rule refuses (feedback::ValidateReport), or the server's
  // INVALID_ARGUMENT: the message names the field.
  kReportUsage = 2,
};

// Runs the command; `args` excludes the program and subcommand names.
// Returns the exit code; `out` gets stdout, `err` gets whole stderr lines.
int RunReportCommand(const std::vector<std::string>& args, std::string& out, std::string& err);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_REPORT_COMMAND_H_
