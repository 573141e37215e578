// What --cp-comm-type keeps per layer (estimator/context_parallel_attention.h),
// against values derived here by hand, and its rules.
//
// The layer: h 4096, 32 heads of 128, 8 KV groups, RoPE (fused), GELU FFN
// 1024, bf16, flash attention, TP 1, CP 4, b 1, s 8192: full = 8192 / 4 =
// 2048 tokens per CP rank, qkv width (32 + 2 x 8) x 128 = 6144.
#include "estimator/context_parallel_attention.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/status/statusor.h"
#include "estimator/layer_memory.h"
#include "estimator/validated_job.h"
#include "oomguard/v1/job.pb.h"
#include "oomguard/v1/report.pb.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;

v1::JobSpec CpJob(v1::CpCommType type) {
  v1::JobSpec job;
  v1::ModelSpec* m = job.mutable_model();
  m->set_num_layers(4);
  m->set_hidden_size(4096);
  m->set_ffn_hidden_size(1024);
  m->set_num_attention_heads(32);
  m->set_num_query_groups(8);
  m->set_vocab_size(32000);
  m->set_position_embedding(v1::POSITION_EMBEDDING_ROPE);
  m->set_hidden_dropout(0);
  m->set_attention_dropout(0);
  job.mutable_parallelism()->set_num_gpus(4);
  job.mutable_parallelism()->set_context_parallel_size(4);
  if (type != v1::CP_COMM_TYPE_UNSPECIFIED) job.mutable_parallelism()->add_cp_comm_type(type);
  job.mutable_training()->set_micro_batch_size(1);
  job.mutable_training()->set_seq_length(8192);
  job.mutable_precision()->set_params_dtype(v1::DTYPE_BF16);
  return job;
}

struct Layer {
  uint64_t qkv = 0;
  uint64_t core_attention = 0;
  double transient = 0;
};

Layer LayerOf(const v1::JobSpec& job) {
  absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
  EXPECT_TRUE(j.ok()) << j.status();
  if (!j.ok()) return {};
  v1::ModuleNode tree;
  const BlockCost c = DecoderLayerCost(*j, false, &tree);
  Layer layer;
  for (const v1::ModuleNode& top : tree.children()) {
    for (const v1::ModuleNode& node : top.children()) {
      if (node.name() == "linear_qkv") layer.qkv = node.activation_bytes();
      if (node.name() == "core_attention") layer.core_attention = node.activation_bytes();
    }
  }
  layer.transient = c.transient_bytes;
  return layer;
}

// p2p, the default, as today: linear_qkv keeps the fused output, 2 x 2048 x
// 6144 = 25,165,824, and the RoPE'd q and k, 2 x 2048 x 40 x 128 =
// 20,971,520: 46,137,344. Core attention: the fp32 log-sum-exp, 4 x 2048 x
// 32 = 262,144, and the output, 2 x 2048 x 32 x 128 = 16,777,216:
// 17,039,360. Backward: the q/k/v gradients, 2 x 2 x 2048 x 6144 =
// 50,331,648 (the MLP's 2 x 2048 x 2 x 1024 = 8,388,608 is less).
TEST(ContextParallelAttention, P2pIsTheDefaultAndKeepsTodaysNumbers) {
  for (v1::CpCommType type : {v1::CP_COMM_TYPE_UNSPECIFIED, v1::CP_COMM_TYPE_P2P}) {
    const Layer layer = LayerOf(CpJob(type));
    EXPECT_EQ(layer.qkv, 46137344u);
    EXPECT_EQ(layer.core_attention, 17039360u);
    EXPECT_EQ(layer.transient, 50331648.0);
  }
}

// a2a: core attention keeps the q, k, v the all-to-all gave it (2 x 2048 x
// 6144 = 25,165,824; the fused output and the RoPE copies are freed) and
// its output before the reverse all-to-all beside the one linear_proj
// keeps: 17,039,360 + 16,777,216 = 33,816,576. a2a+p2p with an inner
// group of 2 keeps the same.
TEST(ContextParallelAttention, AllToAllKeepsItsOwnCopies) {
  const Layer a2a = LayerOf(CpJob(v1::CP_COMM_TYPE_A2A));
  EXPECT_EQ(a2a.qkv, 25165824u);
  EXPECT_EQ(a2a.core_attention, 33816576u);
  EXPECT_EQ(a2a.transient, 50331648.0);
  v1::JobSpec job = CpJob(v1::CP_COMM_TYPE_A2A_P2P);
  job.mutable_parallelism()->add_hierarchical_context_parallel_sizes(2);
  job.mutable_parallelism()->add_hierarchical_context_parallel_sizes(2);
  const Layer hierarchical = LayerOf(job);
  EXPECT_EQ(hierarchical.qkv, 25165824u);
  EXPECT_EQ(hierarchical.core_attention, 33816576u);
}

// all_gather saves what p2p does; its backward gathers K and V again over
// the 4 ranks and builds their full-sequence gradients: 2 x 4 x (k and v,
// 2 x 2048 x 2 x 8 x 128 = 8,388,608) = 67,108,864 on top of the q/k/v
// gradients: 117,440,512.
TEST(ContextParallelAttention, AllGatherGathersKeysAndValuesInBackward) {
  const Layer layer = LayerOf(CpJob(v1::CP_COMM_TYPE_ALL_GATHER));
  EXPECT_EQ(layer.qkv, 46137344u);
  EXPECT_EQ(layer.core_attention, 17039360u);
  EXPECT_EQ(layer.transient, 117440512.0);
}

TEST(ContextParallelAttention, Rules) {
  auto error = [](const v1::JobSpec& job) {
    return std::string(ValidateJob(job, nullptr).status().message());
  };
  v1::JobSpec job = CpJob(v1::CP_COMM_TYPE_A2A_P2P);
  EXPECT_THAT(error(job), HasSubstr("parallelism.cp_comm_type = CP_COMM_TYPE_A2A_P2P: needs "
                                    "parallelism.hierarchical_context_parallel_sizes"));
  job.mutable_parallelism()->add_hierarchical_context_parallel_sizes(2);
  EXPECT_THAT(error(job), HasSubstr("parallelism.hierarchical_context_parallel_sizes = [2]: "
                                    "their product 2 must be context_parallel_size 4"));
  // One type per layer: 4 layers, so 4 types or one.
  job = CpJob(v1::CP_COMM_TYPE_P2P);
  job.mutable_parallelism()->add_cp_comm_type(v1::CP_COMM_TYPE_P2P);
  EXPECT_THAT(error(job), HasSubstr("parallelism.cp_comm_type = 2 types: one type, or one per "
                                    "layer (model.num_layers 4)"));
  job.mutable_parallelism()->add_cp_comm_type(v1::CP_COMM_TYPE_P2P);
  job.mutable_parallelism()->add_cp_comm_type(v1::CP_COMM_TYPE_P2P);
  EXPECT_TRUE(ValidateJob(job, nullptr).ok());
  // A per-layer mix is not modelled.
  job.mutable_parallelism()->set_cp_comm_type(3, v1::CP_COMM_TYPE_A2A);
  EXPECT_EQ(ValidateJob(job, nullptr).status().code(), absl::StatusCode::kUnimplemented);
  // a2a splits the 8 KV groups over the 4 ranks: 8 % 4 == 0; over 16 it
  // cannot.
  job = CpJob(v1::CP_COMM_TYPE_A2A);
  job.mutable_parallelism()->set_num_gpus(16);
  job.mutable_parallelism()->set_context_parallel_size(16);
  EXPECT_THAT(error(job), HasSubstr("the all-to-all splits the 32 heads and 8 key/value groups "
                                    "per TP rank over its 16 ranks"));
}

}  // namespace
}  // namespace oomguard
