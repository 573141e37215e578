#include "store/record_rows.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "store/record_outcome.h"

namespace oomguard::store {
namespace {

// Deterministic bytes (map order fixed): equal records, equal rows.
std::string Serialize(const google::protobuf::MessageLite& message) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  coded.Trim();
  return bytes;
}

absl::Status Corrupt(absl::string_view check_id, absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat("the store's ", what, " of check ", check_id, " does not parse"));
}

}  // namespace

int64_t ToMicros(absl::Time time) { return absl::ToUnixMicros(time); }

CheckRow ToCheckRow(const v1::CheckRecord& record) {
  CheckRow row;
  row.check_id = record.check_id();
  row.checked_at_micros =
      record.checked_at().seconds() * 1'000'000 + record.checked_at().nanos() / 1'000;
  row.cluster = record.cluster();
  row.handle = record.handle();
  v1::CheckRecord rest = record;
  rest.clear_reports();
  rest.clear_outcome();
  // The handle's fields with columns live there (a report may set them
  // later); the others (e.g. the webhook's kubernetes_kind) stay in the
  // record's bytes.
  v1::JobHandle* rest_handle = rest.mutable_handle();
  rest_handle->clear_slurm_job_id();
  rest_handle->clear_kubernetes_namespace();
  rest_handle->clear_kubernetes_workload();
  if (rest_handle->ByteSizeLong() == 0) rest.clear_handle();
  row.record_bytes = Serialize(rest);
  return row;
}

absl::StatusOr<v1::CheckRecord> FromCheckRow(absl::string_view check_id,
                                             absl::string_view record_bytes,
                                             const v1::JobHandle& handle) {
  v1::CheckRecord record;
  if (!record.ParseFromArray(record_bytes.data(), static_cast<int>(record_bytes.size()))) {
    return Corrupt(check_id, "record");
  }
  // The columns' fields over what the bytes kept; an empty handle stays
  // unset, as it was put.
  if (handle.ByteSizeLong() > 0) record.mutable_handle()->MergeFrom(handle);
  return record;
}

absl::Status AppendReportBytes(absl::string_view check_id, absl::string_view report_bytes,
                               v1::CheckRecord* record) {
  if (!record->add_reports()->ParseFromArray(report_bytes.data(),
                                             static_cast<int>(report_bytes.size()))) {
    return Corrupt(check_id, "report");
  }
  return absl::OkStatus();
}

void FinishRecord(v1::CheckRecord* record) { SetRecordOutcome(record); }

std::string ReportBytes(const v1::StoredReport& report) { return Serialize(report); }

}  // namespace oomguard::store
