// `--cpu-offloading-num-layers`: Megatron-Core's rules (see
// activation_cpu_offload.h).
#include "estimator/activation_cpu_offload.h"

#include <vector>

namespace oomguard {
namespace {

// Why Megatron-Core refuses offloading with `j`'s settings, whether or not `j`
// offloads.
std::optional<std::string> SettingConflict(const ValidatedJob& j) {
  if (j.runtime.megatron_core < kFirstMegatronCoreWithCpuOffloading) {
    return "Megatron-Core releases before 0.16 lack it";
  }
  if (j.parallelism.pp > 1) return "Megatron-Core refuses it with pipeline parallelism > 1";
  if (j.recompute.granularity != v1::RECOMPUTE_GRANULARITY_NONE) {
    return "Megatron-Core refuses it with activation recompute";
  }
  const RuntimeSettings& rt = j.runtime;
  const bool full_iteration_graph =
      !rt.cuda_graph_te_scoped &&
      rt.cuda_graph_modules == std::vector<std::string>{"full_iteration"};
  if (rt.cuda_graphs && !full_iteration_graph) {
    return "Megatron-Core refuses it with per-layer CUDA graphs";
  }
  if (!j.recompute.offload_modules.empty()) {
    return "Megatron-Core refuses it with --fine-grained-activation-offloading";
  }
  return std::nullopt;
}

}  // namespace

int64_t MaxCpuOffloadedLayers(const ValidatedJob& j) { return j.model.num_layers - 1; }

std::optional<std::string> CpuOffloadingConflict(const ValidatedJob& j) {
  if (j.recompute.cpu_offloading_layers == 0) return std::nullopt;
  return SettingConflict(j);
}

bool CpuOffloadingAccepted(const ValidatedJob& j) { return !SettingConflict(j).has_value(); }

}  // namespace oomguard
