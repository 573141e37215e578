// Speed of one estimate: DeepSeek-V3 on 256 GPUs (TP1 PP8 VPP4 EP32, full
// recompute, layout Et|(tt|)*30mL, 8 ranks reported). Goal: microseconds.
#include <benchmark/benchmark.h>

#include "estimator/estimator.h"
#include "estimator/job_builder.h"

namespace {

oomguard::v1::JobSpec DeepSeekV3Job() {
  oomguard::JobSource src;
  src.preset = "deepseek-v3";
  src.num_gpus = 256;
  src.megatron_args = {"--pipeline-model-parallel-size", "8", "--expert-model-parallel-size", "32",
                       "--expert-tensor-parallel-size", "1", "--pipeline-model-parallel-layout",
                       "Et|(tt|)*30mL", "--seq-length", "4096", "--micro-batch-size", "1",
                       "--global-batch-size", "1024", "--recompute-granularity", "full",
                       "--recompute-method", "uniform", "--recompute-num-layers", "1",
                       "--use-distributed-optimizer"};
  auto job = oomguard::BuildJob(src, nullptr);
  if (!job.ok()) std::abort();
  return *job;
}

void BM_EstimateDeepSeekV3(benchmark::State& state) {
  const oomguard::v1::JobSpec job = DeepSeekV3Job();
  for (auto _ : state) {
    auto report = oomguard::Estimate(job);
    benchmark::DoNotOptimize(report);
  }
}
BENCHMARK(BM_EstimateDeepSeekV3);

void BM_EstimateDeepSeekV3WithTree(benchmark::State& state) {
  const oomguard::v1::JobSpec job = DeepSeekV3Job();
  oomguard::EstimateOptions options;
  options.module_tree = true;
  for (auto _ : state) {
    auto report = oomguard::Estimate(job, options);
    benchmark::DoNotOptimize(report);
  }
}
BENCHMARK(BM_EstimateDeepSeekV3WithTree);

}  // namespace

BENCHMARK_MAIN();
