// `oomguard estimate` (see estimate_command.h).
#include "tools/estimate_command.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "admission/gpu_catalog.h"
#include "admission/rl_admission.h"
#include "common/status_macros.h"
#include "estimator/estimator.h"
#include "estimator/rl_step.h"
#include "jobspec/environment.h"
#include "jobspec/job_builder.h"
#include "jobspec/rl_job_builder.h"
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
    "                         [--] <Megatron-LM pretrain_gpt.py arguments>\n"
    "   or: oomguard estimate [--gpus N] --rl-config FILE [--preset NAME | --hf-config FILE]\n"
    "                         [--gpu NAME | --gpu-memory-gib G] [--json] [--coverage 0.95]\n"
    "                         [--env NAME=VALUE ...]\n"
    "   or: oomguard estimate [--gpus N] [--gpu NAME | --gpu-memory-gib G] [--json] ...\n"
    "                         -- <slime or Megatron-LM RL arguments>\n"
    "An RL job (veRL's or NeMo-RL's YAML, recognised by its keys; slime's or Megatron-LM's RL\n"
    "argv, recognised by its flags) is estimated phase by phase on the GPU (default\n"
    "H100-SXM-80GB); --gpus may be left out where the config gives the world size.\n";

// Largest --rl-config read, in bytes (the service takes requests up to 1 MiB).
constexpr size_t kMaxRlConfigBytes = size_t{1} << 20;

struct EstimateFlags {
  bool help = false;  // --help or -h: print kUsage, nothing else.
  JobInputs source;
  double gpu_memory_gib = 0;
  bool json = false;
  bool tree = false;
  std::string hf_config_path;
  double coverage = kDefaultUpperBoundCoverage;
  // --gpu NAME (a catalog name): the GPU's memory.
  std::string gpu;
  // --rl-config FILE: an RL framework's YAML.
  std::string rl_config_path;
  bool gpus_given = false;
};

absl::StatusOr<EstimateFlags> ParseFlags(const std::vector<std::string>& args) {
  EstimateFlags f;
  bool& gpus_given = f.gpus_given;
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
    } else if (IsFlag(a, "--gpu")) {
      OOMGUARD_ASSIGN_OR_RETURN(f.gpu, TakeFlagValue(args, i, "--gpu"));
      if (f.gpu.empty()) {
        return absl::InvalidArgumentError("--gpu: expected a GPU name (see ListGpus), got \"\"");
      }
    } else if (IsFlag(a, "--rl-config")) {
      OOMGUARD_ASSIGN_OR_RETURN(f.rl_config_path, TakeFlagValue(args, i, "--rl-config"));
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
  if (!f.gpu.empty() && f.gpu_memory_gib > 0) {
    return absl::InvalidArgumentError("give either --gpu or --gpu-memory-gib, not both");
  }
  if (!f.rl_config_path.empty() && !f.source.megatron_args.empty()) {
    return absl::InvalidArgumentError(
        "give either --rl-config FILE or the RL arguments after --, not both");
  }
  // An RL job may take its world size from its config.
  if (!gpus_given && f.rl_config_path.empty() && !LooksLikeRlArgv(f.source.megatron_args)) {
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

bool IsRlJob(const EstimateFlags& f) {
  return !f.rl_config_path.empty() || LooksLikeRlArgv(f.source.megatron_args);
}

// The GPU of --gpu or --gpu-memory-gib, else the one an RL estimate assumes
// (noted in `notes`).
absl::StatusOr<v1::GpuSpec> RlGpu(const EstimateFlags& f, std::vector<std::string>* notes) {
  const GpuCatalog catalog = GpuCatalog::Builtin();
  if (!f.gpu.empty()) {
    absl::StatusOr<v1::GpuSpec> gpu = catalog.Find(f.gpu);
    if (!gpu.ok())
      return absl::InvalidArgumentError(absl::StrCat("--gpu: ", gpu.status().message()));
    return gpu;
  }
  if (f.gpu_memory_gib > 0) {
    v1::GpuSpec gpu;
    gpu.set_memory_bytes(static_cast<uint64_t>(std::llround(f.gpu_memory_gib * (1ull << 30))));
    return gpu;
  }
  return AssumedRlGpu(catalog, notes);
}

// The report of the RL job the flags describe (--rl-config, or the RL
// arguments), with the readers' notes.
absl::StatusOr<v1::RlStepReport> EstimateRlJob(EstimateFlags& f) {
  v1::RlJob rl;
  if (!f.rl_config_path.empty()) {
    OOMGUARD_ASSIGN_OR_RETURN(*rl.mutable_config_yaml(),
                              ReadBoundedFile("--rl-config", f.rl_config_path, kMaxRlConfigBytes));
  } else {
    rl.mutable_argv()->Assign(f.source.megatron_args.begin(), f.source.megatron_args.end());
  }
  if (!f.source.preset.empty()) rl.set_preset(f.source.preset);
  if (!f.hf_config_path.empty()) {
    OOMGUARD_ASSIGN_OR_RETURN(*rl.mutable_hf_config_json(), ReadHfConfigFlag(f.hf_config_path));
  }
  rl.set_num_gpus(f.source.num_gpus);
  std::vector<std::string> notes;
  OOMGUARD_ASSIGN_OR_RETURN(v1::RlJobSpec job, BuildRlJob(rl, &notes));
  OOMGUARD_RETURN_IF_ERROR(ApplyEnvironment(f.source.env, &job));
  OOMGUARD_ASSIGN_OR_RETURN(const v1::GpuSpec gpu, RlGpu(f, &notes));
  RlStepOptions options;
  options.gpu_memory_bytes = gpu.memory_bytes();
  options.gpu_name = gpu.name();
  options.upper_bound_coverage = f.coverage;
  OOMGUARD_ASSIGN_OR_RETURN(v1::RlStepReport step, EstimateRlStep(RlJobOnGpu(job, gpu), options));
  for (std::string& n : notes) step.add_notes(std::move(n));
  return step;
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
  if (IsRlJob(*f)) {
    const absl::StatusOr<v1::RlStepReport> step = EstimateRlJob(*f);
    if (!step.ok()) {
      err = std::string(step.status().message());
      return 2;
    }
    out = f->json ? FormatRlJson(*step) : FormatRlTable(*step);
    return 0;
  }
  if (!f->gpu.empty()) {
    // A pretraining job against a named GPU: its memory is the capacity.
    absl::StatusOr<v1::GpuSpec> gpu = GpuCatalog::Builtin().Find(f->gpu);
    if (!gpu.ok()) {
      err = absl::StrCat("--gpu: ", gpu.status().message());
      return 2;
    }
    f->gpu_memory_gib = static_cast<double>(gpu->memory_bytes()) / (1ull << 30);
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
