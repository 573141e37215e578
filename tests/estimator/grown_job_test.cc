// A grown job is the same job with one size multiplied, never a smaller one
// wrapped around its 32-bit field; and the estimate of the job that
// exposed that wrap grows with its micro-batch.
#include "estimator/grown_job.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "estimator/estimator.h"
#include "estimator/report_invariants.h"

namespace oomguard {
namespace {

// The job the estimator's fuzz target reported (a 16-layer, hidden-8192
// MoE model on the alltoall dispatcher with the EP overlap, on one GPU):
// its micro-batch of 859,774,351 "grown" 5x wrapped around to 3,904,459,
// and the smaller job's capped transient looked like a shrink.
v1::JobSpec FuzzedJob(uint32_t micro_batch) {
  v1::JobSpec job;
  v1::ModelSpec& m = *job.mutable_model();
  m.set_num_layers(16);
  m.set_hidden_size(8192);
  m.set_num_attention_heads(64);
  m.set_vocab_size(32000);
  m.set_num_experts(8);
  m.set_moe_router_topk(2);
  m.set_moe_token_dispatcher(v1::TOKEN_DISPATCHER_ALLTOALL);
  job.mutable_parallelism()->set_num_gpus(1);
  job.mutable_parallelism()->set_overlap_moe_expert_parallel_comm(true);
  job.mutable_training()->set_micro_batch_size(micro_batch);
  job.mutable_training()->set_seq_length(128);
  return job;
}

TEST(GrownJobTest, MultipliesTheSizeAndWhatMustGrowWithIt) {
  v1::JobSpec job = FuzzedJob(2);
  job.mutable_training()->set_global_batch_size(64);
  job.mutable_model()->set_max_position_embeddings(128);
  const std::optional<v1::JobSpec> batch = GrownJob(job, Growth::kMicroBatch, 3);
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->training().micro_batch_size(), 6u);
  EXPECT_EQ(batch->training().global_batch_size(), 192u);  // 32 micro-batches kept.
  const std::optional<v1::JobSpec> seq = GrownJob(job, Growth::kSequence, 2);
  ASSERT_TRUE(seq.has_value());
  EXPECT_EQ(seq->training().seq_length(), 256u);
  EXPECT_EQ(seq->model().max_position_embeddings(), 256u);
  EXPECT_EQ(GrownJob(job, Growth::kLayers, 4)->model().num_layers(), 64u);
  EXPECT_EQ(GrownJob(job, Growth::kHidden, 2)->model().hidden_size(), 16384u);
  EXPECT_EQ(GrownJob(job, Growth::kExperts, 8)->model().num_experts(), 64u);
  EXPECT_STREQ(GrowthName(Growth::kExperts), "model.num_experts");
}

TEST(GrownJobTest, NeverWrapsAroundItsField) {
  // 859,774,351 x 5 = 4,298,871,755 > 2^32 - 1: no such job (uint32
  // arithmetic would give 3,904,459).
  EXPECT_FALSE(GrownJob(FuzzedJob(859774351), Growth::kMicroBatch, 5).has_value());
  EXPECT_TRUE(GrownJob(FuzzedJob(858993459), Growth::kMicroBatch, 5).has_value());  // 2^32 - 1.
  v1::JobSpec job = FuzzedJob(1);
  job.mutable_training()->set_global_batch_size(1u << 30);
  EXPECT_FALSE(GrownJob(job, Growth::kMicroBatch, 4).has_value());
}

TEST(GrownJobTest, NoGrownJobWhereTheSizeIsUnsetOrThePatternWouldChange) {
  EXPECT_FALSE(GrownJob(FuzzedJob(1), Growth::kMicroBatch, 1).has_value());  // Factor < 2.
  v1::JobSpec dense = FuzzedJob(1);
  dense.mutable_model()->set_num_experts(0);
  EXPECT_FALSE(GrownJob(dense, Growth::kExperts, 2).has_value());
  v1::JobSpec periodic = FuzzedJob(1);
  periodic.mutable_model()->set_moe_layer_freq(4);  // 16 layers: 4 whole periods.
  EXPECT_TRUE(GrownJob(periodic, Growth::kLayers, 2).has_value());
  periodic.mutable_model()->set_moe_layer_freq(3);  // Layer 15 is MoE; layer 31 would not be.
  EXPECT_FALSE(GrownJob(periodic, Growth::kLayers, 2).has_value());
  v1::JobSpec pattern = FuzzedJob(1);
  for (int l = 0; l < 16; ++l) pattern.mutable_model()->add_moe_layer_pattern(l % 2);
  EXPECT_FALSE(GrownJob(pattern, Growth::kLayers, 2).has_value());
}

// The fuzzed job's two micro-batches in their true order: 3,904,459 is the
// smaller job, and nothing of it exceeds the job with 859,774,351.
TEST(GrownJobTest, TheFuzzedJobGrowsWithItsMicroBatch) {
  const absl::StatusOr<v1::EstimateReport> smaller = Estimate(FuzzedJob(3904459), {});
  const absl::StatusOr<v1::EstimateReport> larger = Estimate(FuzzedJob(859774351), {});
  ASSERT_TRUE(smaller.ok()) << smaller.status();
  ASSERT_TRUE(larger.ok()) << larger.status();
  EXPECT_TRUE(CheckGrowsWith(*smaller, *larger).ok()) << CheckGrowsWith(*smaller, *larger);
  // The larger job's transient reaches the 2^50 limit, the smaller one's
  // does not.
  EXPECT_EQ(larger->ranks(0).transient_bytes(), uint64_t{1} << 50);
  EXPECT_LT(smaller->ranks(0).transient_bytes(), uint64_t{1} << 50);
}

}  // namespace
}  // namespace oomguard
