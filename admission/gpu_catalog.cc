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

std::vector<BuiltinGpu> BuiltinGpus() {
  return {
      {"H100-SXM-80GB",
       {"H100", "H100-80GB", "H100-SXM", "H100-SXM5-80GB"},
       81009,
       v1::GPU_VENDOR_NVIDIA,
       9,
       "NVIDIA H100 SXM5, 80 GB HBM3 (79.11 GiB usable)"},
      {"H200-141GB",
       {"H200", "H200-SXM-141GB"},
       143165,
       v1::GPU_VENDOR_NVIDIA,
       9,
       "NVIDIA H200 SXM, 141 GB HBM3e (139.81 GiB usable)"},
      {"A100-SXM-80GB",
       {"A100-80GB", "A100-SXM4-80GB"},
       81254,
       v1::GPU_VENDOR_NVIDIA,
       8,
       "NVIDIA A100 SXM4, 80 GB HBM2e (79.35 GiB usable)"},
      {"A100-40GB",
       {"A100-SXM4-40GB", "A100-SXM-40GB"},
       40540,
       v1::GPU_VENDOR_NVIDIA,
       8,
       "NVIDIA A100 SXM4, 40 GB HBM2 (39.59 GiB usable)"},
      {"B200-192GB",
       {"B200"},
       182630,
       v1::GPU_VENDOR_NVIDIA,
       10,
       "NVIDIA B200, 192 GB HBM3e (178.35 GiB usable)"},
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

bool NeedsNcclGraphRegisterOff(const v1::GpuSpec& gpu) {
  return !(gpu.vendor() == v1::GPU_VENDOR_NVIDIA && gpu.compute_capability_major() >= 10);
}

}  // namespace oomguard
