// Command line, scheduler and job script -> the CheckRequest, by the rule of
// jobscript/job_sources.h (see check_plan.h).
#include "tools/check_plan.h"

#include <cmath>
#include <cstdint>
#include <optional>

#include "absl/strings/str_cat.h"
#include "admission/rl_admission.h"
#include "jobscript/check_request.h"
#include "jobscript/job_sources.h"

namespace oomguard {

namespace {

// The command line's policy (--peak-bound, --coverage, --judge-unmodelled),
// and the report only with --json.
void SetCommandLinePolicy(const CheckFlags& f, v1::CheckRequest* request) {
  request->mutable_policy()->set_peak_bound(f.peak_bound);
  // The verdict, the summary and the steps are what it prints; the per-rank
  // report only with --json, which prints the whole response.
  request->set_omit_report(!f.json);
  if (f.coverage) request->mutable_policy()->set_upper_bound_coverage(*f.coverage);
  if (f.judge_unmodelled) request->mutable_policy()->set_judge_unmodelled(*f.judge_unmodelled);
}

}  // namespace

CheckPlan MakeCheckPlan(const CheckFlags& f, const JobEnvelope* envelope, const ScriptJob& job) {
  CheckPlan plan;
  plan.notes = job.notes;
  plan.unresolved = job.unresolved;
  const std::string where = envelope == nullptr || envelope->partition.empty()
                                ? ""
                                : absl::StrCat(" (partition ", envelope->partition, ")");
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
  JobSources sources = ScriptSources(job);
  sources.caller = StatedValues{.gpus = f.gpus,
                                .gpus_per_node = f.gpus_per_node,
                                .gpu = f.gpu,
                                .preset = f.preset,
                                .safety_margin = f.safety_margin,
                                .env = f.env};
  sources.caller_name = "the command line";
  if (f.gpu_memory_gib > 0) {
    sources.caller_gpu_memory_bytes =
        static_cast<uint64_t>(std::llround(f.gpu_memory_gib * static_cast<double>(1ull << 30)));
  }
  if (envelope != nullptr) {
    sources.scheduler = StatedValues{.gpus = envelope->gpus,
                                     .gpus_per_node = envelope->gpus_per_node,
                                     .gpu = envelope->gpu,
                                     .preset = "",
                                     .safety_margin = std::nullopt,
                                     .env = envelope->env};
    sources.default_gpu = envelope->default_gpu;
  }
  ChosenLaunch chosen = ChooseLaunch(sources, job.megatron_args, job.megatron_arg_sources);
  plan.notes.insert(plan.notes.end(), chosen.notes.begin(), chosen.notes.end());
  if (chosen.launch.num_gpus == 0) {
    plan.not_judged = absl::StrCat("the job's GPU count is unknown", where,
                                   ": request GPUs (--gpus, --gres=gpu:N) or add "
                                   "#OOMGUARD gpus=N");
    return plan;
  }
  if (chosen.gpu_from == JobValueSource::kNone) {
    plan.not_judged = absl::StrCat("the GPU type is unknown", where,
                                   ": request a typed GPU (--gres=gpu:TYPE:N) or add "
                                   "#OOMGUARD gpu=NAME");
    return plan;
  }
  // What the scheduler allocates (a GRES type is the scheduler's name for
  // the GPU), not what the user named.
  plan.gpu_from_scheduler = chosen.gpu_from == JobValueSource::kScheduler ||
                            chosen.gpu_from == JobValueSource::kRequest ||
                            chosen.gpu_from == JobValueSource::kDefault;
  plan.request = BuildCheckRequest(chosen.launch);
  SetCommandLinePolicy(f, &plan.request);
  return plan;
}

CheckPlan MakeRlCheckPlan(const CheckFlags& f, std::string config_yaml) {
  CheckPlan plan;
  v1::JobSource* source = plan.request.mutable_job();
  v1::RlJob* rl = source->mutable_rl();
  rl->set_config_yaml(std::move(config_yaml));
  if (!f.preset.empty()) rl->set_preset(f.preset);
  rl->set_num_gpus(f.gpus);
  source->mutable_env()->insert(f.env.begin(), f.env.end());
  source->set_gpus_per_node(f.gpus_per_node);
  if (!f.gpu.empty()) {
    plan.request.set_gpu_name(f.gpu);
  } else if (f.gpu_memory_gib > 0) {
    plan.request.set_gpu_memory_bytes(
        static_cast<uint64_t>(std::llround(f.gpu_memory_gib * static_cast<double>(1ull << 30))));
  } else {
    plan.request.set_gpu_name(kDefaultRlGpu);
    plan.notes.push_back(absl::StrCat("no --gpu given: the RL step is checked on ", kDefaultRlGpu));
  }
  if (f.safety_margin) plan.request.mutable_policy()->set_safety_margin(*f.safety_margin);
  SetCommandLinePolicy(f, &plan.request);
  return plan;
}

}  // namespace oomguard
