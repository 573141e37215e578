// Fuzzes the RL job reader: the input is read as an RL config's YAML (veRL's
// or NeMo-RL's, recognised by its keys) and as an argv line (slime's or
// Megatron-LM's RL loop, split as MegatronJob.args is), each through
// BuildRlJob with a preset and a world size, so that a config naming no
// preset's model still reaches the framework's keys. Every refusal must be
// an answer code (fuzz_checks.h); what is read must be a whole RL job.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_checks.h"
#include "jobspec/rl_job_builder.h"
#include "jobspec/shell_words.h"

namespace oomguard::fuzz {
namespace {

void Read(v1::RlJob job) {
  for (const bool preset : {false, true}) {
    if (preset) {
      job.set_preset("qwen3-8b");
      job.set_num_gpus(8);
    }
    std::vector<std::string> notes;
    absl::StatusOr<v1::RlJobSpec> spec = BuildRlJob(job, &notes);
    ExpectAnswerCode(spec.status(), "BuildRlJob");
    if (!spec.ok()) continue;
    Expect(spec->framework() != v1::RL_FRAMEWORK_UNSPECIFIED, "an RL job without a framework");
    Expect(spec->actor().training().micro_batch_size() == 1, "an RL actor's micro-batch is not 1");
    Expect(spec->actor().has_model(), "an RL actor without a model");
  }
}

}  // namespace
}  // namespace oomguard::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oomguard;
  const std::string text(reinterpret_cast<const char*>(data), size);
  v1::RlJob yaml;
  yaml.set_config_yaml(text);
  fuzz::Read(yaml);
  absl::StatusOr<std::vector<std::string>> words = SplitArgumentLine(text);
  fuzz::ExpectAnswerCode(words.status(), "SplitArgumentLine");
  if (words.ok() && !words->empty()) {
    v1::RlJob argv;
    for (const std::string& word : *words) argv.add_argv(word);
    fuzz::Read(argv);
  }
  return 0;
}
