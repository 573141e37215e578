// `oomguard calibrate` (see calibrate_command.h).
#include "tools/calibrate_command.h"

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "tools/calibration.h"

namespace oomguard {

int RunCalibrateCommand(const std::vector<std::string>& args, std::string& out, std::string& err) {
  const std::vector<std::string> files =
      !args.empty() ? args
                    : std::vector<std::string>{"tests/data/calibration/megatron_ci_h100.jsonl",
                                               "tests/data/calibration/h100_single_gpu_sweep.csv"};
  std::vector<CaseResult> results;
  for (const std::string& file : files) {
    const bool csv = file.size() > 4 && absl::EndsWith(file, ".csv");
    const absl::StatusOr<std::vector<CalibrationCase>> cases =
        csv ? LoadSweepCases(file) : LoadMegatronCiCases(file);
    if (!cases.ok()) {
      err = std::string(cases.status().message());
      return 2;
    }
    for (const CalibrationCase& c : *cases) results.push_back(EvaluateCase(c));
  }
  out = FormatCalibration(results);
  return 0;
}

}  // namespace oomguard
