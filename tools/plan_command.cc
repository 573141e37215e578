// `oomguard plan` (see plan_command.h).
#include "tools/plan_command.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "admission/gpu_catalog.h"
#include "common/status_macros.h"
#include "jobspec/job_builder.h"
#include "nlohmann/json.hpp"
#include "planner/planner.h"
#include "tools/bounded_file.h"
#include "tools/command_flags.h"
#include "tools/shown_value.h"

namespace oomguard {
namespace {

constexpr char kUsage[] =
    "usage: oomguard plan --gpus N --gpu NAME [--gpus-per-node K] (--preset P | --hf-config F)\n"
    "                     [--top K] [--json] [--memory-margin F] [--no-recompute] [--no-offload]\n"
    "                     [--no-cross-node-expert-parallel] [--no-expert-parallel-overlap]\n"
    "                     [--bound NAME=MIN:MAX ...] (NAME: tp pp vpp cp ep etp mbs; an end\n"
    "                     may be left out: --bound tp=:4 --bound pp=2:)\n"
    "                     [--peak-bound upper|point] [--coverage 0.95] [--env NAME=VALUE ...]\n"
    "                     [--megatron-core-version X.Y] [--transformer-engine-version X.Y]\n"
    "                     [--gpu-architecture hopper|blackwell|volta|turing]\n"
    "                     [--] [Megatron-LM arguments fixing the training\n"
    "                     shape or constraining the search, e.g. --seq-length 4096\n"
    "                     --global-batch-size 1024 --fp8-format e4m3 --tensor-model-parallel-size "
    "2]\n";

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct PlanFlags {
  bool help = false;
  JobInputs source;
  std::string gpu;
  std::string hf_config_path;
  uint32_t gpus_per_node = 0;  // 0: not given (NvlinkDomain's default).
  bool json = false;
  PlanOptions options;
};

absl::StatusOr<uint32_t> PositiveInt(const std::string& flag, const std::string& v, uint32_t max) {
  uint32_t n = 0;
  if (!absl::SimpleAtoi(v, &n) || n == 0 || n > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": expected an integer in [1, ", max, "], got \"", ShownValue(v), "\""));
  }
  return n;
}

// --bound NAME=MIN:MAX (PlanConstraints' SizeRange fields): sets the range
// of NAME in `sizes`.
absl::Status ParseBound(const std::string& v, SizeRanges& sizes) {
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--bound: expected NAME=MIN:MAX with NAME one of ",
        absl::StrJoin(kSizeRangeNames, ", ",
                      [](std::string* out, const SizeRangeName& n) { out->append(n.flag_name); }),
        " and either end optional, got \"", ShownValue(v), "\"", why.empty() ? "" : ": ", why));
  };
  const size_t eq = v.find('=');
  const size_t colon = v.find(':', eq == std::string::npos ? 0 : eq);
  if (eq == std::string::npos || colon == std::string::npos) return bad("");
  const std::string name = v.substr(0, eq);
  SizeRange* range = nullptr;
  for (const SizeRangeName& n : kSizeRangeNames) {
    if (name == n.flag_name) range = &(sizes.*n.range);
  }
  if (range == nullptr) return bad("unknown NAME");
  const std::string min = v.substr(eq + 1, colon - eq - 1), max = v.substr(colon + 1);
  if (min.empty() && max.empty()) return bad("give MIN, MAX or both");
  SizeRange parsed;
  uint32_t n = 0;
  if (!min.empty()) {
    if (!absl::SimpleAtoi(min, &n) || n == 0) return bad("MIN must be a positive integer");
    parsed.min = n;
  }
  if (!max.empty()) {
    if (!absl::SimpleAtoi(max, &n) || n == 0) return bad("MAX must be a positive integer");
    parsed.max = n;
  }
  if (parsed.min > parsed.max) return bad("MIN > MAX");
  *range = parsed;
  return absl::OkStatus();
}

absl::StatusOr<PlanFlags> ParseFlags(const std::vector<std::string>& args) {
  PlanFlags f;
  bool gpus_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      f.source.megatron_args.insert(f.source.megatron_args.end(), args.begin() + i + 1, args.end());
      break;
    } else if (IsFlag(a, "--gpus")) {
      OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--gpus"));
      OOMGUARD_ASSIGN_OR_RETURN(f.source.num_gpus, PositiveInt("--gpus", v, 1u << 22));
      gpus_given = true;
    } else if (IsFlag(a, "--gpu")) {
      OOMGUARD_ASSIGN_OR_RETURN(f.gpu, TakeFlagValue(args, i, "--gpu"));
    } else if (IsFlag(a, "--gpus-per-node")) {
      OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--gpus-per-node"));
      OOMGUARD_ASSIGN_OR_RETURN(f.gpus_per_node, PositiveInt("--gpus-per-node", v, 1024));
    } else if (IsFlag(a, "--top")) {
      OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--top"));
      OOMGUARD_ASSIGN_OR_RETURN(f.options.limit, PositiveInt("--top", v, kMaxPlanLimit));
    } else if (IsFlag(a, "--memory-margin")) {
      OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--memory-margin"));
      if (!absl::SimpleAtod(v, &f.options.memory_margin) ||
          !(f.options.memory_margin >= 0 && f.options.memory_margin < 1)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--memory-margin: expected a fraction in [0, 1), got \"", ShownValue(v), "\""));
      }
    } else if (a == "--json") {
      f.json = true;
    } else if (a == "--no-recompute") {
      f.options.allow_recompute = false;
    } else if (a == "--no-offload") {
      f.options.allow_offload = false;
    } else if (a == "--allow-cross-node-expert-parallel") {
      // PlanConstraints.allow_cross_node_expert_parallel = true: EP x ETP
      // may span nodes, ranked by the step-time model (the default).
      f.options.allow_cross_node_expert_parallel = true;
    } else if (a == "--no-cross-node-expert-parallel") {
      // PlanConstraints.allow_cross_node_expert_parallel = false: EP x ETP
      // stays inside the NVLink domain.
      f.options.allow_cross_node_expert_parallel = false;
    } else if (IsFlag(a, "--bound")) {
      OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--bound"));
      OOMGUARD_RETURN_IF_ERROR(ParseBound(v, f.options.sizes));
    } else if (a == "--no-expert-parallel-overlap") {
      // PlanConstraints.no_expert_parallel_overlap.
      f.options.allow_expert_parallel_overlap = false;
    } else if (IsFlag(a, "--preset")) {
      OOMGUARD_ASSIGN_OR_RETURN(f.source.preset, TakeFlagValue(args, i, "--preset"));
    } else if (IsFlag(a, "--hf-config")) {
      OOMGUARD_ASSIGN_OR_RETURN(f.hf_config_path, TakeFlagValue(args, i, "--hf-config"));
    } else if (IsVersionFlag(a)) {
      OOMGUARD_RETURN_IF_ERROR(TakeVersionFlag(args, i, f.source.env));
    } else if (IsFlag(a, "--env")) {
      OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--env"));
      OOMGUARD_RETURN_IF_ERROR(AddEnvFlag(v, f.source.env));
    } else if (IsFlag(a, "--peak-bound")) {
      OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--peak-bound"));
      OOMGUARD_ASSIGN_OR_RETURN(const v1::PeakBound bound, ParsePeakBoundFlag(v));
      f.options.compare_upper_bound = bound == v1::PEAK_BOUND_UPPER;
    } else if (IsFlag(a, "--coverage")) {
      OOMGUARD_ASSIGN_OR_RETURN(const std::string v, TakeFlagValue(args, i, "--coverage"));
      OOMGUARD_ASSIGN_OR_RETURN(f.options.upper_bound_coverage, ParseCoverageFlag(v));
    } else if (a == "--help" || a == "-h") {
      f.help = true;
      return f;
    } else {
      f.source.megatron_args.push_back(a);
    }
  }
  if (!gpus_given) return absl::InvalidArgumentError("--gpus: required (the cluster's GPU count)");
  if (f.gpu.empty()) {
    return absl::InvalidArgumentError("--gpu: required (a GPU of the catalog, e.g. H100-SXM-80GB)");
  }
  if (f.source.preset.empty() == f.hf_config_path.empty()) {
    return absl::InvalidArgumentError("give one of --preset and --hf-config (the model)");
  }
  return f;
}

absl::StatusOr<PlanResult> PlanFromFlags(PlanFlags& f, PlanCluster& cluster) {
  if (!f.hf_config_path.empty()) {
    OOMGUARD_ASSIGN_OR_RETURN(f.source.hf_config_json, ReadHfConfigFlag(f.hf_config_path));
  }
  OOMGUARD_ASSIGN_OR_RETURN(cluster.gpu, GpuCatalog::Builtin().Find(f.gpu));
  OOMGUARD_ASSIGN_OR_RETURN(cluster.speed, FindGpuPerformance(cluster.gpu.name()));
  cluster.gpus_per_node = NvlinkDomain(cluster.speed, f.gpus_per_node);
  std::vector<std::string> notes;
  OOMGUARD_ASSIGN_OR_RETURN(const v1::JobSpec job, BuildJob(f.source, &notes));
  OOMGUARD_ASSIGN_OR_RETURN(PlanResult plan, Plan(job, cluster, f.options));
  for (std::string& n : notes) plan.summary.add_notes(std::move(n));
  return plan;
}

std::string FormatJson(const PlanFlags& f, const PlanCluster& cluster, const PlanResult& plan) {
  nlohmann::ordered_json out;
  out["gpu"] = cluster.gpu.name();
  out["gpus"] = f.source.num_gpus;
  out["gpus_per_node"] = cluster.gpus_per_node;
  out["usable_bytes"] = plan.summary.usable_bytes();
  nlohmann::ordered_json candidates = nlohmann::ordered_json::array();
  for (const v1::PlanCandidate& c : plan.candidates) {
    nlohmann::ordered_json j;
    j["tp"] = c.tp();
    j["pp"] = c.pp();
    j["vpp"] = c.vpp();
    j["cp"] = c.cp();
    j["ep"] = c.ep();
    j["etp"] = c.etp();
    j["dp"] = c.dp();
    j["micro_batch_size"] = c.micro_batch_size();
    j["num_microbatches"] = c.num_microbatches();
    j["decoder_first_pipeline_num_layers"] = c.decoder_first_pipeline_num_layers();
    j["decoder_last_pipeline_num_layers"] = c.decoder_last_pipeline_num_layers();
    j["sequence_parallel"] = c.sequence_parallel();
    j["distributed_optimizer"] = c.distributed_optimizer();
    j["optimizer_cpu_offload"] = c.optimizer_cpu_offload();
    j["expert_parallel_overlap"] = c.expert_parallel_overlap();
    j["recompute"] = c.recompute();
    j["peak_device_bytes"] = c.peak_device_bytes();
    j["peak_device_upper_bytes"] = c.peak_device_upper_bytes();
    j["worst_pp_rank"] = c.worst_pp_rank();
    j["headroom_bytes"] = c.headroom_bytes();
    j["rank_peak_device_bytes"] =
        std::vector<uint64_t>(c.rank_peak_device_bytes().begin(), c.rank_peak_device_bytes().end());
    j["step_time_seconds"] = c.step_time_seconds();
    j["tokens_per_gpu_per_second"] = c.tokens_per_gpu_per_second();
    j["mfu"] = c.mfu();
    const v1::StepTimeBreakdown& b = c.breakdown();
    j["breakdown"] = {{"compute_seconds", b.compute_seconds()},
                      {"recompute_seconds", b.recompute_seconds()},
                      {"tensor_parallel_seconds", b.tensor_parallel_seconds()},
                      {"context_parallel_seconds", b.context_parallel_seconds()},
                      {"expert_parallel_seconds", b.expert_parallel_seconds()},
                      {"pipeline_bubble_seconds", b.pipeline_bubble_seconds()},
                      {"data_parallel_seconds", b.data_parallel_seconds()},
                      {"offload_seconds", b.offload_seconds()}};
    j["reasons"] = std::vector<std::string>(c.reasons().begin(), c.reasons().end());
    j["megatron_args"] = c.megatron_args();
    candidates.push_back(std::move(j));
  }
  out["candidates"] = std::move(candidates);
  const v1::PlanSummary& s = plan.summary;
  out["summary"] = {{"candidates_considered", s.candidates_considered()},
                    {"candidates_estimated", s.candidates_estimated()},
                    {"candidates_fitting", s.candidates_fitting()},
                    {"candidates_pruned", s.candidates_pruned()},
                    {"search_space", s.search_space()},
                    {"notes", std::vector<std::string>(s.notes().begin(), s.notes().end())}};
  return out.dump(2) + "\n";
}

std::string FormatTable(const PlanFlags& f, const PlanCluster& cluster, const PlanResult& plan) {
  std::string out = absl::StrFormat(
      "Plan for %u x %s (%u per node): %.1f GiB usable per GPU (margin %.0f%%); %s\n\n",
      f.source.num_gpus, cluster.gpu.name(), cluster.gpus_per_node,
      plan.summary.usable_bytes() / kGiB, 100 * f.options.memory_margin,
      f.options.compare_upper_bound
          ? absl::StrFormat("a candidate fits when its peak at %g%% coverage does",
                            100 * f.options.upper_bound_coverage)
          : std::string("a candidate fits when its point estimate does"));
  absl::StrAppendFormat(
      &out, "%3s %3s %3s %3s %3s %3s %3s %4s %4s  %-28s %3s %3s %9s %9s %9s %8s %10s %5s\n", "#",
      "TP", "PP", "VPP", "CP", "EP", "ETP", "DP", "MBS", "recompute", "off", "a2a", "peak GiB",
      "upper GiB", "free GiB", "step s", "tok/GPU/s", "MFU");
  int rank = 0;
  for (const v1::PlanCandidate& c : plan.candidates) {
    absl::StrAppendFormat(
        &out,
        "%3d %3u %3u %3u %3u %3u %3u %4u %4u  %-28s %3s %3s %9.1f %9.1f %9.1f %8.2f %10.0f "
        "%4.0f%%\n",
        ++rank, c.tp(), c.pp(), c.vpp(), c.cp(), c.ep(), c.etp(), c.dp(), c.micro_batch_size(),
        c.recompute(), c.optimizer_cpu_offload() ? "yes" : "no",
        c.expert_parallel_overlap() ? "ovl" : "-", c.peak_device_bytes() / kGiB,
        c.peak_device_upper_bytes() / kGiB, static_cast<double>(c.headroom_bytes()) / kGiB,
        c.step_time_seconds(), c.tokens_per_gpu_per_second(), 100 * c.mfu());
    absl::StrAppend(&out, "      why:  ", absl::StrJoin(c.reasons(), "; "), "\n");
    absl::StrAppend(&out, "      args: ", c.megatron_args(), "\n");
  }
  const v1::PlanSummary& s = plan.summary;
  absl::StrAppendFormat(&out,
                        "\n%u settings considered, %u estimated, %u fit (the fastest of each "
                        "layout and micro-batch size kept), %u layouts cut short (no faster "
                        "than the best %u)\nsearch: %s\n",
                        s.candidates_considered(), s.candidates_estimated(), s.candidates_fitting(),
                        s.candidates_pruned(), f.options.limit, s.search_space());
  for (const std::string& n : s.notes()) absl::StrAppend(&out, "note: ", n, "\n");
  return out;
}

}  // namespace

int RunPlanCommand(const std::vector<std::string>& args, std::string& out, std::string& err) {
  absl::StatusOr<PlanFlags> f = ParseFlags(args);
  if (!f.ok()) {
    err = std::string(f.status().message());
    return 2;
  }
  if (f->help) {
    out = kUsage;
    return 0;
  }
  PlanCluster cluster;
  const absl::StatusOr<PlanResult> plan = PlanFromFlags(*f, cluster);
  if (!plan.ok()) {
    err = std::string(plan.status().message());
    return 2;
  }
  out = f->json ? FormatJson(*f, cluster, *plan) : FormatTable(*f, cluster, *plan);
  return plan->candidates.empty() ? 4 : 0;
}

}  // namespace oomguard
