// Command line, scheduler and #OOMGUARD values -> the CheckRequest (see
// check_plan.h).
#include "tools/check_plan.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "jobscript/check_request.h"

namespace oomguard {
namespace {

// One source of a value: the value (unset = T{}), how it reads when it
// wins ("the command line") and when it loses ("the scheduler's").
template <typename T>
struct Source {
  T value;
  std::string as_winner;
  std::string as_loser;
};

// The index of the first source that is set (sources.size() when none is),
// with a note for every later one that says something different.
template <typename T>
size_t Choose(absl::string_view what, const std::vector<Source<T>>& sources,
              std::vector<std::string>& notes) {
  const T unset{};
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].value == unset) continue;
    for (size_t k = i + 1; k < sources.size(); ++k) {
      if (sources[k].value != unset && sources[k].value != sources[i].value) {
        notes.push_back(absl::StrCat(sources[k].as_loser, " ", what, "=", sources[k].value,
                                     " ignored: ", sources[i].as_winner, " says ",
                                     sources[i].value));
      }
    }
    return i;
  }
  return sources.size();
}

template <typename T>
T ValueAt(const std::vector<Source<T>>& sources, size_t i) {
  return i < sources.size() ? sources[i].value : T{};
}

// The size the script states: the launch's world size (what Megatron-LM
// sees), else, without the scheduler, what its #SBATCH lines allocate. With
// the scheduler's job descriptor (the envelope) the descriptor is the
// allocation: #SBATCH lines are already in it, and the command line may
// have overridden them.
ScriptSize ScriptStated(const ScriptJob& job, bool scheduler) {
  ScriptSize size = job.launch_size;
  if (scheduler) return size;
  if (size.gpus == 0) return job.allocated;
  if (size.gpus_per_node == 0) size.gpus_per_node = job.allocated.gpus_per_node;
  return size;
}

}  // namespace

CheckPlan MakeCheckPlan(const CheckFlags& f, const JobEnvelope* envelope, const ScriptJob& job) {
  CheckPlan plan;
  static const JobEnvelope kNoEnvelope;
  const JobEnvelope& e = envelope != nullptr ? *envelope : kNoEnvelope;
  plan.notes = job.notes;
  plan.unresolved = job.unresolved;
  const std::string where =
      e.partition.empty() ? "" : absl::StrCat(" (partition ", e.partition, ")");
  if (!job.found) {
    plan.not_judged =
        "no Megatron-LM training launch (torchrun/python ... pretrain_gpt.py) "
        "found in the job";
    return plan;
  }
  if (job.skip && !f.ignore_skip) {
    plan.not_judged = "the job script says #OOMGUARD skip";
    return plan;
  }
  const ScriptSize stated = ScriptStated(job, envelope != nullptr);
  const std::string script_how = absl::StrCat(" (", stated.how, ")");
  auto sources = [&](uint32_t flag, uint32_t header, uint32_t directive, uint32_t script) {
    return std::vector<Source<uint32_t>>{{flag, "the command line", "the command line's"},
                                         {header, "the scheduler's allocation", "the scheduler's"},
                                         {directive, "#OOMGUARD", "#OOMGUARD"},
                                         {script, absl::StrCat("the job script", script_how),
                                          absl::StrCat("the job script's", script_how)}};
  };
  const auto gpu_counts = sources(f.gpus, e.gpus, job.num_gpus, stated.gpus);
  const uint32_t gpus = ValueAt(gpu_counts, Choose<uint32_t>("gpus", gpu_counts, plan.notes));
  const auto per_node_counts =
      sources(f.gpus_per_node, e.gpus_per_node, job.gpus_per_node, stated.gpus_per_node);
  const uint32_t per_node =
      ValueAt(per_node_counts, Choose<uint32_t>("gpus-per-node", per_node_counts, plan.notes));
  const std::vector<Source<std::string>> presets = {
      {f.preset, "the command line", "the command line's"}, {job.preset, "#OOMGUARD", "#OOMGUARD"}};
  const std::string preset = ValueAt(presets, Choose<std::string>("preset", presets, plan.notes));
  if (gpus == 0) {
    plan.not_judged = absl::StrCat("the job's GPU count is unknown", where,
                                   ": request GPUs (--gpus, --gres=gpu:N) or add "
                                   "#OOMGUARD gpus=N");
    return plan;
  }
  std::string gpu_name;
  uint64_t gpu_memory_bytes = 0;
  // The GPU type the #SBATCH lines name (the descriptor's, with the
  // scheduler).
  const std::string sbatch_gpu = envelope != nullptr ? "" : job.allocated_gpu_type;
  if (f.gpu_memory_gib > 0) {
    if (!e.gpu.empty() || !job.gpu.empty() || !sbatch_gpu.empty()) {
      plan.notes.push_back(absl::StrCat(
          "the GPU named by ",
          !e.gpu.empty() ? "the scheduler" : (!job.gpu.empty() ? "#OOMGUARD" : "#SBATCH"),
          " ignored: --gpu-memory-gib ", f.gpu_memory_gib, " given"));
    }
    gpu_memory_bytes =
        static_cast<uint64_t>(std::llround(f.gpu_memory_gib * static_cast<double>(1ull << 30)));
  } else {
    const std::vector<Source<std::string>> names = {
        {f.gpu, "the command line", "the command line's"},
        {e.gpu, "the scheduler's allocation", "the scheduler's"},
        {job.gpu, "#OOMGUARD", "#OOMGUARD"},
        {sbatch_gpu, "#SBATCH's GPU request", "#SBATCH's"}};
    const size_t from = Choose<std::string>("gpu", names, plan.notes);
    std::string gpu = ValueAt(names, from);
    // A GRES type is the scheduler's name for the GPU.
    plan.gpu_from_scheduler = from == 1 || from == 3;
    if (gpu.empty() && !e.default_gpu.empty()) {
      gpu = e.default_gpu;
      plan.gpu_from_scheduler = true;
    }
    if (gpu.empty()) {
      plan.not_judged = absl::StrCat("the GPU type is unknown", where,
                                     ": request a typed GPU (--gres=gpu:TYPE:N) or add "
                                     "#OOMGUARD gpu=NAME");
      return plan;
    }
    gpu_name = std::move(gpu);
  }
  // The submission's environment, then the script's exports, then --env.
  std::map<std::string, std::string> env = e.env;
  for (const auto& [k, v] : job.env) env[k] = v;
  for (const auto& [k, v] : f.env) env[k] = v;
  const std::optional<double> margin =
      f.safety_margin.has_value() ? f.safety_margin : job.safety_margin;
  if (f.safety_margin && job.safety_margin && *f.safety_margin != *job.safety_margin) {
    plan.notes.push_back(absl::StrCat("#OOMGUARD safety-margin=", *job.safety_margin,
                                      " ignored: the command line says ", *f.safety_margin));
  }
  plan.request = BuildCheckRequest(LaunchCheck{.megatron_args = job.megatron_args,
                                               .preset = preset,
                                               .num_gpus = gpus,
                                               .gpus_per_node = per_node,
                                               .env = std::move(env),
                                               .gpu_name = std::move(gpu_name),
                                               .gpu_memory_bytes = gpu_memory_bytes,
                                               .safety_margin = margin});
  plan.request.mutable_policy()->set_peak_bound(f.peak_bound);
  // The verdict, the summary and the steps are what it prints; the per-rank
  // report only with --json, which prints the whole response.
  plan.request.set_omit_report(!f.json);
  if (f.coverage) plan.request.mutable_policy()->set_upper_bound_coverage(*f.coverage);
  return plan;
}

}  // namespace oomguard
