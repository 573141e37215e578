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

// A field is read back as it was set, and compared between jobs by value,
// a field with presence unset unlike one set to its zero.
TEST(JobFieldTest, ReadsAndComparesByPath) {
  v1::JobSpec job;
  Field("parallelism.tensor_model_parallel_size").SetUint32(&job, 4);
  Field("model.hidden_dropout").SetDouble(&job, 0.25);
  Field("recompute.granularity").SetEnum(&job, v1::RECOMPUTE_GRANULARITY_FULL);
  Field("parallelism.pipeline_model_parallel_layout").SetString(&job, "Et|tL");
  Field("model.moe_layer_pattern").AddUint32(&job, 1);
  Field("recompute.modules").AddEnum(&job, v1::RECOMPUTE_MODULE_MOE_ACT);
  Field("runtime.cuda_graph_modules").AddString(&job, "attn");
  EXPECT_EQ(Field("parallelism.tensor_model_parallel_size").GetUint32(job), 4u);
  EXPECT_EQ(Field("model.hidden_dropout").GetDouble(job), 0.25);
  EXPECT_EQ(Field("recompute.granularity").GetEnum(job), v1::RECOMPUTE_GRANULARITY_FULL);
  EXPECT_EQ(Field("parallelism.pipeline_model_parallel_layout").GetString(job), "Et|tL");
  EXPECT_THAT(Field("model.moe_layer_pattern").GetUint32s(job), ElementsAre(1u));
  EXPECT_THAT(Field("recompute.modules").GetEnums(job), ElementsAre(v1::RECOMPUTE_MODULE_MOE_ACT));
  EXPECT_THAT(Field("runtime.cuda_graph_modules").GetStrings(job), ElementsAre("attn"));
  // A missing message reads as its defaults.
  EXPECT_FALSE(Field("precision.use_distributed_optimizer").GetBool(job));
  EXPECT_FALSE(Field("precision.use_distributed_optimizer").IsSet(job));

  const JobField tp = Field("parallelism.tensor_model_parallel_size");
  v1::JobSpec other = job;
  EXPECT_TRUE(tp.SameIn(job, other));
  tp.SetUint32(&other, 0);
  EXPECT_FALSE(tp.SameIn(job, other));
  tp.Clear(&other);
  EXPECT_TRUE(tp.IsSet(job));
  EXPECT_FALSE(tp.IsSet(other));
  EXPECT_FALSE(tp.SameIn(job, other));
  const JobField modules = Field("recompute.modules");
  modules.AddEnum(&other, v1::RECOMPUTE_MODULE_LAYERNORM);
  EXPECT_FALSE(modules.SameIn(job, other));
}

}  // namespace
}  // namespace oomguard
