// Every in-scope measured case through the same path as `oomguard
// calibrate`: per-case error bounds and the summary targets.
#include "tools/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "absl/strings/match.h"
#include "tests/testing/megatron_ci_runs.h"

namespace oomguard {
namespace {

// The measured cases, copied into the repository (tests/data/calibration/README.md).
const std::string kDir = std::string(OOMGUARD_SOURCE_DIR) + "/tests/data/calibration/";

std::vector<CaseResult> EvaluateFile(const std::string& file) {
  EXPECT_TRUE(std::ifstream(kDir + file).good()) << kDir + file << " is missing";
  auto cases =
      file.ends_with(".csv") ? LoadSweepCases(kDir + file) : LoadMegatronCiCases(kDir + file);
  EXPECT_TRUE(cases.ok()) << cases.status();
  std::vector<CaseResult> out;
  if (!cases.ok()) return out;
  for (const auto& c : *cases) out.push_back(EvaluateCase(c));
  return out;
}

TEST(Calibration, MegatronCiCasesWithinTargets) {
  std::vector<CaseResult> results = EvaluateFile("megatron_ci_h100.jsonl");
  ASSERT_FALSE(results.empty()) << "no cases read";
  for (const CaseResult& r : results) {
    if (!r.c.excluded.empty() || !r.c.gpus_known) continue;
    ASSERT_TRUE(r.error.empty()) << r.c.name << ": " << r.error;
    // Every targeted case, small ones included.
    EXPECT_LT(std::abs(r.static_err()), 0.07) << r.c.name;
    EXPECT_LT(std::abs(r.peak_err()), 0.10) << r.c.name;
    if (r.c.measured_peak > 4.0 * (1 << 30)) {
      EXPECT_LT(std::abs(r.peak_err()), 0.10) << r.c.name;
      EXPECT_GT(r.peak_err(), -0.05) << r.c.name;
    }
  }
  const CalibrationSummary s = Summarise(results);
  EXPECT_GE(s.targeted, 30);
  EXPECT_LT(s.peak_median, 0.05);
  EXPECT_LT(s.static_median, 0.02);
  EXPECT_GE(s.upper_coverage, 0.95);
  EXPECT_LT(s.upper_mean_width, 0.05);
  std::cout << FormatCalibration(results);
}

// Megatron's hybrid (Mamba) CI runs, which the summary keeps out (its
// families are gpt, moe and mixtral): each through the same path, static
// and peak within 1 % of the measured ones (-0.0 % / -0.1 % static, -0.1 %
// / +0.0 % peak when written; estimator/layer_memory.h HybridLayerCost).
TEST(Calibration, HybridCiRunsWithinOnePercent) {
  int checked = 0;
  for (const testing::MegatronCiRun& run : testing::MegatronCiRuns()) {
    if (!absl::StartsWith(run.name, "hybrid/")) continue;
    CalibrationCase c;
    c.name = run.name;
    c.argv = run.inputs.megatron_args;
    c.env = run.inputs.env;
    c.gpus = run.inputs.num_gpus;
    c.gpus_known = true;
    c.measured_static = run.alloc_after_step;
    c.measured_peak = run.max_alloc;
    const CaseResult r = EvaluateCase(c);
    ASSERT_TRUE(r.error.empty()) << r.c.name << ": " << r.error;
    EXPECT_LT(std::abs(r.static_err()), 0.01) << r.c.name;
    EXPECT_LT(std::abs(r.peak_err()), 0.01) << r.c.name;
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

TEST(Calibration, SingleGpuSweepFollowsClosedForms) {
  std::vector<CaseResult> results = EvaluateFile("h100_single_gpu_sweep.csv");
  ASSERT_FALSE(results.empty()) << "no cases read";
  for (const CaseResult& r : results) {
    ASSERT_TRUE(r.error.empty()) << r.c.name << ": " << r.error;
    EXPECT_LT(std::abs(r.static_err()), 0.03) << r.c.name;
    EXPECT_LT(std::abs(r.peak_err()), 0.10) << r.c.name;
  }
  const CalibrationSummary s = Summarise(results);
  std::cout << "sweep: static median " << s.static_median << ", peak median " << s.peak_median
            << ", worst " << s.peak_worst << "\n";
  EXPECT_LT(s.peak_median, 0.02);
  // The upper bounds (issue 9): at least 95% of the allocated peaks at or
  // below the 95% bound, within 5% above them on average; the device bound
  // (GPU memory used, with fragmentation the job cannot predict) at least
  // 90%, within 6%.
  std::cout << "sweep upper bound: coverage " << s.upper_coverage << ", width "
            << s.upper_mean_width << "; device coverage " << s.device_coverage << ", width "
            << s.device_mean_width << "\n";
  EXPECT_GE(s.upper_coverage, 0.95);
  EXPECT_LT(s.upper_mean_width, 0.05);
  EXPECT_GE(s.device_coverage, 0.90);
  EXPECT_LT(s.device_mean_width, 0.06);
}

}  // namespace
}  // namespace oomguard
