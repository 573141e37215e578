// `oomguard calibrate`: estimates every measured case of the calibration
// files (calibration.h) and prints the per-case errors and their summary.
#ifndef OOMGUARD_TOOLS_CALIBRATE_COMMAND_H_
#define OOMGUARD_TOOLS_CALIBRATE_COMMAND_H_

#include <string>
#include <vector>

namespace oomguard {

// `args` (the program and subcommand names excluded) are the files:
// *.csv is read as the single-GPU sweep, anything else as Megatron-LM CI
// JSON lines; none = the repository's copies of the measured cases,
// tests/data/calibration/megatron_ci_h100.jsonl and
// h100_single_gpu_sweep.csv (relative to the working directory). Returns the exit code (2 when a
// file cannot be read); `out` gets the table, `err` one error message.
//
// `--store URL [--cluster NAME]` instead prints the cluster's own table from
// the checks a server kept (store_calibration.h; every cluster's without
// --cluster); exit 2 when the store cannot be read (a sqlite file that is
// not there included: it is read, never created) or an argument is not one
// of these.
int RunCalibrateCommand(const std::vector<std::string>& args, std::string& out, std::string& err);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_CALIBRATE_COMMAND_H_
