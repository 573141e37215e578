// Fuzzes the training log reader (feedback/training_log_reader.h), which
// `oomguard report --log` runs on a job's log or Slurm stderr: the input is
// the log. It is read whole and again fed in pieces (their size from the
// first byte): both readings must find the same measurements, CUDA OOM line
// and counts (a line may span any number of reads). The OOM line must be
// valid UTF-8 within the report's bound, and the report made of what was
// read must pass feedback::ValidateReport, the server's rule.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/valid_utf8.h"
#include "feedback/report_limits.h"
#include "feedback/training_log_reader.h"
#include "fuzz/fuzz_checks.h"

namespace oomguard::fuzz {
namespace {

std::string MeasurementsBytes(const feedback::TrainingLogReader& reader) {
  std::string bytes;
  for (const v1::RankMeasurement& m : reader.Measurements()) bytes += m.SerializeAsString();
  return bytes;
}

}  // namespace
}  // namespace oomguard::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oomguard;
  const absl::string_view log(reinterpret_cast<const char*>(data), size);
  feedback::TrainingLogReader whole;
  whole.Feed(log);
  whole.Finish();

  feedback::TrainingLogReader pieces;
  const size_t piece = size == 0 ? 1 : 1 + data[0] % 97;
  for (size_t at = 0; at < log.size(); at += piece) pieces.Feed(log.substr(at, piece));
  pieces.Finish();
  fuzz::Expect(fuzz::MeasurementsBytes(whole) == fuzz::MeasurementsBytes(pieces),
               "the measurements differ when the log is fed in pieces");
  fuzz::Expect(whole.oom_line() == pieces.oom_line() && whole.lines() == pieces.lines() &&
                   whole.memory_lines() == pieces.memory_lines() &&
                   whole.overlong_lines() == pieces.overlong_lines() &&
                   whole.source() == pieces.source(),
               "the reading differs when the log is fed in pieces");

  fuzz::Expect(whole.oom_line().size() <= feedback::kMaxDetailBytes,
               "the OOM line is over the detail's bound");
  fuzz::Expect(IsValidUtf8(whole.oom_line()), "the OOM line is not valid UTF-8");
  fuzz::Expect(whole.cuda_oom() == !whole.oom_line().empty(), "cuda_oom without its line");
  fuzz::Expect(whole.memory_lines() <= whole.lines(), "more memory lines than lines");

  v1::ReportRequest report;
  report.set_check_id("0123456789abcdef0123456789abcdef");
  report.set_source(whole.source() == v1::MEASUREMENT_SOURCE_UNSPECIFIED
                        ? v1::MEASUREMENT_SOURCE_MEGATRON_LOG
                        : whole.source());
  report.set_outcome(whole.cuda_oom() ? v1::JOB_OUTCOME_CUDA_OOM : v1::JOB_OUTCOME_FAILED);
  report.set_detail(whole.oom_line());
  for (const v1::RankMeasurement& m : whole.Measurements()) *report.add_ranks() = m;
  const absl::Status valid = feedback::ValidateReport(report);
  fuzz::Expect(valid.ok(), "ValidateReport refuses what the reader read: " + valid.ToString());
  return 0;
}
