// How a CheckRecord is split into the columns both kinds of store keep: the
// fields a query selects on (id, time, cluster, handle) as columns, the rest
// as the record's protobuf bytes without its reports, handle and outcome;
// each report as its own row of StoredReport bytes. The outcome is derived
// on reading (record_outcome.h), so appending a report is one INSERT.
#ifndef OOMGUARD_STORE_RECORD_ROWS_H_
#define OOMGUARD_STORE_RECORD_ROWS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "oomguard/v1/feedback.pb.h"

namespace oomguard::store {

struct CheckRow {
  std::string check_id;
  // CheckRecord.checked_at in microseconds since the Unix epoch.
  int64_t checked_at_micros = 0;
  std::string cluster;
  v1::JobHandle handle;
  // The record without check_id-independent parts kept elsewhere: its
  // reports, handle and outcome cleared.
  std::string record_bytes;
};

CheckRow ToCheckRow(const v1::CheckRecord& record);

// The record of `record_bytes` with `handle`; reports are appended with
// AppendReportBytes, then FinishRecord sets the outcome.
absl::StatusOr<v1::CheckRecord> FromCheckRow(absl::string_view check_id,
                                             absl::string_view record_bytes,
                                             const v1::JobHandle& handle);
absl::Status AppendReportBytes(absl::string_view check_id, absl::string_view report_bytes,
                               v1::CheckRecord* record);
void FinishRecord(v1::CheckRecord* record);

std::string ReportBytes(const v1::StoredReport& report);

int64_t ToMicros(absl::Time time);

}  // namespace oomguard::store

#endif  // OOMGUARD_STORE_RECORD_ROWS_H_
