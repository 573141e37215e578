// --tp-comm-overlap: Megatron-LM's rule for it and the memory Transformer
// Engine registers for it, hand-derived from initialize_ub's buffers.
#include "estimator/tp_comm_overlap.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "estimator/estimator.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

// Llama-3 70B (hidden 8192) on 32 GPUs, sequence 4096, with `args`.
v1::JobSpec Llama70b(const std::string& args) {
  return testing::JobFromArgs(
      absl::StrSplit("--seq-length 4096 --global-batch-size 64 --micro-batch-size 1 --bf16 " + args,
                     ' ', absl::SkipEmpty()),
      32, "llama3-70b");
}

ValidatedJob Validated(const std::string& args) {
  absl::StatusOr<ValidatedJob> j = ValidateJob(Llama70b(args), nullptr);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? *std::move(j) : ValidatedJob();
}

constexpr double kTokensTimesHidden = 4096.0 * 8192;  // One [s*b/CP, h] buffer's elements.
constexpr char kTp4[] = "--tensor-model-parallel-size 4 --sequence-parallel --tp-comm-overlap ";

TEST(TpCommOverlap, NeedsSequenceParallelism) {
  const std::vector<std::pair<std::string, std::optional<std::string>>> cases = {
      {kTp4, std::nullopt},
      {"--tensor-model-parallel-size 4 --sequence-parallel", std::nullopt},
      {"--tensor-model-parallel-size 4 --tp-comm-overlap",
       "it needs sequence parallelism: TP > 1 and --sequence-parallel"},
      // Megatron-LM turns sequence parallelism off at TP 1.
      {"--sequence-parallel --tp-comm-overlap",
       "it needs sequence parallelism: TP > 1 and --sequence-parallel"},
  };
  for (const auto& [args, why] : cases) {
    EXPECT_EQ(TpCommOverlapConflict(Validated(args)), why) << args;
  }
}

TEST(TpCommOverlap, UserbuffersPerTransformerEngineRelease) {
  // No flag, no buffers.
  EXPECT_EQ(TpCommOverlapUserbufferBytes(Validated("--tensor-model-parallel-size 4")), 0);
  EXPECT_EQ(TpCommOverlapWorkspaceBytes(Validated("--tensor-model-parallel-size 4")), 0);
  // TE 2.7 and newer: 12 bf16 buffers (TP does not divide them).
  EXPECT_EQ(TpCommOverlapUserbufferBytes(Validated(kTp4)), 12 * 2 * kTokensTimesHidden);
  EXPECT_EQ(TpCommOverlapWorkspaceBytes(Validated(kTp4)), 3 * 32.0 * 1024 * 1024);
  // FP8: the 8 all-gather buffers hold 1-byte data, the 4 reduce-scatter ones bf16.
  EXPECT_EQ(TpCommOverlapUserbufferBytes(Validated(std::string(kTp4) + "--fp8-format hybrid")),
            (8 * 1 + 4 * 2) * kTokensTimesHidden);
  // --first-last-layers-bf16 adds a bf16 set.
  EXPECT_EQ(TpCommOverlapUserbufferBytes(
                Validated(std::string(kTp4) +
                          "--fp8-format hybrid --fp8-recipe tensorwise --first-last-layers-bf16")),
            (8 * 1 + 4 * 2 + 12 * 2) * kTokensTimesHidden);
  // Before TE 2.7: 10 GEMMs (no proj_wgrad, fc2_wgrad), 6 of them all-gathers.
  v1::JobSpec te26 = Llama70b(std::string(kTp4) + "--fp8-format hybrid");
  te26.mutable_runtime()->set_transformer_engine_version("2.6");
  absl::StatusOr<ValidatedJob> old = ValidateJob(te26, nullptr);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(TpCommOverlapUserbufferBytes(*old), (6 * 1 + 4 * 2) * kTokensTimesHidden);
  // Micro-batch 2 doubles the shape; CP 2 halves it.
  EXPECT_EQ(TpCommOverlapUserbufferBytes(
                Validated(std::string(kTp4) + "--micro-batch-size 2 --context-parallel-size 2")),
            12 * 2 * kTokensTimesHidden);
}

// The estimate adds both: the workspace inside PyTorch's allocator, the
// userbuffers outside it, on every rank.
TEST(TpCommOverlap, EstimateCarriesBothItems) {
  const std::string pp =
      "--tensor-model-parallel-size 4 --sequence-parallel "
      "--pipeline-model-parallel-size 2 --use-distributed-optimizer";
  const absl::StatusOr<PeakEstimate> without = EstimatePeaks(Llama70b(pp));
  const absl::StatusOr<PeakEstimate> with = EstimatePeaks(Llama70b(pp + " --tp-comm-overlap"));
  ASSERT_TRUE(without.ok()) << without.status();
  ASSERT_TRUE(with.ok()) << with.status();
  ASSERT_EQ(with->ranks.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(with->ranks[r].peak_device_bytes - without->ranks[r].peak_device_bytes,
              static_cast<uint64_t>(12 * 2 * kTokensTimesHidden + 3 * 32.0 * 1024 * 1024))
        << "rank " << r;
  }
  const absl::StatusOr<v1::EstimateReport> report = Estimate(Llama70b(pp + " --tp-comm-overlap"));
  ASSERT_TRUE(report.ok()) << report.status();
  int items = 0;
  for (const v1::Overhead& o : report->ranks(0).overheads()) {
    if (o.name() == "tp_comm_overlap_userbuffers") {
      EXPECT_FALSE(o.in_allocated());
      EXPECT_EQ(o.bytes(), static_cast<uint64_t>(12 * 2 * kTokensTimesHidden));
      ++items;
    } else if (o.name() == "tp_comm_overlap_workspace") {
      EXPECT_TRUE(o.in_allocated());
      ++items;
    }
  }
  EXPECT_EQ(items, 2);
}

}  // namespace
}  // namespace oomguard
