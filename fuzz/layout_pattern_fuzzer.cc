// Fuzzes the two layer grammars on their own: the
// --pipeline-model-parallel-layout string (ExpandLayout, then PlaceLayers
// with layer counts and pipeline sizes taken from the input's last bytes) and
// the --moe-layer-freq list expression (ParseLayerPattern). The text is the
// front of the input, so seeds are plain layouts and patterns.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "estimator/pipeline_layout.h"
#include "fuzz/fuzz_checks.h"
#include "jobspec/layer_pattern.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oomguard;
  FuzzedDataProvider provider(data, size);
  // Integers come from the end of the input; a short seed leaves them 0.
  PlacementInput in;
  in.num_layers = provider.ConsumeIntegralInRange<int64_t>(0, 256);
  in.mtp_layers = provider.ConsumeIntegralInRange<int64_t>(0, 4);
  in.pp = provider.ConsumeIntegralInRange<int64_t>(1, 64);
  in.vpp = provider.ConsumeIntegralInRange<int64_t>(1, 8);
  in.first_stage_layers = provider.ConsumeIntegralInRange<int64_t>(-1, 64);
  in.last_stage_layers = provider.ConsumeIntegralInRange<int64_t>(-1, 64);
  in.account_for_embedding = provider.ConsumeBool();
  in.account_for_loss = provider.ConsumeBool();
  const std::string text = provider.ConsumeRemainingBytesAsString();

  absl::StatusOr<std::vector<std::string>> stages = ExpandLayout(text);
  fuzz::ExpectAnswerCode(stages.status(), "ExpandLayout");
  if (stages.ok()) {
    in.layout = text;
    absl::StatusOr<std::vector<StageContents>> placed = PlaceLayers(in);
    fuzz::ExpectAnswerCode(placed.status(), "PlaceLayers(layout)");
  }
  in.layout = "";
  fuzz::ExpectAnswerCode(PlaceLayers(in).status(), "PlaceLayers");

  absl::StatusOr<std::vector<uint32_t>> pattern = ParseLayerPattern(text);
  fuzz::ExpectAnswerCode(pattern.status(), "ParseLayerPattern");
  if (pattern.ok()) {
    fuzz::Expect(!pattern->empty() && pattern->size() <= 65536, "ParseLayerPattern size");
    for (uint32_t v : *pattern) fuzz::Expect(v <= 1, "ParseLayerPattern entry");
  }
  return 0;
}
