// The command line of `oomguard report` (its usage text is kReportUsageText)
// and the ReportRequest it makes: the peaks and the CUDA OOM line of the
// training log (feedback/training_log_reader.h), the outcome from the log,
// the exit status and Slurm's state (feedback/job_outcome.h), the Slurm job
// id; checked with feedback::ValidateReport, the server's own rule, before
// anything is sent.
#ifndef OOMGUARD_TOOLS_REPORT_REQUEST_H_
#define OOMGUARD_TOOLS_REPORT_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "feedback/job_outcome.h"
#include "oomguard/v1/feedback.pb.h"

namespace oomguard {

inline constexpr char kReportUsageText[] =
    "usage: oomguard report --server HOST:PORT --check-id ID [--log FILE]\n"
    "           [--exit-code N[:SIGNAL]] [--slurm-state STATE] [--slurm-job-id ID]\n"
    "           [--token-file FILE] [--tls-ca PEM [--tls-cert PEM --tls-key PEM]]\n"
    "           [--deadline-ms 5000]\n"
    "--log: the job's log or its Slurm stderr: Megatron-LM's and Megatron-Bridge's\n"
    "       memory lines give the per-rank peaks, a CUDA OOM line the outcome\n"
    "--exit-code, --slurm-state: how the job ended (Slurm's EXITCODE and JOBSTATE)\n"
    "--token-file: a file holding the bearer token the server knows this reporter by\n"
    "exit: 0 stored, 2 bad flags, log or report (the field named),\n"
    "      1 the server refused it or did not answer\n";

struct ReportFlags {
  bool help = false;  // --help or -h: print kReportUsageText, nothing else.
  std::string server;
  std::string check_id;
  std::string log_path;
  std::optional<feedback::ExitStatus> exit_status;
  std::optional<v1::JobOutcome> slurm_outcome;  // From --slurm-state.
  std::string slurm_job_id;
  std::string token_file;
  std::string tls_ca, tls_cert, tls_key;
  int64_t deadline_ms = 5000;
};

// `args` excludes the program and subcommand names. InvalidArgument naming
// the flag and its value for a bad or missing flag, or a bad combination.
absl::StatusOr<ReportFlags> ParseReportFlags(const std::vector<std::string>& args);

// What reading --log found, for the command's notes.
struct LogSummary {
  uint64_t lines = 0, memory_lines = 0, overlong_lines = 0, ranks_left_out = 0;
  bool cuda_oom = false;
};

// The request the flags make, the --log file read (InvalidArgument naming
// --log when it cannot be read). Its source: the log's (MEGATRON_LOG or
// MEGATRON_BRIDGE_LOG) when it had memory lines; else SLURM with
// --slurm-state or --slurm-job-id; else MEGATRON_LOG with --log; else
// CLIENT. Its detail: the log's CUDA OOM line. InvalidArgument, naming the
// field, when feedback::ValidateReport refuses it.
absl::StatusOr<v1::ReportRequest> BuildReportRequest(const ReportFlags& flags,
                                                     LogSummary* summary = nullptr);

// The bearer token in `path` (--token-file): the file's one word, at most
// 4096 bytes of printable ASCII. InvalidArgument naming --token-file.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_REPORT_REQUEST_H_
