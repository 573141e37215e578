#include "estimator/recompute_rules.h"

namespace oomguard {

std::vector<v1::RecomputeModule> SelectiveRecomputeModules(const v1::RecomputeSpec& recompute) {
  if (recompute.granularity() != v1::RECOMPUTE_GRANULARITY_SELECTIVE) return {};
  if (recompute.modules().empty()) return {v1::RECOMPUTE_MODULE_CORE_ATTN};
  std::vector<v1::RecomputeModule> modules;
  modules.reserve(static_cast<size_t>(recompute.modules_size()));
  for (int m : recompute.modules()) modules.push_back(static_cast<v1::RecomputeModule>(m));
  return modules;
}

bool RecomputeNeedsGroupedGemm(v1::RecomputeModule module) {
  return module == v1::RECOMPUTE_MODULE_MOE_ACT;
}

bool RecomputeModuleCovers(v1::RecomputeModule covered, v1::RecomputeModule module) {
  return covered == module ||
         (covered == v1::RECOMPUTE_MODULE_MOE && module == v1::RECOMPUTE_MODULE_MOE_ACT);
}

}  // namespace oomguard
