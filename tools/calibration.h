// Calibration against measured runs: loads the measured cases shipped in
// ../shared/calibration (Megatron-LM's H100 functional-test runs and the
// single-GPU H100 sweep), estimates each through the same path as
// `oomguard estimate`, and summarises the errors.
#ifndef OOMGUARD_TOOLS_CALIBRATION_H_
#define OOMGUARD_TOOLS_CALIBRATION_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace oomguard {

struct CalibrationCase {
  std::string name;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  uint32_t gpus = 0;
  bool gpus_known = false;
  double measured_static = 0;  // bytes; 0 = not comparable
  double measured_peak = 0;    // bytes
  // Measured values exclude PyTorch's own cuBLAS workspaces (the sweep
  // subtracted them): compare without the library_workspaces overhead.
  bool without_workspaces = false;
  std::string excluded;  // Non-empty: why the case is outside the targets.
};

struct CaseResult {
  CalibrationCase c;
  std::string error;  // Non-empty when estimation failed.
  double est_static = 0, est_peak = 0;
  double static_err() const { return c.measured_static ? est_static / c.measured_static - 1 : 0; }
  double peak_err() const { return est_peak / c.measured_peak - 1; }
};

// Reads megatron_ci_h100.jsonl (in-scope families gpt/, moe/, mixtral/).
absl::StatusOr<std::vector<CalibrationCase>> LoadMegatronCiCases(const std::string& path);
// Reads h100_single_gpu_sweep.csv.
absl::StatusOr<std::vector<CalibrationCase>> LoadSweepCases(const std::string& path);

CaseResult EvaluateCase(const CalibrationCase& c);

struct CalibrationSummary {
  int cases = 0, targeted = 0, failed = 0;
  double static_median = 0, static_worst = 0;  // |error|, targeted cases
  double peak_median = 0, peak_worst = 0;      // |error|, targeted with peak > 4 GiB
  double worst_underestimate = 0;              // most negative peak error (<= 0)
  int peak_cases = 0;
};

// A case counts toward the targets when it has a known GPU count and is
// not excluded.
CalibrationSummary Summarise(const std::vector<CaseResult>& results);
std::string FormatCalibration(const std::vector<CaseResult>& results);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_CALIBRATION_H_
