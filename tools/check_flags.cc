// The command line of `oomguard check` (see check_flags.h).
#include "tools/check_flags.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "tools/command_flags.h"
#include "tools/shown_value.h"

namespace oomguard {
namespace {

absl::StatusOr<uint32_t> ParseCount(absl::string_view name, const std::string& v) {
  uint32_t count = 0;
  if (!absl::SimpleAtoi(v, &count) || count == 0 || count > kMaxGpuCount) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": expected a whole number in [1, ",
                                                   kMaxGpuCount, "], got \"", ShownValue(v), "\""));
  }
  return count;
}

// Sets the flag at args[i] (moving i past its value); false when args[i]
// is not one of the flags that take a value.
absl::StatusOr<bool> TakeValueFlag(const std::vector<std::string>& args, size_t& i, CheckFlags& f) {
  const std::string& a = args[i];
  // Flags whose value is kept as given.
  for (auto [name, value] :
       {std::pair{"--server", &f.server}, std::pair{"--preset", &f.preset},
        std::pair{"--tls-ca", &f.tls_ca}, std::pair{"--tls-cert", &f.tls_cert},
        std::pair{"--tls-key", &f.tls_key}, std::pair{"--script", &f.script_path},
        std::pair{"--job-file", &f.job_file_path}, std::pair{"--rl-config", &f.rl_config_path}}) {
    if (IsFlag(a, name)) {
      OOMGUARD_ASSIGN_OR_RETURN(*value, TakeFlagValue(args, i, name));
      return true;
    }
  }
  if (IsFlag(a, "--deadline-ms")) {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--deadline-ms"));
    OOMGUARD_ASSIGN_OR_RETURN(f.deadline_ms, ParseDeadlineMsFlag(v));
  } else if (IsFlag(a, "--gpu-memory-gib")) {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--gpu-memory-gib"));
    if (!absl::SimpleAtod(v, &f.gpu_memory_gib) || !std::isfinite(f.gpu_memory_gib) ||
        f.gpu_memory_gib <= 0 || f.gpu_memory_gib > 1e6) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--gpu-memory-gib: expected a positive number of GiB, got \"", ShownValue(v), "\""));
    }
  } else if (IsFlag(a, "--gpus-per-node")) {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--gpus-per-node"));
    OOMGUARD_ASSIGN_OR_RETURN(f.gpus_per_node, ParseCount("--gpus-per-node", v));
  } else if (IsFlag(a, "--gpus")) {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--gpus"));
    OOMGUARD_ASSIGN_OR_RETURN(f.gpus, ParseCount("--gpus", v));
  } else if (IsFlag(a, "--gpu")) {
    OOMGUARD_ASSIGN_OR_RETURN(f.gpu, TakeFlagValue(args, i, "--gpu"));
    if (f.gpu.empty()) {
      return absl::InvalidArgumentError("--gpu: expected a GPU name (see ListGpus), got \"\"");
    }
  } else if (IsFlag(a, "--safety-margin")) {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--safety-margin"));
    double margin = 0;
    if (!absl::SimpleAtod(v, &margin) || !(margin >= 0 && margin < 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--safety-margin: expected a fraction in [0, 1), got \"", ShownValue(v), "\""));
    }
    f.safety_margin = margin;
  } else if (IsFlag(a, "--peak-bound")) {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--peak-bound"));
    OOMGUARD_ASSIGN_OR_RETURN(f.peak_bound, ParsePeakBoundFlag(v));
  } else if (IsFlag(a, "--coverage")) {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--coverage"));
    OOMGUARD_ASSIGN_OR_RETURN(f.coverage, ParseCoverageFlag(v));
  } else if (IsVersionFlag(a)) {
    OOMGUARD_RETURN_IF_ERROR(TakeVersionFlag(args, i, f.env));
  } else if (IsFlag(a, "--env")) {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--env"));
    OOMGUARD_RETURN_IF_ERROR(AddEnvFlag(v, f.env));
  } else {
    return false;
  }
  return true;
}

// The combinations the flags must make.
absl::Status CheckCombination(const CheckFlags& f) {
  OOMGUARD_RETURN_IF_ERROR(CheckServerFlag(f.server));
  const int sources = (f.script_path.empty() ? 0 : 1) + (f.job_file_path.empty() ? 0 : 1) +
                      (f.rl_config_path.empty() ? 0 : 1) + (f.args_given ? 1 : 0);
  if (sources != 1) {
    return absl::InvalidArgumentError(
        "give exactly one of --script FILE, --job-file FILE or -- <Megatron-LM args> (or, for an "
        "RL job, --rl-config FILE)");
  }
  if (!f.gpu.empty() && f.gpu_memory_gib > 0) {
    return absl::InvalidArgumentError("give either --gpu or --gpu-memory-gib, not both");
  }
  return CheckTlsFlags(f.tls_ca, f.tls_cert, f.tls_key);
}

}  // namespace

absl::StatusOr<CheckFlags> ParseCheckFlags(const std::vector<std::string>& args) {
  CheckFlags f;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      f.args.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      f.args_given = true;
      break;
    }
    if (a == "--help" || a == "-h") {
      f.help = true;
      return f;
    }
    if (a == "--json") {
      f.json = true;
    } else if (a == "--ignore-skip") {
      f.ignore_skip = true;
    } else if (a == "--judge-unmodelled" || a == "--no-judge-unmodelled") {
      f.judge_unmodelled = a == "--judge-unmodelled";
    } else {
      OOMGUARD_ASSIGN_OR_RETURN(const bool taken, TakeValueFlag(args, i, f));
      if (!taken) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown flag \"", ShownValue(a),
                         "\" (Megatron-LM arguments go after --; see --help)"));
      }
    }
  }
  OOMGUARD_RETURN_IF_ERROR(CheckCombination(f));
  return f;
}

}  // namespace oomguard
