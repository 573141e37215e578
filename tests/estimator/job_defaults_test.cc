// Tests of the defaults of unset JobSpec fields (estimator/job_defaults.h):
// Megatron-LM's, as job.proto documents them, and the ones ValidateJob
// resolves a job with.
#include "estimator/job_defaults.h"

#include <gtest/gtest.h>

#include "estimator/validated_job.h"

namespace oomguard {
namespace {

TEST(JobDefaultsTest, UnsetFieldsTakeMegatronLmDefaults) {
  const v1::ParallelismSpec unset;
  EXPECT_EQ(TensorParallelSize(unset), 1u);
  EXPECT_EQ(PipelineParallelSize(unset), 1u);
  EXPECT_EQ(ContextParallelSize(unset), 1u);
  EXPECT_EQ(ExpertParallelSize(unset), 1u);
  EXPECT_EQ(ExpertTensorParallelSize(unset), 1u);
  EXPECT_EQ(GpusPerNode(v1::RuntimeSpec()), 8u);
  EXPECT_EQ(OptimizerOffloadFraction(v1::PrecisionSpec()), 1.0);
}

TEST(JobDefaultsTest, SetFieldsAreRead) {
  v1::ParallelismSpec p;
  p.set_tensor_model_parallel_size(4);
  // The expert tensor-parallel size follows TP until it is set.
  EXPECT_EQ(ExpertTensorParallelSize(p), 4u);
  p.set_expert_tensor_parallel_size(1);
  p.set_pipeline_model_parallel_size(2);
  p.set_context_parallel_size(2);
  p.set_expert_model_parallel_size(8);
  EXPECT_EQ(TensorParallelSize(p), 4u);
  EXPECT_EQ(PipelineParallelSize(p), 2u);
  EXPECT_EQ(ContextParallelSize(p), 2u);
  EXPECT_EQ(ExpertParallelSize(p), 8u);
  EXPECT_EQ(ExpertTensorParallelSize(p), 1u);
  v1::RuntimeSpec r;
  r.set_gpus_per_node(4);
  EXPECT_EQ(GpusPerNode(r), 4u);
  v1::PrecisionSpec precision;
  precision.set_optimizer_offload_fraction(0.5);
  EXPECT_EQ(OptimizerOffloadFraction(precision), 0.5);
}

// ValidateJob resolves an unset job with these: a small dense job with TP 2
// and nothing else set has ETP 2 and 8 GPUs per node.
TEST(JobDefaultsTest, ValidationResolvesWithThem) {
  v1::JobSpec job;
  v1::ModelSpec* m = job.mutable_model();
  m->set_num_layers(2);
  m->set_hidden_size(512);
  m->set_num_attention_heads(8);
  m->set_vocab_size(50257);
  job.mutable_training()->set_micro_batch_size(1);
  job.mutable_training()->set_seq_length(1024);
  job.mutable_parallelism()->set_num_gpus(8);
  job.mutable_parallelism()->set_tensor_model_parallel_size(2);
  absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->parallelism.pp, 1);
  EXPECT_EQ(j->parallelism.cp, 1);
  EXPECT_EQ(j->parallelism.ep, 1);
  EXPECT_EQ(j->parallelism.etp, 2);
  EXPECT_EQ(j->runtime.gpus_per_node, kDefaultGpusPerNode);
}

}  // namespace
}  // namespace oomguard
