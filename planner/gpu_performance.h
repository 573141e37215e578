// The speed of a GPU and of its links, as the step-time model
// (step_time.h) reads them: dense GEMM peaks, HBM bandwidth, the NVLink
// domain's collective bandwidth, the per-GPU network bandwidth between nodes
// and the host link. The GPU catalog (admission/gpu_catalog.h) holds the
// names, aliases and memory; this table holds speed, by catalog name.
#ifndef OOMGUARD_PLANNER_GPU_PERFORMANCE_H_
#define OOMGUARD_PLANNER_GPU_PERFORMANCE_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace oomguard {

struct GpuPerformance {
  const char* name = "";
  double bf16_flops = 0;  // Dense BF16 tensor-core peak, FLOP/s (no sparsity).
  double fp8_flops = 0;   // Dense FP8 peak, FLOP/s; 0 = no FP8 (runs at bf16 speed).
  double fp4_flops = 0;   // Dense NVFP4 peak, FLOP/s; 0 = no FP4 (Blackwell has it).
  double hbm_bytes_per_second = 0;
  // NVLink per GPU and direction (the link rate a ring collective's bus
  // bandwidth approaches; all-to-all reaches less, see step_time.cc).
  double nvlink_bytes_per_second = 0;
  // Network per GPU and direction between nodes (one NIC per GPU).
  double network_bytes_per_second = 0;
  double pcie_bytes_per_second = 0;  // Host link per GPU and direction.
  // GPUs a rack-scale NVLink domain joins (GB200/GB300 NVL72: 72); 0 when
  // NVLink stays inside a node.
  uint32_t rack_nvlink_domain = 0;
};

// The NVLink domain the planner keeps TP and EP inside: the rack's for a
// rack-scale GPU, else the node's `gpus_per_node` (0: unknown,
// kDefaultGpusPerNode assumed, estimator/job_defaults.h).
uint32_t NvlinkDomain(const GpuPerformance& gpu, uint32_t gpus_per_node);

// The entry of the GPU that the built-in catalog (GpuCatalog::Builtin(),
// admission/gpu_catalog.h) finds by `name`, its name or an alias
// ("H100-SXM-80GB", "H100", "h800"): the table holds one entry per catalog
// GPU, under its catalog name. NotFound naming the GPUs with figures
// otherwise.
absl::StatusOr<GpuPerformance> FindGpuPerformance(std::string_view name);

}  // namespace oomguard

#endif  // OOMGUARD_PLANNER_GPU_PERFORMANCE_H_
