// A pasted job script -> CheckRequest (see script_check.h).
#include "http/script_check.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "jobscript/check_request.h"
#include "jobscript/job_script.h"
#include "jobscript/job_sources.h"
#include "service/status_mapping.h"

namespace oomguard::http {
namespace {

absl::Status BadField(absl::string_view field, absl::string_view message,
                      absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  return service::WithBadField(absl::Status(code, absl::StrCat(field, ": ", message)), field);
}

}  // namespace

absl::StatusOr<ScriptCheck> ReadScriptCheck(const v1::CheckScriptRequest& body,
                                            const Deadline& deadline) {
  if (body.script().empty()) return BadField("script", "missing: paste the job script");
  absl::StatusOr<ScriptJob> job = ParseJobScript(body.script(), deadline);
  if (!job.ok()) return BadField("script", job.status().message(), job.status().code());
  if (!job->found) {
    return BadField("script",
                    "no Megatron-LM training launch (torchrun/python ... pretrain_gpt.py) found");
  }
  JobSources sources = ScriptSources(*job);
  sources.caller =
      StatedValues{.gpus = body.gpus(),
                   .gpus_per_node = body.gpus_per_node(),
                   .gpu = body.gpu(),
                   .preset = body.preset(),
                   .safety_margin = body.policy().has_safety_margin()
                                        ? std::optional<double>(body.policy().safety_margin())
                                        : std::nullopt,
                   .env = {}};
  sources.caller_name = "the request";
  ChosenLaunch chosen = ChooseLaunch(sources, job->megatron_args, job->megatron_arg_sources);
  if (chosen.launch.num_gpus == 0) {
    return BadField("gpus",
                    "the job's GPU count is unknown: the script does not state it (#OOMGUARD "
                    "gpus=N, a launch line of known size, #SBATCH GPUs) and no GPU count was "
                    "given");
  }
  if (chosen.launch.gpu_name.empty()) {
    return BadField("gpu",
                    "the GPU type is unknown: the script does not state it (#OOMGUARD gpu=NAME, "
                    "#SBATCH --gres=gpu:TYPE:N) and no GPU was chosen");
  }
  ScriptCheck check{.request = BuildCheckRequest(chosen.launch), .notes = job->notes};
  if (body.has_policy()) {
    // The rest of the policy as given; the safety margin went through the
    // rule.
    v1::Policy policy = body.policy();
    policy.clear_safety_margin();
    check.request.mutable_policy()->MergeFrom(policy);
  }
  for (const std::string& word : job->unresolved) {
    check.notes.push_back(absl::StrCat("left out, only known when the job runs: ", word));
  }
  for (std::string& note : chosen.notes) check.notes.push_back(std::move(note));
  return check;
}

}  // namespace oomguard::http
