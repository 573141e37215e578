// The key of the Check answers cache (see check_result_cache.h).
#include "service/check_result_cache.h"

#include <string>

#include "absl/strings/str_format.h"
#include "common/deterministic_bytes.h"

namespace oomguard::service {

namespace {

// The GPU, then every AdmissionOptions field that changes the answer.
void AppendGpuAndOptions(const v1::GpuSpec& gpu, const AdmissionOptions& options,
                         std::string& key) {
  AppendDeterministic(gpu, &key);
  // AdmissionOptions, the deadline aside (a new field that changes the answer
  // belongs here too); %a: doubles exactly (hexadecimal).
  absl::StrAppendFormat(&key, "%a|%a|%d%d%d", options.safety_margin, options.upper_bound_coverage,
                        options.compare_upper_bound, options.with_report, options.judge_unmodelled);
  // The learned widening and its basis, which the response states.
  absl::StrAppendFormat(&key, "|%a|%d|%d:%s", options.learned_widening,
                        options.learned_widening_jobs, options.learned_widening_cluster.size(),
                        options.learned_widening_cluster);
}

}  // namespace

std::string CheckResultKey(const v1::JobSpec& job, const v1::GpuSpec& gpu,
                           const AdmissionOptions& options) {
  std::string key;
  AppendDeterministic(job, &key);
  AppendGpuAndOptions(gpu, options, key);
  return key;
}

std::string CheckResultKey(const v1::RlJobSpec& job, const v1::GpuSpec& gpu,
                           const AdmissionOptions& options) {
  std::string key = "rl|";
  AppendDeterministic(job, &key);
  AppendGpuAndOptions(gpu, options, key);
  return key;
}

}  // namespace oomguard::service
