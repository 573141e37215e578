// Megatron-Core's conditions for --overlap-moe-expert-parallel-comm
// (TransformerConfig.__post_init__), one job per condition broken.
#include "estimator/expert_parallel_overlap.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "jobspec/job_builder.h"

namespace oomguard {
namespace {

// Qwen3-30B-A3B on 32 GPUs with `args` (EP 8 unless they say otherwise).
ValidatedJob Job(const std::string& args, const std::string& preset = "qwen3-30b-a3b") {
  JobInputs src;
  src.preset = preset;
  src.num_gpus = 32;
  src.megatron_args = absl::StrSplit(
      "--seq-length 4096 --global-batch-size 256 --micro-batch-size 1 --bf16 " + args, ' ',
      absl::SkipEmpty());
  absl::StatusOr<v1::JobSpec> spec = BuildJob(src, nullptr);
  EXPECT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<ValidatedJob> j = ValidateJob(spec.ok() ? *spec : v1::JobSpec(), nullptr);
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
  {
    JobInputs older;
    older.preset = "qwen3-30b-a3b";
    older.num_gpus = 32;
    older.megatron_args = {"--seq-length",       "4096", "--global-batch-size",          "256",
                           "--micro-batch-size", "1",    "--expert-model-parallel-size", "8"};
    absl::StatusOr<v1::JobSpec> spec = BuildJob(older, nullptr);
    ASSERT_TRUE(spec.ok()) << spec.status();
    for (const auto& [version, why] :
         std::vector<std::pair<std::string, std::optional<std::string>>>{
             {"0.13", "it needs Megatron-Core 0.14 or newer"}, {"0.14", std::nullopt}}) {
      spec->mutable_runtime()->set_megatron_core_version(version);
      absl::StatusOr<ValidatedJob> j = ValidateJob(*spec, nullptr);
      ASSERT_TRUE(j.ok()) << j.status();
      EXPECT_EQ(ExpertParallelOverlapConflict(*j), why) << version;
    }
  }
  // fp32 parameters.
  JobInputs src;
  src.preset = "qwen3-30b-a3b";
  src.num_gpus = 32;
  src.megatron_args = {"--seq-length",       "4096", "--global-batch-size",          "256",
                       "--micro-batch-size", "1",    "--expert-model-parallel-size", "8"};
  absl::StatusOr<v1::JobSpec> spec = BuildJob(src, nullptr);
  ASSERT_TRUE(spec.ok()) << spec.status();
  spec->mutable_precision()->set_params_dtype(v1::DTYPE_FP32);
  absl::StatusOr<ValidatedJob> fp32 = ValidateJob(*spec, nullptr);
  ASSERT_TRUE(fp32.ok()) << fp32.status();
  EXPECT_EQ(ExpertParallelOverlapConflict(*fp32), "it needs bf16 or fp16 parameters");
}

}  // namespace
}  // namespace oomguard
