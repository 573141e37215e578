// Fuzzes the job-script reader: the input is a Slurm batch script
// (ParseJobScript: lexer, variables, directives, launch finder) and, split at
// NUL bytes, a container's command words (ParseCommandWords). A launch found
// becomes the CheckRequest the hooks send (BuildCheckRequest) and is resolved
// as the service would (ResolveJobSource), without estimating.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "fuzz/fuzz_checks.h"
#include "jobscript/check_request.h"
#include "jobscript/job_script.h"
#include "jobspec/megatron_args.h"
#include "service/request_resolution.h"

namespace oomguard::fuzz {
namespace {

void Resolve(const absl::StatusOr<ScriptJob>& script, const char* where) {
  ExpectAnswerCode(script.status(), where);
  if (!script.ok() || !script->found) return;
  for (const std::string& word : script->unresolved) (void)MayChangeMemory(word);
  const v1::CheckRequest request =
      BuildCheckRequest(LaunchCheck{.megatron_args = script->megatron_args,
                                    .preset = script->preset,
                                    .num_gpus = script->num_gpus > 0 ? script->num_gpus : 8,
                                    .gpus_per_node = script->gpus_per_node,
                                    .env = script->env,
                                    .gpu_name = script->gpu.empty() ? "h100" : script->gpu,
                                    .safety_margin = script->safety_margin});
  ExpectAnswerCode(service::ResolveJobSource(request.job(), "job").status(), "ResolveJobSource");
}

}  // namespace
}  // namespace oomguard::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oomguard;
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::Resolve(ParseJobScript(text), "ParseJobScript");
  const std::vector<std::string> words = absl::StrSplit(text, '\0');
  fuzz::Resolve(ParseCommandWords(words), "ParseCommandWords");
  return 0;
}
