// Fuzzes the job-script reader: the input is a Slurm batch script
// (ParseJobScript: lexer, variables, directives, launch finder) and, split at
// NUL bytes, a container's command words (ParseCommandWords). A launch found
// becomes the CheckRequest the hooks send (ChooseLaunch, BuildCheckRequest)
// and is resolved as the service would (ResolveJobSource), without
// estimating. The seed corpus holds issue 25's array-doubling script and
// 32,768-pair data blend (fuzz/seed_corpus.py), so that the replay covers the
// reader's work bound.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "fuzz/fuzz_checks.h"
#include "jobscript/check_request.h"
#include "jobscript/job_script.h"
#include "jobscript/job_sources.h"
#include "jobspec/megatron_args.h"
#include "service/request_resolution.h"

namespace oomguard::fuzz {
namespace {

void Resolve(const absl::StatusOr<ScriptJob>& script, const char* where) {
  // A script past the reader's bounds (its expansion work, a command's words)
  // is one it cannot read: RESOURCE_EXHAUSTED, reached in bounded work.
  if (!absl::IsResourceExhausted(script.status())) ExpectAnswerCode(script.status(), where);
  if (!script.ok() || !script->found) return;
  for (const std::string& word : script->unresolved) (void)MayChangeMemory(word);
  // The script's own sources through the hooks' precedence rule; 8 GPUs
  // and an H100 where it states none.
  JobSources sources = ScriptSources(*script);
  sources.default_gpu = "h100";
  ChosenLaunch chosen = ChooseLaunch(sources, script->megatron_args, script->megatron_arg_sources);
  if (chosen.launch.num_gpus == 0) chosen.launch.num_gpus = 8;
  const v1::CheckRequest request = BuildCheckRequest(chosen.launch);
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
