// A pasted job script -> CheckRequest (see script_check.h).
#include "http/script_check.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "jobscript/check_request.h"
#include "jobscript/job_script.h"
#include "service/status_mapping.h"

namespace oomguard::http {
namespace {

absl::Status BadField(absl::string_view field, absl::string_view message) {
  return service::WithBadField(absl::InvalidArgumentError(absl::StrCat(field, ": ", message)),
                               field);
}

absl::StatusOr<std::string> StringField(const nlohmann::json& body, const char* field) {
  if (!body.contains(field) || body[field].is_null()) return std::string();
  if (!body[field].is_string()) return BadField(field, "must be a string");
  return body[field].get<std::string>();
}

absl::StatusOr<uint32_t> CountField(const nlohmann::json& body, const char* field) {
  if (!body.contains(field) || body[field].is_null()) return 0u;
  const nlohmann::json& value = body[field];
  if (!value.is_number_unsigned() || value.get<uint64_t>() > UINT32_MAX) {
    return BadField(field, absl::StrCat(value.dump(), " is not a count in [0, 2^32)"));
  }
  return value.get<uint32_t>();
}

}  // namespace

absl::StatusOr<ScriptCheck> ReadScriptCheck(absl::string_view text) {
  const nlohmann::json body = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) {
    return absl::InvalidArgumentError(
        "request body: not a JSON object {\"script\": ..., \"gpu\": ..., \"gpus\": ...}");
  }
  for (const auto& [key, value] : body.items()) {
    if (key != "script" && key != "gpu" && key != "gpus" && key != "gpusPerNode" &&
        key != "preset") {
      return BadField(key, "unknown field (script, gpu, gpus, gpusPerNode, preset)");
    }
  }
  OOMGUARD_ASSIGN_OR_RETURN(const std::string script, StringField(body, "script"));
  OOMGUARD_ASSIGN_OR_RETURN(const std::string gpu, StringField(body, "gpu"));
  OOMGUARD_ASSIGN_OR_RETURN(const std::string preset, StringField(body, "preset"));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t gpus, CountField(body, "gpus"));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t gpus_per_node, CountField(body, "gpusPerNode"));
  if (script.empty()) return BadField("script", "missing: paste the job script");

  absl::StatusOr<ScriptJob> job = ParseJobScript(script);
  if (!job.ok()) return BadField("script", job.status().message());
  if (!job->found) {
    return BadField("script",
                    "no Megatron-LM training launch (torchrun/python ... pretrain_gpt.py) found");
  }
  LaunchCheck launch{.megatron_args = job->megatron_args,
                     .preset = job->preset.empty() ? preset : job->preset,
                     .num_gpus = job->num_gpus > 0 ? job->num_gpus : gpus,
                     .gpus_per_node = job->gpus_per_node > 0 ? job->gpus_per_node : gpus_per_node,
                     .env = job->env,
                     .gpu_name = job->gpu.empty() ? gpu : job->gpu,
                     .gpu_memory_bytes = 0,
                     .safety_margin = job->safety_margin};
  if (launch.num_gpus == 0) {
    return BadField("gpus",
                    "the job's GPU count is unknown: the script does not say it (#OOMGUARD "
                    "gpus=N) and no GPU count was given");
  }
  if (launch.gpu_name.empty()) {
    return BadField("gpu",
                    "the GPU type is unknown: the script does not say it (#OOMGUARD gpu=NAME) "
                    "and no GPU was chosen");
  }
  ScriptCheck check{.request = BuildCheckRequest(launch), .notes = job->notes};
  for (const std::string& word : job->unresolved) {
    check.notes.push_back(absl::StrCat("left out, only known when the job runs: ", word));
  }
  return check;
}

}  // namespace oomguard::http
