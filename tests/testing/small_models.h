// The small GPT the estimator's mechanism tests share (the shape of
// Megatron's functional CI tests): 512 hidden, 8 heads, micro-batch 4 of
// 1024 tokens (global batch 32), the GPT-2 vocabulary, bf16. Numbers in
// those tests are hand-derived from this shape.
#ifndef OOMGUARD_TESTS_TESTING_SMALL_MODELS_H_
#define OOMGUARD_TESTS_TESTING_SMALL_MODELS_H_

#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "estimator/estimator.h"
#include "estimator/validated_job.h"
#include "gtest/gtest.h"
#include "jobspec/job_builder.h"

namespace oomguard::testing {

// Its Megatron-LM arguments with `num_layers` layers, then `extra`.
inline std::vector<std::string> SmallGptArgs(int num_layers, std::vector<std::string> extra) {
  std::vector<std::string> args = {"--num-layers",
                                   std::to_string(num_layers),
                                   "--hidden-size",
                                   "512",
                                   "--num-attention-heads",
                                   "8",
                                   "--micro-batch-size",
                                   "4",
                                   "--global-batch-size",
                                   "32",
                                   "--seq-length",
                                   "1024",
                                   "--max-position-embeddings",
                                   "1024",
                                   "--vocab-size",
                                   "50257",
                                   "--bf16"};
  args.insert(args.end(), std::make_move_iterator(extra.begin()),
              std::make_move_iterator(extra.end()));
  return args;
}

// The job of Megatron-LM arguments `args` (over `preset` when given) on
// `gpus` GPUs; a test failure (and an empty job) when it is refused.
inline v1::JobSpec JobFromArgs(std::vector<std::string> args, uint32_t gpus = 8,
                               const std::string& preset = "") {
  JobInputs src;
  src.preset = preset;
  src.num_gpus = gpus;
  src.megatron_args = std::move(args);
  absl::StatusOr<v1::JobSpec> job = BuildJob(src, nullptr);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *std::move(job) : v1::JobSpec();
}

// The estimate of Megatron-LM arguments `args` on `gpus` GPUs (the
// builder's or the estimator's error when either refuses them).
inline absl::StatusOr<v1::EstimateReport> EstimateArgs(std::vector<std::string> args,
                                                       uint32_t gpus = 8) {
  JobInputs src;
  src.num_gpus = gpus;
  src.megatron_args = std::move(args);
  absl::StatusOr<v1::JobSpec> job = BuildJob(src, nullptr);
  if (!job.ok()) return job.status();
  return Estimate(*job);
}

// The same, validated.
inline ValidatedJob ValidatedJobFromArgs(std::vector<std::string> args, uint32_t gpus = 8) {
  absl::StatusOr<ValidatedJob> j = ValidateJob(JobFromArgs(std::move(args), gpus), nullptr);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? *std::move(j) : ValidatedJob();
}

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_TESTING_SMALL_MODELS_H_
