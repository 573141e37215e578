// The data loader's attention mask that full recompute's checkpoints save
// (estimator/checkpointed_attention_mask.h), against hand-derived byte
// counts: micro-batch 4, seq 1024, so the [4, 1, 1024, 1024] bool mask is
// 4 MiB.
#include "estimator/checkpointed_attention_mask.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "estimator/validated_job.h"
#include "jobspec/job_builder.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

ValidatedJob Job(uint32_t gpus, std::vector<std::string> extra) {
  return testing::ValidatedJobFromArgs(testing::SmallGptArgs(8, std::move(extra)), gpus);
}

const std::vector<std::string> kFullRecompute = {"--recompute-granularity", "full",
                                                 "--recompute-method",      "uniform",
                                                 "--recompute-num-layers",  "1"};

std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// PP 4: get_batch loads the mask on the first stage (embedding) and the
// last (loss) only; each keeps 4 x 1024 x 1024 bytes per micro-batch.
TEST(CheckpointedAttentionMask, FirstAndLastStagesKeepOnePerMicroBatch) {
  const ValidatedJob j = Job(4, With({"--pipeline-model-parallel-size", "4"}, kFullRecompute));
  ASSERT_EQ(j.stages.size(), 4u);
  EXPECT_DOUBLE_EQ(CheckpointedAttentionMaskBytes(j, j.stages[0]), 4 * kMiB);
  EXPECT_DOUBLE_EQ(CheckpointedAttentionMaskBytes(j, j.stages[1]), 0);
  EXPECT_DOUBLE_EQ(CheckpointedAttentionMaskBytes(j, j.stages[2]), 0);
  EXPECT_DOUBLE_EQ(CheckpointedAttentionMaskBytes(j, j.stages[3]), 4 * kMiB);
}

// Context parallelism keeps this rank's s/CP rows: 2 MiB at CP 2.
TEST(CheckpointedAttentionMask, ContextParallelKeepsItsRows) {
  const ValidatedJob j = Job(2, With({"--context-parallel-size", "2"}, kFullRecompute));
  EXPECT_DOUBLE_EQ(CheckpointedAttentionMaskBytes(j, j.stages[0]), 2 * kMiB);
}

// No checkpoint saves it without full recompute (TE's causal attention
// never reads it), and the data loader makes none when told not to.
TEST(CheckpointedAttentionMask, NoneWithoutFullRecomputeOrWithoutTheMask) {
  const ValidatedJob selective = Job(1, {"--recompute-granularity", "selective"});
  EXPECT_DOUBLE_EQ(CheckpointedAttentionMaskBytes(selective, selective.stages[0]), 0);
  const ValidatedJob no_mask =
      Job(1, With({"--no-create-attention-mask-in-dataloader"}, kFullRecompute));
  EXPECT_FALSE(no_mask.training.dense_mask);
  EXPECT_DOUBLE_EQ(CheckpointedAttentionMaskBytes(no_mask, no_mask.stages[0]), 0);
}

}  // namespace
}  // namespace oomguard
