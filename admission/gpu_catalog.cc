// The built-in GPU catalog, its validation and lookup by name.
#include "admission/gpu_catalog.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/quoted_value.h"
#include "google/protobuf/text_format.h"

namespace oomguard {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

struct BuiltinGpu {
  const char* name;
  std::vector<const char*> aliases;
  // torch.cuda.get_device_properties(i).total_memory (the "total capacity"
  // of PyTorch's OOM message), in MiB.
  uint64_t memory_mib;
  v1::GpuVendor vendor;
  uint32_t compute_capability_major;
  const char* description;
};

// Where a figure comes from: PyTorch's total capacity is what the driver
// leaves to CUDA, a few hundred MiB less than nvidia-smi's "Total" (the driver
// reserves the rest); its OOM message prints it in GiB to two decimals ("GPU 0
// has a total capacity of 79.11 GiB"), its device properties print it in whole
// MiB ("total_memory=81008MB"), CUDA's deviceQuery prints it in bytes. Each
// entry names the figure it was read from and where. An entry marked "derived"
// has no published PyTorch figure: its nvidia-smi "Total" equals that of the
// named part with the same memory stack, and the entry takes that part's figure.
std::vector<BuiltinGpu> BuiltinGpus() {
  return {
      {"H100-SXM-80GB",
       {"H100", "H100-80GB", "H100-SXM", "H100-SXM5-80GB"},
       81009,
       v1::GPU_VENDOR_NVIDIA,
       9,
       "NVIDIA H100 SXM5, 80 GB HBM3 (79.11 GiB usable)"},
      // torch device properties "name='NVIDIA H100 PCIe' ...
      // total_memory=81008MB" (a public PyTorch install log found by code
      // search); nvidia-smi shows 81559MiB like the SXM part.
      {"H100-PCIe-80GB",
       {"H100-PCIE"},
       81008,
       v1::GPU_VENDOR_NVIDIA,
       9,
       "NVIDIA H100 PCIe, 80 GB HBM2e (79.11 GiB usable)"},
      // PyTorch "GPU 0 has a total capacity of 93.10 GiB" on an H100 NVL
      // (several public run logs found by code search, one naming "RunPod H100
      // NVL 94GB"); nvidia-smi shows 95830MiB on the NVL part.
      {"H100-NVL-94GB",
       {"H100-NVL", "H100-94GB"},
       95334,
       v1::GPU_VENDOR_NVIDIA,
       9,
       "NVIDIA H100 NVL, 94 GB HBM3 (93.10 GiB usable)"},
      // Derived from H100-SXM-80GB: nvidia-smi shows 81559MiB on "NVIDIA
      // H800" as on the H100 SXM (public nvidia-smi logs found by code search;
      // H100's figure: modal-labs/modal-client PR #2797). No H800 PCIe entry:
      // no driver figure for it was found.
      {"H800-SXM-80GB",
       {"H800", "H800-80GB", "H800-SXM"},
       81009,
       v1::GPU_VENDOR_NVIDIA,
       9,
       "NVIDIA H800 SXM5, 80 GB HBM3 (79.11 GiB usable)"},
      {"H200-141GB",
       {"H200", "H200-SXM-141GB"},
       143165,
       v1::GPU_VENDOR_NVIDIA,
       9,
       "NVIDIA H200 SXM, 141 GB HBM3e (139.81 GiB usable)"},
      // torch device properties "name='NVIDIA H20', major=9, minor=0,
      // total_memory=97285MB" (comments in public Triton attention kernels
      // found by code search); nvidia-smi shows 97871MiB
      // (https://github.com/NVIDIA/nvtrust/issues/128).
      {"H20-96GB",
       {"H20", "H20-SXM-96GB"},
       97285,
       v1::GPU_VENDOR_NVIDIA,
       9,
       "NVIDIA H20, 96 GB HBM3 (95.00 GiB usable)"},
      // Derived from H200-141GB: nvidia-smi shows 143771MiB on "NVIDIA
      // H20-3e" as on the H200 (public nvidia-smi log found by code search).
      {"H20-141GB",
       {"H20-3e"},
       143165,
       v1::GPU_VENDOR_NVIDIA,
       9,
       "NVIDIA H20-3e, 141 GB HBM3e (139.81 GiB usable)"},
      {"A100-SXM-80GB",
       // The PCIe 80 GB part is derived from this one: nvidia-smi shows
       // 81920MiB on both (modal-labs/modal-client PR #2797 for "A100 80GB";
       // public nvidia-smi logs of "NVIDIA A100 80GB PCIe" found by code
       // search).
       {"A100-80GB", "A100-SXM4-80GB", "A100-PCIe-80GB", "A100-80GB-PCIe"},
       81254,
       v1::GPU_VENDOR_NVIDIA,
       8,
       "NVIDIA A100 SXM4 or PCIe, 80 GB HBM2e (79.35 GiB usable)"},
      {"A100-40GB",
       {"A100-SXM4-40GB", "A100-SXM-40GB"},
       40540,
       v1::GPU_VENDOR_NVIDIA,
       8,
       "NVIDIA A100 SXM4, 40 GB HBM2 (39.59 GiB usable)"},
      // torch device properties "name='NVIDIA A100-PCIE-40GB', major=8,
      // minor=0, total_memory=40326MB" (a public setup note found by code
      // search): 214 MiB less than the SXM4 part, hence an entry of its own.
      {"A100-PCIe-40GB",
       {"A100-40GB-PCIe"},
       40326,
       v1::GPU_VENDOR_NVIDIA,
       8,
       "NVIDIA A100 PCIe, 40 GB HBM2 (39.38 GiB usable)"},
      // 178.35 GiB: https://github.com/pytorch/ao/pull/4002 ("Total Global
      // Memory: 178.35 GB" from cudaGetDeviceProperties on "NVIDIA B200").
      {"B200-192GB",
       {"B200"},
       182630,
       v1::GPU_VENDOR_NVIDIA,
       10,
       "NVIDIA B200, 192 GB HBM3e (178.35 GiB usable)"},
      // PyTorch "GPU 0 has a total capacity of 267.69 GiB" on 8 x B300 nodes
      // (public training and vLLM logs found by code search); nvidia-smi
      // shows 275040MiB on "NVIDIA B300 SXM6 AC".
      {"B300-288GB",
       {"B300", "B300-SXM6", "B300-SXM6-AC"},
       274115,
       v1::GPU_VENDOR_NVIDIA,
       10,
       "NVIDIA B300 (Blackwell Ultra), 288 GB HBM3e (267.69 GiB usable)"},
      // One GPU of a GB200 superchip. PyTorch "GPU 0 has a total capacity of
      // 184.31 GiB" on GB200 (public vLLM and FSDP2 logs found by code
      // search); nvidia-smi shows 189471MiB on "NVIDIA GB200".
      {"GB200-186GB",
       {"GB200", "GB200-NVL72"},
       188733,
       v1::GPU_VENDOR_NVIDIA,
       10,
       "NVIDIA GB200, per Blackwell GPU, 186 GB HBM3e (184.31 GiB usable)"},
      // One GPU of a GB300 superchip. PyTorch "GPU 0 has a total capacity of
      // 276.50 GiB" on a GB300 (stas00/ml-engineering, debug/pytorch.md; the
      // same on a 64 x GB300 NVL72 run log found by code search);
      // nvidia-smi shows 284208MiB on "NVIDIA GB300".
      {"GB300-288GB",
       {"GB300", "GB300-NVL72"},
       283136,
       v1::GPU_VENDOR_NVIDIA,
       10,
       "NVIDIA GB300, per Blackwell Ultra GPU, 288 GB HBM3e (276.50 GiB usable)"},
      // CUDA deviceQuery on "NVIDIA L40S": "Total Global Memory 45589 MBytes
      // (47803596800 bytes)" (found by code search; 64 KiB over 45589 MiB),
      // matching torch's "total_memory=45589MB"; nvidia-smi shows 46068 MiB
      // (https://github.com/akash-network/provider-configs/pull/99).
      {"L40S-48GB",
       {"L40S"},
       45589,
       v1::GPU_VENDOR_NVIDIA,
       8,
       "NVIDIA L40S, 48 GB GDDR6 (44.52 GiB usable)"},
      // Volta and Turing (compute capability 7): no flash or cuDNN fused
      // attention, no BF16 (GPU_ARCHITECTURE_VOLTA_TURING). torch device
      // properties "name='Tesla V100-SXM2-16GB', major=7, minor=0,
      // total_memory=16160MB" and the same figure for "Tesla V100-PCIE-16GB"
      // (public YOLOv5 setup logs and a cluster guide found by code search;
      // PyTorch's "15.78 GiB total capacity"). "V100" is this part, the
      // common cloud one (the 32 GB parts are named with their size).
      {"V100-SXM2-16GB",
       {"V100", "V100-16GB", "V100-SXM2", "Tesla-V100-SXM2-16GB"},
       16160,
       v1::GPU_VENDOR_NVIDIA,
       7,
       "NVIDIA Tesla V100 SXM2, 16 GB HBM2 (15.78 GiB usable)"},
      {"V100-PCIe-16GB",
       {"V100-PCIE", "Tesla-V100-PCIE-16GB"},
       16160,
       v1::GPU_VENDOR_NVIDIA,
       7,
       "NVIDIA Tesla V100 PCIe, 16 GB HBM2 (15.78 GiB usable)"},
      // torch device properties "name='Tesla V100-PCIE-32GB', major=7,
      // minor=0, total_memory=32510MB" (a public setup note found by code
      // search; PyTorch's "31.75 GiB total capacity" in many public OOM
      // logs). The SXM2 32 GB part is derived from it: the same HBM2 stacks.
      {"V100-PCIe-32GB",
       {"Tesla-V100-PCIE-32GB"},
       32510,
       v1::GPU_VENDOR_NVIDIA,
       7,
       "NVIDIA Tesla V100 PCIe, 32 GB HBM2 (31.75 GiB usable)"},
      {"V100-SXM2-32GB",
       {"V100-32GB", "Tesla-V100-SXM2-32GB"},
       32510,
       v1::GPU_VENDOR_NVIDIA,
       7,
       "NVIDIA Tesla V100 SXM2, 32 GB HBM2 (31.75 GiB usable)"},
      // torch device properties "name='Tesla T4', major=7, minor=5,
      // total_memory=15109MB" (public Colab logs found by code search; the
      // most frequent of the figures printed, PyTorch's "14.75 GiB total
      // capacity").
      {"T4-16GB",
       {"T4", "Tesla-T4"},
       15109,
       v1::GPU_VENDOR_NVIDIA,
       7,
       "NVIDIA Tesla T4, 16 GB GDDR6 (14.75 GiB usable)"},
      {"MI300X-192GB",
       {"MI300X"},
       196588,
       v1::GPU_VENDOR_AMD,
       0,
       "AMD Instinct MI300X, 192 GB HBM3 (191.98 GiB usable)"},
  };
}

// Upper case, '_' as '-'.
std::string NormalizeName(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    c = c == '_' ? '-' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

GpuCatalog GpuCatalog::Builtin() {
  std::vector<v1::GpuSpec> gpus;
  for (const BuiltinGpu& b : BuiltinGpus()) {
    v1::GpuSpec& g = gpus.emplace_back();
    g.set_name(b.name);
    for (const char* alias : b.aliases) g.add_aliases(alias);
    g.set_memory_bytes(b.memory_mib * kMiB);
    g.set_vendor(b.vendor);
    g.set_compute_capability_major(b.compute_capability_major);
    g.set_description(b.description);
  }
  return GpuCatalog(std::move(gpus));
}

absl::StatusOr<GpuCatalog> GpuCatalog::Create(std::vector<v1::GpuSpec> gpus) {
  std::set<std::string> names;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const v1::GpuSpec& g = gpus[i];
    const std::string entry = absl::StrCat("gpus[", i, "]");
    if (g.name().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(entry, ".name: must not be empty"));
    }
    if (g.memory_bytes() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(entry, ".memory_bytes = 0: must be > 0 (GPU ", Quote(g.name(), '\''), ")"));
    }
    std::vector<std::string> keys = {g.name()};
    keys.insert(keys.end(), g.aliases().begin(), g.aliases().end());
    for (const std::string& key : keys) {
      if (!names.insert(NormalizeName(key)).second) {
        return absl::InvalidArgumentError(absl::StrCat(entry, ": name or alias ", Quote(key, '\''),
                                                       " is already used by another entry"));
      }
    }
  }
  return GpuCatalog(std::move(gpus));
}

absl::StatusOr<GpuCatalog> GpuCatalog::WithOverrides(std::string_view text) const {
  v1::GpuCatalog overrides;
  if (!google::protobuf::TextFormat::ParseFromString(std::string(text), &overrides)) {
    return absl::InvalidArgumentError(
        "GPU catalog: not a valid oomguard.v1.GpuCatalog in protobuf text format");
  }
  std::vector<v1::GpuSpec> merged = gpus_;
  for (const v1::GpuSpec& g : overrides.gpus()) {
    auto same = [&](const v1::GpuSpec& e) {
      return NormalizeName(e.name()) == NormalizeName(g.name());
    };
    if (auto it = std::find_if(merged.begin(), merged.end(), same); it != merged.end()) {
      *it = g;
    } else {
      merged.push_back(g);
    }
  }
  return Create(std::move(merged));
}

absl::StatusOr<v1::GpuSpec> GpuCatalog::Find(std::string_view name) const {
  const std::string key = NormalizeName(name);
  for (const v1::GpuSpec& g : gpus_) {
    if (NormalizeName(g.name()) == key) return g;
    for (const std::string& alias : g.aliases()) {
      if (NormalizeName(alias) == key) return g;
    }
  }
  std::vector<std::string> known;
  for (const v1::GpuSpec& g : gpus_) known.push_back(g.name());
  return absl::NotFoundError(absl::StrCat("unknown GPU ",
                                          Quote(absl::string_view(name.data(), name.size()), '\''),
                                          "; known: ", absl::StrJoin(known, ", ")));
}

v1::GpuArchitecture GpuArchitectureOf(const v1::GpuSpec& gpu) {
  if (gpu.vendor() != v1::GPU_VENDOR_NVIDIA) return v1::GPU_ARCHITECTURE_UNSPECIFIED;
  switch (gpu.compute_capability_major()) {
    case 7:
      return v1::GPU_ARCHITECTURE_VOLTA_TURING;
    case 9:
      return v1::GPU_ARCHITECTURE_HOPPER;
    case 10:
    case 11:
      return v1::GPU_ARCHITECTURE_BLACKWELL;
    default:
      return v1::GPU_ARCHITECTURE_UNSPECIFIED;
  }
}

v1::JobSpec JobOnGpu(const v1::JobSpec& job, const v1::GpuSpec& gpu) {
  v1::JobSpec on_gpu = job;
  if (on_gpu.runtime().gpu_architecture() == v1::GPU_ARCHITECTURE_UNSPECIFIED) {
    on_gpu.mutable_runtime()->set_gpu_architecture(GpuArchitectureOf(gpu));
  }
  return on_gpu;
}

bool NeedsNcclGraphRegisterOff(const v1::GpuSpec& gpu) {
  return !(gpu.vendor() == v1::GPU_VENDOR_NVIDIA && gpu.compute_capability_major() >= 10);
}

}  // namespace oomguard
