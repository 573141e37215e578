// The GPU speed table (see gpu_performance.h). Peaks are the vendors'
// datasheet numbers, dense (without sparsity); one entry per catalog GPU
// (admission/gpu_catalog.cc), under its catalog name; a name or alias is
// resolved by the catalog.
#include "planner/gpu_performance.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "admission/gpu_catalog.h"
#include "common/quoted_value.h"
#include "estimator/job_defaults.h"

namespace oomguard {
namespace {

constexpr double kT = 1e12;
constexpr double kG = 1e9;

// One entry per catalog GPU, under its catalog name (the aliases are the
// catalog's).
const std::vector<GpuPerformance>& Table() {
  static const std::vector<GpuPerformance> table = {
      // NVIDIA H100 SXM5 datasheet: 989 TFLOP/s BF16, 1979 FP8 dense, 3.35 TB/s
      // HBM3, NVLink 4 900 GB/s (450 per direction), ConnectX-7 400 Gb/s per
      // GPU (50 GB/s), PCIe Gen5 x16 (~55 GB/s achieved host copies; 25 GB/s
      // sustained for pinned optimizer traffic shared with the NIC).
      {"H100-SXM-80GB", 989 * kT, 1979 * kT, 0, 3350 * kG, 450 * kG, 50 * kG, 25 * kG},
      // H100 PCIe datasheet: 756 TFLOP/s BF16, 1513 FP8 dense (1513 / 3026
      // with sparsity), 2.0 TB/s HBM2e. Its NVLink bridge joins only pairs, so
      // a ring over a node's 8 GPUs runs over PCIe Gen5 x16 (64 GB/s per
      // direction, ~50 achieved); network and host link as the SXM part.
      {"H100-PCIe-80GB", 756 * kT, 1513 * kT, 0, 2000 * kG, 50 * kG, 50 * kG, 25 * kG},
      // H100 NVL datasheet: 835 TFLOP/s BF16, 1671 FP8 dense (1671 / 3341
      // with sparsity), 3.9 TB/s HBM3; NVLink bridge in pairs, so PCIe Gen5
      // between the 8 GPUs of a node as for the PCIe part.
      {"H100-NVL-94GB", 835 * kT, 1671 * kT, 0, 3900 * kG, 50 * kG, 50 * kG, 25 * kG},
      // H800: the H100 compute die with NVLink cut to 400 GB/s (200 per
      // direction) for export; same memory and peaks.
      {"H800-SXM-80GB", 989 * kT, 1979 * kT, 0, 3350 * kG, 200 * kG, 50 * kG, 25 * kG},
      // H200: H100 compute, 4.8 TB/s HBM3e.
      {"H200-141GB", 989 * kT, 1979 * kT, 0, 4800 * kG, 450 * kG, 50 * kG, 25 * kG},
      // H20 (HGX H20 product brief): 148 TFLOP/s BF16, 296 FP8 dense, 4.0 TB/s
      // HBM3, NVLink 900 GB/s (450 per direction); HGX network and host link
      // as the H100 SXM.
      {"H20-96GB", 148 * kT, 296 * kT, 0, 4000 * kG, 450 * kG, 50 * kG, 25 * kG},
      // H20-3e: the H20 with the H200's 141 GB HBM3e at 4.8 TB/s.
      {"H20-141GB", 148 * kT, 296 * kT, 0, 4800 * kG, 450 * kG, 50 * kG, 25 * kG},
      // A100 SXM4: 312 TFLOP/s BF16, no FP8, NVLink 3 600 GB/s, HDR 200 Gb/s.
      // The PCIe 80 GB part shares this entry as it shares the catalog entry:
      // same peaks; its 1.94 TB/s HBM2e and bridged pairs make it slower than
      // this entry says.
      {"A100-SXM-80GB", 312 * kT, 0, 0, 2039 * kG, 300 * kG, 25 * kG, 20 * kG},
      {"A100-40GB", 312 * kT, 0, 0, 1555 * kG, 300 * kG, 25 * kG, 20 * kG},
      // A100 PCIe 40 GB datasheet: 312 TFLOP/s BF16, 1555 GB/s HBM2; NVLink
      // bridge in pairs, so PCIe Gen4 x16 (32 GB/s per direction, 20
      // sustained as the host link) between the 8 GPUs of a node.
      {"A100-PCIe-40GB", 312 * kT, 0, 0, 1555 * kG, 20 * kG, 25 * kG, 20 * kG},
      // B200 (HGX, 1000 W): 2.25 PFLOP/s BF16, 4.5 FP8, 9 FP4 dense (144
      // PFLOP/s FP4 per board with sparsity), 8 TB/s, NVLink 5 1.8 TB/s. Network: the DGX B200
      // datasheet's eight single-port
      // ConnectX-7 at 400 Gb/s, one per GPU (50 GB/s; ConnectX-8 at 800 Gb/s
      // came with Blackwell Ultra, the B300 and GB300 below).
      {"B200-192GB", 2250 * kT, 4500 * kT, 9000 * kT, 8000 * kG, 900 * kG, 50 * kG, 50 * kG},
      // HGX B300 datasheet, per GPU (eighth of the board): 2.25 PFLOP/s BF16,
      // 4.5 FP8 dense (36 and 72 PFLOP/s per board with sparsity), 13.5 FP4
      // dense (108 per board; Blackwell Ultra's faster FP4), 8 TB/s
      // HBM3e, NVLink 5 1.8 TB/s, ConnectX-8 800 Gb/s; host link as B200.
      {"B300-288GB", 2250 * kT, 4500 * kT, 13500 * kT, 8000 * kG, 900 * kG, 100 * kG, 50 * kG},
      // GB200 NVL72 datasheet, per GPU (72nd of the rack, all 72 in one NVLink
      // domain): 2.5 PFLOP/s BF16,
      // 5 FP8 dense (360 and 720 PFLOP/s per rack with sparsity), 10 FP4
      // dense (1440 per rack with sparsity), 8 TB/s
      // HBM3e (576 TB/s per rack), NVLink 5 1.8 TB/s, ConnectX-7 400 Gb/s per
      // GPU. Host link: NVLink-C2C, 900 GB/s (450 per direction) per
      // superchip, shared by its two GPUs.
      {"GB200-186GB", 2500 * kT, 5000 * kT, 10000 * kT, 8000 * kG, 900 * kG, 50 * kG, 225 * kG, 72},
      // GB300 NVL72 datasheet, per GPU: 2.5 PFLOP/s BF16, 5 FP8 dense (as
      // GB200; Blackwell Ultra adds FP4, not FP8), 15 FP4 dense (1080 per
      // rack), 8 TB/s HBM3e, NVLink 5
      // 1.8 TB/s, ConnectX-8 800 Gb/s per GPU, NVLink-C2C as GB200.
      {"GB300-288GB", 2500 * kT, 5000 * kT, 15000 * kT, 8000 * kG, 900 * kG, 100 * kG, 225 * kG,
       72},
      // L40S datasheet: 362.05 TFLOP/s BF16 (733 with sparsity), 733 FP8
      // dense (1466 with sparsity), 864 GB/s GDDR6, no NVLink: PCIe Gen4 x16 between GPUs and
      // to the host (20 GB/s sustained, as the A100 PCIe), 200 Gb/s per GPU
      // between nodes as the A100's HDR.
      {"L40S-48GB", 362.05 * kT, 733 * kT, 0, 864 * kG, 20 * kG, 25 * kG, 20 * kG},
      // Volta and Turing run no BF16: their 16-bit figure is the FP16
      // tensor-core peak (the precision such a job must use). V100 SXM2
      // datasheet: 125 TFLOP/s FP16 tensor, 900 GB/s HBM2, NVLink 2 300 GB/s
      // (150 per direction); DGX-1's four EDR 100 Gb/s NICs per 8 GPUs (6.25
      // GB/s per GPU); PCIe Gen3 x16 to the host (16 GB/s per direction, 10
      // sustained, as Gen4's 32 gives 20 above).
      {"V100-SXM2-16GB", 125 * kT, 0, 0, 900 * kG, 150 * kG, 6.25 * kG, 10 * kG},
      // V100 PCIe datasheet: 112 TFLOP/s FP16 tensor, 900 GB/s HBM2, no
      // NVLink: PCIe Gen3 x16 between GPUs and to the host.
      {"V100-PCIe-16GB", 112 * kT, 0, 0, 900 * kG, 10 * kG, 6.25 * kG, 10 * kG},
      {"V100-PCIe-32GB", 112 * kT, 0, 0, 900 * kG, 10 * kG, 6.25 * kG, 10 * kG},
      {"V100-SXM2-32GB", 125 * kT, 0, 0, 900 * kG, 150 * kG, 6.25 * kG, 10 * kG},
      // T4 datasheet: 65 TFLOP/s FP16 tensor (its INT8/INT4 peaks are not
      // FP8), 320 GB/s GDDR6, no NVLink, PCIe Gen3 x16; one 50 Gb/s NIC per
      // 4 GPUs between nodes (AWS g4dn.12xlarge), 1.5625 GB/s per GPU.
      {"T4-16GB", 65 * kT, 0, 0, 320 * kG, 10 * kG, 1.5625 * kG, 10 * kG},
      // MI300X: 1307 TFLOP/s BF16, 2615 FP8 dense, 5.3 TB/s, Infinity Fabric
      // 7 x 64 GB/s per direction to the 7 peers.
      {"MI300X-192GB", 1307 * kT, 2615 * kT, 0, 5300 * kG, 448 * kG, 50 * kG, 25 * kG},
  };
  return table;
}

}  // namespace

uint32_t NvlinkDomain(const GpuPerformance& gpu, uint32_t gpus_per_node) {
  if (gpu.rack_nvlink_domain > 0) return gpu.rack_nvlink_domain;
  return gpus_per_node > 0 ? gpus_per_node : kDefaultGpusPerNode;
}

absl::StatusOr<GpuPerformance> FindGpuPerformance(std::string_view name) {
  static const GpuCatalog* const kCatalog = new GpuCatalog(GpuCatalog::Builtin());
  const absl::StatusOr<v1::GpuSpec> gpu = kCatalog->Find(name);
  std::vector<std::string> known;
  for (const GpuPerformance& perf : Table()) {
    if (gpu.ok() && gpu->name() == perf.name) return perf;
    known.emplace_back(perf.name);
  }
  return absl::NotFoundError(absl::StrCat("gpu: no speed figures for ",
                                          Quote(absl::string_view(name.data(), name.size())),
                                          "; known: ", absl::StrJoin(known, ", ")));
}

}  // namespace oomguard
