#include "service/dcgm_query.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/status_macros.h"
#include "feedback/report_limits.h"
#include "nlohmann/json.hpp"

namespace oomguard::service {
namespace {

using Peaks = absl::btree_map<std::string, uint64_t>;  // Device -> bytes.

constexpr double kBytesPerMib = 1024.0 * 1024.0;

// max by (the labels DcgmDevice reads) (max_over_time(FB_USED{matchers}[range])).
std::string PeakOf(absl::string_view matchers, int64_t range_seconds) {
  return absl::StrCat("max by (hostname, Hostname, pod, gpu, GPU_I_ID) (max_over_time(",
                      kDcgmFbUsedMetric, "{", matchers, "}[", range_seconds, "s]))");
}

// The label `name` of a series' "metric" object, "" when absent.
absl::string_view Label(const nlohmann::json& metric, const char* name) {
  auto it = metric.find(name);
  if (it == metric.end() || !it->is_string()) return {};
  return it->get_ref<const std::string&>();
}

void KeepLarger(Peaks& peaks, const std::string& device, uint64_t bytes) {
  auto [it, inserted] = peaks.emplace(device, bytes);
  if (!inserted && bytes > it->second) it->second = bytes;
}

std::vector<v1::RankMeasurement> ToMeasurements(const Peaks& peaks) {
  std::vector<v1::RankMeasurement> out;
  out.reserve(peaks.size());
  for (const auto& [device, bytes] : peaks) {
    v1::RankMeasurement& m = out.emplace_back();
    m.set_device(device);
    m.set_device_used_bytes(bytes);
  }
  return out;
}

absl::Status NotAnAnswer(absl::string_view what) {
  return absl::InternalError(
      absl::StrCat("prometheus: the answer to the DCGM query is not a query result: ", what));
}

}  // namespace

absl::StatusOr<std::string> DcgmPeakQuery(const v1::JobHandle& handle, absl::Duration range) {
  OOMGUARD_RETURN_IF_ERROR(feedback::ValidateJobHandle(handle));
  const int64_t seconds =
      absl::ToInt64Seconds(absl::Ceil(std::max(range, kMinDcgmRange), absl::Seconds(1)));
  std::vector<std::string> parts;
  if (!handle.slurm_job_id().empty()) {
    // Digits, '_' and '+' only (ValidateJobHandle): nothing to quote.
    parts.push_back(PeakOf(absl::StrCat("hpc_job=\"", handle.slurm_job_id(), "\""), seconds));
  }
  if (!handle.kubernetes_workload().empty()) {
    // RFC 1123 names: of the regex's special characters only '.', escaped
    // as "\\." in a PromQL string.
    parts.push_back(PeakOf(
        absl::StrCat("namespace=\"", handle.kubernetes_namespace(), "\",pod=~\"",
                     absl::StrReplaceAll(handle.kubernetes_workload(), {{".", "\\\\."}}), "-.+\""),
        seconds));
  }
  if (parts.empty()) {
    return absl::InvalidArgumentError(
        "handle: names no job (set slurm_job_id or kubernetes_namespace and "
        "kubernetes_workload)");
  }
  return absl::StrJoin(parts, " or ");
}

std::string DcgmDevice(absl::string_view pod, absl::string_view hostname, absl::string_view gpu,
                       absl::string_view mig_instance) {
  std::string tail = absl::StrCat("/", gpu.empty() ? "-" : gpu);
  if (!mig_instance.empty()) absl::StrAppend(&tail, "/mig", mig_instance);
  absl::string_view host = !pod.empty() ? pod : !hostname.empty() ? hostname : "-";
  tail = tail.substr(0, feedback::kMaxDeviceBytes / 2);
  host = host.substr(0, feedback::kMaxDeviceBytes - tail.size());
  return absl::StrCat(host, tail);
}

absl::StatusOr<std::vector<v1::RankMeasurement>> ParseDcgmPeaks(absl::string_view body) {
  const nlohmann::json answer =
      nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded()) return NotAnAnswer("not JSON");
  if (!answer.is_object()) return NotAnAnswer("not a JSON object");
  auto status = answer.find("status");
  if (status == answer.end() || !status->is_string()) return NotAnAnswer("no \"status\"");
  if (*status != "success") {
    return absl::UnavailableError(
        absl::StrCat("prometheus: ", Label(answer, "errorType"), ": ", Label(answer, "error")));
  }
  auto data = answer.find("data");
  if (data == answer.end() || !data->is_object()) return NotAnAnswer("no \"data\"");
  auto type = data->find("resultType");
  auto result = data->find("result");
  if (type == data->end() || *type != "vector" || result == data->end() || !result->is_array()) {
    return NotAnAnswer("\"data\" is not an instant vector");
  }
  if (result->size() > static_cast<size_t>(feedback::kMaxReportRanks)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("prometheus: the DCGM query matched ", result->size(), " GPUs, at most ",
                     feedback::kMaxReportRanks, " are kept in one report"));
  }
  Peaks peaks;
  for (const nlohmann::json& series : *result) {
    if (!series.is_object()) return NotAnAnswer("a series is not an object");
    auto metric = series.find("metric");
    auto value = series.find("value");
    if (metric == series.end() || !metric->is_object() || value == series.end() ||
        !value->is_array() || value->size() != 2 || !(*value)[1].is_string()) {
      return NotAnAnswer("a series without \"metric\" or [time, \"value\"]");
    }
    double mib = 0;
    if (!absl::SimpleAtod((*value)[1].get_ref<const std::string&>(), &mib) || !std::isfinite(mib) ||
        mib < 0 || mib * kBytesPerMib > static_cast<double>(feedback::kMaxMeasuredBytes)) {
      continue;  // Not memory a GPU holds: a broken exporter's sample.
    }
    KeepLarger(peaks,
               DcgmDevice(Label(*metric, "pod"),
                          Label(*metric, "hostname").empty() ? Label(*metric, "Hostname")
                                                             : Label(*metric, "hostname"),
                          Label(*metric, "gpu"), Label(*metric, "GPU_I_ID")),
               static_cast<uint64_t>(std::llround(mib * kBytesPerMib)));
  }
  return ToMeasurements(peaks);
}

std::optional<std::vector<v1::RankMeasurement>> NewDcgmPeaks(
    const v1::CheckRecord& record, const std::vector<v1::RankMeasurement>& measured) {
  Peaks known;
  for (const v1::StoredReport& report : record.reports()) {
    if (report.source() != v1::MEASUREMENT_SOURCE_DCGM) continue;
    for (const v1::RankMeasurement& m : report.ranks()) {
      if (m.has_device_used_bytes()) KeepLarger(known, m.device(), m.device_used_bytes());
    }
  }
  Peaks merged = known;
  for (const v1::RankMeasurement& m : measured) {
    if (m.has_device_used_bytes()) KeepLarger(merged, m.device(), m.device_used_bytes());
  }
  if (merged == known) return std::nullopt;
  return ToMeasurements(merged);
}

}  // namespace oomguard::service
