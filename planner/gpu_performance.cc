// The GPU speed table (see gpu_performance.h). Peaks are the vendors'
// datasheet numbers for the SXM/OAM parts, dense (without sparsity).
#include "planner/gpu_performance.h"

#include <cctype>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/quoted_value.h"

namespace oomguard {
namespace {

constexpr double kT = 1e12;
constexpr double kG = 1e9;

struct Entry {
  std::vector<const char*> names;  // Catalog name first, then aliases.
  GpuPerformance perf;
};

const std::vector<Entry>& Table() {
  static const std::vector<Entry> table = {
      // NVIDIA H100 SXM5 datasheet: 989 TFLOP/s BF16, 1979 FP8 dense, 3.35 TB/s
      // HBM3, NVLink 4 900 GB/s (450 per direction), ConnectX-7 400 Gb/s per
      // GPU (50 GB/s), PCIe Gen5 x16 (~55 GB/s achieved host copies; 25 GB/s
      // sustained for pinned optimizer traffic shared with the NIC).
      {{"H100-SXM-80GB", "H100", "H100-80GB", "H100-SXM", "H100-SXM5-80GB"},
       {"H100-SXM-80GB", 989 * kT, 1979 * kT, 3350 * kG, 450 * kG, 50 * kG, 25 * kG}},
      // H800: the H100 compute die with NVLink cut to 400 GB/s (200 per
      // direction) for export; same memory and peaks.
      {{"H800", "H800-SXM-80GB", "H800-80GB"},
       {"H800", 989 * kT, 1979 * kT, 3350 * kG, 200 * kG, 50 * kG, 25 * kG}},
      // H200: H100 compute, 4.8 TB/s HBM3e.
      {{"H200-141GB", "H200", "H200-SXM-141GB"},
       {"H200-141GB", 989 * kT, 1979 * kT, 4800 * kG, 450 * kG, 50 * kG, 25 * kG}},
      // A100 SXM4: 312 TFLOP/s BF16, no FP8, NVLink 3 600 GB/s, HDR 200 Gb/s.
      {{"A100-SXM-80GB", "A100-80GB", "A100-SXM4-80GB"},
       {"A100-SXM-80GB", 312 * kT, 0, 2039 * kG, 300 * kG, 25 * kG, 20 * kG}},
      {{"A100-40GB", "A100-SXM4-40GB", "A100-SXM-40GB"},
       {"A100-40GB", 312 * kT, 0, 1555 * kG, 300 * kG, 25 * kG, 20 * kG}},
      // B200 (HGX, 1000 W): 2.25 PFLOP/s BF16, 4.5 FP8 dense, 8 TB/s, NVLink 5
      // 1.8 TB/s, ConnectX-8 800 Gb/s.
      {{"B200-192GB", "B200"},
       {"B200-192GB", 2250 * kT, 4500 * kT, 8000 * kG, 900 * kG, 100 * kG, 50 * kG}},
      // MI300X: 1307 TFLOP/s BF16, 2615 FP8 dense, 5.3 TB/s, Infinity Fabric
      // 7 x 64 GB/s per direction to the 7 peers.
      {{"MI300X-192GB", "MI300X"},
       {"MI300X-192GB", 1307 * kT, 2615 * kT, 5300 * kG, 448 * kG, 50 * kG, 25 * kG}},
  };
  return table;
}

std::string Normalized(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    c = c == '_' ? '-' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

absl::StatusOr<GpuPerformance> FindGpuPerformance(std::string_view name) {
  const std::string wanted = Normalized(name);
  std::vector<std::string> known;
  for (const Entry& e : Table()) {
    for (const char* n : e.names) {
      if (Normalized(n) == wanted) return e.perf;
    }
    known.push_back(e.names.front());
  }
  return absl::NotFoundError(absl::StrCat("gpu: no speed figures for ",
                                          Quote(absl::string_view(name.data(), name.size())),
                                          "; known: ", absl::StrJoin(known, ", ")));
}

}  // namespace oomguard
