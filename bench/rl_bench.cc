// Speed of an RL step's answer: seed 000's story, Qwen3-30B-A3B GRPO with
// veRL on 32 x H100-SXM-80GB, prompt 2048 + response 8192
// (examples/rl/verl_qwen3_30b_a3b.yaml). Goal: the whole Check, from the
// config's text to the verdict with every recommendation re-estimated,
// well under 50 ms.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "admission/gpu_catalog.h"
#include "admission/rl_admission.h"
#include "estimator/rl_step.h"
#include "jobspec/rl_job_builder.h"

namespace {

oomguard::v1::RlJob SeedStoryJob() {
  std::ifstream in(std::string(OOMGUARD_SOURCE_DIR) + "/examples/rl/verl_qwen3_30b_a3b.yaml");
  if (!in) std::abort();
  oomguard::v1::RlJob job;
  job.set_config_yaml(std::string(std::istreambuf_iterator<char>(in), {}));
  return job;
}

oomguard::v1::GpuSpec H100() {
  auto gpu = oomguard::GpuCatalog::Builtin().Find("H100-SXM-80GB");
  if (!gpu.ok()) std::abort();
  return *gpu;
}

// Reading the YAML into an RlJobSpec (the model from the config's path).
void BM_ReadVerlConfig(benchmark::State& state) {
  const oomguard::v1::RlJob job = SeedStoryJob();
  for (auto _ : state) {
    auto spec = oomguard::BuildRlJob(job, nullptr);
    if (!spec.ok()) std::abort();
    benchmark::DoNotOptimize(spec);
  }
}
BENCHMARK(BM_ReadVerlConfig);

// Every phase of the step, with the actor update's full report.
void BM_EstimateRlStepSeedStory(benchmark::State& state) {
  auto spec = oomguard::BuildRlJob(SeedStoryJob(), nullptr);
  if (!spec.ok()) std::abort();
  const oomguard::v1::GpuSpec gpu = H100();
  const oomguard::v1::RlJobSpec job = oomguard::RlJobOnGpu(*spec, gpu);
  oomguard::RlStepOptions options;
  options.gpu_memory_bytes = gpu.memory_bytes();
  options.gpu_name = gpu.name();
  for (auto _ : state) {
    auto report = oomguard::EstimateRlStep(job, options);
    if (!report.ok()) std::abort();
    benchmark::DoNotOptimize(report);
  }
}
BENCHMARK(BM_EstimateRlStepSeedStory);

// What the service's Check does without its caches: read, estimate, judge,
// and re-estimate every recommendation. Arg 1: with the actor's report; 0:
// without (CheckRequest.omit_report).
void BM_CheckRlSeedStory(benchmark::State& state) {
  const oomguard::v1::RlJob job = SeedStoryJob();
  const oomguard::v1::GpuSpec gpu = H100();
  oomguard::AdmissionOptions options;
  options.with_report = state.range(0) != 0;
  for (auto _ : state) {
    auto spec = oomguard::BuildRlJob(job, nullptr);
    if (!spec.ok()) std::abort();
    auto response = oomguard::CheckRlJob(*spec, gpu, options);
    if (!response.ok()) std::abort();
    benchmark::DoNotOptimize(response);
  }
}
BENCHMARK(BM_CheckRlSeedStory)->ArgName("report")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
