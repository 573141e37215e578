// Megatron-Core's persistent buffers, optimizer variants and deferred
// gradients, against hand-derived byte counts. The jobs are the small
// models of Megatron-LM's own CI (12 layers, hidden 512, 8 heads, seq 1024,
// micro-batch 4, global batch 32, GPT-2 vocabulary 50257 padded to a
// multiple of 128 x TP).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "estimator/estimator.h"
#include "jobspec/job_builder.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

using testing::EstimateArgs;

constexpr double kMiB = 1024.0 * 1024.0;

std::vector<std::string> CiModel(std::vector<std::string> extra) {
  return testing::SmallGptArgs(12, std::move(extra));
}

// The ep8 MoE CI job: 8 experts on 8 GPUs, top-2, allgather dispatcher.
std::vector<std::string> MoeEp8(std::vector<std::string> extra) {
  std::vector<std::string> moe = {"--transformer-impl",
                                  "transformer_engine",
                                  "--expert-model-parallel-size",
                                  "8",
                                  "--num-experts",
                                  "8",
                                  "--moe-router-topk",
                                  "2",
                                  "--moe-ffn-hidden-size",
                                  "1024",
                                  "--disable-bias-linear",
                                  "--moe-token-dispatcher-type",
                                  "allgather"};
  moe.insert(moe.end(), extra.begin(), extra.end());
  return CiModel(moe);
}

// Bytes of the named overhead on `rank`; -1 when it is not reported.
double OverheadBytes(const v1::RankReport& rank, const std::string& name) {
  for (const v1::Overhead& o : rank.overheads()) {
    if (o.name() == name) return static_cast<double>(o.bytes());
  }
  return -1;
}

TEST(EstimatorBuffers, TeGroupedGemmAddsFourCublasStreamWorkspaces) {
  auto grouped = EstimateArgs(MoeEp8({"--moe-grouped-gemm"}));
  auto sequential = EstimateArgs(MoeEp8({}));
  ASSERT_TRUE(grouped.ok() && sequential.ok()) << grouped.status() << sequential.status();
  EXPECT_EQ(OverheadBytes(grouped->ranks(0), "grouped_gemm_workspaces"), 4 * 32 * kMiB);
  EXPECT_EQ(OverheadBytes(sequential->ranks(0), "grouped_gemm_workspaces"), -1);
  EXPECT_EQ(grouped->ranks(0).peak_allocated_bytes() - sequential->ranks(0).peak_allocated_bytes(),
            static_cast<uint64_t>(4 * 32 * kMiB));
}

// NCCL sets up buffers per process group a rank belongs to: on 8 GPUs at
// TP 2 PP 4 (DP 1), the TP and pipeline groups everywhere, and the embedding
// group (parallel_state.default_embedding_ranks) on the first and last
// stage only.
TEST(EstimatorBuffers, NcclBuffersFollowTheRanksGroups) {
  constexpr double kGiB = 1024 * kMiB;
  auto report = EstimateArgs(
      CiModel({"--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "4"}));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_NEAR(OverheadBytes(report->ranks(0), "nccl_buffers"), 3 * 0.9 * kGiB, 1);
  EXPECT_NEAR(OverheadBytes(report->ranks(1), "nccl_buffers"), 2 * 0.9 * kGiB, 1);
  EXPECT_NEAR(OverheadBytes(report->ranks(2), "nccl_buffers"), 2 * 0.9 * kGiB, 1);
  EXPECT_NEAR(OverheadBytes(report->ranks(3), "nccl_buffers"), 3 * 0.9 * kGiB, 1);
}

TEST(EstimatorBuffers, AllgatherDispatcherKeepsGatheredHiddenStates) {
  // 4096 local tokens gathered over EP 8 x ETP 1, hidden 512, bf16.
  auto allgather = EstimateArgs(MoeEp8({}));
  ASSERT_TRUE(allgather.ok()) << allgather.status();
  EXPECT_EQ(OverheadBytes(allgather->ranks(0), "global_memory_buffer"), 2.0 * 4096 * 8 * 512);
  auto alltoall = EstimateArgs(MoeEp8({"--moe-token-dispatcher-type", "alltoall"}));
  ASSERT_TRUE(alltoall.ok()) << alltoall.status();
  EXPECT_EQ(OverheadBytes(alltoall->ranks(0), "global_memory_buffer"), -1);
}

TEST(EstimatorBuffers, LocalAttentionKeepsFusedSoftmaxProbabilitiesOnly) {
  const std::vector<std::string> local = {"--transformer-impl", "local",
                                          "--tensor-model-parallel-size", "4"};
  auto fused = EstimateArgs(CiModel(local));
  std::vector<std::string> unfused_args = local;
  unfused_args.push_back("--no-masked-softmax-fusion");
  auto unfused = EstimateArgs(CiModel(unfused_args));
  ASSERT_TRUE(fused.ok() && unfused.ok()) << fused.status() << unfused.status();
  // Score elements per layer: b 4 x heads 8/TP 4 x s 1024 x s 1024. The
  // unfused path's softmax keeps its fp32 output where the fused kernel
  // keeps bf16; with attention dropout (0.1, the default) both keep the
  // dropout's mask and bf16 output for the probabilities @ V bmm, and the
  // unfused path's bf16 cast before the dropout is freed (native_dropout
  // keeps only its mask): 2 more bytes per element in each of the 12 layers
  // (1 micro-batch in flight).
  const double scores = 4.0 * 2 * 1024 * 1024;
  EXPECT_EQ(static_cast<double>(unfused->ranks(0).activation_bytes()) -
                static_cast<double>(fused->ranks(0).activation_bytes()),
            12 * 2 * scores);
  // The persistent bf16 score buffer of Megatron's GlobalMemoryBuffer.
  EXPECT_EQ(OverheadBytes(fused->ranks(0), "global_memory_buffer"), 2 * scores);
}

TEST(EstimatorBuffers, DistributedOptimizerInstancesShardOverPartOfDp) {
  // TP2 EP2 on 8 GPUs: DP 4, expert DP 2; two instances halve both shards.
  const std::vector<std::string> moe = {"--transformer-impl",
                                        "transformer_engine",
                                        "--tensor-model-parallel-size",
                                        "2",
                                        "--expert-model-parallel-size",
                                        "2",
                                        "--sequence-parallel",
                                        "--num-experts",
                                        "8",
                                        "--use-distributed-optimizer"};
  auto one = EstimateArgs(CiModel(moe));
  std::vector<std::string> two_args = moe;
  two_args.insert(two_args.end(), {"--num-distributed-optimizer-instances", "2"});
  auto two = EstimateArgs(CiModel(two_args));
  ASSERT_TRUE(one.ok() && two.ok()) << one.status() << two.status();
  const v1::StaticBytes& a = one->ranks(0).static_();
  const v1::StaticBytes& b = two->ranks(0).static_();
  const double dense = static_cast<double>(one->ranks(0).dense_parameters());
  const double expert = static_cast<double>(one->ranks(0).expert_parameters());
  EXPECT_NEAR(static_cast<double>(a.dense_optimizer_bytes()), dense * 12 / 4, 1);
  EXPECT_NEAR(static_cast<double>(b.dense_optimizer_bytes()), dense * 12 / 2, 1);
  EXPECT_NEAR(static_cast<double>(a.expert_optimizer_bytes()), expert * 12 / 2, 1);
  EXPECT_NEAR(static_cast<double>(b.expert_optimizer_bytes()), expert * 12 / 1, 1);

  std::vector<std::string> three = moe;
  three.insert(three.end(), {"--num-distributed-optimizer-instances", "3"});
  auto bad = EstimateArgs(CiModel(three));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("precision.num_distributed_optimizer_instances = 3"),
            std::string::npos)
      << bad.status();
  std::vector<std::string> no_dist = {"--transformer-impl", "transformer_engine",
                                      "--num-distributed-optimizer-instances", "2"};
  bad = EstimateArgs(CiModel(no_dist));
  EXPECT_NE(bad.status().message().find("needs precision.use_distributed_optimizer"),
            std::string::npos)
      << bad.status();
}

TEST(EstimatorBuffers, MuonLeavesEmbeddingsAndNormsToAdam) {
  auto muon = EstimateArgs(MoeEp8({"--optimizer", "muon"}));
  ASSERT_TRUE(muon.ok()) << muon.status();
  const v1::RankReport& r = muon->ranks(0);
  // Adam's second moment for: word embeddings 50304 x 512, learned
  // positions 1024 x 512, LayerNorm weight+bias (2 x 512) twice per layer
  // and once for the final norm.
  const double adam = 50304.0 * 512 + 1024.0 * 512 + 12 * 2 * 1024 + 1024;
  const double dense = static_cast<double>(r.dense_parameters());
  EXPECT_NEAR(static_cast<double>(r.static_().dense_optimizer_bytes()), dense * 8 + adam * 4, 1);
  // Experts are 2-D weights: master + one momentum.
  EXPECT_NEAR(static_cast<double>(r.static_().expert_optimizer_bytes()),
              static_cast<double>(r.expert_parameters()) * 8, 1);
}

TEST(EstimatorBuffers, DeferredEmbeddingWgradKeepsLogitsGradients) {
  // TP2 PP2 on 8 GPUs: DP 2, 4 micro-batches. The last stage keeps each
  // deferred micro-batch's bf16 logits gradient [4096, 50432/2] and its
  // output-layer input [4096, 512] (no sequence parallelism).
  const std::vector<std::string> base = {"--transformer-impl",
                                         "transformer_engine",
                                         "--tensor-model-parallel-size",
                                         "2",
                                         "--pipeline-model-parallel-size",
                                         "2",
                                         "--defer-embedding-wgrad-compute"};
  const double per_microbatch = 2.0 * 4096 * 25216 + 2.0 * 4096 * 512;
  std::vector<std::string> limited = base;
  limited.insert(limited.end(), {"--wgrad-deferral-limit", "2"});
  auto two = EstimateArgs(CiModel(limited));
  auto all = EstimateArgs(CiModel(base));
  ASSERT_TRUE(two.ok() && all.ok()) << two.status() << all.status();
  EXPECT_EQ(OverheadBytes(two->ranks(1), "deferred_embedding_wgrad"), 2 * per_microbatch);
  // No limit: the last micro-batch's backward sees the 3 earlier ones.
  EXPECT_EQ(OverheadBytes(all->ranks(1), "deferred_embedding_wgrad"), 3 * per_microbatch);
  EXPECT_EQ(OverheadBytes(two->ranks(0), "deferred_embedding_wgrad"), -1);

  auto orphan = EstimateArgs(CiModel({"--wgrad-deferral-limit", "2"}));
  EXPECT_NE(orphan.status().message().find("training.wgrad_deferral_limit = 2"), std::string::npos)
      << orphan.status();
}

TEST(EstimatorBuffers, Fp16KeepsHalfGradientsAndCopiesThemAtTheStep) {
  std::vector<std::string> args = CiModel({"--tensor-model-parallel-size", "4"});
  args.erase(std::find(args.begin(), args.end(), "--bf16"));
  args.push_back("--fp16");
  auto fp16 = EstimateArgs(args);
  args.push_back("--accumulate-allreduce-grads-in-fp32");
  auto fp32_grads = EstimateArgs(args);
  ASSERT_TRUE(fp16.ok() && fp32_grads.ok()) << fp16.status() << fp32_grads.status();
  const v1::RankReport& r = fp16->ranks(0);
  const double p = static_cast<double>(r.parameters());
  EXPECT_NEAR(static_cast<double>(r.static_().dense_grad_bytes()), 2 * p, 1);
  EXPECT_NEAR(static_cast<double>(r.optimizer_step_bytes()), 4 * p, 1);
  EXPECT_NEAR(static_cast<double>(fp32_grads->ranks(0).static_().dense_grad_bytes()), 4 * p, 1);
  EXPECT_EQ(fp32_grads->ranks(0).optimizer_step_bytes(), 0u);
}

}  // namespace
}  // namespace oomguard
