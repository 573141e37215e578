// `oomguard estimate` (see estimate_command.h).
#include "tools/estimate_command.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "estimator/estimator.h"
#include "jobspec/job_builder.h"
#include "tools/bounded_file.h"
#include "tools/command_flags.h"
#include "tools/report_format.h"

namespace oomguard {
namespace {

constexpr char kUsage[] =
    "usage: oomguard estimate --gpus N [--gpu-memory-gib G] [--json] [--tree]\n"
    "                         [--preset NAME | --hf-config FILE] [--env NAME=VALUE ...]\n"
    "                         [--coverage 0.95]\n"
    "                         [--megatron-core-version X.Y] [--transformer-engine-version X.Y]\n"
    "                         [--gpu-architecture hopper|blackwell|volta|turing]\n"
    "                         [--] <Megatron-LM pretrain_gpt.py arguments>\n";

struct EstimateFlags {
  bool help = false;  // --help or -h: print kUsage, nothing else.
  JobInputs source;
  double gpu_memory_gib = 0;
  bool json = false;
  bool tree = false;
  std::string hf_config_path;
  double coverage = kDefaultUpperBoundCoverage;
};

absl::StatusOr<EstimateFlags> ParseFlags(const std::vector<std::string>& args) {
  EstimateFlags f;
  bool gpus_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      f.source.megatron_args.insert(f.source.megatron_args.end(), args.begin() + i + 1, args.end());
      break;
    } else if (IsFlag(a, "--gpus")) {
      OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--gpus"));
      if (!absl::SimpleAtoi(v, &f.source.num_gpus) || f.source.num_gpus == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--gpus: expected a positive integer, got \"", v, "\""));
      }
      gpus_given = true;
    } else if (IsFlag(a, "--gpu-memory-gib")) {
      OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--gpu-memory-gib"));
      if (!absl::SimpleAtod(v, &f.gpu_memory_gib) || !std::isfinite(f.gpu_memory_gib) ||
          f.gpu_memory_gib <= 0 || f.gpu_memory_gib > 1e6) {
        return absl::InvalidArgumentError(
            absl::StrCat("--gpu-memory-gib: expected a positive number of GiB, got \"", v, "\""));
      }
    } else if (a == "--json") {
      f.json = true;
    } else if (a == "--tree") {
      f.tree = true;
    } else if (IsFlag(a, "--preset")) {
      OOMGUARD_ASSIGN_OR_RETURN(f.source.preset, TakeFlagValue(args, i, "--preset"));
    } else if (IsFlag(a, "--hf-config")) {
      OOMGUARD_ASSIGN_OR_RETURN(f.hf_config_path, TakeFlagValue(args, i, "--hf-config"));
    } else if (IsVersionFlag(a)) {
      OOMGUARD_RETURN_IF_ERROR(TakeVersionFlag(args, i, f.source.env));
    } else if (IsFlag(a, "--env")) {
      OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--env"));
      OOMGUARD_RETURN_IF_ERROR(AddEnvFlag(v, f.source.env));
    } else if (IsFlag(a, "--coverage")) {
      OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--coverage"));
      OOMGUARD_ASSIGN_OR_RETURN(f.coverage, ParseCoverageFlag(v));
    } else if (a == "--help" || a == "-h") {
      f.help = true;
      return f;
    } else {
      f.source.megatron_args.push_back(a);
    }
  }
  if (!gpus_given) {
    return absl::InvalidArgumentError("--gpus: required (the job's total GPU count)");
  }
  return f;
}

// The report of the job the flags describe, with the parsers' notes.
absl::StatusOr<v1::EstimateReport> EstimateJob(EstimateFlags& f) {
  if (!f.hf_config_path.empty()) {
    OOMGUARD_ASSIGN_OR_RETURN(f.source.hf_config_json, ReadHfConfigFlag(f.hf_config_path));
  }
  std::vector<std::string> notes;
  OOMGUARD_ASSIGN_OR_RETURN(const v1::JobSpec job, BuildJob(f.source, &notes));
  EstimateOptions options;
  options.module_tree = f.tree;
  options.upper_bound_coverage = f.coverage;
  OOMGUARD_ASSIGN_OR_RETURN(v1::EstimateReport report, Estimate(job, options));
  for (std::string& n : notes) report.add_notes(std::move(n));
  return report;
}

}  // namespace

int RunEstimateCommand(const std::vector<std::string>& args, std::string& out, std::string& err) {
  absl::StatusOr<EstimateFlags> f = ParseFlags(args);
  if (!f.ok()) {
    err = std::string(f.status().message());
    return 2;
  }
  if (f->help) {
    out = kUsage;
    return 0;
  }
  const absl::StatusOr<v1::EstimateReport> report = EstimateJob(*f);
  if (!report.ok()) {
    err = std::string(report.status().message());
    return 2;
  }
  const uint64_t capacity = static_cast<uint64_t>(f->gpu_memory_gib * 1024 * 1024 * 1024);
  if (f->json) {
    out = FormatJson(*report, capacity);
  } else {
    out = FormatTable(*report, capacity);
    if (f->tree) out += "\n" + FormatTree(*report);
  }
  return 0;
}

}  // namespace oomguard
