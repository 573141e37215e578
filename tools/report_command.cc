// `oomguard report` (see report_command.h): reads the flags and the log,
// makes the request, calls the service and says what it kept.
#include "tools/report_command.h"

#include <chrono>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "feedback/metric_labels.h"
#include "feedback/report_limits.h"
#include "feedback/training_log_reader.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "tools/check_rpc.h"
#include "tools/report_request.h"
#include "tools/shown_value.h"

namespace oomguard {
namespace {

std::string ErrLine(absl::string_view text) {
  return absl::StrCat("oomguard report: ", text, "\n");
}

// What reading --log found that a user should know.
std::string LogNotes(const ReportFlags& f, const LogSummary& s) {
  if (f.log_path.empty()) return "";
  const std::string log = absl::StrCat("--log \"", ShownValue(f.log_path), "\": ");
  std::string notes;
  if (s.memory_lines == 0 && !s.cuda_oom) {
    notes += ErrLine(absl::StrCat(
        "note: ", log, s.lines,
        " lines, no memory line (Megatron-LM's \"[Rank N] (after X iterations) memory (MB) | "
        "...\", Megatron-Bridge's \"memory (GB)\") and no CUDA OOM line"));
  }
  if (s.overlong_lines > 0) {
    notes += ErrLine(absl::StrCat("note: ", log, s.overlong_lines, " lines longer than ",
                                  feedback::kMaxLogLineBytes, " bytes were skipped"));
  }
  if (s.ranks_left_out > 0) {
    notes += ErrLine(absl::StrCat("note: ", log, s.ranks_left_out,
                                  " memory lines of ranks past the report's ",
                                  feedback::kMaxReportRanks, " left out"));
  }
  return notes;
}

}  // namespace

int RunReportCommand(const std::vector<std::string>& args, std::string& out, std::string& err) {
  absl::StatusOr<ReportFlags> flags = ParseReportFlags(args);
  if (!flags.ok()) {
    err = ErrLine(flags.status().message()) + kReportUsageText;
    return kReportUsage;
  }
  const ReportFlags& f = *flags;
  if (f.help) {
    out = kReportUsageText;
    return kReportStored;
  }
  LogSummary summary;
  absl::StatusOr<v1::ReportRequest> request = BuildReportRequest(f, &summary);
  err += LogNotes(f, summary);
  if (!request.ok()) {
    err += ErrLine(request.status().message());
    return kReportUsage;
  }
  std::string token;
  if (!f.token_file.empty()) {
    absl::StatusOr<std::string> read = ReadTokenFile(f.token_file);
    if (!read.ok()) {
      err += ErrLine(read.status().message());
      return kReportUsage;
    }
    token = *std::move(read);
  }
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(f.tls_ca, f.tls_cert, f.tls_key);
  if (!credentials.ok()) {
    err += ErrLine(credentials.status().message());
    return kReportUsage;
  }
  std::unique_ptr<v1::Oomguard::Stub> stub =
      v1::Oomguard::NewStub(grpc::CreateChannel(f.server, *credentials));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(f.deadline_ms));
  if (!token.empty()) context.AddMetadata("authorization", absl::StrCat("Bearer ", token));
  v1::ReportResponse response;
  if (const grpc::Status status = stub->Report(&context, *request, &response); !status.ok()) {
    const std::string code =
        absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code()));
    if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      err += ErrLine(absl::StrCat("invalid report: ", ShownValue(status.error_message())));
      return kReportUsage;
    }
    err +=
        ErrLine(absl::StrCat("service ", ShownValue(f.server), " did not store the report: ", code,
                             ": ", ShownValue(status.error_message())));
    return kReportRefused;
  }
  out = absl::StrCat("oomguard: stored the report of check ", response.check_id(), ": ",
                     response.ranks_stored(), " rank measurements, outcome ",
                     feedback::OutcomeLabel(request->outcome()), ", source ",
                     feedback::SourceLabel(request->source()), "\n");
  return kReportStored;
}

}  // namespace oomguard
