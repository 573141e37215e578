#include "service/dcgm_reader.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "service/dcgm_query.h"
#include "service/request_log.h"

namespace oomguard::service {
namespace {

absl::Status BadOption(absl::string_view option, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(option, ": ", why));
}

absl::Time CheckedAt(const v1::CheckRecord& record) {
  return absl::FromUnixSeconds(record.checked_at().seconds()) +
         absl::Nanoseconds(record.checked_at().nanos());
}

}  // namespace

absl::StatusOr<std::unique_ptr<DcgmReader>> DcgmReader::Create(DcgmReaderOptions options,
                                                               store::CheckStore* store,
                                                               DcgmReportSink sink) {
  if (options.prometheus_url.empty()) return BadOption("prometheus_url", "is empty");
  if (store == nullptr) {
    return BadOption("prometheus_url",
                     "the DCGM reader keeps what it reads with the checks: set --store too");
  }
  if (options.interval < absl::Seconds(1)) {
    return BadOption("dcgm_interval",
                     absl::StrCat(absl::FormatDuration(options.interval), ": must be >= 1s"));
  }
  if (options.lookback <= absl::ZeroDuration() || options.query_timeout <= absl::ZeroDuration() ||
      options.max_records_per_round < 1 || options.max_answer_bytes < 1) {
    return BadOption("dcgm",
                     "lookback, query_timeout, max_records_per_round and "
                     "max_answer_bytes must be > 0");
  }
  OOMGUARD_ASSIGN_OR_RETURN(
      std::unique_ptr<PrometheusClient> prometheus,
      PrometheusClient::Create("prometheus_url", options.prometheus_url, options.max_answer_bytes));
  return std::unique_ptr<DcgmReader>(
      new DcgmReader(std::move(options), store, std::move(sink), std::move(prometheus)));
}

DcgmReader::DcgmReader(DcgmReaderOptions options, store::CheckStore* store, DcgmReportSink sink,
                       std::unique_ptr<PrometheusClient> prometheus)
    : options_(std::move(options)),
      store_(store),
      sink_(std::move(sink)),
      prometheus_(std::move(prometheus)) {}

DcgmReader::~DcgmReader() { Stop(); }

absl::StatusOr<bool> DcgmReader::ReadRecord(const v1::CheckRecord& record, absl::Time now) {
  const absl::Duration since_check = std::min(now - CheckedAt(record), options_.lookback);
  OOMGUARD_ASSIGN_OR_RETURN(std::string query, DcgmPeakQuery(record.handle(), since_check));
  const absl::Time deadline = now + options_.query_timeout;
  OOMGUARD_ASSIGN_OR_RETURN(std::string answer, prometheus_->Query(query, deadline));
  OOMGUARD_ASSIGN_OR_RETURN(std::vector<v1::RankMeasurement> measured, ParseDcgmPeaks(answer));
  std::optional<std::vector<v1::RankMeasurement>> peaks = NewDcgmPeaks(record, measured);
  if (!peaks.has_value()) return false;
  v1::ReportRequest report;
  report.set_check_id(record.check_id());
  report.set_source(v1::MEASUREMENT_SOURCE_DCGM);
  for (v1::RankMeasurement& m : *peaks) *report.add_ranks() = std::move(m);
  OOMGUARD_RETURN_IF_ERROR(sink_(report, absl::Now() + options_.query_timeout));
  return true;
}

DcgmRound DcgmReader::RunRound(absl::Time now) {
  DcgmRound round;
  std::vector<v1::CheckRecord> records;
  const store::RecordFilter filter{.cluster = options_.cluster,
                                   .with_handle = true,
                                   .checked_since = now - options_.lookback,
                                   .limit = options_.max_records_per_round};
  const absl::Status listed = store_->ForEachRecord(
      filter, [&](const v1::CheckRecord& record) { records.push_back(record); });
  if (!listed.ok()) {
    round.failed = 1;
    round.first_error = listed;
    return round;
  }
  round.records = static_cast<int>(records.size());
  for (const v1::CheckRecord& record : records) {
    if (stop_.HasBeenNotified()) break;
    absl::StatusOr<bool> reported = ReadRecord(record, now);
    if (!reported.ok()) {
      if (round.failed++ == 0) {
        round.first_error = absl::Status(
            reported.status().code(),
            absl::StrCat("check ", record.check_id(), ": ", reported.status().message()));
      }
    } else if (*reported) {
      ++round.reported;
    } else {
      ++round.unchanged;
    }
  }
  return round;
}

void DcgmReader::Start() {
  thread_ = std::thread([this] {
    do {
      const DcgmRound round = RunRound(absl::Now());
      if (round.reported == 0 && round.failed == 0) continue;
      std::vector<std::pair<std::string, std::string>> fields = {
          {"records", absl::StrCat(round.records)},
          {"reported", absl::StrCat(round.reported)},
          {"unchanged", absl::StrCat(round.unchanged)},
          {"failed", absl::StrCat(round.failed)}};
      if (!round.first_error.ok()) {
        fields.emplace_back("error", std::string(round.first_error.message()));
      }
      WriteLogLine(FormatEventLine("dcgm_round", fields, absl::Now()));
    } while (!stop_.WaitForNotificationWithTimeout(options_.interval));
  });
}

void DcgmReader::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  prometheus_->Stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace oomguard::service
