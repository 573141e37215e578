// Tests of the GPU speed table (planner/gpu_performance.h): the planner looks
// a GPU up by its catalog name, so every catalog GPU needs an entry, and the
// figures are the datasheets' dense ones.
#include "planner/gpu_performance.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "admission/gpu_catalog.h"
#include "gmock/gmock.h"

namespace oomguard {
namespace {

constexpr double kT = 1e12;
constexpr double kG = 1e9;

// plan_command.cc and request_handlers.cc call FindGpuPerformance with the
// catalog entry's name; the aliases people type resolve to the same entry.
TEST(GpuPerformanceTest, EveryCatalogGpuAndAliasHasAnEntryUnderItsName) {
  const GpuCatalog catalog = GpuCatalog::Builtin();
  for (const v1::GpuSpec& gpu : catalog.gpus()) {
    absl::StatusOr<GpuPerformance> speed = FindGpuPerformance(gpu.name());
    ASSERT_TRUE(speed.ok()) << gpu.name() << ": " << speed.status();
    EXPECT_EQ(std::string(speed->name), gpu.name());
    for (const std::string& alias : gpu.aliases()) {
      absl::StatusOr<GpuPerformance> by_alias = FindGpuPerformance(alias);
      ASSERT_TRUE(by_alias.ok()) << alias;
      EXPECT_EQ(std::string(by_alias->name), gpu.name()) << alias;
    }
    EXPECT_GT(speed->bf16_flops, 0) << gpu.name();
    EXPECT_GT(speed->hbm_bytes_per_second, 0) << gpu.name();
    EXPECT_GT(speed->nvlink_bytes_per_second, 0) << gpu.name();
    EXPECT_GT(speed->network_bytes_per_second, 0) << gpu.name();
    EXPECT_GT(speed->pcie_bytes_per_second, 0) << gpu.name();
    // Dense FP8 is twice dense BF16 on every part with FP8 (A100 has none);
    // the L40S datasheet's 733 / 362.05 is 2.02.
    if (speed->fp8_flops > 0) {
      EXPECT_NEAR(speed->fp8_flops / speed->bf16_flops, 2.0, 0.03) << gpu.name();
    }
  }
}

// Datasheet figures, dense (the sparse ones are twice these):
//   H100 PCIe 756 TFLOP/s BF16 (1513 sparse), 2.0 TB/s;
//   H100 NVL 835 (1671 sparse), 3.9 TB/s; H20 148 BF16, 296 FP8, 4.0 TB/s;
//   B300 HGX 36 PFLOP/s BF16 sparse per 8 GPUs = 4.5 sparse = 2.25 dense;
//   GB200 / GB300 NVL72 360 PFLOP/s BF16 sparse per 72 GPUs = 2.5 dense;
//   L40S 362.05 BF16 (733 sparse), 733 FP8 (1466 sparse), 864 GB/s, no
//   NVLink.
TEST(GpuPerformanceTest, NewGpusCarryTheDenseDatasheetFigures) {
  EXPECT_DOUBLE_EQ(FindGpuPerformance("H100-PCIE")->bf16_flops, 756 * kT);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("H100-PCIE")->hbm_bytes_per_second, 2000 * kG);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("H100-NVL")->bf16_flops, 835 * kT);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("H100-NVL")->hbm_bytes_per_second, 3900 * kG);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("H20")->bf16_flops, 148 * kT);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("H20")->fp8_flops, 296 * kT);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("H20")->hbm_bytes_per_second, 4000 * kG);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("H20-3e")->hbm_bytes_per_second, 4800 * kG);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("B300")->bf16_flops, 36000 * kT / 8 / 2);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("GB200")->bf16_flops, 360000 * kT / 72 / 2);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("GB300")->bf16_flops, 360000 * kT / 72 / 2);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("GB200")->hbm_bytes_per_second, 576000 * kG / 72);
  // Dense FP4 (NVFP4): HGX B200 144 PFLOP/s sparse per 8 GPUs; HGX B300 108
  // dense per 8; GB200 NVL72 1440 sparse per 72; GB300 NVL72 1080 dense per
  // 72. No FP4 before Blackwell.
  EXPECT_DOUBLE_EQ(FindGpuPerformance("B200")->fp4_flops, 144000 * kT / 8 / 2);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("B300")->fp4_flops, 108000 * kT / 8);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("GB200")->fp4_flops, 1440000 * kT / 72 / 2);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("GB300")->fp4_flops, 1080000 * kT / 72);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("H100")->fp4_flops, 0);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("L40S")->bf16_flops, 362.05 * kT);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("L40S")->hbm_bytes_per_second, 864 * kG);
  // H800: H100 compute with NVLink cut from 450 to 200 GB/s per direction;
  // the step-time test still finds it as "H800".
  EXPECT_EQ(std::string(FindGpuPerformance("H800")->name), "H800-SXM-80GB");
  EXPECT_DOUBLE_EQ(FindGpuPerformance("H800")->bf16_flops, FindGpuPerformance("H100")->bf16_flops);
  EXPECT_DOUBLE_EQ(FindGpuPerformance("H800")->nvlink_bytes_per_second, 200 * kG);
  // Without NVLink, PCIe parts' collectives are slower than any NVLink part's.
  EXPECT_LT(FindGpuPerformance("L40S")->nvlink_bytes_per_second,
            FindGpuPerformance("H800")->nvlink_bytes_per_second);
}

// The speed table has exactly the catalog's GPUs, in its order, under their
// catalog names (it names them all when a GPU has no figures): a GPU is
// named once, in the catalog, and a new one needs its speed here.
TEST(GpuPerformanceTest, UnknownGpuIsNotFoundNamingTheKnownOnesWhichAreTheCatalogs) {
  absl::StatusOr<GpuPerformance> speed = FindGpuPerformance("P100");
  EXPECT_EQ(speed.status().code(), absl::StatusCode::kNotFound);
  const GpuCatalog catalog = GpuCatalog::Builtin();
  std::vector<std::string> names;
  for (const v1::GpuSpec& gpu : catalog.gpus()) names.push_back(gpu.name());
  EXPECT_EQ(
      std::string(speed.status().message()),
      absl::StrCat("gpu: no speed figures for \"P100\"; known: ", absl::StrJoin(names, ", ")));
}

// Aliases and spellings resolve through the catalog, as Check resolves them.
TEST(GpuPerformanceTest, NamesResolveThroughTheCatalog) {
  for (const char* name : {"h100", "H100_SXM", "a100-80gb-pcie", "gb200-nvl72"}) {
    absl::StatusOr<GpuPerformance> speed = FindGpuPerformance(name);
    ASSERT_TRUE(speed.ok()) << name;
    EXPECT_EQ(std::string(speed->name), GpuCatalog::Builtin().Find(name)->name()) << name;
  }
}

}  // namespace
}  // namespace oomguard
