// Megatron-Core's conditions for --overlap-moe-expert-parallel-comm
// (TransformerConfig.__post_init__), one job per condition broken.
#include "estimator/expert_parallel_overlap.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "jobspec/job_builder.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

// Qwen3-30B-A3B on 32 GPUs with `args` (EP 8 unless they say otherwise),
// `change` applied to its JobSpec (for what no Megatron-LM flag sets).
ValidatedJob Job(
    const std::string& args,
    const std::function<void(v1::JobSpec&)>& change = [](v1::JobSpec&) {}) {
  JobInputs src;
  src.preset = "qwen3-30b-a3b";
  src.num_gpus = 32;
  src.megatron_args = absl::StrSplit(
      "--seq-length 4096 --global-batch-size 256 --micro-batch-size 1 --bf16 " + args, ' ',
      absl::SkipEmpty());
  absl::StatusOr<v1::JobSpec> spec = BuildJob(src, nullptr);
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return ValidatedJob();
  change(*spec);
  absl::StatusOr<ValidatedJob> j = ValidateJob(*spec, nullptr);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? *std::move(j) : ValidatedJob();
}

TEST(ExpertParallelOverlap, AcceptedWithEpAndTheInterleavedSchedule) {
  EXPECT_EQ(ExpertParallelOverlapConflict(Job("--expert-model-parallel-size 8")), std::nullopt);
  EXPECT_EQ(ExpertParallelOverlapConflict(
                Job("--expert-model-parallel-size 8 --pipeline-model-parallel-size 2 "
                    "--num-virtual-stages-per-pipeline-rank 2 --recompute-granularity selective "
                    "--recompute-modules moe_act layernorm")),
            std::nullopt);
}

TEST(ExpertParallelOverlap, EachConditionNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "it needs expert parallelism (EP > 1)"},
      {"--expert-model-parallel-size 8 --moe-token-dispatcher-type allgather",
       "it needs the alltoall or flex token dispatcher"},
      {"--expert-model-parallel-size 8 --pipeline-model-parallel-size 2",
       "with pipeline parallelism it needs virtual pipeline stages (VPP > 1)"},
      {"--expert-model-parallel-size 8 --recompute-granularity full --recompute-method uniform "
       "--recompute-num-layers 1",
       "it cannot run with full recompute"},
      {"--expert-model-parallel-size 8 --recompute-granularity selective --recompute-modules moe",
       "it cannot run with the moe module recomputed"},
      {"--expert-model-parallel-size 8 --moe-shared-expert-overlap",
       "it cannot run with --moe-shared-expert-overlap"},
      {"--expert-model-parallel-size 8 --mtp-num-layers 2",
       "it supports at most one MTP layer (the model has 2)"},
  };
  for (const auto& [args, why] : cases) {
    EXPECT_EQ(ExpertParallelOverlapConflict(Job(args)), why) << args;
  }
  // Releases before the flag existed (RuntimeSpec.megatron_core_version).
  for (const auto& release : std::vector<std::pair<std::string, std::optional<std::string>>>{
           {"0.13", "it needs Megatron-Core 0.14 or newer"}, {"0.14", std::nullopt}}) {
    const std::string& version = release.first;
    const ValidatedJob j = Job("--expert-model-parallel-size 8", [&](v1::JobSpec& spec) {
      spec.mutable_runtime()->set_megatron_core_version(version);
    });
    EXPECT_EQ(ExpertParallelOverlapConflict(j), release.second) << version;
  }
  // fp32 parameters.
  EXPECT_EQ(
      ExpertParallelOverlapConflict(Job(
          "--expert-model-parallel-size 8",
          [](v1::JobSpec& spec) { spec.mutable_precision()->set_params_dtype(v1::DTYPE_FP32); })),
      "it needs bf16 or fp16 parameters");
  // A dense model.
  const absl::StatusOr<ValidatedJob> dense = ValidateJob(
      testing::JobFromArgs(
          {"--seq-length", "4096", "--global-batch-size", "64", "--micro-batch-size", "1"}, 8,
          "llama3-8b"),
      nullptr);
  ASSERT_TRUE(dense.ok()) << dense.status();
  EXPECT_EQ(ExpertParallelOverlapConflict(*dense), "it needs a model with experts (MoE)");
}

// The job's own conditions come first, and alone they ignore the setting's:
// the planner refuses a plan over them, whatever it would search.
TEST(ExpertParallelOverlap, JobConditionsApartFromTheSetting) {
  const ValidatedJob allgather_pp2 =
      Job("--expert-model-parallel-size 8 --pipeline-model-parallel-size 2 "
          "--moe-token-dispatcher-type allgather");
  EXPECT_EQ(ExpertParallelOverlapConflict(allgather_pp2),
            "it needs the alltoall or flex token dispatcher");
  EXPECT_EQ(ExpertParallelOverlapJobConflict(allgather_pp2),
            "it needs the alltoall or flex token dispatcher");
  // The setting's conditions are not the job's.
  for (const std::string args :
       {"", "--expert-model-parallel-size 8 --pipeline-model-parallel-size 2",
        "--expert-model-parallel-size 8 --recompute-granularity full --recompute-method uniform "
        "--recompute-num-layers 1"}) {
    const ValidatedJob j = Job(args);
    EXPECT_NE(ExpertParallelOverlapConflict(j), std::nullopt) << args;
    EXPECT_EQ(ExpertParallelOverlapJobConflict(j), std::nullopt) << args;
  }
  EXPECT_EQ(ExpertParallelOverlapJobConflict(Job("--mtp-num-layers 2")),
            "it supports at most one MTP layer (the model has 2)");
}

}  // namespace
}  // namespace oomguard
