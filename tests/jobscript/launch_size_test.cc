// Tests of the launch's world size (jobscript/launch_size.h) through
// ParseJobScript: torchrun and `python -m torch.distributed.run` in their
// spellings, srun and mpirun, SLURM_* variables known from #SBATCH, what is
// only known at run time, and the note when the launch and #SBATCH differ.
#include "jobscript/launch_size.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "jobscript/job_script.h"
#include "tests/jobscript/job_script_test_util.h"

namespace oomguard {
namespace {

using ::oomguard::testing::AllNotes;
using ::oomguard::testing::Parse;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// The launch's size: {gpus, gpus per node}.
std::pair<uint32_t, uint32_t> SizeOf(const ScriptJob& job) {
  EXPECT_TRUE(job.found);
  return {job.launch_size.gpus, job.launch_size.gpus_per_node};
}

TEST(LaunchSizeTest, TorchrunSpellings) {
  EXPECT_EQ(SizeOf(Parse("torchrun --nnodes 4 --nproc-per-node 8 pretrain_gpt.py --bf16\n")),
            std::make_pair(32u, 8u));
  EXPECT_EQ(SizeOf(Parse("torchrun --nnodes=2 --nproc_per_node=8 --rdzv-backend c10d "
                         "--rdzv-endpoint $HEAD:29500 --standalone pretrain_gpt.py\n")),
            std::make_pair(16u, 8u));
  const ScriptJob job = Parse(
      "python -u -m torch.distributed.run --nproc_per_node 4 "
      "--nnodes 1:1 --node_rank 0 pretrain_gpt.py --bf16\n");
  EXPECT_EQ(SizeOf(job), std::make_pair(4u, 4u));
  EXPECT_EQ(job.launch_size.how, "torchrun --nnodes 1:1 x --nproc_per_node 4");
  EXPECT_THAT(job.megatron_args, ElementsAre("--bf16"));
  EXPECT_EQ(SizeOf(Parse("python3 -m torch.distributed.launch --nproc_per_node=8 "
                         "pretrain_gpt.py\n")),
            std::make_pair(8u, 8u));
  // torchrun's defaults: one node, one process.
  EXPECT_EQ(SizeOf(Parse("torchrun pretrain_gpt.py\n")), std::make_pair(1u, 1u));
  // A module as the training script.
  EXPECT_EQ(SizeOf(Parse("torchrun --nproc-per-node 8 -m megatron.training.pretrain_gpt\n")),
            std::make_pair(8u, 8u));
}

TEST(LaunchSizeTest, MegatronsOwnExampleUsesItsVariables) {
  const ScriptJob job = Parse(
      "GPUS_PER_NODE=8\nNUM_NODES=2\n"
      "DISTRIBUTED_ARGS=(--nproc_per_node $GPUS_PER_NODE --nnodes $NUM_NODES "
      "--master_addr $MASTER_ADDR --master_port 6000)\n"
      "torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py --bf16\n");
  EXPECT_EQ(SizeOf(job), std::make_pair(16u, 8u));
}

// Issue 25 item 12: a size option whose value, from a variable, is not a
// count is noted naming the variable, never showing the value.
TEST(LaunchSizeTest, ABadValueFromAVariableIsNamedNotShown) {
  const ScriptJob job = Parse(
      "export WANDB_API_KEY=sk-secret-123\n"
      "torchrun --nnodes $WANDB_API_KEY --nproc-per-node 8 pretrain_gpt.py --num-layers 2\n");
  EXPECT_THAT(AllNotes(job), HasSubstr("line 2: torchrun $WANDB_API_KEY (its value not shown): "
                                       "not a whole number in [1, 1048576]"));
  EXPECT_THAT(AllNotes(job), Not(HasSubstr("sk-secret")));
}

TEST(LaunchSizeTest, SlurmVariablesAreKnownFromSbatch) {
  const ScriptJob job = Parse(
      "#!/bin/bash\n#SBATCH --nodes=4 --gpus-per-node=8\n"
      "srun torchrun --nnodes $SLURM_NNODES --nproc-per-node $SLURM_GPUS_ON_NODE "
      "--rdzv-endpoint $(hostname):29500 pretrain_gpt.py\n");
  EXPECT_EQ(SizeOf(job), std::make_pair(32u, 8u));
  EXPECT_EQ(job.allocated.gpus, 32u);
  EXPECT_THAT(AllNotes(job), Not(HasSubstr("the launch starts")));
  // --nproc-per-node=gpu is the node's GPUs.
  EXPECT_EQ(SizeOf(Parse("#SBATCH -N 2 --gres=gpu:4\ntorchrun --nnodes=2 --nproc-per-node=gpu "
                         "pretrain_gpt.py\n")),
            std::make_pair(8u, 4u));
}

TEST(LaunchSizeTest, Srun) {
  EXPECT_EQ(SizeOf(Parse("srun -N4 --ntasks-per-node=8 python pretrain_gpt.py\n")),
            std::make_pair(32u, 8u));
  EXPECT_EQ(SizeOf(Parse("srun --label -n 16 --cpu-bind none python pretrain_gpt.py\n")),
            std::make_pair(16u, 0u));
  // Inherited from the allocation.
  ScriptJob job = Parse(
      "#SBATCH -N4 --ntasks-per-node=8 --gpus-per-task=1\n"
      "srun --mpi=pmix python3 pretrain_gpt.py\n");
  EXPECT_EQ(SizeOf(job), std::make_pair(32u, 8u));
  EXPECT_EQ(job.allocated.gpus, 32u);
  // One task a node by default.
  EXPECT_EQ(SizeOf(Parse("#SBATCH -N 2 --gpus-per-node=8\nsrun python pretrain_gpt.py\n")),
            std::make_pair(2u, 1u));
  // srun starting torchrun agents: torchrun decides.
  EXPECT_EQ(SizeOf(Parse("srun -N2 --ntasks-per-node=1 torchrun --nnodes 2 --nproc-per-node 8 "
                         "pretrain_gpt.py\n")),
            std::make_pair(16u, 8u));
}

TEST(LaunchSizeTest, Mpirun) {
  EXPECT_EQ(SizeOf(Parse("mpirun -np 16 -x NCCL_DEBUG python pretrain_gpt.py\n")),
            std::make_pair(16u, 0u));
}

TEST(LaunchSizeTest, WhatIsOnlyKnownAtRunTimeIsNotRead) {
  ScriptJob job = Parse("torchrun --nnodes $NNODES --nproc-per-node 8 pretrain_gpt.py\n");
  EXPECT_EQ(SizeOf(job).first, 0u);
  EXPECT_THAT(AllNotes(job), HasSubstr("line 1: torchrun --nnodes $NNODES: only known when the "
                                       "job runs; the launch's world size is not read"));
  job = Parse("torchrun $DISTRIBUTED_ARGS pretrain_gpt.py\n");
  EXPECT_EQ(SizeOf(job).first, 0u);
  EXPECT_THAT(AllNotes(job), HasSubstr("torchrun $DISTRIBUTED_ARGS: only known when the job "
                                       "runs, may set its size"));
  job = Parse("srun -N $N python pretrain_gpt.py\n");
  EXPECT_EQ(SizeOf(job).first, 0u);
  // Plain python: one process that is not a distributed launch; no size.
  job = Parse("python pretrain_gpt.py\n");
  EXPECT_EQ(SizeOf(job).first, 0u);
}

TEST(LaunchSizeTest, ElasticAndBadValuesAreNotedNotGuessed) {
  ScriptJob job = Parse("torchrun --nnodes=2:4 --nproc-per-node=8 pretrain_gpt.py\n");
  EXPECT_EQ(SizeOf(job).first, 0u);
  EXPECT_THAT(AllNotes(job), HasSubstr("torchrun --nnodes=2:4: an elastic node range"));
  job = Parse("torchrun --nnodes=abc --nproc-per-node=8 pretrain_gpt.py\n");
  EXPECT_EQ(SizeOf(job).first, 0u);
  EXPECT_THAT(AllNotes(job),
              HasSubstr("torchrun --nnodes=abc: not a whole number in [1, 1048576]"));
  job = Parse("torchrun --nproc-per-node=gpu pretrain_gpt.py\n");
  EXPECT_EQ(SizeOf(job).first, 0u);
  EXPECT_THAT(AllNotes(job), HasSubstr("the node's GPUs, not stated by #SBATCH"));
}

TEST(LaunchSizeTest, LaunchAndSbatchDisagreeingIsNoted) {
  const ScriptJob job = Parse(
      "#SBATCH --nodes=4 --gpus-per-node=8\n"
      "srun torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py\n");
  EXPECT_EQ(SizeOf(job), std::make_pair(16u, 8u));
  EXPECT_EQ(job.allocated.gpus, 32u);
  EXPECT_THAT(AllNotes(job),
              HasSubstr("the launch starts 16 ranks (torchrun --nnodes 2 x --nproc-per-node 8) "
                        "but #SBATCH allocates 32 GPUs (--nodes=4 x --gpus-per-node=8); the "
                        "launch's is the world size Megatron-LM sees"));
}

}  // namespace
}  // namespace oomguard
