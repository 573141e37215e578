// Calibration against measured runs: loads the measured cases of
// ../shared/calibration, copied into tests/data/calibration (Megatron-LM's
// H100 functional-test runs and the single-GPU H100 sweep), estimates each through the same path as
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
  // GPU memory in use at the end of a step (device total - free: the
  // allocator's pool, the CUDA context, NCCL, library handles); 0 = not
  // measured.
  double measured_device = 0;
  // Measured values exclude PyTorch's own cuBLAS workspaces (the sweep
  // subtracted them): compare without the library_workspaces overhead.
  bool without_workspaces = false;
  // The run's optimizer was torch.optim.AdamW (no TE or Apex installed).
  bool torch_adam = false;
  std::string excluded;  // Non-empty: why the case is outside the targets.
};

struct CaseResult {
  CalibrationCase c;
  std::string error;  // Non-empty when estimation failed.
  double est_static = 0, est_peak = 0;
  double est_peak_upper = 0;  // The allocated upper bound (default coverage).
  double est_device = 0, est_device_upper = 0;
  double static_err() const { return c.measured_static ? est_static / c.measured_static - 1 : 0; }
  double peak_err() const { return est_peak / c.measured_peak - 1; }
  // How far the upper bound lies above the measured peak (< 0: not covered).
  double peak_upper_width() const { return est_peak_upper / c.measured_peak - 1; }
  double device_upper_width() const { return est_device_upper / c.measured_device - 1; }
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
  // The upper bounds over the same cases as the peak error: the fraction of
  // measured peaks at or below the bound, and the bound's mean distance
  // above the measured value (relative to it).
  double upper_coverage = 0, upper_mean_width = 0;
  // The same for the device bound, over the cases measuring device memory.
  int device_cases = 0;
  double device_median = 0;  // |peak_device / measured_device - 1|
  double device_coverage = 0, device_mean_width = 0;
};

// The median of `values` (the mean of the middle two for an even count); 0
// for none.
double Median(std::vector<double> values);

// A case counts toward the targets when it has a known GPU count and is
// not excluded.
CalibrationSummary Summarise(const std::vector<CaseResult>& results);
std::string FormatCalibration(const std::vector<CaseResult>& results);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_CALIBRATION_H_
