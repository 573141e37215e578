// Fuzzes the Megatron-LM argument line: the input is one line, split the way
// gRPC's MegatronJob.args is (SplitArgumentLine), read as a whole command
// line and as overrides of a preset (BuildJob -> ApplyMegatronArgs, the flag
// table, flag resolution, --moe-layer-freq patterns), then estimated on the
// smallest world size its parallelism allows, which parses
// --pipeline-model-parallel-layout. Every word also goes through
// MayChangeMemory, as the hooks use it on unresolved words.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_checks.h"
#include "jobspec/job_builder.h"
#include "jobspec/megatron_args.h"
#include "jobspec/presets.h"

namespace oomguard::fuzz {
namespace {

void BuildAndEstimate(JobInputs inputs) {
  std::vector<std::string> notes;
  inputs.num_gpus = 1;
  absl::StatusOr<v1::JobSpec> job = BuildJob(inputs, &notes);
  ExpectAnswerCode(job.status(), "BuildJob");
  if (!job.ok()) return;
  const uint32_t world = WorldSizeFor(*job, 1);
  if (world == 0) return;
  job->mutable_parallelism()->set_num_gpus(world);
  (void)EstimateChecked(*job, /*module_tree=*/true);
}

}  // namespace
}  // namespace oomguard::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oomguard;
  const std::string line(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::vector<std::string>> words = SplitArgumentLine(line);
  fuzz::ExpectAnswerCode(words.status(), "SplitArgumentLine");
  if (!words.ok()) return 0;
  for (const std::string& word : *words) (void)MayChangeMemory(word);

  fuzz::BuildAndEstimate(JobInputs{.megatron_args = *words});
  const std::vector<PresetInfo>& presets = ListPresets();
  fuzz::BuildAndEstimate(
      JobInputs{.preset = presets[size % presets.size()].name, .megatron_args = *words});
  return 0;
}
