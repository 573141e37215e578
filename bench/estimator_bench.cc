// Speed of one estimate: DeepSeek-V3 on 256 GPUs (TP1 PP8 VPP4 EP32, full
// recompute, layout Et|(tt|)*30mL, 8 ranks reported). Goal: microseconds.
#include <benchmark/benchmark.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "admission/admission.h"
#include "admission/gpu_catalog.h"
#include "estimator/estimator.h"
#include "jobspec/job_builder.h"
#include "jobspec/megatron_args.h"

namespace {

// The words of examples/`name` (the shipped example jobs).
std::vector<std::string> ExampleArgs(const std::string& name) {
  std::ifstream in(std::string(OOMGUARD_SOURCE_DIR) + "/examples/" + name);
  if (!in) std::abort();
  auto words = oomguard::SplitArgumentLine(std::string(std::istreambuf_iterator<char>(in), {}));
  if (!words.ok()) std::abort();
  return *std::move(words);
}

oomguard::v1::JobSpec DeepSeekV3Job() {
  oomguard::JobInputs src;
  src.preset = "deepseek-v3";
  src.num_gpus = 256;
  src.megatron_args = ExampleArgs("deepseek_v3_256gpu.args");
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
// examples/deepseek_v3_1024gpu.args (DeepSeek-V3 on 1024 GPUs, TP2 PP16 VPP2
// EP64, 256 micro-batches, the job bench/load sends) built on the preset,
// estimated, and re-estimated for every recommendation, on H100-SXM-80GB.
// Arg 1: with the 16-rank report (the web page); 0: without it
// (CheckRequest.omit_report, what the admission hooks ask for).
void BM_CheckDeepSeekV3(benchmark::State& state) {
  const std::vector<std::string> words = ExampleArgs("deepseek_v3_1024gpu.args");
  const auto gpu = oomguard::GpuCatalog::Builtin().Find("H100-SXM-80GB");
  if (!gpu.ok()) std::abort();
  oomguard::AdmissionOptions options;
  options.safety_margin = 0.05;
  options.with_report = state.range(0) != 0;
  for (auto _ : state) {
    oomguard::JobInputs src;
    src.preset = "deepseek-v3";
    src.num_gpus = 1024;
    src.megatron_args = words;
    auto job = oomguard::BuildJob(src, nullptr);
    if (!job.ok()) std::abort();
    auto response = oomguard::CheckJob(*job, *gpu, options);
    if (!response.ok()) std::abort();
    benchmark::DoNotOptimize(response);
  }
}
BENCHMARK(BM_CheckDeepSeekV3)->ArgName("report")->Arg(1)->Arg(0);

}  // namespace

BENCHMARK_MAIN();
