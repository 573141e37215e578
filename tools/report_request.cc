#include "tools/report_request.h"

#include <sys/stat.h>

#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "feedback/report_limits.h"
#include "feedback/training_log_reader.h"
#include "tools/bounded_file.h"
#include "tools/command_flags.h"
#include "tools/shown_value.h"

namespace oomguard {
namespace {

constexpr size_t kMaxTokenBytes = 4096;

// `status` with its message after "FLAG: ".
absl::Status AboutFlag(absl::string_view flag, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(flag, ": ", status.message()));
}

// Sets the flag at args[i] (moving i past its value); false when args[i]
// is not one of the flags.
absl::StatusOr<bool> TakeReportFlag(const std::vector<std::string>& args, size_t& i,
                                    ReportFlags& f) {
  const std::string& a = args[i];
  for (auto [name, value] :
       {std::pair{"--server", &f.server}, std::pair{"--check-id", &f.check_id},
        std::pair{"--log", &f.log_path}, std::pair{"--slurm-job-id", &f.slurm_job_id},
        std::pair{"--token-file", &f.token_file}, std::pair{"--tls-ca", &f.tls_ca},
        std::pair{"--tls-cert", &f.tls_cert}, std::pair{"--tls-key", &f.tls_key}}) {
    if (IsFlag(a, name)) {
      OOMGUARD_ASSIGN_OR_RETURN(*value, TakeFlagValue(args, i, name));
      return true;
    }
  }
  if (IsFlag(a, "--exit-code")) {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--exit-code"));
    absl::StatusOr<feedback::ExitStatus> status = feedback::ParseExitStatus(v);
    if (!status.ok()) return AboutFlag("--exit-code", status.status());
    f.exit_status = *status;
  } else if (IsFlag(a, "--slurm-state")) {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--slurm-state"));
    absl::StatusOr<v1::JobOutcome> outcome = feedback::OutcomeOfSlurmState(v);
    if (!outcome.ok()) return AboutFlag("--slurm-state", outcome.status());
    f.slurm_outcome = *outcome;
  } else if (IsFlag(a, "--deadline-ms")) {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--deadline-ms"));
    OOMGUARD_ASSIGN_OR_RETURN(f.deadline_ms, ParseDeadlineMsFlag(v));
  } else {
    return false;
  }
  return true;
}

// Feeds the file at `path` to `reader`, 64 KiB at a time: a job's log may
// be far larger than memory should hold.
absl::Status ReadLogFile(const std::string& path, feedback::TrainingLogReader& reader) {
  struct stat info;
  if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log: \"", ShownValue(path), "\" is a directory, not a file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log: cannot read \"", ShownValue(path), "\""));
  }
  std::string chunk(64 * 1024, '\0');
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    reader.Feed(absl::string_view(chunk.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log: cannot read \"", ShownValue(path), "\""));
  }
  reader.Finish();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReportFlags> ParseReportFlags(const std::vector<std::string>& args) {
  ReportFlags f;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      f.help = true;
      return f;
    }
    OOMGUARD_ASSIGN_OR_RETURN(const bool taken, TakeReportFlag(args, i, f));
    if (!taken) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown argument \"", ShownValue(a), "\" (see --help)"));
    }
  }
  OOMGUARD_RETURN_IF_ERROR(CheckServerFlag(f.server));
  OOMGUARD_RETURN_IF_ERROR(feedback::ValidateCheckId(f.check_id, "--check-id"));
  v1::JobHandle handle;
  handle.set_slurm_job_id(f.slurm_job_id);
  if (absl::Status s = feedback::ValidateJobHandle(handle); !s.ok()) {
    return AboutFlag("--slurm-job-id", s);
  }
  OOMGUARD_RETURN_IF_ERROR(CheckTlsFlags(f.tls_ca, f.tls_cert, f.tls_key));
  return f;
}

absl::StatusOr<v1::ReportRequest> BuildReportRequest(const ReportFlags& f, LogSummary* summary) {
  feedback::TrainingLogReader reader;
  if (!f.log_path.empty()) OOMGUARD_RETURN_IF_ERROR(ReadLogFile(f.log_path, reader));
  if (summary != nullptr) {
    *summary = LogSummary{.lines = reader.lines(),
                          .memory_lines = reader.memory_lines(),
                          .overlong_lines = reader.overlong_lines(),
                          .ranks_left_out = reader.ranks_left_out(),
                          .cuda_oom = reader.cuda_oom()};
  }
  v1::ReportRequest request;
  request.set_check_id(f.check_id);
  v1::MeasurementSource source = reader.source();
  if (source == v1::MEASUREMENT_SOURCE_UNSPECIFIED) {
    source = f.slurm_outcome || !f.slurm_job_id.empty() ? v1::MEASUREMENT_SOURCE_SLURM
             : !f.log_path.empty()                      ? v1::MEASUREMENT_SOURCE_MEGATRON_LOG
                                                        : v1::MEASUREMENT_SOURCE_CLIENT;
  }
  request.set_source(source);
  for (v1::RankMeasurement& m : reader.Measurements()) *request.add_ranks() = std::move(m);
  request.set_outcome(feedback::OutcomeOf(feedback::JobEnd{
      .cuda_oom_line = reader.cuda_oom(),
      .exit_status = f.exit_status,
      .slurm_outcome = f.slurm_outcome,
  }));
  request.set_detail(reader.oom_line());
  if (!f.slurm_job_id.empty()) request.mutable_handle()->set_slurm_job_id(f.slurm_job_id);
  if (absl::Status s = feedback::ValidateReport(request); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid report: ", s.message()));
  }
  return request;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  OOMGUARD_ASSIGN_OR_RETURN(std::string text,
                            ReadBoundedFile("--token-file", path, kMaxTokenBytes));
  const absl::string_view token = absl::StripAsciiWhitespace(text);
  bool printable = !token.empty();
  for (char c : token) printable = printable && c > 0x20 && c < 0x7f;
  if (!printable) {
    return absl::InvalidArgumentError(
        absl::StrCat("--token-file: \"", ShownValue(path),
                     "\" does not hold one token (printable ASCII, no spaces)"));
  }
  return std::string(token);
}

}  // namespace oomguard
