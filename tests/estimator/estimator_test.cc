// The estimator core against hand-derived and reference numbers.
#include "estimator/estimator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "estimator/pipeline_layout.h"
#include "jobspec/job_builder.h"
#include "tests/testing/examples.h"

namespace oomguard {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMi = 1024.0 * 1024.0;

v1::JobSpec Job(const std::string& preset, uint32_t gpus, std::vector<std::string> args) {
  JobInputs src;
  src.preset = preset;
  src.num_gpus = gpus;
  src.megatron_args = std::move(args);
  auto job = BuildJob(src, nullptr);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *job : v1::JobSpec();
}

const v1::ModuleNode* Find(const v1::ModuleNode& n, const std::string& name) {
  if (n.name() == name) return &n;
  for (const auto& c : n.children()) {
    if (const v1::ModuleNode* f = Find(c, name)) return f;
  }
  return nullptr;
}

// Seed 000: Qwen3-30B-A3B, 32 GPUs, TP4 EP32 ETP1, seq 4096. The reference
// tree prints per-module parameters in Mi (2^20).
TEST(Estimator, Qwen3MoeModuleParametersMatchReferenceTree) {
  EstimateOptions opt;
  opt.module_tree = true;
  auto rep =
      Estimate(Job("qwen3-30b-a3b", 32,
                   {"--tensor-model-parallel-size", "4", "--expert-model-parallel-size", "32",
                    "--expert-tensor-parallel-size", "1", "--sequence-parallel", "--seq-length",
                    "4096", "--micro-batch-size", "1", "--use-distributed-optimizer"}),
               opt);
  ASSERT_TRUE(rep.ok()) << rep.status();
  const v1::ModuleNode& tree = rep->rank_trees(0);
  auto mi = [&](const char* name) {
    const v1::ModuleNode* n = Find(tree, name);
    EXPECT_NE(n, nullptr) << name;
    return n ? n->parameters() / kMi : -1;
  };
  EXPECT_DOUBLE_EQ(mi("linear_qkv"), 2.5);
  EXPECT_DOUBLE_EQ(mi("linear_proj"), 2.0);
  EXPECT_DOUBLE_EQ(mi("experts"), 18.0);
  // The reference prints 74.19 Mi from the unpadded vocabulary 151936;
  // Megatron pads it to a multiple of 128 x TP = 512: 152064.
  EXPECT_DOUBLE_EQ(mi("word_embeddings"), 152064.0 * 2048 / 4 / kMi);
  EXPECT_DOUBLE_EQ(mi("output_layer"), 152064.0 * 2048 / 4 / kMi);
  // Megatron-Core also has the router weight (h x E) and the input norm
  // weight fused into linear_qkv, which the reference counts as 0: the rank
  // total is the reference's 1228.48 Mi plus exactly those.
  const double router_and_norm = 48 * (2048.0 * 128 + 2048) / kMi;
  const double padding = 2 * 128.0 * 2048 / 4 / kMi;
  EXPECT_NEAR(rep->ranks(0).parameters() / kMi, 1228.48 + router_and_norm + padding, 0.006);
}

// ACCOUNTING appendix 5: DeepSeek-V3 on 256 GPUs, TP1 PP8 VPP4 EP32, layout
// Et|(tt|)*30mL. Static GiB of the reference: 52.64, 50.60, 58.23 x5, 49.17.
// oomguard counts the router (+0.08 GiB on full stages) and, on the last
// stage, the MTP layer and the embedding copy MTP builds. The reference has
// no TE dummy weight gradients (te_weight_gradients.h, TE get_dummy_wgrad),
// so they are compared apart: bf16 shapes of one MoE layer (q_down, q_up,
// kv_down, kv_up, proj, expert fc1/fc2, shared experts reuse them) 0.431
// GiB; + dense fc1 [36864, 7168] and fc2 [7168, 18432] on ranks 0-1 (1.169);
// + output layer [129280, 7168] and MTP eh_proj [7168, 14336] on rank 7.
TEST(Estimator, DeepSeekV3StaticFollowsReferencePlacement) {
  auto rep =
      Estimate(Job("deepseek-v3", 256, testing::ExampleArgs(testing::kDeepSeekV3With256Gpus)));
  ASSERT_TRUE(rep.ok()) << rep.status();
  ASSERT_EQ(rep->ranks_size(), 8);
  const double reference[] = {52.64, 50.60, 58.23, 58.23, 58.23, 58.23, 58.23};
  for (int r = 0; r < 7; ++r) {
    const v1::RankReport& rank = rep->ranks(r);
    EXPECT_NEAR((rank.static_bytes() - rank.static_().te_dummy_wgrad_bytes()) / kGiB, reference[r],
                0.12)
        << "rank " << r;
  }
  const double dummy[] = {1.169, 1.169, 0.431, 0.431, 0.431, 0.431, 0.431, 2.348};
  for (int r = 0; r < 8; ++r) {
    EXPECT_NEAR(rep->ranks(r).static_().te_dummy_wgrad_bytes() / kGiB, dummy[r], 0.001)
        << "rank " << r;
  }
  EXPECT_GT(rep->ranks(7).static_bytes() / kGiB, 49.17 + 10);  // + MTP layer and embedding
  EXPECT_EQ(rep->worst_rank(), 7u);
}

// Static bytes per parameter: 18 without the distributed optimizer, 6 + 12/DP
// with it, and optimizer offload keeps the fp32 master on the GPU. TE's
// dummy weight gradients (one per weight shape, not per parameter) are
// counted apart.
TEST(Estimator, StaticBytesPerParameter) {
  const std::vector<std::string> base = {"--seq-length", "2048", "--micro-batch-size", "1"};
  auto plain = Estimate(Job("llama3-8b", 8, base));
  std::vector<std::string> dist = base;
  dist.push_back("--use-distributed-optimizer");
  auto sharded = Estimate(Job("llama3-8b", 8, dist));
  std::vector<std::string> offload = dist;
  offload.insert(offload.end(), {"--optimizer-cpu-offload", "--use-precision-aware-optimizer",
                                 "--optimizer-offload-fraction", "1.0"});
  auto off = Estimate(Job("llama3-8b", 8, offload));
  ASSERT_TRUE(plain.ok() && sharded.ok() && off.ok());
  const double p = static_cast<double>(plain->ranks(0).parameters());
  auto per_parameter = [&](const v1::EstimateReport& rep) {
    const v1::RankReport& r = rep.ranks(0);
    EXPECT_GT(r.static_().te_dummy_wgrad_bytes(), 0u);
    return static_cast<double>(r.static_bytes() - r.static_().te_dummy_wgrad_bytes()) / p;
  };
  EXPECT_NEAR(per_parameter(*plain), 18.0, 1e-6);
  EXPECT_NEAR(per_parameter(*sharded), 6.0 + 12.0 / 8, 1e-6);
  // HybridDeviceOptimizer with fraction 1: the bf16 weight and fp32
  // gradient stay on the GPU; the fp32 master copy, the two fp32 moments and
  // the pinned fp32 gradient copy of the rank's eighth are on the host.
  EXPECT_NEAR(per_parameter(*off), 6.0, 1e-6);
  EXPECT_NEAR(off->ranks(0).static_().host_optimizer_bytes() / p, (4.0 + 8.0 + 4.0) / 8, 1e-6);
}

// Issue 26, item 1: the DDP gradient buffer follows grad_reduce_in_fp32,
// which validate_args derives; --main-grads-dtype fp32 (the default)
// written beside --grad-reduce-in-bf16 leaves it bf16 (Llama-3 8B on 8
// GPUs: 2 bytes per parameter, 15.0 GiB, not 29.9), and the report is the
// same byte for byte.
TEST(Estimator, MainGradsDtypeAtItsDefaultKeepsTheBf16GradientBuffer) {
  const std::vector<std::string> base = {"--seq-length",
                                         "4096",
                                         "--micro-batch-size",
                                         "1",
                                         "--bf16",
                                         "--use-distributed-optimizer",
                                         "--use-precision-aware-optimizer",
                                         "--grad-reduce-in-bf16"};
  std::vector<std::string> written = base;
  written.insert(written.end(), {"--main-grads-dtype", "fp32"});
  auto plain = Estimate(Job("llama3-8b", 8, base));
  auto with = Estimate(Job("llama3-8b", 8, written));
  ASSERT_TRUE(plain.ok() && with.ok());
  const v1::RankReport& r = with->ranks(0);
  EXPECT_EQ(r.static_().dense_grad_bytes(), 2 * r.parameters());
  EXPECT_NEAR(r.static_().dense_grad_bytes() / kGiB, 15.0, 0.05);
  EXPECT_EQ(with->SerializeAsString(), plain->SerializeAsString());
  // --main-grads-dtype bf16 alone also leaves accumulate_allreduce_grads_in_fp32 off.
  std::vector<std::string> bf16_main(base.begin(), base.end() - 1);
  bf16_main.insert(bf16_main.end(), {"--main-grads-dtype", "bf16"});
  auto main_bf16 = Estimate(Job("llama3-8b", 8, bf16_main));
  ASSERT_TRUE(main_bf16.ok());
  EXPECT_EQ(main_bf16->ranks(0).static_().dense_grad_bytes(), 2 * r.parameters());
}

// Issue 26, item 6: --optimizer-cpu-offload with fraction f. Megatron-Core's
// HybridDeviceOptimizer keeps the f part of each rank's optimizer shard on
// the host (fp32 master copy 4 + fp32 moments 8 + pinned fp32 gradient copy
// 4 = 16 bytes per element) and gives the rest an fp32 copy and fp32
// moments on the GPU (12 bytes); the bf16 weights and the gradient buffer
// stay. Qwen2.5-72B TP 8 on 8 GPUs (DP 1) and Qwen3-30B-A3B EP 4 on 4 GPUs
// (dense sharded over DP 4, experts over expert DP 1).
TEST(Estimator, OptimizerCpuOffloadMovesTheWholeStateOfItsFraction) {
  struct Case {
    const char* preset;
    uint32_t gpus;
    std::vector<std::string> layout;
    double dense_shards, expert_shards;
  };
  for (const Case& c : std::vector<Case>{
           {"qwen2.5-72b", 8, {"--tensor-model-parallel-size", "8"}, 1, 1},
           {"qwen3-30b-a3b", 4, {"--expert-model-parallel-size", "4"}, 4, 1},
       }) {
    for (const char* fraction : {"1.0", "0.5"}) {
      std::vector<std::string> args = {"--seq-length",
                                       "4096",
                                       "--micro-batch-size",
                                       "1",
                                       "--global-batch-size",
                                       "8",
                                       "--bf16",
                                       "--use-distributed-optimizer",
                                       "--use-precision-aware-optimizer",
                                       "--optimizer-cpu-offload",
                                       "--optimizer-offload-fraction",
                                       fraction};
      args.insert(args.end(), c.layout.begin(), c.layout.end());
      auto rep = Estimate(Job(c.preset, c.gpus, args));
      ASSERT_TRUE(rep.ok()) << rep.status();
      const v1::RankReport& r = rep->ranks(0);
      const double f = std::stod(fraction);
      const double dense = static_cast<double>(r.dense_parameters()) / c.dense_shards;
      const double expert = static_cast<double>(r.expert_parameters()) / c.expert_shards;
      const std::string where = absl::StrCat(c.preset, " f=", fraction);
      EXPECT_NEAR(r.static_().dense_optimizer_bytes(), 12 * (1 - f) * dense, 1) << where;
      EXPECT_NEAR(r.static_().expert_optimizer_bytes(), 12 * (1 - f) * expert, 1) << where;
      EXPECT_NEAR(r.static_().host_optimizer_bytes(), 16 * f * (dense + expert), 2) << where;
      EXPECT_EQ(r.static_().dense_grad_bytes(), 4 * r.dense_parameters()) << where;
    }
  }
}

// Megatron's interleaved schedule on the last of 4 ranks with 3 chunks and 4
// micro-batches: warm-up 2*0 + 2*4 = 8, so 9 live chunk-forwards: 4 + 4 + 1.
TEST(Estimator, InterleavedInFlightCounts) {
  auto rep = Estimate(Job("llama3-8b", 8,
                          {"--pipeline-model-parallel-size", "4", "--num-layers", "12",
                           "--num-layers-per-virtual-pipeline-stage", "1", "--seq-length", "1024",
                           "--micro-batch-size", "4", "--global-batch-size", "32"}));
  ASSERT_TRUE(rep.ok()) << rep.status();
  const v1::RankReport& last = rep->ranks(3);
  ASSERT_EQ(last.chunks_size(), 3);
  EXPECT_EQ(last.chunks(0).in_flight_microbatches(), 4u);
  EXPECT_EQ(last.chunks(1).in_flight_microbatches(), 4u);
  EXPECT_EQ(last.chunks(2).in_flight_microbatches(), 1u);
  // Rank 0, no interleaving cap: 1F1B holds min(p - r, n) micro-batches.
  auto plain = Estimate(Job("llama3-8b", 8,
                            {"--pipeline-model-parallel-size", "4", "--seq-length", "1024",
                             "--micro-batch-size", "1", "--global-batch-size", "4"}));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->ranks(0).chunks(0).in_flight_microbatches(), 2u);  // n = 4 / (2*1) = 2
  EXPECT_EQ(plain->ranks(3).chunks(0).in_flight_microbatches(), 1u);
}

// Issue 25: a last, partial micro-batch group (get_schedule_table in
// Megatron-Core's schedules.py). Qwen3-235B-A22B on 64 GPUs, PP 16 VPP 6
// EP 4, DP 4: n = 160 / 4 = 40 micro-batches in groups of 24, the last of
// 16 (= PP, which Megatron accepts). Rank 15 warms up with 5 x 24 = 120
// forwards (group 0 on chunks 0-4); its last steady step runs micro-batch
// 39's forward on chunk 5 after 119 backwards (group 0's chunks 5, 4, 3, 2
// and 23 of chunk 1's): chunk 0 holds 40 - 0, chunk 1 40 - 23, chunks 2-5
// 40 - 24 = 16, the loss chunk 5 among them (whole groups of 24 would hold
// 1 there; the estimate was 6.13 GiB of activations, 75.86 GiB on the rank).
TEST(Estimator, PartialMicroBatchGroupFillsTheLossChunk) {
  auto rep = Estimate(Job("qwen3-235b-a22b", 64,
                          {"--pipeline-model-parallel-size",
                           "16",
                           "--num-virtual-stages-per-pipeline-rank",
                           "6",
                           "--account-for-embedding-in-pipeline-split",
                           "--account-for-loss-in-pipeline-split",
                           "--expert-model-parallel-size",
                           "4",
                           "--micro-batch-size",
                           "1",
                           "--global-batch-size",
                           "160",
                           "--seq-length",
                           "4096",
                           "--recompute-granularity",
                           "full",
                           "--recompute-method",
                           "block",
                           "--recompute-num-layers",
                           "1",
                           "--use-distributed-optimizer",
                           "--microbatch-group-size-per-virtual-pipeline-stage",
                           "24"}));
  ASSERT_TRUE(rep.ok()) << rep.status();
  const v1::RankReport& last = rep->ranks(15);
  ASSERT_EQ(last.chunks_size(), 6);
  EXPECT_TRUE(last.chunks(5).has_loss());
  const uint32_t expected[] = {40, 17, 16, 16, 16, 16};
  for (int c = 0; c < 6; ++c) {
    EXPECT_EQ(last.chunks(c).in_flight_microbatches(), expected[c]) << "chunk " << c;
  }
  // 15 more of the loss chunk's micro-batches (logits, cross-entropy).
  EXPECT_GT(static_cast<double>(last.activation_bytes()) / kGiB, 6.13 + 30);
}

// The same for DeepSeek-V3 on 256 GPUs (the README's example, TP 1 PP 8
// VPP 4 EP 32, DP 32) with global batch 640: n = 20 in groups of 12, the
// last of 8 = PP. Rank 7 warms up with 3 x 12 = 36 forwards; after its last
// forward (micro-batch 19 on chunk 3) it has run 43 backwards (group 0's
// chunks 3, 2, 1 and 7 of chunk 0's): 20 - 7 = 13 on chunk 0 and 8 on each
// other chunk, the loss and MTP chunk 3 among them.
TEST(Estimator, PartialMicroBatchGroupOnDeepSeekV3) {
  std::vector<std::string> args = testing::ExampleArgs(testing::kDeepSeekV3With256Gpus);
  const auto batch = std::find(args.begin(), args.end(), "--global-batch-size");
  ASSERT_NE(batch, args.end());
  *(batch + 1) = "640";
  args.insert(args.end(), {"--microbatch-group-size-per-virtual-pipeline-stage", "12"});
  auto rep = Estimate(Job("deepseek-v3", 256, args));
  ASSERT_TRUE(rep.ok()) << rep.status();
  const v1::RankReport& last = rep->ranks(7);
  ASSERT_EQ(last.chunks_size(), 4);
  EXPECT_TRUE(last.chunks(3).has_loss());
  const uint32_t expected[] = {13, 8, 8, 8};
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(last.chunks(c).in_flight_microbatches(), expected[c]) << "chunk " << c;
  }
}

TEST(Estimator, FullRecomputeKeepsOnlyLayerInputs) {
  const std::vector<std::string> base = {
      "--seq-length",       "4096", "--micro-batch-size", "1", "--tensor-model-parallel-size", "2",
      "--sequence-parallel"};
  std::vector<std::string> full = base;
  full.insert(full.end(), {"--recompute-granularity", "full", "--recompute-method", "uniform",
                           "--recompute-num-layers", "1"});
  auto rep = Estimate(Job("llama3-8b", 8, full));
  ASSERT_TRUE(rep.ok()) << rep.status();
  // 32 layer inputs of 4096/2 tokens x 4096 x 2 bytes, + embedding/loss terms.
  const double layer_inputs = 32 * 2048.0 * 4096 * 2;
  const v1::RankReport& r = rep->ranks(0);
  const double loss = 4.0 * 4096 * 128256 / 2 + 2 * 2.0 * 2048 * 4096 + 4 * 2048;
  // + the data loader's [1, 1, 4096, 4096] bool attention mask the
  // checkpoints save (checkpointed_attention_mask.h): 16 MiB.
  const double mask = 4096.0 * 4096;
  EXPECT_NEAR(static_cast<double>(r.activation_bytes()), layer_inputs + loss + mask, 1e6);
}

TEST(Estimator, ValidationNamesFieldAndValue) {
  JobInputs src;
  src.preset = "llama3-8b";
  src.num_gpus = 12;
  src.megatron_args = {"--tensor-model-parallel-size", "8", "--seq-length", "4096",
                       "--micro-batch-size",           "1"};
  auto job = BuildJob(src, nullptr);
  ASSERT_TRUE(job.ok());
  auto rep = Estimate(*job);
  ASSERT_EQ(rep.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(rep.status().message().find("parallelism.num_gpus = 12"), std::string::npos)
      << rep.status();

  v1::JobSpec bad = *job;
  bad.mutable_parallelism()->set_num_gpus(8);
  bad.mutable_training()->set_seq_length(0);
  rep = Estimate(bad);
  EXPECT_NE(rep.status().message().find("training.seq_length = 0"), std::string::npos);

  bad = *job;
  bad.mutable_parallelism()->set_num_gpus(8);
  bad.mutable_model()->set_num_layers(30);
  bad.mutable_parallelism()->set_pipeline_model_parallel_size(4);
  bad.mutable_parallelism()->set_tensor_model_parallel_size(1);
  rep = Estimate(bad);
  EXPECT_NE(rep.status().message().find("parallelism.pipeline_model_parallel_size = 4"),
            std::string::npos)
      << rep.status();
}

TEST(PipelineLayout, ExpandsRepetitions) {
  auto stages = ExpandLayout("Et|(tt|)*2mL");
  ASSERT_TRUE(stages.ok());
  EXPECT_EQ(*stages, (std::vector<std::string>{"Et", "tt", "tt", "mL"}));
  EXPECT_FALSE(ExpandLayout("Et|(tt|*2").ok());
  EXPECT_FALSE(ExpandLayout("Ex").ok());
}

TEST(Estimator, DeterministicBitForBit) {
  v1::JobSpec job = Job("qwen3-30b-a3b", 16,
                        {"--expert-model-parallel-size", "16", "--seq-length", "4096",
                         "--micro-batch-size", "1", "--use-distributed-optimizer"});
  auto a = Estimate(job), b = Estimate(job);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->SerializeAsString(), b->SerializeAsString());
}

// Issue 26, item 3: --overlap-moe-expert-parallel-comm at PP 1 on
// Qwen3-30B-A3B (EP 8, micro-batch 4 of 4096 tokens, TE's fused cross
// entropy so that the loss has no backward working set). Megatron-Core's
// combined_1f1b_schedule_for_no_pipelining runs micro-batch i + 1's forward
// beside micro-batch i's backward, forward layer k with backward layer
// L - 1 - k: one micro-batch whole, as without the overlap (it was counted
// twice), plus what the forward's pre_dispatch_computation node of one layer
// keeps before the backward's MLP node frees its counterpart, beside that
// layer's backward working set. 16384 tokens, h 2048, 32 heads and 4 KV
// groups of 128, bf16:
//   input norm: input 2 x 16384 x 2048 + output 2 x 16384 x 2048 + 4 x 16384
//     rsigma = 134,283,264
//   linear_qkv: output 2 x 16384 x 5120 + q, k after RoPE 2 x 16384 x 36 x
//     128 = 318,767,104
//   core attention: softmax LSE 4 x 16384 x 32 + output 2 x 16384 x 4096 =
//     136,314,880
//   pre-MLP norm (its own TENorm in an MoE layer): 134,283,264
//   router, fp32: 16384 x 128 experts x (4 + 4 + 4 + 1) = 27,262,976
// = 750,911,488 B. The layer's backward working set is the alltoall
// dispatcher's forward copies (16 local experts, so dispatch_postprocess
// sorts): permuted, dispatched, fc2 output and its un-sorted copy, each
// 2 x 131072 routed tokens x 2048 = 536,870,912: 2 GiB.
TEST(Estimator, ExpertParallelOverlapAtPp1HoldsOneMicroBatchAndOneLayerPart) {
  const std::vector<std::string> args = {"--expert-model-parallel-size",
                                         "8",
                                         "--micro-batch-size",
                                         "4",
                                         "--global-batch-size",
                                         "512",
                                         "--seq-length",
                                         "4096",
                                         "--bf16",
                                         "--moe-token-dispatcher-type",
                                         "alltoall",
                                         "--moe-grouped-gemm",
                                         "--moe-router-dtype",
                                         "fp32",
                                         "--use-distributed-optimizer",
                                         "--cross-entropy-loss-fusion",
                                         "--cross-entropy-fusion-impl",
                                         "te"};
  std::vector<std::string> overlapped = args;
  overlapped.push_back("--overlap-moe-expert-parallel-comm");
  const auto without = Estimate(Job("qwen3-30b-a3b", 8, args));
  const auto with = Estimate(Job("qwen3-30b-a3b", 8, overlapped));
  ASSERT_TRUE(without.ok()) << without.status();
  ASSERT_TRUE(with.ok()) << with.status();
  const v1::RankReport& a = without->ranks(0);
  const v1::RankReport& b = with->ranks(0);
  EXPECT_EQ(b.chunks(0).in_flight_microbatches(), 1u);
  EXPECT_EQ(b.chunks(0).activation_bytes_per_microbatch(),
            a.chunks(0).activation_bytes_per_microbatch());
  EXPECT_EQ(b.activation_bytes(), a.activation_bytes());
  EXPECT_EQ(b.activation_bytes(), b.chunks(0).activation_bytes_per_microbatch());
  EXPECT_EQ(a.transient_bytes(), 2147483648u);
  EXPECT_EQ(b.transient_bytes(), 2147483648u + 750911488u);
  EXPECT_EQ(b.peak_allocated_bytes() - a.peak_allocated_bytes(), 750911488u);
}

}  // namespace
}  // namespace oomguard
