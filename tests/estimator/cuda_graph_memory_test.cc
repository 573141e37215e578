// What CUDA graphs keep beyond eager execution (estimator/cuda_graph_memory.h),
// against hand-derived byte counts: the report's "cuda_graphs" (buffers) and
// "cuda_graph_pool" (the pool eager work cannot reuse) items.
#include "estimator/cuda_graph_memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "estimator/estimator.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

using testing::JobFromArgs;

constexpr double kMiB = 1024.0 * 1024.0;

// Bytes of the named overhead on `rank`; -1 when it is not reported.
double OverheadBytes(const v1::RankReport& rank, const std::string& name) {
  for (const v1::Overhead& o : rank.overheads()) {
    if (o.name() == name) return static_cast<double>(o.bytes());
  }
  return -1;
}

v1::EstimateReport EstimateOf(const v1::JobSpec& job) {
  absl::StatusOr<v1::EstimateReport> report = Estimate(job);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *report : v1::EstimateReport();
}

std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Qwen3-30B-A3B (48 MoE layers, hidden 2048, 128 experts, no shared
// experts) on 16 GPUs at EP 16, TP 1, seq 4096, micro-batch 1, with NVIDIA's
// scoped TE graphs. Without PP one micro-batch is captured; each of the 48
// graphs starts at attention, so it keeps a [1, 1, 4096, 4096] bool mask
// (16 MiB); its hidden-state input is a copy of the eager MoE output, which
// it replaces. The router-scoped graphs share one set of output gradients:
// residual and pre-MLP norm output ([4096, 1, 2048] bf16, 16 MiB each) and
// the fp32 probs [4096, 128] (2 MiB). 48 x 16 + 34 = 802 MiB, where the old
// rule (half the layers' activations) said 10.6 GiB.
TEST(CudaGraphMemory, ScopedTeGraphsOfQwen3MoeKeepTheirMasksAndOneGradientSet) {
  const v1::JobSpec job = JobFromArgs(
      {"--seq-length", "4096", "--micro-batch-size", "1", "--global-batch-size", "1024",
       "--expert-model-parallel-size", "16", "--bf16", "--use-distributed-optimizer",
       "--moe-token-dispatcher-type", "alltoall", "--moe-grouped-gemm", "--cuda-graph-impl",
       "transformer_engine", "--cuda-graph-scope", "attn", "moe_router", "moe_preprocess"},
      16, "qwen3-30b-a3b");
  const v1::EstimateReport report = EstimateOf(job);
  ASSERT_EQ(report.ranks_size(), 1);
  const v1::RankReport& rank = report.ranks(0);
  EXPECT_EQ(OverheadBytes(rank, "cuda_graphs"), (48 * 16 + 34) * kMiB);
  // Activations dominate the optimizer step: the pool adds the graphed
  // backward working set beside the eager one.
  EXPECT_EQ(OverheadBytes(rank, "cuda_graph_pool"), static_cast<double>(rank.transient_bytes()));
}

// Llama-3 8B (32 layers, hidden 4096) at TP 2 without SP, seq 8192,
// micro-batch 1 on 8 GPUs. Whole-layer TE graphs: 32 masks of 8192 x 8192
// bytes (64 MiB); each layer but the first takes a copy of the previous
// graph's static output [8192, 1, 4096] bf16 (64 MiB); one output gradient
// of that shape. 32 x 64 + 31 x 64 + 64 = 4096 MiB.
TEST(CudaGraphMemory, WholeLayerTeGraphsCopyEachGraphOutputIntoTheNextInput) {
  const std::vector<std::string> llama = {"--seq-length",
                                          "8192",
                                          "--micro-batch-size",
                                          "1",
                                          "--global-batch-size",
                                          "128",
                                          "--tensor-model-parallel-size",
                                          "2",
                                          "--bf16",
                                          "--use-distributed-optimizer"};
  const v1::EstimateReport te = EstimateOf(
      JobFromArgs(With(llama, {"--cuda-graph-impl", "transformer_engine"}), 8, "llama3-8b"));
  EXPECT_EQ(OverheadBytes(te.ranks(0), "cuda_graphs"), 4096 * kMiB);

  // Local graphs alias one graph's output buffer as the next one's input
  // and hold their buffers in the pool: no buffers, only the pool's
  // backward working set.
  const v1::EstimateReport local =
      EstimateOf(JobFromArgs(With(llama, {"--cuda-graph-impl", "local"}), 8, "llama3-8b"));
  EXPECT_EQ(OverheadBytes(local.ranks(0), "cuda_graphs"), -1);
  EXPECT_EQ(OverheadBytes(local.ranks(0), "cuda_graph_pool"),
            static_cast<double>(local.ranks(0).transient_bytes()));

  // The full-iteration graph keeps the 32 micro-batches of the iteration
  // (128 / DP 4): tokens, labels, position ids (int64) and loss mask (fp32),
  // 8192 x 28 bytes, and the data loader's [1, 1, 8192, 8192] mask.
  const double batch = 8192.0 * 28 + 8192.0 * 8192;
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--cuda-graph-impl", "full_iteration"},
        // Megatron-LM's deprecated spelling, migrated by validate_args.
        std::vector<std::string>{"--cuda-graph-impl", "local", "--cuda-graph-scope",
                                 "full_iteration"}}) {
    const v1::EstimateReport full = EstimateOf(JobFromArgs(With(llama, flags), 8, "llama3-8b"));
    EXPECT_EQ(OverheadBytes(full.ranks(0), "cuda_graphs"), 32 * batch);
  }
  const v1::EstimateReport no_mask =
      EstimateOf(JobFromArgs(With(llama, {"--cuda-graph-impl", "full_iteration",
                                          "--no-create-attention-mask-in-dataloader"}),
                             8, "llama3-8b"));
  EXPECT_EQ(OverheadBytes(no_mask.ranks(0), "cuda_graphs"), 32 * 8192.0 * 28);
}

// The full-iteration graph's pool holds the whole forward-backward working
// set; the eager optimizer step needs its own memory beside it: the pool
// adds min(held + transient, step) to the device peak, nothing to the
// allocated one but the static batches.
TEST(CudaGraphMemory, FullIterationPoolKeepsTheStepApart) {
  const std::vector<std::string> small =
      testing::SmallGptArgs(8, {"--grad-reduce-in-bf16", "--cuda-graph-impl", "full_iteration"});
  const v1::EstimateReport full = EstimateOf(JobFromArgs(small, 1));
  const v1::EstimateReport eager =
      EstimateOf(JobFromArgs(testing::SmallGptArgs(8, {"--grad-reduce-in-bf16"}), 1));
  const v1::RankReport& r = full.ranks(0);
  const double step =
      static_cast<double>(r.optimizer_step_bytes() + r.optimizer_step_temporary_bytes());
  const double working = static_cast<double>(r.activation_bytes() + r.transient_bytes());
  ASSERT_GT(step, 0);
  ASSERT_LT(step, working);
  EXPECT_EQ(OverheadBytes(r, "cuda_graph_pool"), step);
  // 8 micro-batches of [4, 1024] tokens (28 bytes each) and a 4 MiB mask.
  const double batches = 8 * (4 * 1024 * 28 + 4 * kMiB);
  EXPECT_EQ(OverheadBytes(r, "cuda_graphs"), batches);
  EXPECT_EQ(static_cast<double>(r.peak_allocated_bytes()),
            static_cast<double>(eager.ranks(0).peak_allocated_bytes()) + batches);

  // --optimizer-cuda-graph captures the step into the same pool, after the
  // forward-backward freed it: nothing beyond the eager peak. Without the
  // full-iteration graph the step's pool is its own, beside the eager
  // forward-backward: min(held + transient, step) again.
  const v1::EstimateReport both =
      EstimateOf(JobFromArgs(testing::SmallGptArgs(8, {"--grad-reduce-in-bf16", "--cuda-graph-impl",
                                                       "full_iteration", "--optimizer-cuda-graph"}),
                             1));
  EXPECT_EQ(OverheadBytes(both.ranks(0), "cuda_graph_pool"), -1);
  const v1::EstimateReport step_only = EstimateOf(JobFromArgs(
      testing::SmallGptArgs(8, {"--grad-reduce-in-bf16", "--optimizer-cuda-graph"}), 1));
  EXPECT_EQ(OverheadBytes(step_only.ranks(0), "cuda_graph_pool"), step);
  EXPECT_EQ(OverheadBytes(step_only.ranks(0), "cuda_graphs"), -1);
}

// PP 2 (8 layers, 4 per stage), 2 GPUs, 8 micro-batches: TE captures all of
// them; the inputs of micro-batches whose backward has run are reused, so
// each layer keeps one set per micro-batch in flight (1F1B: 2 on the first
// stage, 1 on the last). A set: 3 copies of a graph's [1024, 4, 512] bf16
// output (4 MiB) and 4 masks [4, 1, 1024, 1024] (4 MiB); plus one output
// gradient (4 MiB).
TEST(CudaGraphMemory, PipelinedTeGraphsKeepOneInputSetPerMicroBatchInFlight) {
  v1::JobSpec job = JobFromArgs(
      testing::SmallGptArgs(
          8, {"--pipeline-model-parallel-size", "2", "--cuda-graph-impl", "transformer_engine"}),
      2);
  const v1::EstimateReport report = EstimateOf(job);
  ASSERT_EQ(report.ranks_size(), 2);
  EXPECT_EQ(OverheadBytes(report.ranks(0), "cuda_graphs"), (2 * (3 + 4) * 4 + 4) * kMiB);
  EXPECT_EQ(OverheadBytes(report.ranks(1), "cuda_graphs"), (1 * (3 + 4) * 4 + 4) * kMiB);

  // Before TE 2.7 each of the 8 captured micro-batches also keeps its
  // outputs and input gradients (beyond those in flight) and its output
  // gradients: (2 x (8 - in flight) + 8) x 4 layers x 4 MiB.
  job.mutable_runtime()->set_transformer_engine_version("2.6");
  const v1::EstimateReport old = EstimateOf(job);
  EXPECT_EQ(OverheadBytes(old.ranks(0), "cuda_graphs"), (2 * 7 * 4 + (2 * 6 + 8) * 16) * kMiB);
  EXPECT_EQ(OverheadBytes(old.ranks(1), "cuda_graphs"), (1 * 7 * 4 + (2 * 7 + 8) * 16) * kMiB);
}

// Modules that graph no layer of the model keep nothing: `mamba` in a
// transformer.
TEST(CudaGraphMemory, NothingWhereNoLayerIsGraphed) {
  const v1::EstimateReport report =
      EstimateOf(JobFromArgs(testing::SmallGptArgs(8, {"--cuda-graph-impl", "transformer_engine",
                                                       "--cuda-graph-modules", "mamba"}),
                             1));
  EXPECT_EQ(OverheadBytes(report.ranks(0), "cuda_graphs"), -1);
  EXPECT_EQ(OverheadBytes(report.ranks(0), "cuda_graph_pool"), -1);
}

}  // namespace
}  // namespace oomguard
