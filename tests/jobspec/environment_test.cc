#include "jobspec/environment.h"

#include <gtest/gtest.h>

#include <string>

#include "oomguard/v1/job.pb.h"

namespace oomguard {
namespace {

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
    ApplyEnvironment({{"PYTORCH_CUDA_ALLOC_CONF", std::string(c.conf)}}, &job);
    EXPECT_EQ(job.runtime().expandable_segments(), c.expandable) << c.conf;
  }
  v1::JobSpec preset;
  preset.mutable_runtime()->set_expandable_segments(true);
  ApplyEnvironment({{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False"}}, &preset);
  EXPECT_FALSE(preset.runtime().expandable_segments());
  ApplyEnvironment({{"PYTORCH_ALLOC_CONF", "expandable_segments:True"}}, &preset);
  EXPECT_TRUE(preset.runtime().expandable_segments());
}

TEST(ApplyEnvironmentTest, NcclGraphRegister) {
  v1::JobSpec job;
  ApplyEnvironment({{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}}, &job);
  EXPECT_FALSE(job.runtime().nccl_graph_register_disabled());
  EXPECT_FALSE(job.runtime().expandable_segments());
  ApplyEnvironment({{"NCCL_GRAPH_REGISTER", "0"}}, &job);
  EXPECT_TRUE(job.runtime().nccl_graph_register_disabled());
  ApplyEnvironment({{"NCCL_GRAPH_REGISTER", "1"}}, &job);
  EXPECT_FALSE(job.runtime().nccl_graph_register_disabled());
}

}  // namespace
}  // namespace oomguard
