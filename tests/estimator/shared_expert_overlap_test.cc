// Megatron-Core's conditions for --moe-shared-expert-overlap
// (TransformerConfig.__post_init__), one job per condition broken.
#include "estimator/shared_expert_overlap.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

// Moonlight-16B-A3B (two shared experts) on 16 GPUs with EP 8 and `args`.
ValidatedJob Moonlight(const std::string& args) {
  v1::JobSpec spec = testing::JobFromArgs(
      absl::StrSplit("--seq-length 4096 --global-batch-size 128 --micro-batch-size 1 --bf16 "
                     "--expert-model-parallel-size 8 " +
                         args,
                     ' ', absl::SkipEmpty()),
      16, "moonlight-16b-a3b");
  absl::StatusOr<ValidatedJob> j = ValidateJob(spec, nullptr);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? *std::move(j) : ValidatedJob();
}

TEST(SharedExpertOverlap, EachConditionNamed) {
  const std::vector<std::pair<std::string, std::optional<std::string>>> cases = {
      {"--moe-shared-expert-overlap", std::nullopt},
      {"--moe-shared-expert-overlap --moe-token-dispatcher-type flex", std::nullopt},
      {"--moe-shared-expert-overlap --moe-token-dispatcher-type allgather",
       "it needs the alltoall or flex token dispatcher"},
      {"--moe-shared-expert-overlap --recompute-granularity selective --recompute-modules "
       "shared_experts moe_act",
       "it cannot run with the shared_experts module recomputed"},
      // Full recompute has no module list: accepted.
      {"--moe-shared-expert-overlap --recompute-granularity full --recompute-method uniform "
       "--recompute-num-layers 1",
       std::nullopt},
      // Without the flag nothing is refused.
      {"--moe-token-dispatcher-type allgather --recompute-granularity selective "
       "--recompute-modules shared_experts",
       std::nullopt},
  };
  for (const auto& [args, why] : cases) {
    EXPECT_EQ(SharedExpertOverlapConflict(Moonlight(args)), why) << args;
  }
}

TEST(SharedExpertOverlap, NothingToRefuseWithoutSharedExperts) {
  // Qwen3-30B-A3B has none: Megatron-Core checks only when
  // moe_shared_expert_intermediate_size is set.
  const absl::StatusOr<ValidatedJob> j =
      ValidateJob(testing::JobFromArgs(
                      {"--seq-length", "4096", "--global-batch-size", "64", "--micro-batch-size",
                       "1", "--expert-model-parallel-size", "8", "--moe-shared-expert-overlap",
                       "--moe-token-dispatcher-type", "allgather"},
                      8, "qwen3-30b-a3b"),
                  nullptr);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(SharedExpertOverlapConflict(*j), std::nullopt);
}

}  // namespace
}  // namespace oomguard
