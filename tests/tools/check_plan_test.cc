// Tests of how `oomguard check` chooses between the command line, the
// scheduler and #OOMGUARD (tools/check_plan.h), without a server: the
// winner, the notes about the losers, and the reasons not to judge.
#include "tools/check_plan.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

ScriptJob Launch() {
  ScriptJob job;
  job.found = true;
  job.megatron_args = {"--micro-batch-size", "1"};
  return job;
}

TEST(CheckPlanTest, CommandLineThenSchedulerThenDirective) {
  CheckFlags flags;
  JobEnvelope envelope;
  envelope.gpus = 8;
  envelope.gpu = "h200";
  ScriptJob job = Launch();
  job.num_gpus = 16;
  job.gpus_per_node = 4;
  job.gpu = "A100-40GB";
  job.preset = "llama3-8b";

  CheckPlan plan = MakeCheckPlan(flags, &envelope, job);
  EXPECT_EQ(plan.not_judged, "");
  EXPECT_EQ(plan.request.job().megatron().num_gpus(), 8u);
  EXPECT_EQ(plan.request.job().gpus_per_node(), 4u);
  EXPECT_EQ(plan.request.job().megatron().preset(), "llama3-8b");
  EXPECT_EQ(plan.request.gpu_name(), "h200");
  EXPECT_TRUE(plan.gpu_from_scheduler);
  EXPECT_THAT(plan.notes,
              ElementsAre("#OOMGUARD gpus=16 ignored: the scheduler's allocation says 8",
                          "#OOMGUARD gpu=A100-40GB ignored: the scheduler's allocation "
                          "says h200"));

  flags.gpu = "H100";
  flags.gpus = 32;
  plan = MakeCheckPlan(flags, &envelope, job);
  EXPECT_EQ(plan.request.job().megatron().num_gpus(), 32u);
  EXPECT_EQ(plan.request.gpu_name(), "H100");
  EXPECT_FALSE(plan.gpu_from_scheduler);
  EXPECT_THAT(plan.notes,
              ElementsAre("the scheduler's gpus=8 ignored: the command line says 32",
                          "#OOMGUARD gpus=16 ignored: the command line says 32",
                          "the scheduler's gpu=h200 ignored: the command line says H100",
                          "#OOMGUARD gpu=A100-40GB ignored: the command line says H100"));
}

TEST(CheckPlanTest, DefaultGpuOnlyWhenNothingElseNamesOne) {
  CheckFlags flags;
  flags.gpus = 8;
  JobEnvelope envelope;
  envelope.default_gpu = "H200";
  CheckPlan plan = MakeCheckPlan(flags, &envelope, Launch());
  EXPECT_EQ(plan.request.gpu_name(), "H200");
  EXPECT_TRUE(plan.gpu_from_scheduler);

  ScriptJob job = Launch();
  job.gpu = "H100";
  plan = MakeCheckPlan(flags, &envelope, job);
  EXPECT_EQ(plan.request.gpu_name(), "H100");
  EXPECT_FALSE(plan.gpu_from_scheduler);
  EXPECT_THAT(plan.notes, IsEmpty());
}

TEST(CheckPlanTest, GpuMemoryFromTheCommandLineOverridesAnyName) {
  CheckFlags flags;
  flags.gpus = 8;
  flags.gpu_memory_gib = 80;
  JobEnvelope envelope;
  envelope.gpu = "h100";
  const CheckPlan plan = MakeCheckPlan(flags, &envelope, Launch());
  EXPECT_EQ(plan.request.gpu_memory_bytes(), uint64_t{80} << 30);
  EXPECT_FALSE(plan.gpu_from_scheduler);
  EXPECT_THAT(plan.notes,
              ElementsAre("the GPU named by the scheduler ignored: the command line gives "
                          "the GPU's memory"));
}

TEST(CheckPlanTest, EnvironmentAndSafetyMargin) {
  CheckFlags flags;
  flags.gpus = 8;
  flags.gpu = "H100";
  flags.env = {{"NCCL_GRAPH_REGISTER", "1"}};
  flags.safety_margin = 0.2;
  JobEnvelope envelope;
  envelope.env = {{"PYTORCH_CUDA_ALLOC_CONF", "a"}, {"NCCL_GRAPH_REGISTER", "0"}};
  ScriptJob job = Launch();
  job.env = {{"PYTORCH_CUDA_ALLOC_CONF", "b"}};
  job.safety_margin = 0.1;
  const CheckPlan plan = MakeCheckPlan(flags, &envelope, job);
  // The submission's environment, then the script's exports, then --env.
  EXPECT_THAT(plan.request.job().env(),
              ::testing::UnorderedElementsAre(Pair("PYTORCH_CUDA_ALLOC_CONF", "b"),
                                              Pair("NCCL_GRAPH_REGISTER", "1")));
  EXPECT_DOUBLE_EQ(plan.request.policy().safety_margin(), 0.2);
  EXPECT_THAT(plan.notes,
              ElementsAre("#OOMGUARD safety-margin=0.1 ignored: the command line says 0.2"));
}

// It prints the verdict, the summary and the steps: the per-rank report is
// asked for only by --json, which prints the whole response.
TEST(CheckPlanTest, AsksForTheReportOnlyWithJson) {
  CheckFlags flags;
  flags.gpus = 8;
  flags.gpu = "H100";
  EXPECT_TRUE(MakeCheckPlan(flags, nullptr, Launch()).request.omit_report());
  flags.json = true;
  EXPECT_FALSE(MakeCheckPlan(flags, nullptr, Launch()).request.omit_report());
}

TEST(CheckPlanTest, NotJudged) {
  CheckFlags flags;
  ScriptJob none;
  EXPECT_THAT(MakeCheckPlan(flags, nullptr, none).not_judged,
              HasSubstr("no Megatron-LM training launch"));

  ScriptJob skip = Launch();
  skip.skip = true;
  EXPECT_EQ(MakeCheckPlan(flags, nullptr, skip).not_judged, "the job script says #OOMGUARD skip");
  flags.ignore_skip = true;
  EXPECT_THAT(MakeCheckPlan(flags, nullptr, skip).not_judged, HasSubstr("GPU count is unknown"));

  JobEnvelope envelope;
  envelope.partition = "big";
  EXPECT_THAT(MakeCheckPlan(flags, &envelope, Launch()).not_judged,
              HasSubstr("the job's GPU count is unknown (partition big): "));
  envelope.gpus = 8;
  EXPECT_THAT(MakeCheckPlan(flags, &envelope, Launch()).not_judged,
              HasSubstr("the GPU type is unknown (partition big): "));
}

TEST(CheckPlanTest, KeepsTheScriptsNotesAndRunTimeWords) {
  CheckFlags flags;
  flags.gpus = 8;
  flags.gpu = "H100";
  ScriptJob job = Launch();
  job.notes = {"line 2: dropped --seq-length $SEQ"};
  job.unresolved = {"--seq-length $SEQ"};
  const CheckPlan plan = MakeCheckPlan(flags, nullptr, job);
  EXPECT_THAT(plan.notes, ElementsAre("line 2: dropped --seq-length $SEQ"));
  EXPECT_THAT(plan.unresolved, ElementsAre("--seq-length $SEQ"));
  EXPECT_THAT(plan.request.job().megatron().argv(), ElementsAre("--micro-batch-size", "1"));
}

// A job script whose launch starts 16 ranks on a 32-GPU #SBATCH allocation.
ScriptJob SizedScript() {
  ScriptJob job = Launch();
  job.launch_size = {16, 8, "torchrun --nnodes 2 x --nproc-per-node 8"};
  job.allocated = {32, 8, "--nodes=4 x --gpus-per-node=h100:8"};
  job.allocated_gpu_type = "h100";
  return job;
}

TEST(CheckPlanTest, WithoutTheSchedulerTheScriptStatesItsSize) {
  const CheckFlags flags;
  ScriptJob job = SizedScript();
  CheckPlan plan = MakeCheckPlan(flags, nullptr, job);
  EXPECT_EQ(plan.not_judged, "");
  EXPECT_EQ(plan.request.job().megatron().num_gpus(), 16u);  // The launch's world size.
  EXPECT_EQ(plan.request.job().gpus_per_node(), 8u);
  EXPECT_EQ(plan.request.gpu_name(), "h100");  // The GRES type, for the catalog to match.
  EXPECT_TRUE(plan.gpu_from_scheduler);
  EXPECT_THAT(plan.notes, IsEmpty());  // The reader notes the disagreement itself.

  job.launch_size = {};  // Only #SBATCH.
  plan = MakeCheckPlan(flags, nullptr, job);
  EXPECT_EQ(plan.request.job().megatron().num_gpus(), 32u);

  job.num_gpus = 8;  // #OOMGUARD wins, and says so.
  job.gpu = "H200";
  plan = MakeCheckPlan(flags, nullptr, job);
  EXPECT_EQ(plan.request.job().megatron().num_gpus(), 8u);
  EXPECT_EQ(plan.request.gpu_name(), "H200");
  EXPECT_FALSE(plan.gpu_from_scheduler);
  EXPECT_THAT(plan.notes,
              ElementsAre("the job script's (--nodes=4 x --gpus-per-node=h100:8) gpus=32 "
                          "ignored: #OOMGUARD says 8",
                          "#SBATCH's gpu=h100 ignored: #OOMGUARD says H200"));

  CheckFlags memory;
  memory.gpu_memory_gib = 80;
  plan = MakeCheckPlan(memory, nullptr, SizedScript());
  EXPECT_THAT(plan.notes, ElementsAre("the GPU named by #SBATCH ignored: the command line gives "
                                      "the GPU's memory"));
}

TEST(CheckPlanTest, WithTheSchedulerItsDescriptorIsTheAuthority) {
  const CheckFlags flags;
  JobEnvelope envelope;
  envelope.gpus = 64;
  envelope.default_gpu = "H100";
  CheckPlan plan = MakeCheckPlan(flags, &envelope, SizedScript());
  EXPECT_EQ(plan.request.job().megatron().num_gpus(), 64u);
  EXPECT_EQ(plan.request.gpu_name(), "H100");  // Not the script's GRES type.
  EXPECT_THAT(plan.notes,
              ElementsAre("the job script's (torchrun --nnodes 2 x --nproc-per-node 8) gpus=16 "
                          "ignored: the scheduler's allocation says 64"));
  // A descriptor without a GPU count: the launch's world size, never #SBATCH.
  envelope.gpus = 0;
  plan = MakeCheckPlan(flags, &envelope, SizedScript());
  EXPECT_EQ(plan.request.job().megatron().num_gpus(), 16u);
  ScriptJob only_sbatch = SizedScript();
  only_sbatch.launch_size = {};
  EXPECT_THAT(MakeCheckPlan(flags, &envelope, only_sbatch).not_judged,
              HasSubstr("GPU count is unknown"));
}

// --rl-config: the YAML as JobSource.rl with the command line's model,
// size, environment and policy; without --gpu, H100-SXM-80GB, noted.
TEST(CheckPlanTest, RlConfigIsSentAsTheRlJob) {
  CheckFlags flags;
  flags.rl_config_path = "verl.yaml";
  flags.preset = "qwen3-8b";
  flags.gpus = 16;
  flags.gpus_per_node = 8;
  flags.env = {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}};
  flags.safety_margin = 0.05;
  flags.judge_unmodelled = true;
  CheckPlan plan = MakeRlCheckPlan(flags, "actor_rollout_ref: {}\n");
  EXPECT_TRUE(plan.not_judged.empty());
  const v1::JobSource& job = plan.request.job();
  ASSERT_TRUE(job.has_rl());
  EXPECT_EQ(job.rl().config_yaml(), "actor_rollout_ref: {}\n");
  EXPECT_EQ(job.rl().preset(), "qwen3-8b");
  EXPECT_EQ(job.rl().num_gpus(), 16u);
  EXPECT_EQ(job.gpus_per_node(), 8u);
  EXPECT_THAT(job.env(), ElementsAre(Pair("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")));
  EXPECT_EQ(plan.request.gpu_name(), "H100-SXM-80GB");
  EXPECT_THAT(plan.notes, ElementsAre(HasSubstr("no --gpu given: the RL step is checked on "
                                                "H100-SXM-80GB")));
  EXPECT_DOUBLE_EQ(plan.request.policy().safety_margin(), 0.05);
  EXPECT_TRUE(plan.request.policy().judge_unmodelled());
  EXPECT_TRUE(plan.request.omit_report());
  flags.gpu_memory_gib = 141;
  plan = MakeRlCheckPlan(flags, "x: 1\n");
  EXPECT_EQ(plan.request.gpu_memory_bytes(), uint64_t{141} << 30);
  EXPECT_THAT(plan.notes, IsEmpty());
}

}  // namespace
}  // namespace oomguard
