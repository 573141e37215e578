#include "feedback/report_limits.h"

#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace oomguard::feedback {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

// The value as it may be shown in a message: quoted, cut at 64 bytes.
std::string Shown(absl::string_view value) {
  if (value.size() <= 64) return absl::StrCat("\"", absl::CHexEscape(value), "\"");
  return absl::StrCat("\"", absl::CHexEscape(value.substr(0, 64)), "...\" (", value.size(),
                      " bytes)");
}

bool IsSlurmJobId(absl::string_view id) {
  if (id.empty() || !absl::ascii_isdigit(static_cast<unsigned char>(id[0]))) return false;
  for (char c : id) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '_' && c != '+') return false;
  }
  return id.size() <= 64;
}

// A kind: an upper-case letter, then letters and digits (Kubernetes' API
// conventions: CamelCase), at most 63 bytes.
bool IsKubernetesKind(absl::string_view kind) {
  if (kind.empty() || kind.size() > 63 ||
      !absl::ascii_isupper(static_cast<unsigned char>(kind[0]))) {
    return false;
  }
  for (char c : kind) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

bool IsKubernetesName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxHandleBytes) return false;
  for (char c : name) {
    if (!absl::ascii_islower(static_cast<unsigned char>(c)) &&
        !absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '-' && c != '.') {
      return false;
    }
  }
  return absl::ascii_isalnum(static_cast<unsigned char>(name.front())) &&
         absl::ascii_isalnum(static_cast<unsigned char>(name.back()));
}

absl::Status ValidateBytes(const std::string& field, bool has, uint64_t bytes) {
  if (has && bytes > kMaxMeasuredBytes) {
    return Invalid(field, absl::StrCat(bytes, " is over 1 PiB (", kMaxMeasuredBytes,
                                       "): not a GPU's memory in bytes"));
  }
  return absl::OkStatus();
}

absl::Status ValidateMeasurement(const v1::RankMeasurement& m, const std::string& field) {
  if (!m.has_rank() && m.device().empty()) {
    return Invalid(field, "names neither a rank nor a device");
  }
  if (m.has_rank() && m.rank() >= kMaxRank) {
    return Invalid(absl::StrCat(field, ".rank"),
                   absl::StrCat(m.rank(), " is not a rank (at most ", kMaxRank - 1, ")"));
  }
  if (m.device().size() > kMaxDeviceBytes) {
    return Invalid(absl::StrCat(field, ".device"),
                   absl::StrCat(Shown(m.device()), " is longer than ", kMaxDeviceBytes, " bytes"));
  }
  if (m.phase().size() > kMaxPhaseBytes) {
    return Invalid(absl::StrCat(field, ".phase"),
                   absl::StrCat(Shown(m.phase()), " is longer than ", kMaxPhaseBytes, " bytes"));
  }
  if (!m.has_max_allocated_bytes() && !m.has_max_reserved_bytes() && !m.has_device_used_bytes()) {
    return Invalid(
        field, "has no value: set max_allocated_bytes, max_reserved_bytes or device_used_bytes");
  }
  if (absl::Status s = ValidateBytes(absl::StrCat(field, ".max_allocated_bytes"),
                                     m.has_max_allocated_bytes(), m.max_allocated_bytes());
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateBytes(absl::StrCat(field, ".max_reserved_bytes"),
                                     m.has_max_reserved_bytes(), m.max_reserved_bytes());
      !s.ok()) {
    return s;
  }
  return ValidateBytes(absl::StrCat(field, ".device_used_bytes"), m.has_device_used_bytes(),
                       m.device_used_bytes());
}

}  // namespace

absl::Status ValidateCheckId(absl::string_view id, absl::string_view field) {
  if (id.empty()) {
    return Invalid(field, "is empty: send the check_id of the check that admitted the job");
  }
  bool hex = id.size() == kCheckIdLength;
  for (char c : id) {
    hex = hex && (absl::ascii_isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f'));
  }
  if (!hex) {
    return Invalid(field, absl::StrCat(Shown(id), " is not a check id (", kCheckIdLength,
                                       " lowercase hex digits)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateJobHandle(const v1::JobHandle& handle, absl::string_view field) {
  if (!handle.slurm_job_id().empty() && !IsSlurmJobId(handle.slurm_job_id())) {
    return Invalid(absl::StrCat(field, ".slurm_job_id"),
                   absl::StrCat(Shown(handle.slurm_job_id()),
                                " is not a Slurm job id (digits, with \"_N\" or \"+N\")"));
  }
  if (!handle.kubernetes_namespace().empty() && !IsKubernetesName(handle.kubernetes_namespace())) {
    return Invalid(
        absl::StrCat(field, ".kubernetes_namespace"),
        absl::StrCat(Shown(handle.kubernetes_namespace()), " is not a Kubernetes name (RFC 1123)"));
  }
  if (!handle.kubernetes_workload().empty() && !IsKubernetesName(handle.kubernetes_workload())) {
    return Invalid(
        absl::StrCat(field, ".kubernetes_workload"),
        absl::StrCat(Shown(handle.kubernetes_workload()), " is not a Kubernetes name (RFC 1123)"));
  }
  if (handle.kubernetes_namespace().empty() != handle.kubernetes_workload().empty()) {
    return Invalid(field, "kubernetes_namespace and kubernetes_workload go together");
  }
  if (!handle.kubernetes_kind().empty()) {
    if (!IsKubernetesKind(handle.kubernetes_kind())) {
      return Invalid(absl::StrCat(field, ".kubernetes_kind"),
                     absl::StrCat(Shown(handle.kubernetes_kind()),
                                  " is not a Kubernetes kind (e.g. \"PyTorchJob\")"));
    }
    if (handle.kubernetes_workload().empty()) {
      return Invalid(absl::StrCat(field, ".kubernetes_kind"),
                     "names the kind of no kubernetes_workload");
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateReport(const v1::ReportRequest& report) {
  if (absl::Status s = ValidateCheckId(report.check_id()); !s.ok()) return s;
  if (report.source() == v1::MEASUREMENT_SOURCE_UNSPECIFIED ||
      !v1::MeasurementSource_IsValid(report.source())) {
    return Invalid("source", absl::StrCat(report.source(),
                                          " is not a measurement source (MEGATRON_LOG, "
                                          "MEGATRON_BRIDGE_LOG, DCGM, CLIENT, SLURM, KUBERNETES)"));
  }
  if (!v1::JobOutcome_IsValid(report.outcome())) {
    return Invalid("outcome", absl::StrCat(report.outcome(), " is not a job outcome"));
  }
  if (!report.oom_phase().empty() && report.outcome() != v1::JOB_OUTCOME_CUDA_OOM) {
    return Invalid("oom_phase", "is set, but the outcome is not JOB_OUTCOME_CUDA_OOM");
  }
  if (report.oom_phase().size() > kMaxPhaseBytes) {
    return Invalid("oom_phase", absl::StrCat(Shown(report.oom_phase()), " is longer than ",
                                             kMaxPhaseBytes, " bytes"));
  }
  if (report.detail().size() > kMaxDetailBytes) {
    return Invalid("detail", absl::StrCat(report.detail().size(), " bytes, at most ",
                                          kMaxDetailBytes, ": send the OOM line, not the log"));
  }
  if (absl::Status s = ValidateJobHandle(report.handle()); !s.ok()) return s;
  if (report.ranks_size() > kMaxReportRanks) {
    return Invalid("ranks",
                   absl::StrCat(report.ranks_size(), " measurements, at most ", kMaxReportRanks));
  }
  absl::flat_hash_set<uint32_t> ranks;
  absl::flat_hash_set<absl::string_view> devices;
  for (int i = 0; i < report.ranks_size(); ++i) {
    const v1::RankMeasurement& m = report.ranks(i);
    const std::string field = absl::StrCat("ranks[", i, "]");
    if (absl::Status s = ValidateMeasurement(m, field); !s.ok()) return s;
    if (m.has_rank() && !ranks.insert(m.rank()).second) {
      return Invalid(absl::StrCat(field, ".rank"),
                     absl::StrCat("rank ", m.rank(), " is measured twice in one report"));
    }
    if (!m.has_rank() && !devices.insert(m.device()).second) {
      return Invalid(absl::StrCat(field, ".device"),
                     absl::StrCat(Shown(m.device()), " is measured twice in one report"));
    }
  }
  const v1::JobHandle& h = report.handle();
  if (report.ranks_size() == 0 && report.outcome() == v1::JOB_OUTCOME_UNSPECIFIED &&
      h.slurm_job_id().empty() && h.kubernetes_workload().empty()) {
    return Invalid("ranks", "the report says nothing: no measurement, no outcome, no handle");
  }
  return absl::OkStatus();
}

}  // namespace oomguard::feedback
