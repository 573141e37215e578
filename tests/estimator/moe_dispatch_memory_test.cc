// The MoE dispatchers' working set (estimator/moe_dispatch_memory.h) against
// hand-derived byte counts. The job is Megatron-LM's small CI MoE model:
// hidden 512, seq 1024, micro-batch 4, TP 1, EP 8, top-2, bf16, so one
// micro-batch has 4096 tokens on a GPU and sends 2 x 4096 = 8192 token
// copies; one [8192, 512] bf16 buffer is 8 MiB.
#include "estimator/moe_dispatch_memory.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "estimator/layer_memory.h"
#include "estimator/validated_job.h"
#include "jobspec/job_builder.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kSentTokens = 2 * 4096;

ValidatedJob MoeJob(const std::string& dispatcher, const std::string& experts,
                    std::vector<std::string> extra = {}) {
  std::vector<std::string> moe = {"--expert-model-parallel-size",
                                  "8",
                                  "--num-experts",
                                  experts,
                                  "--moe-router-topk",
                                  "2",
                                  "--moe-ffn-hidden-size",
                                  "1024",
                                  "--disable-bias-linear",
                                  "--moe-grouped-gemm",
                                  "--moe-token-dispatcher-type",
                                  dispatcher};
  moe.insert(moe.end(), extra.begin(), extra.end());
  return testing::ValidatedJobFromArgs(testing::SmallGptArgs(4, std::move(moe)));
}

// One local expert: the all_to_all output is the experts' saved fc1 input
// and combine_preprocess does not sort. Alive at the combine all_to_all:
// the permuted tokens (custom_forward's `hidden_states`), the fc2 output
// and token_combine's output: 3 x 8 MiB.
TEST(MoeDispatchMemory, AlltoAllWithOneLocalExpertHoldsThreeTokenBuffers) {
  const ValidatedJob j = MoeJob("alltoall", "8");
  EXPECT_DOUBLE_EQ(MoeDispatchForwardBytes(j, MicroBatchShape(j), kSentTokens), 24 * kMiB);
  EXPECT_DOUBLE_EQ(MoeCombineBackwardBytes(j, MicroBatchShape(j), kSentTokens), 0);
}

// Eight local experts: dispatch_postprocess sorts the all_to_all output into
// a new fc1 input, so `dispatched_input` is a copy of its own; at the combine
// the fc2 output and combine_preprocess's un-sorted copy are both alive:
// permuted + dispatched + fc2 output + un-sorted = 4 x 8 MiB.
TEST(MoeDispatchMemory, AlltoAllWithSeveralLocalExpertsHoldsFourTokenBuffers) {
  const ValidatedJob j = MoeJob("alltoall", "64");
  EXPECT_DOUBLE_EQ(MoeDispatchForwardBytes(j, MicroBatchShape(j), kSentTokens), 32 * kMiB);
}

// Allgather, bf16 router: the probabilities gathered over EP, [32768, 8]
// bf16 = 0.5 MiB, plus the larger of (fc2 output 8 MiB + unpermute output
// [32768, 512] bf16 = 32 MiB) and (unpermute output 32 MiB + reduce-scatter
// output [4096, 512] bf16 = 4 MiB; the cast to the probabilities' bf16 is no
// copy): 40.5 MiB. Backward: the all-gathered gradient (32 MiB) and the
// routed-token gradient unpermute's backward gathers (8 MiB): 40 MiB.
TEST(MoeDispatchMemory, AllGatherCombineHoldsTheGatheredShape) {
  const ValidatedJob j = MoeJob("allgather", "8");
  EXPECT_DOUBLE_EQ(MoeDispatchForwardBytes(j, MicroBatchShape(j), kSentTokens), 40.5 * kMiB);
  EXPECT_DOUBLE_EQ(MoeCombineBackwardBytes(j, MicroBatchShape(j), kSentTokens), 40 * kMiB);
}

// Allgather, fp32 router: gathered probabilities 1 MiB; token_combine casts
// the 32 MiB unpermute output to fp32 (64 MiB) and reduce-scatters it into
// [4096, 512] fp32 = 8 MiB: 1 + 32 + 64 + 8 = 105 MiB. Backward: the fp32
// all-gathered gradient (64 MiB) and its bf16 cast (32 MiB): 96 MiB.
TEST(MoeDispatchMemory, AllGatherWithFp32RouterCastsTheCombineToFp32) {
  const ValidatedJob j = MoeJob("allgather", "8", {"--moe-router-dtype", "fp32"});
  EXPECT_DOUBLE_EQ(MoeDispatchForwardBytes(j, MicroBatchShape(j), kSentTokens), 105 * kMiB);
  EXPECT_DOUBLE_EQ(MoeCombineBackwardBytes(j, MicroBatchShape(j), kSentTokens), 96 * kMiB);
}

// EP = 1: all_to_all returns its input, so neither the dispatch nor the
// combine all_to_all makes a copy; eight local experts still sort: permuted
// + fc2 output + un-sorted copy = 3 x 8 MiB.
TEST(MoeDispatchMemory, AlltoAllWithoutExpertParallelismMakesNoAllToAllCopies) {
  ValidatedJob j = MoeJob("alltoall", "8");
  j.parallelism.ep = 1;
  EXPECT_DOUBLE_EQ(MoeDispatchForwardBytes(j, MicroBatchShape(j), kSentTokens), 24 * kMiB);
}

// The dispatcher's attributes kept between forwards, per recomputed MoE
// layer. Alltoall, bf16 router: probs [4096, 8] x 2 B + routing map
// [4096, 8] x 1 B = 96 KiB, plus the sorted indices [8192] int64 = 64 KiB.
// With an fp32 router the probs take 4 B: 128 + 32 + 64 KiB. Allgather: local map
// [32768 gathered tokens, 1 local expert] bool = 32 KiB, local probs [8192]
// bf16 = 16 KiB, sorted indices 64 KiB.
TEST(MoeDispatchMemory, DispatcherStateIsProbsRoutingMapAndPermutation) {
  const ValidatedJob a2a = MoeJob("alltoall", "8");
  EXPECT_DOUBLE_EQ(MoeDispatcherStateBytes(a2a, MicroBatchShape(a2a)), (96 + 64) * 1024.0);
  const ValidatedJob fp32 = MoeJob("alltoall", "8", {"--moe-router-dtype", "fp32"});
  EXPECT_DOUBLE_EQ(MoeDispatcherStateBytes(fp32, MicroBatchShape(fp32)), (128 + 32 + 64) * 1024.0);
  const ValidatedJob ag = MoeJob("allgather", "8");
  EXPECT_DOUBLE_EQ(MoeDispatcherStateBytes(ag, MicroBatchShape(ag)), (32 + 16 + 64) * 1024.0);
}

// Which MoE layers run their forward under a checkpoint: all 4 under
// uniform full or `moe` selective recompute, the first recompute.num_layers
// under block, none without recompute.
TEST(MoeDispatchMemory, RecomputedMoeLayersFollowTheRecomputeMethod) {
  const ValidatedJob none = MoeJob("alltoall", "8");
  EXPECT_DOUBLE_EQ(RecomputedMoeLayers(none, none.stages[0]), 0);
  const ValidatedJob uniform = MoeJob("alltoall", "8",
                                      {"--recompute-granularity", "full", "--recompute-method",
                                       "uniform", "--recompute-num-layers", "2"});
  EXPECT_DOUBLE_EQ(RecomputedMoeLayers(uniform, uniform.stages[0]), 4);
  const ValidatedJob block = MoeJob("alltoall", "8",
                                    {"--recompute-granularity", "full", "--recompute-method",
                                     "block", "--recompute-num-layers", "1"});
  EXPECT_DOUBLE_EQ(RecomputedMoeLayers(block, block.stages[0]), 1);
  const ValidatedJob moe = MoeJob(
      "alltoall", "8", {"--recompute-granularity", "selective", "--recompute-modules", "moe"});
  EXPECT_DOUBLE_EQ(RecomputedMoeLayers(moe, moe.stages[0]), 4);
}

}  // namespace
}  // namespace oomguard
