// `--cpu-offloading-num-layers`: Megatron-Core's rules (see
// activation_cpu_offload.h).
#include "estimator/activation_cpu_offload.h"

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
  // TransformerConfig.__post_init__: "CUDA graphs not supported with CPU
  // offloading" unless the graph is the full-iteration one.
  if (j.runtime.per_layer_cuda_graphs()) {
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
