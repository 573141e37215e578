// Speed of one estimate: DeepSeek-V3 on 256 GPUs (TP1 PP8 VPP4 EP32, full
// recompute, layout Et|(tt|)*30mL, 8 ranks reported). Goal: microseconds.
#include <benchmark/benchmark.h>

#include "admission/admission.h"
#include "estimator/estimator.h"
#include "admission/gpu_catalog.h"
#include "jobspec/job_builder.h"
#include "jobspec/megatron_args.h"

namespace {

oomguard::v1::JobSpec DeepSeekV3Job() {
  oomguard::JobSource src;
  src.preset = "deepseek-v3";
  src.num_gpus = 256;
  src.megatron_args = {"--pipeline-model-parallel-size",
                       "8",
                       "--expert-model-parallel-size",
                       "32",
                       "--expert-tensor-parallel-size",
                       "1",
                       "--pipeline-model-parallel-layout",
                       "Et|(tt|)*30mL",
                       "--seq-length",
                       "4096",
                       "--micro-batch-size",
                       "1",
                       "--global-batch-size",
                       "1024",
                       "--recompute-granularity",
                       "full",
                       "--recompute-method",
                       "uniform",
                       "--recompute-num-layers",
                       "1",
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

// The admission path the service's Check runs without its response cache:
// the argument line of bench/load/make_requests.py (DeepSeek-V3 on 1024
// GPUs, TP2 PP16 VPP2 EP64, 256 micro-batches) split, built on the preset,
// estimated, and re-estimated for every recommendation, on H100-SXM-80GB.
void BM_CheckDeepSeekV3FromArgumentLine(benchmark::State& state) {
  const std::string line =
      "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 16 "
      "--expert-model-parallel-size 64 --expert-tensor-parallel-size 1 --sequence-parallel "
      "--pipeline-model-parallel-layout 'Et|(tt|)*30mL' --seq-length 4096 "
      "--micro-batch-size 1 --global-batch-size 8192 --use-distributed-optimizer "
      "--recompute-granularity selective --recompute-modules mla_up_proj layernorm moe_act "
      "--moe-grouped-gemm --bf16 --lr 2.2e-4 --train-iters 500000 "
      "--data-path /lustre/data/dsv3_text_document --save /lustre/ckpt/dsv3";
  const auto gpu = oomguard::GpuCatalog::Builtin().Find("H100-SXM-80GB");
  if (!gpu.ok()) std::abort();
  oomguard::AdmissionOptions options;
  options.safety_margin = 0.05;
  for (auto _ : state) {
    oomguard::JobSource src;
    src.preset = "deepseek-v3";
    src.num_gpus = 1024;
    auto words = oomguard::SplitArgumentLine(line);
    if (!words.ok()) std::abort();
    src.megatron_args = *std::move(words);
    auto job = oomguard::BuildJob(src, nullptr);
    if (!job.ok()) std::abort();
    auto response = oomguard::CheckJob(*job, *gpu, options);
    if (!response.ok()) std::abort();
    benchmark::DoNotOptimize(response);
  }
}
BENCHMARK(BM_CheckDeepSeekV3FromArgumentLine);

}  // namespace

BENCHMARK_MAIN();
