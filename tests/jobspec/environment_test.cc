#include "jobspec/environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/status/status.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;

TEST(ApplyEnvironmentTest, ExpandableSegments) {
  struct Case {
    const char* conf;
    bool expandable;
  };
  const Case cases[] = {
      {"expandable_segments:True", true},
      {"max_split_size_mb:512, expandable_segments : true", true},
      {"expandable_segments:TRUE,garbage_collection_threshold:0.6", true},
      {"expandable_segments:False", false},
      {"expandable_segments:True,expandable_segments:False", false},
      {"max_split_size_mb:512", false},
      {"", false},
  };
  for (const Case& c : cases) {
    v1::JobSpec job;
    ASSERT_TRUE(ApplyEnvironment({{"PYTORCH_CUDA_ALLOC_CONF", std::string(c.conf)}}, &job).ok())
        << c.conf;
    EXPECT_EQ(job.runtime().expandable_segments(), c.expandable) << c.conf;
  }
  v1::JobSpec preset;
  preset.mutable_runtime()->set_expandable_segments(true);
  ASSERT_TRUE(
      ApplyEnvironment({{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False"}}, &preset).ok());
  EXPECT_FALSE(preset.runtime().expandable_segments());
  ASSERT_TRUE(ApplyEnvironment({{"PYTORCH_ALLOC_CONF", "expandable_segments:True"}}, &preset).ok());
  EXPECT_TRUE(preset.runtime().expandable_segments());
}

// Issue 12 (E): PyTorch refuses an expandable_segments value other than
// True/False at start-up; so does oomguard, naming the variable and value.
TEST(ApplyEnvironmentTest, ExpandableSegmentsOtherThanTrueOrFalseIsRefused) {
  v1::JobSpec job;
  absl::Status status =
      ApplyEnvironment({{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:Maybe"}}, &job);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "PYTORCH_CUDA_ALLOC_CONF: expandable_segments must be True or False, got \"Maybe\" "
            "(PyTorch refuses it at start-up)");
  for (const char* conf : {"expandable_segments", "expandable_segments:", "expandable_segments:1",
                           "max_split_size_mb:512,expandable_segments:yes"}) {
    status = ApplyEnvironment({{"PYTORCH_ALLOC_CONF", conf}}, &job);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << conf;
    EXPECT_THAT(status.message(), HasSubstr("PYTORCH_ALLOC_CONF: expandable_segments")) << conf;
  }
  // The value is echoed cut short.
  status = ApplyEnvironment(
      {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:" + std::string(10000, 'x')}}, &job);
  EXPECT_LT(status.message().size(), 200u);
}

TEST(ApplyEnvironmentTest, NcclGraphRegister) {
  v1::JobSpec job;
  ASSERT_TRUE(ApplyEnvironment({{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}}, &job).ok());
  EXPECT_FALSE(job.runtime().nccl_graph_register_disabled());
  EXPECT_FALSE(job.runtime().expandable_segments());
  ASSERT_TRUE(ApplyEnvironment({{"NCCL_GRAPH_REGISTER", "0"}}, &job).ok());
  EXPECT_TRUE(job.runtime().nccl_graph_register_disabled());
  ASSERT_TRUE(ApplyEnvironment({{"NCCL_GRAPH_REGISTER", "1"}}, &job).ok());
  EXPECT_FALSE(job.runtime().nccl_graph_register_disabled());
}

TEST(ApplyEnvironmentTest, SoftwareVersions) {
  v1::JobSpec job;
  ASSERT_TRUE(ApplyEnvironment({{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}}, &job).ok());
  EXPECT_EQ(job.runtime().megatron_core_version(), "");
  EXPECT_EQ(job.runtime().transformer_engine_version(), "");
  ASSERT_TRUE(ApplyEnvironment({{"OOMGUARD_MEGATRON_CORE_VERSION", " 0.13 "},
                                {"OOMGUARD_TRANSFORMER_ENGINE_VERSION", "2.2"}},
                               &job)
                  .ok());
  EXPECT_EQ(job.runtime().megatron_core_version(), "0.13");
  EXPECT_EQ(job.runtime().transformer_engine_version(), "2.2");
  // Copied as given: ValidateJob refuses a bad one, naming the field.
  ASSERT_TRUE(ApplyEnvironment({{"OOMGUARD_MEGATRON_CORE_VERSION", "latest"}}, &job).ok());
  EXPECT_EQ(job.runtime().megatron_core_version(), "latest");
}

TEST(ApplyEnvironmentTest, OptimizerImplementation) {
  v1::JobSpec job;
  ASSERT_TRUE(ApplyEnvironment({{"OOMGUARD_OPTIMIZER_IMPLEMENTATION", "torch"}}, &job).ok());
  EXPECT_EQ(job.runtime().optimizer_implementation(), v1::OPTIMIZER_IMPLEMENTATION_TORCH);
  ASSERT_TRUE(ApplyEnvironment({{"OOMGUARD_OPTIMIZER_IMPLEMENTATION", " fused "}}, &job).ok());
  EXPECT_EQ(job.runtime().optimizer_implementation(), v1::OPTIMIZER_IMPLEMENTATION_FUSED);
  const absl::Status bad = ApplyEnvironment({{"OOMGUARD_OPTIMIZER_IMPLEMENTATION", "apex"}}, &job);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(),
            "OOMGUARD_OPTIMIZER_IMPLEMENTATION: expected fused or torch, got \"apex\"");
}

TEST(ApplyEnvironmentTest, GpuArchitecture) {
  v1::JobSpec job;
  ASSERT_TRUE(ApplyEnvironment({{"OOMGUARD_GPU_ARCHITECTURE", "blackwell"}}, &job).ok());
  EXPECT_EQ(job.runtime().gpu_architecture(), v1::GPU_ARCHITECTURE_BLACKWELL);
  ASSERT_TRUE(ApplyEnvironment({{"OOMGUARD_GPU_ARCHITECTURE", " hopper "}}, &job).ok());
  EXPECT_EQ(job.runtime().gpu_architecture(), v1::GPU_ARCHITECTURE_HOPPER);
  ASSERT_TRUE(ApplyEnvironment({{"OOMGUARD_GPU_ARCHITECTURE", "turing"}}, &job).ok());
  EXPECT_EQ(job.runtime().gpu_architecture(), v1::GPU_ARCHITECTURE_VOLTA_TURING);
  ASSERT_TRUE(ApplyEnvironment({{"OOMGUARD_GPU_ARCHITECTURE", "volta"}}, &job).ok());
  EXPECT_EQ(job.runtime().gpu_architecture(), v1::GPU_ARCHITECTURE_VOLTA_TURING);
  const absl::Status bad = ApplyEnvironment({{"OOMGUARD_GPU_ARCHITECTURE", "ampere"}}, &job);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      bad.message(),
      "OOMGUARD_GPU_ARCHITECTURE: expected hopper, blackwell, volta or turing, got \"ampere\"");
}

// HybridEP's ranks per NVLink domain, as deep_ep's HybridEPBuffer reads it
// (int()): a whole number, else refused naming the variable.
TEST(ApplyEnvironmentTest, HybridEpRanksPerNvlinkDomain) {
  v1::JobSpec job;
  ASSERT_TRUE(ApplyEnvironment({{"NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN", "8"}}, &job).ok());
  EXPECT_EQ(job.runtime().hybrid_ep_ranks_per_nvlink_domain(), 8u);
  ASSERT_TRUE(ApplyEnvironment({{"NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN", " 72 "}}, &job).ok());
  EXPECT_EQ(job.runtime().hybrid_ep_ranks_per_nvlink_domain(), 72u);
  v1::JobSpec unset;
  ASSERT_TRUE(ApplyEnvironment({}, &unset).ok());
  EXPECT_FALSE(unset.runtime().has_hybrid_ep_ranks_per_nvlink_domain());
  const absl::Status bad =
      ApplyEnvironment({{"NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN", "eight"}}, &job);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(),
            "NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN: expected a whole number of ranks, got "
            "\"eight\"");
}

}  // namespace
}  // namespace oomguard
