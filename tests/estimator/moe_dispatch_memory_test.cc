// The MoE dispatchers' working set (estimator/moe_dispatch_memory.h) against
// hand-derived byte counts. The job is Megatron-LM's small CI MoE model:
// hidden 512, seq 1024, micro-batch 4, TP 1, EP 8, top-2, bf16, so one
// micro-batch has 4096 tokens on a GPU and sends 2 x 4096 = 8192 token
// copies; one [8192, 512] bf16 buffer is 8 MiB.
#include "estimator/moe_dispatch_memory.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "estimator/layer_memory.h"
#include "estimator/validated_job.h"
#include "jobspec/job_builder.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kSentTokens = 2 * 4096;

// The small model's MoE arguments: `experts` experts, top-2, width 1024, on
// expert parallelism `ep` with the token dispatcher `dispatcher`, then
// `extra`.
std::vector<std::string> MoeArgs(int ep, const std::string& dispatcher, const std::string& experts,
                                 std::vector<std::string> extra) {
  std::vector<std::string> moe = {"--expert-model-parallel-size",
                                  std::to_string(ep),
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
  return testing::SmallGptArgs(4, std::move(moe));
}

ValidatedJob MoeJob(const std::string& dispatcher, const std::string& experts,
                    std::vector<std::string> extra = {}) {
  return testing::ValidatedJobFromArgs(MoeArgs(8, dispatcher, experts, std::move(extra)));
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

// The flex dispatcher's buffers (FlexDispatcherBufferBytes), on `gpus` GPUs
// with expert parallelism `ep`, `experts` experts and the flex backend
// `backend`, then `extra`; `domain` > 0 sets
// runtime.hybrid_ep_ranks_per_nvlink_domain (what
// NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN sets).
double FlexBufferBytes(uint32_t gpus, int ep, const std::string& experts,
                       const std::string& backend, std::vector<std::string> extra = {},
                       uint32_t domain = 0) {
  std::vector<std::string> flex = {"--moe-flex-dispatcher-backend", backend, "--global-batch-size",
                                   std::to_string(4 * gpus)};
  flex.insert(flex.end(), extra.begin(), extra.end());
  v1::JobSpec job = testing::JobFromArgs(MoeArgs(ep, "flex", experts, std::move(flex)), gpus);
  if (domain > 0) job.mutable_runtime()->set_hybrid_ep_ranks_per_nvlink_domain(domain);
  absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? FlexDispatcherBufferBytes(*j, MicroBatchShape(*j)) : -1;
}

constexpr double kDeepepWorkspace = 32 * kMiB;

// DeepEP on 8 ranks, Megatron-Core's default 20 SMs: 10 channels x 8 NVLink
// peers, one rank-group (no RDMA). The 8-rank dispatch and combine
// configurations both queue 256 tokens. A token: its 512 x 2 B row, 8 B of
// source metadata, 128 int64 top-k indices, 128 fp32 weights and 128 fp32
// scales = 1024 + 8 + 1024 + 512 + 512 = 3080 B. 10 x 8 x (2 x 1 + 3) x 4 =
// 1600 B of counters + 10 x 8 x 256 x 3080 = 63,078,400 B of queue =
// 63,080,000, rounded up to 128 B: 63,080,064; and the 32 MiB workspace.
TEST(FlexDispatcherBuffers, DeepepWithinOneNode) {
  EXPECT_DOUBLE_EQ(FlexBufferBytes(8, 8, "64", "deepep"), 63080064 + kDeepepWorkspace);
  // Not the flex dispatcher: no buffers.
  const ValidatedJob a2a = MoeJob("alltoall", "64");
  EXPECT_DOUBLE_EQ(FlexDispatcherBufferBytes(a2a, MicroBatchShape(a2a)), 0);
}

// DeepEP on 16 ranks (two nodes) with 24 SMs: 12 channels, 8 NVLink peers, 2
// RDMA ranks. NVLink: the 16-rank configurations queue 288 tokens:
// 12 x 8 x (2 x 2 + 3) x 4 = 2688 + 12 x 8 x 288 x 3080 = 85,155,840, in all
// 85,158,528 (a multiple of 128). RDMA: the dispatch configuration sends 20
// tokens at once, so its 128-token queue rounds up to 140 (the combine's, 12
// at once, to 132): 12 x 2 x (8 x 2 + 2) x 2 x 4 = 3456 + 12 x 2 x 140 x 2
// x (3080 + 16) = 20,805,120, in all 20,808,576 (a multiple of 128).
TEST(FlexDispatcherBuffers, DeepepAcrossNodesAddsTheRdmaQueue) {
  EXPECT_DOUBLE_EQ(FlexBufferBytes(16, 16, "64", "deepep", {"--moe-flex-dispatcher-num-sms", "24"}),
                   85158528 + 20808576 + kDeepepWorkspace);
  // The deprecated spelling sizes it the same.
  EXPECT_DOUBLE_EQ(FlexBufferBytes(16, 16, "64", "deepep", {"--moe-deepep-num-sms", "24"}),
                   85158528 + 20808576 + kDeepepWorkspace);
}

// HybridEP on 8 ranks, one NVLink domain of 8 (the default: min(EP x ETP,
// 8 GPUs a node)): the rank's 4096 tokens (a multiple of 64, over 512); 64
// experts, 8 local, 8 x 8 = 64 in the domain. A token of the shared
// dispatch/combine buffer: 512 x 2 B + 64 x 4 B probabilities + 512 / 128
// x 4 B scales = 1296 B, for 4096 x 8 tokens: 42,467,328 B; the routing-map
// gather, 64 experts x 4096 x 8 bools: 2,097,152 B.
TEST(FlexDispatcherBuffers, HybridepWithinOneDomain) {
  EXPECT_DOUBLE_EQ(FlexBufferBytes(8, 8, "64", "hybridep"), 42467328 + 2097152);
  // A rank's tokens under 512 are counted as 512: micro-batch 1 of 256
  // tokens, 512 x 8 x 1296 + 64 x 512 x 8.
  EXPECT_DOUBLE_EQ(FlexBufferBytes(8, 8, "64", "hybridep",
                                   {"--seq-length", "256", "--max-position-embeddings", "256",
                                    "--micro-batch-size", "1", "--global-batch-size", "8"}),
                   512.0 * 8 * 1296 + 64.0 * 512 * 8);
}

// HybridEP on 16 ranks in two NVLink domains of 8
// (NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN=8): 64 experts, 4 local, 32 in
// a domain. A token: 1024 + 32 x 4 + 16 = 1168 B. The NVLink buffer, 4096 x
// 16 tokens: 76,546,048; the gather, 64 x 4096 x 16: 4,194,304. Across the
// domains, dispatch: the rank's own 4096 tokens with probabilities over all
// 64 experts, 4096 x (1024 + 256 + 16) = 5,308,416, and the other domain's
// 4096 tokens, 4096 x 1168 = 4,784,128; combine: two 4096-token buffers of
// rows and the domain's probabilities, 2 x 4096 x (1024 + 128) = 9,437,184.
// In one domain of 16 (an NVLink-72 system) none of the RDMA staging, and
// the probabilities cover the domain's 64 experts: 4096 x 16 x (1024 + 256
// + 16) = 84,934,656 and the gather 4,194,304.
TEST(FlexDispatcherBuffers, HybridepAcrossDomainsAddsTheRdmaStaging) {
  EXPECT_DOUBLE_EQ(FlexBufferBytes(16, 16, "64", "hybridep", {}, 8),
                   76546048 + 4194304 + 5308416 + 4784128 + 9437184);
  EXPECT_DOUBLE_EQ(FlexBufferBytes(16, 16, "64", "hybridep", {}, 16), 84934656 + 4194304);
}

// --delay-wgrad-compute (with the EP overlap, which Megatron-Core requires):
// the experts' backward keeps its weight-gradient inputs until
// mlp.backward_dw, after the forward micro-batch's dispatch, whose tokens
// arrive beside them. One local expert of width 4096 (no gating): the
// experts' backward working set is 2 x 8192 routed tokens x 2 x 4096 +
// 2 x 8192 x 512 = 142,606,336 B, over the dispatcher's 24 MiB and flash
// attention's 24 MiB; the delay adds the dispatched bf16 rows and fp32
// probabilities, 2 x 8192 x 512 + 4 x 8192 = 8,421,376 B.
TEST(MoeDispatchMemory, DelayedWeightGradientsMeetTheNextDispatch) {
  const std::vector<std::string> wide = {"--moe-ffn-hidden-size", "4096",
                                         "--overlap-moe-expert-parallel-comm"};
  const ValidatedJob now = MoeJob("alltoall", "8", wide);
  std::vector<std::string> delayed_args = wide;
  delayed_args.push_back("--delay-wgrad-compute");
  const ValidatedJob delayed = MoeJob("alltoall", "8", delayed_args);
  EXPECT_DOUBLE_EQ(DecoderLayerCost(now, true, nullptr).transient_bytes, 142606336);
  EXPECT_DOUBLE_EQ(DecoderLayerCost(delayed, true, nullptr).transient_bytes, 142606336 + 8421376);
}

// --moe-expert-rank-capacity-factor 1.5 with HybridEP: the dispatched
// tokens are allocated at the rank's budget, 1.5 x top-2 x 4096 = 12288
// tokens, and none arrive over it (no routing-imbalance margin). Routed
// activations: fc1's input 2 x 12288 x 512 + fp32 probabilities 4 x 12288 =
// 12,632,064, fc1's output 2 x 12288 x 1024 = 25,165,824, fc2's input the
// same: 62,963,712 B a layer.
TEST(MoeDispatchMemory, HybridepRankBudgetSizesTheRoutedTokens) {
  const std::vector<std::string> hybridep = {"--moe-flex-dispatcher-backend", "hybridep",
                                             "--moe-expert-rank-capacity-factor", "1.5"};
  const ValidatedJob budget = MoeJob("flex", "64", hybridep);
  EXPECT_DOUBLE_EQ(DecoderLayerCost(budget, true, nullptr).routed_act_bytes, 62963712);
  const absl::StatusOr<v1::EstimateReport> report =
      Estimate(testing::JobFromArgs(testing::SmallGptArgs(
          4, {"--expert-model-parallel-size", "8", "--num-experts", "64", "--moe-router-topk", "2",
              "--moe-ffn-hidden-size", "1024", "--moe-grouped-gemm", "--moe-token-dispatcher-type",
              "flex", "--moe-flex-dispatcher-backend", "hybridep",
              "--moe-expert-rank-capacity-factor", "1.5"})));
  ASSERT_TRUE(report.ok()) << report.status();
  for (const v1::Overhead& o : report->ranks(0).overheads()) {
    EXPECT_NE(o.name(), "moe_imbalance");
  }
}

}  // namespace
}  // namespace oomguard
