// The model family label (see model_family.h).
#include "feedback/model_family.h"

#include "absl/strings/str_cat.h"

namespace oomguard::feedback {

std::string ModelFamily(const v1::JobSpec& job) {
  // A hybrid pattern makes a hybrid model whatever its experts
  // (is_hybrid_model in megatron/training/arguments.py).
  if (!job.model().hybrid_layer_pattern().empty()) return "hybrid";
  if (job.model().num_experts() > 0) return "moe";
  return "dense";
}

std::string ModelFamily(const v1::RlJobSpec& job) {
  return absl::StrCat("rl-", ModelFamily(job.actor()));
}

std::string ModelFamily(const v1::CheckRecord& record) {
  switch (record.job_case()) {
    case v1::CheckRecord::kJobSpec:
      return ModelFamily(record.job_spec());
    case v1::CheckRecord::kRlJobSpec:
      return ModelFamily(record.rl_job_spec());
    default:
      return "unknown";
  }
}

}  // namespace oomguard::feedback
