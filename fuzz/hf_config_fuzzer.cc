// Fuzzes the HuggingFace config.json reader: the input is the file's text
// (ReadConfigJson's bounds, then ParseHfConfig's families and keys). A model
// it accepts is estimated with the job builder's defaults on one GPU, so
// that whatever a config can express reaches the estimator's validation.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_checks.h"
#include "jobspec/config_json.h"
#include "jobspec/hf_config.h"
#include "jobspec/job_builder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oomguard;
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<nlohmann::json> json = ReadConfigJson(text);
  fuzz::ExpectAnswerCode(json.status(), "ReadConfigJson");
  absl::StatusOr<v1::ModelSpec> model = ParseHfConfig(text);
  fuzz::ExpectAnswerCode(model.status(), "ParseHfConfig");
  fuzz::Expect(json.ok() || !model.ok(), "ParseHfConfig accepted text ReadConfigJson refuses");
  if (!model.ok()) return 0;

  std::vector<std::string> notes;
  absl::StatusOr<v1::JobSpec> job =
      BuildJob(JobInputs{.hf_config_json = text, .num_gpus = 1}, &notes);
  fuzz::ExpectAnswerCode(job.status(), "BuildJob");
  if (job.ok()) (void)fuzz::EstimateChecked(*job);
  return 0;
}
