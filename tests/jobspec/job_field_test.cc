#include "jobspec/job_field.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

JobField Field(const char* path) {
  absl::StatusOr<JobField> field = JobField::Find(path);
  EXPECT_TRUE(field.ok()) << field.status();
  return *field;
}

TEST(JobFieldTest, FindsFieldsByPath) {
  const JobField field = Field("parallelism.tensor_model_parallel_size");
  EXPECT_EQ(field.path(), "parallelism.tensor_model_parallel_size");
  EXPECT_EQ(field.descriptor().full_name(),
            "oomguard.v1.ParallelismSpec.tensor_model_parallel_size");
}

TEST(JobFieldTest, UnknownPathsAreNotFound) {
  struct Case {
    const char* path;
    const char* message;
  };
  const Case cases[] = {
      {"parallelism.tp", "ParallelismSpec has no field tp"},
      {"model", ""},  // A message: found; setting it is the caller's error.
      {"models.num_layers", "JobSpec has no field models"},
      {"model.num_layers.x", "num_layers is not a message"},
      {"", "JobSpec has no field"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<JobField> field = JobField::Find(c.path);
    if (c.message[0] == '\0') {
      EXPECT_TRUE(field.ok()) << c.path;
      continue;
    }
    EXPECT_EQ(field.status().code(), absl::StatusCode::kNotFound) << c.path;
    EXPECT_THAT(field.status().message(), HasSubstr(c.message)) << c.path;
  }
}

TEST(JobFieldTest, SetsAndClearsFields) {
  v1::JobSpec job;
  Field("parallelism.tensor_model_parallel_size").SetUint32(&job, 4);
  Field("model.hidden_dropout").SetDouble(&job, 0.25);
  Field("parallelism.sequence_parallel").SetBool(&job, true);
  Field("recompute.granularity").SetEnum(&job, v1::RECOMPUTE_GRANULARITY_FULL);
  Field("parallelism.pipeline_model_parallel_layout").SetString(&job, "Et|tL");
  Field("model.moe_layer_pattern").AddUint32(&job, 1);
  Field("recompute.modules").AddEnum(&job, v1::RECOMPUTE_MODULE_MOE_ACT);
  Field("runtime.cuda_graph_modules").AddString(&job, "attn");
  EXPECT_EQ(job.parallelism().tensor_model_parallel_size(), 4u);
  EXPECT_EQ(job.model().hidden_dropout(), 0.25);
  EXPECT_TRUE(job.parallelism().sequence_parallel());
  EXPECT_EQ(job.recompute().granularity(), v1::RECOMPUTE_GRANULARITY_FULL);
  EXPECT_EQ(job.parallelism().pipeline_model_parallel_layout(), "Et|tL");
  EXPECT_THAT(job.model().moe_layer_pattern(), ElementsAre(1u));
  EXPECT_THAT(job.recompute().modules(), ElementsAre(v1::RECOMPUTE_MODULE_MOE_ACT));
  EXPECT_THAT(job.runtime().cuda_graph_modules(), ElementsAre("attn"));

  Field("parallelism.tensor_model_parallel_size").Clear(&job);
  Field("model.moe_layer_pattern").Clear(&job);
  EXPECT_FALSE(job.parallelism().has_tensor_model_parallel_size());
  EXPECT_TRUE(job.model().moe_layer_pattern().empty());
}

}  // namespace
}  // namespace oomguard
