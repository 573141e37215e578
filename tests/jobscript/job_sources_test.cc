// The one precedence rule between a job's sources (jobscript/job_sources.h):
// for every pair of sources that can say the same value, which one wins,
// the exact value, where it came from, and the note about the loser.
#include "jobscript/job_sources.h"

#include <ostream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

// Every source saying a different world size, GPUs per node and GPU.
JobSources AllSources() {
  JobSources s;
  s.caller_name = "the command line";
  s.caller = {.gpus = 1024, .gpus_per_node = 4, .gpu = "H200"};
  s.scheduler = StatedValues{.gpus = 512, .gpus_per_node = 2, .gpu = "h100"};
  s.directives = {.gpus = 256, .gpus_per_node = 1, .gpu = "A100"};
  s.launch = {128, 16, "torchrun --nnodes 8 x --nproc-per-node 16"};
  s.request = {64, 32, "--nodes=2 x --gpus-per-node=32"};
  s.request_gpu = "b200";
  s.default_gpu = "MI300X";
  return s;
}

using Source = JobValueSource;

// What the rule chose for the sizes and the GPU, and from where.
struct Chosen {
  uint32_t gpus;
  uint32_t gpus_per_node;
  std::string gpu;
  Source gpus_from;
  Source gpu_from;
  bool operator==(const Chosen&) const = default;
  friend void PrintTo(const Chosen& c, std::ostream* os) {
    *os << c.gpus << " GPUs, " << c.gpus_per_node << " a node, gpu \"" << c.gpu
        << "\", from sources " << static_cast<int>(c.gpus_from) << " and "
        << static_cast<int>(c.gpu_from);
  }
};

Chosen Choose(const JobSources& sources) {
  const ChosenLaunch c = ChooseLaunch(sources, {"--bf16"});
  return {c.launch.num_gpus, c.launch.gpus_per_node, c.launch.gpu_name, c.gpus_from, c.gpu_from};
}

// Drops the sources one at a time, from the strongest: each next one wins.
TEST(ChooseLaunchTest, EachSourceBeatsTheOnesAfterIt) {
  JobSources s = AllSources();
  EXPECT_EQ(Choose(s), (Chosen{1024, 4, "H200", Source::kCaller, Source::kCaller}));
  s.caller = {};  // Caller > scheduler.
  EXPECT_EQ(Choose(s), (Chosen{512, 2, "h100", Source::kScheduler, Source::kScheduler}));
  s.scheduler = StatedValues{};  // Scheduler > #OOMGUARD.
  EXPECT_EQ(Choose(s), (Chosen{256, 1, "A100", Source::kDirective, Source::kDirective}));
  // #OOMGUARD > the launch line. A scheduler descriptor, even an empty one,
  // hides #SBATCH: no size or GPU from it, then the scheduler's default GPU.
  s.directives = {};
  EXPECT_EQ(Choose(s), (Chosen{128, 16, "MI300X", Source::kLaunch, Source::kDefault}));
  s.launch = {};
  EXPECT_EQ(Choose(s), (Chosen{0, 0, "MI300X", Source::kNone, Source::kDefault}));

  // Without a scheduler: the launch line > #SBATCH for the sizes; #SBATCH's
  // GPU type > the default.
  s = AllSources();
  s.caller = {};
  s.scheduler.reset();
  s.directives = {};
  EXPECT_EQ(Choose(s), (Chosen{128, 16, "b200", Source::kLaunch, Source::kRequest}));
  // #SBATCH when the launch states no size; the default GPU last.
  s.launch = {};
  s.request_gpu = "";
  EXPECT_EQ(Choose(s), (Chosen{64, 32, "MI300X", Source::kRequest, Source::kDefault}));
  s.default_gpu = "";
  EXPECT_EQ(Choose(s), (Chosen{64, 32, "", Source::kRequest, Source::kNone}));
}

TEST(ChooseLaunchTest, EveryOverriddenValueIsNoted) {
  ChosenLaunch c = ChooseLaunch(AllSources(), {});
  EXPECT_THAT(
      c.notes,
      ElementsAre(
          "the scheduler's gpus=512 ignored: the command line says 1024",
          "#OOMGUARD gpus=256 ignored: the command line says 1024",
          "the job script's (torchrun --nnodes 8 x --nproc-per-node 16) gpus=128 ignored: the "
          "command line says 1024",
          "the scheduler's gpus-per-node=2 ignored: the command line says 4",
          "#OOMGUARD gpus-per-node=1 ignored: the command line says 4",
          "the job script's (torchrun --nnodes 8 x --nproc-per-node 16) gpus-per-node=16 "
          "ignored: the command line says 4",
          "the scheduler's gpu=h100 ignored: the command line says H200",
          "#OOMGUARD gpu=A100 ignored: the command line says H200"));

  // The same value from two sources is not a conflict.
  JobSources s;
  s.caller.gpus = 8;
  s.directives.gpus = 8;
  s.launch = {8, 8, "torchrun --nproc-per-node 8"};
  EXPECT_THAT(ChooseLaunch(s, {}).notes, IsEmpty());

  // Without a scheduler, #SBATCH's GPU type loses by its own name.
  s = AllSources();
  s.scheduler.reset();
  s.caller = {};
  EXPECT_THAT(ChooseLaunch(s, {}).notes,
              ElementsAre("the job script's (torchrun --nnodes 8 x --nproc-per-node 16) gpus=128 "
                          "ignored: #OOMGUARD says 256",
                          "the job script's (torchrun --nnodes 8 x --nproc-per-node 16) "
                          "gpus-per-node=16 ignored: #OOMGUARD says 1",
                          "#SBATCH's gpu=b200 ignored: #OOMGUARD says A100"));
}

// The launch's world size without a per-node count takes #SBATCH's (only
// without a scheduler descriptor).
TEST(ChooseLaunchTest, TheLaunchsSizeTakesSbatchsGpusPerNode) {
  JobSources s;
  s.launch = {16, 0, "mpirun -np 16"};
  s.request = {32, 8, "--nodes=4 x --gpus-per-node=8"};
  EXPECT_EQ(Choose(s).gpus, 16u);
  EXPECT_EQ(Choose(s).gpus_per_node, 8u);
  s.scheduler = StatedValues{};
  EXPECT_EQ(Choose(s).gpus, 16u);
  EXPECT_EQ(Choose(s).gpus_per_node, 0u);
}

TEST(ChooseLaunchTest, CallerGpuMemoryOutranksEveryName) {
  JobSources s = AllSources();
  s.caller.gpu = "";
  s.caller_gpu_memory_bytes = uint64_t{80} << 30;
  ChosenLaunch c = ChooseLaunch(s, {});
  EXPECT_EQ(c.launch.gpu_memory_bytes, uint64_t{80} << 30);
  EXPECT_EQ(c.launch.gpu_name, "");
  EXPECT_EQ(c.gpu_from, JobValueSource::kCaller);
  EXPECT_THAT(c.notes, ::testing::Contains("the GPU named by the scheduler ignored: the command "
                                           "line gives the GPU's memory"));
}

TEST(ChooseLaunchTest, PresetAndSafetyMargin) {
  JobSources s;
  s.caller_name = "the request";
  s.caller.preset = "llama3-70b";
  s.caller.safety_margin = 0.0;  // Zero is a margin, not "unset".
  s.directives.preset = "llama3-8b";
  s.directives.safety_margin = 0.2;
  ChosenLaunch c = ChooseLaunch(s, {});
  EXPECT_EQ(c.launch.preset, "llama3-70b");
  EXPECT_EQ(c.launch.safety_margin, 0.0);
  EXPECT_THAT(c.notes,
              ElementsAre("#OOMGUARD preset=llama3-8b ignored: the request says llama3-70b",
                          "#OOMGUARD safety-margin=0.2 ignored: the request says 0"));

  s.caller = {};
  c = ChooseLaunch(s, {});
  EXPECT_EQ(c.launch.preset, "llama3-8b");
  EXPECT_EQ(c.launch.safety_margin, 0.2);
  EXPECT_THAT(c.notes, IsEmpty());

  s.directives = {};
  c = ChooseLaunch(s, {});
  EXPECT_EQ(c.launch.preset, "");
  EXPECT_FALSE(c.launch.safety_margin.has_value());
}

// The environment is layered: what the job starts with, the scheduler's
// (the submission's), the script's exports, the caller's.
TEST(ChooseLaunchTest, EnvironmentLayers) {
  JobSources s;
  s.start_env = {{"PYTORCH_CUDA_ALLOC_CONF", "start"}, {"NCCL_GRAPH_REGISTER", "start"}};
  s.scheduler = StatedValues{.env = {{"PYTORCH_CUDA_ALLOC_CONF", "scheduler"}}};
  s.script_env = {{"NCCL_GRAPH_REGISTER", "script"}};
  EXPECT_THAT(ChooseLaunch(s, {}).launch.env,
              ElementsAre(Pair("NCCL_GRAPH_REGISTER", "script"),
                          Pair("PYTORCH_CUDA_ALLOC_CONF", "scheduler")));
  s.caller.env = {{"NCCL_GRAPH_REGISTER", "caller"}};
  EXPECT_THAT(ChooseLaunch(s, {}).launch.env,
              ElementsAre(Pair("NCCL_GRAPH_REGISTER", "caller"),
                          Pair("PYTORCH_CUDA_ALLOC_CONF", "scheduler")));
}

// A script's own sources, as ParseJobScript reads them, through the rule:
// #SBATCH --nodes=32 and torchrun --nnodes $SLURM_NNODES --nproc-per-node 8
// make 256 ranks, 8 a node, on #SBATCH's GRES type.
TEST(ChooseLaunchTest, AScriptStatesItsOwnSize) {
  absl::StatusOr<ScriptJob> job = ParseJobScript(
      "#!/bin/bash\n#SBATCH --nodes=32 --gres=gpu:h100:8\n#OOMGUARD preset=deepseek-v3\n"
      "export NCCL_GRAPH_REGISTER=0\n"
      "srun torchrun --nnodes $SLURM_NNODES --nproc-per-node 8 pretrain_gpt.py --bf16\n");
  ASSERT_TRUE(job.ok()) << job.status();
  const ChosenLaunch c = ChooseLaunch(ScriptSources(*job), job->megatron_args);
  EXPECT_EQ(c.launch.num_gpus, 256u);
  EXPECT_EQ(c.launch.gpus_per_node, 8u);
  EXPECT_EQ(c.gpus_from, JobValueSource::kLaunch);
  EXPECT_EQ(c.launch.gpu_name, "h100");
  EXPECT_EQ(c.gpu_from, JobValueSource::kRequest);
  EXPECT_EQ(c.launch.preset, "deepseek-v3");
  EXPECT_THAT(c.launch.megatron_args, ElementsAre("--bf16"));
  EXPECT_THAT(c.launch.env, ElementsAre(Pair("NCCL_GRAPH_REGISTER", "0")));
  EXPECT_THAT(c.notes, IsEmpty());
}

}  // namespace
}  // namespace oomguard
