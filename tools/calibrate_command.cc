// `oomguard calibrate` (see calibrate_command.h).
#include "tools/calibrate_command.h"

#include <filesystem>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "store/check_store.h"
#include "tools/calibration.h"
#include "tools/store_calibration.h"

namespace oomguard {

namespace {

// `--store URL [--cluster NAME]` (also `--store=URL`, `--cluster=NAME`):
// the cluster's own table from the store.
int RunStoreCalibration(const std::vector<std::string>& args, std::string& out, std::string& err) {
  std::string store_value, cluster;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    if (name != "--store" && name != "--cluster") {
      err = absl::StrCat(args[i],
                         ": not an argument of calibrate --store (--store URL [--cluster NAME])");
      return 2;
    }
    if (eq == std::string::npos) {
      if (i + 1 == args.size()) {
        err = absl::StrCat(name, ": needs a value");
        return 2;
      }
      value = args[++i];
    }
    (name == "--store" ? store_value : cluster) = value;
  }
  const absl::StatusOr<store::StoreUrl> url = store::ParseStoreUrl(store_value);
  if (!url.ok()) {
    err = std::string(url.status().message());
    return 2;
  }
  // Reading, never creating: a store file that is not there is an error.
  if (url->kind == store::StoreUrl::Kind::kSqlite && !std::filesystem::exists(url->sqlite_path)) {
    err = absl::StrCat("cannot read ", url->sqlite_path, ": no such store");
    return 2;
  }
  absl::StatusOr<std::unique_ptr<store::CheckStore>> opened = store::OpenCheckStore(*url, {});
  if (!opened.ok()) {
    err = std::string(opened.status().message());
    return 2;
  }
  absl::StatusOr<std::string> table = FormatStoreCalibration(**opened, cluster);
  if (!table.ok()) {
    err = std::string(table.status().message());
    return 2;
  }
  out = *std::move(table);
  return 0;
}

bool AsksForTheStore(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--store" || absl::StartsWith(a, "--store=")) return true;
  }
  return false;
}

}  // namespace

int RunCalibrateCommand(const std::vector<std::string>& args, std::string& out, std::string& err) {
  if (AsksForTheStore(args)) return RunStoreCalibration(args, out, err);
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
