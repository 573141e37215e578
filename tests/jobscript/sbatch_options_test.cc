// Tests of the #SBATCH reader (jobscript/sbatch_options.h): sbatch's reading
// rules, the job sizes people write and what Slurm allocates for them, the
// batch step's SLURM_* variables, and bad values named with their line.
#include "jobscript/sbatch_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"

namespace oomguard::job_script_internal {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

struct Read {
  SbatchOptions options;
  SlurmAllocation allocation;
  std::vector<std::string> notes;
};

Read ReadScript(const std::string& script) {
  Read r;
  const absl::Status status = ReadSbatchOptions(script, &r.options, &r.notes);
  EXPECT_TRUE(status.ok()) << status;
  r.allocation = Allocate(r.options);
  return r;
}

absl::Status Error(const std::string& script) {
  SbatchOptions options;
  std::vector<std::string> notes;
  return ReadSbatchOptions(script, &options, &notes);
}

// The five ways of asking for 32 GPUs that issue 11 lists.
TEST(SbatchOptionsTest, NodesTimesGpusPerNode) {
  const Read r = ReadScript("#!/bin/bash\n#SBATCH --nodes=4 --gpus-per-node=8\nsrun x\n");
  EXPECT_EQ(r.allocation.nodes, 4u);
  EXPECT_EQ(r.allocation.gpus, 32u);
  EXPECT_EQ(r.allocation.gpus_per_node, 8u);
  EXPECT_EQ(r.allocation.gpu_type, "");
  EXPECT_EQ(r.allocation.how, "--nodes=4 x --gpus-per-node=8");
  EXPECT_THAT(r.notes, IsEmpty());
}

TEST(SbatchOptionsTest, ShortNodesTimesGres) {
  const Read r = ReadScript("#SBATCH -N 4 --gres=gpu:8\n");
  EXPECT_EQ(r.allocation.gpus, 32u);
  EXPECT_EQ(r.allocation.gpus_per_node, 8u);
  EXPECT_EQ(r.allocation.how, "-N 4 x --gres=gpu:8");
}

TEST(SbatchOptionsTest, TotalGpus) {
  const Read r = ReadScript("#SBATCH --gpus=32\n");
  EXPECT_EQ(r.allocation.gpus, 32u);
  EXPECT_EQ(r.allocation.gpus_per_node, 0u);  // Slurm spreads them as it likes.
  EXPECT_EQ(r.allocation.nodes, 0u);
  EXPECT_EQ(r.allocation.how, "--gpus=32");
}

TEST(SbatchOptionsTest, TypedGpusPerNode) {
  const Read r = ReadScript("#SBATCH --nodes=4 --ntasks-per-node=8 --gpus-per-node=h100:8\n");
  EXPECT_EQ(r.allocation.gpus, 32u);
  EXPECT_EQ(r.allocation.gpus_per_node, 8u);
  EXPECT_EQ(r.allocation.ntasks, 32u);
  EXPECT_EQ(r.allocation.gpu_type, "h100");
}

TEST(SbatchOptionsTest, AttachedNodesTasksPerNodeGpusPerTask) {
  const Read r = ReadScript("#SBATCH -N4 --ntasks-per-node=8 --gpus-per-task=1\n");
  EXPECT_EQ(r.allocation.ntasks, 32u);
  EXPECT_EQ(r.allocation.gpus, 32u);
  EXPECT_EQ(r.allocation.gpus_per_node, 8u);
  EXPECT_EQ(r.allocation.how, "-N4 x --ntasks-per-node=8 x --gpus-per-task=1");
}

TEST(SbatchOptionsTest, TypedGresAndTasksGiveNodes) {
  Read r = ReadScript("#SBATCH --ntasks=16 --ntasks-per-node 8 --gres=gpu:h100:8,nvme:1\n");
  EXPECT_EQ(r.allocation.nodes, 2u);  // ntasks / ntasks-per-node.
  EXPECT_EQ(r.allocation.gpus, 16u);
  EXPECT_EQ(r.allocation.gpu_type, "h100");
  // --gpus-per-task needs a task count; with -n it has one.
  r = ReadScript("#SBATCH -n 16 -G a100:16\n#SBATCH --gpus-per-task=1\n");
  EXPECT_EQ(r.allocation.gpus, 16u);
  EXPECT_EQ(r.allocation.gpu_type, "a100");
  // One node when nothing asks for more.
  r = ReadScript("#SBATCH --gres=gpu\n");
  EXPECT_EQ(r.allocation.nodes, 1u);
  EXPECT_EQ(r.allocation.gpus, 1u);
}

TEST(SbatchOptionsTest, SeveralTypesAreNoType) {
  const Read r = ReadScript("#SBATCH -N1 --gpus-per-node=h100:4,a100:4\n");
  EXPECT_EQ(r.allocation.gpus, 8u);
  EXPECT_EQ(r.allocation.gpu_type, "");
  EXPECT_THAT(absl::StrJoin(r.notes, "\n"), HasSubstr("several GPU types"));
}

TEST(SbatchOptionsTest, ReadingStopsAtTheFirstCommandAsSbatchDoes) {
  const Read r = ReadScript(
      "#!/bin/bash\n"
      "\n"
      "# a comment\n"
      "  #SBATCH --nodes=9   (indented: a comment, not a directive)\n"
      "#SBATCH --nodes=2 # two nodes --nodes=3\n"
      "#SBATCH \"--gpus-per-node=8\" --job-name 'a b'\n"
      "  \t\n"
      "echo start\n"
      "#SBATCH --nodes=5\n");
  EXPECT_EQ(r.allocation.nodes, 2u);
  EXPECT_EQ(r.allocation.gpus, 16u);
}

TEST(SbatchOptionsTest, OtherOptionsAndTheirValuesAreSkipped) {
  const Read r = ReadScript(
      "#SBATCH -J train -o out.%j -p gpu --time 04:00:00 --exclusive -N 2\n"
      "#SBATCH --account=proj --gpus-per-node 8 -vN3\n");
  EXPECT_EQ(r.allocation.nodes, 3u);  // -v then -N3: a later option overrides.
  EXPECT_EQ(r.allocation.gpus, 24u);
}

TEST(SbatchOptionsTest, HetjobEndsTheFirstComponent) {
  const Read r = ReadScript("#SBATCH -N1 --gpus-per-node=8\n#SBATCH hetjob\n#SBATCH -N4\n");
  EXPECT_EQ(r.allocation.gpus, 8u);
  EXPECT_THAT(absl::StrJoin(r.notes, "\n"), HasSubstr("line 2: #SBATCH hetjob"));
}

TEST(SbatchOptionsTest, RangesAndUnreadFormsAreNotedNotGuessed) {
  Read r = ReadScript("#SBATCH --nodes=4-8 --gpus-per-node=8\n");
  EXPECT_EQ(r.allocation.gpus, 0u);
  EXPECT_THAT(absl::StrJoin(r.notes, "\n"),
              AllOf(HasSubstr("line 1: #SBATCH --nodes=4-8: a node range"),
                    HasSubstr("the job's size is not read from it")));
  r = ReadScript("#SBATCH --nodes=4-4 --gpus-per-node=8\n");
  EXPECT_EQ(r.allocation.gpus, 32u);
  r = ReadScript("#SBATCH -N 2 --gres=gpu:2k\n");
  EXPECT_EQ(r.allocation.gpus, 0u);
  EXPECT_THAT(absl::StrJoin(r.notes, "\n"), HasSubstr("--gres=gpu:2k: GPU count \"2k\" not read"));
  // --gpus-per-task without a task count.
  r = ReadScript("#SBATCH -N 2 --gpus-per-task=1\n");
  EXPECT_EQ(r.allocation.gpus, 0u);
}

TEST(SbatchOptionsTest, BadValuesNameTheLineTheOptionAndTheValue) {
  absl::Status s = Error("#!/bin/bash\n#SBATCH --nodes=abc --gpus-per-node=8\n");
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("line 2"), HasSubstr("#SBATCH --nodes=abc"),
                                 HasSubstr("a node count")));
  s = Error("#SBATCH -N x\n");
  EXPECT_THAT(s.message(), HasSubstr("#SBATCH -N x: expected a node count"));
  s = Error("#SBATCH --ntasks-per-node=0\n");
  EXPECT_THAT(s.message(), HasSubstr("--ntasks-per-node=0: expected a whole number in [1, "));
  s = Error("#SBATCH --gpus-per-node=h100:eight\n");
  EXPECT_THAT(s.message(), HasSubstr("--gpus-per-node=h100:eight: expected [type:]count"));
  s = Error("#SBATCH --nodes=99999999999\n");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  s = Error("#SBATCH --nodes\n");
  EXPECT_THAT(s.message(), HasSubstr("--nodes: expected a value after it"));
  // After the first command: not sbatch's business any more.
  EXPECT_TRUE(Error("echo\n#SBATCH --nodes=abc\n").ok());
}

TEST(SbatchOptionsTest, TheBatchStepsSlurmVariables) {
  Read r = ReadScript("#SBATCH -N4 --ntasks-per-node=8 --gpus-per-node=h100:8\n");
  std::vector<std::pair<std::string, std::string>> env = SlurmEnvironment(r.options, r.allocation);
  EXPECT_THAT(env, Contains(Pair("SLURM_NNODES", "4")));
  EXPECT_THAT(env, Contains(Pair("SLURM_JOB_NUM_NODES", "4")));
  EXPECT_THAT(env, Contains(Pair("SLURM_NTASKS", "32")));
  EXPECT_THAT(env, Contains(Pair("SLURM_NTASKS_PER_NODE", "8")));
  EXPECT_THAT(env, Contains(Pair("SLURM_GPUS_ON_NODE", "8")));
  EXPECT_THAT(env, Contains(Pair("SLURM_GPUS_PER_NODE", "h100:8")));  // As written.
  r = ReadScript("#SBATCH --gpus=32\n");
  env = SlurmEnvironment(r.options, r.allocation);
  EXPECT_THAT(env, Contains(Pair("SLURM_GPUS", "32")));
  for (const auto& [name, value] : env) EXPECT_NE(name, "SLURM_NNODES");  // Not known.
}

}  // namespace
}  // namespace oomguard::job_script_internal
