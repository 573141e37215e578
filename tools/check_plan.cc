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

// `flag` (command line), `header` (scheduler) and `directive` (script):
// the first that is set, with a note when it overrides a different one.
template <typename T>
T Choose(absl::string_view what, const T& flag, const T& header, const T& directive,
         std::vector<std::string>& notes) {
  const T unset{};
  auto note = [&](const T& winner, absl::string_view from, const T& loser,
                  absl::string_view loser_from) {
    if (loser != unset && loser != winner) {
      notes.push_back(
          absl::StrCat(loser_from, " ", what, "=", loser, " ignored: ", from, " says ", winner));
    }
  };
  if (flag != unset) {
    note(flag, "the command line", header, "the scheduler's");
    note(flag, "the command line", directive, "#OOMGUARD");
    return flag;
  }
  if (header != unset) {
    note(header, "the scheduler's allocation", directive, "#OOMGUARD");
    return header;
  }
  return directive;
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
  const uint32_t gpus = Choose<uint32_t>("gpus", f.gpus, e.gpus, job.num_gpus, plan.notes);
  const uint32_t per_node = Choose<uint32_t>("gpus-per-node", f.gpus_per_node, e.gpus_per_node,
                                             job.gpus_per_node, plan.notes);
  const std::string preset = Choose<std::string>("preset", f.preset, "", job.preset, plan.notes);
  if (gpus == 0) {
    plan.not_judged = absl::StrCat("the job's GPU count is unknown", where,
                                   ": request GPUs (--gpus, --gres=gpu:N) or add "
                                   "#OOMGUARD gpus=N");
    return plan;
  }
  std::string gpu_name;
  uint64_t gpu_memory_bytes = 0;
  if (f.gpu_memory_gib > 0) {
    if (!e.gpu.empty() || !job.gpu.empty()) {
      plan.notes.push_back(absl::StrCat("the GPU named by ",
                                        e.gpu.empty() ? "#OOMGUARD" : "the scheduler",
                                        " ignored: --gpu-memory-gib ", f.gpu_memory_gib, " given"));
    }
    gpu_memory_bytes =
        static_cast<uint64_t>(std::llround(f.gpu_memory_gib * static_cast<double>(1ull << 30)));
  } else {
    std::string gpu = Choose<std::string>("gpu", f.gpu, e.gpu, job.gpu, plan.notes);
    plan.gpu_from_scheduler = f.gpu.empty() && !e.gpu.empty();
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
  return plan;
}

}  // namespace oomguard
