// Tests of the `#OOMGUARD` directives: every key, overrides, and errors
// naming the line and the item.
#include "jobscript/directives.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "jobscript/job_script.h"
#include "tests/jobscript/job_script_test_util.h"

namespace oomguard {
namespace {

using ::oomguard::testing::Parse;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(DirectivesTest, Directives) {
  const ScriptJob job = Parse(
      "#OOMGUARD gpu=A100-40GB gpus-per-node=4\n"
      "  #OOMGUARD safety-margin=0.1 skip\n"
      "#OOMGUARDIAN is not a directive=1\n"
      "#OOMGUARD gpus=32\n");
  EXPECT_EQ(job.gpu, "A100-40GB");
  EXPECT_EQ(job.gpus_per_node, 4u);
  EXPECT_EQ(job.num_gpus, 32u);
  ASSERT_TRUE(job.safety_margin.has_value());
  EXPECT_DOUBLE_EQ(*job.safety_margin, 0.1);
  EXPECT_TRUE(job.skip);
  EXPECT_FALSE(job.found);
}

TEST(DirectivesTest, BadDirectivesNameLineAndItem) {
  absl::StatusOr<ScriptJob> job = ParseJobScript("echo\n#OOMGUARD gpus=8 colour=blue\n");
  ASSERT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(job.status().message(),
              AllOf(HasSubstr("line 2"), HasSubstr("colour=blue"), HasSubstr("unknown key")));
  job = ParseJobScript("#OOMGUARD gpus=-3\n");
  ASSERT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(job.status().message(), AllOf(HasSubstr("line 1"), HasSubstr("gpus=-3")));
  job = ParseJobScript("#OOMGUARD safety-margin=1.5\n");
  ASSERT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(job.status().message(), HasSubstr("[0, 1)"));
  job = ParseJobScript("#OOMGUARD gpu=$(reboot)\n");
  ASSERT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(job.status().message(), HasSubstr("gpu=$(reboot)"));
}

TEST(DirectivesTest, ALaterDirectiveOverridesAnEarlierOne) {
  ScriptJob job;
  ASSERT_TRUE(job_script_internal::ReadDirectives("#OOMGUARD gpus=8 preset=a skip\n"
                                                  "torchrun pretrain_gpt.py\n"
                                                  "\t#OOMGUARD gpus=16 skip=false\n"
                                                  "#OOMGUARD preset=b",
                                                  &job)
                  .ok());
  EXPECT_EQ(job.num_gpus, 16u);
  EXPECT_EQ(job.preset, "b");
  EXPECT_FALSE(job.skip);
  EXPECT_FALSE(job.found);  // Directives only: the launch is not read here.

  const absl::Status status = job_script_internal::ReadDirectives(
      "#OOMGUARD gpus-per-node=4\n#OOMGUARD skip=maybe\n", &job);
  ASSERT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), AllOf(HasSubstr("line 2"), HasSubstr("skip=maybe")));
  EXPECT_EQ(job.gpus_per_node, 4u);  // Read up to the bad item.
}

}  // namespace
}  // namespace oomguard
