// The key of the Check answers cache (see check_result_cache.h).
#include "service/check_result_cache.h"

#include <string>

#include "absl/strings/str_format.h"
#include "common/deterministic_bytes.h"

namespace oomguard::service {

std::string CheckResultKey(const v1::JobSpec& job, const v1::GpuSpec& gpu,
                           const AdmissionOptions& options) {
  std::string key;
  AppendDeterministic(job, &key);
  AppendDeterministic(gpu, &key);
  // AdmissionOptions, the deadline aside (a new field that changes the answer
  // belongs here too); %a: doubles exactly (hexadecimal).
  absl::StrAppendFormat(&key, "%a|%a|%d%d%d", options.safety_margin, options.upper_bound_coverage,
                        options.compare_upper_bound, options.with_report, options.judge_unmodelled);
  return key;
}

}  // namespace oomguard::service
