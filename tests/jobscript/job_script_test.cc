// Tests of ParseJobScript / ParseCommandWords: real-looking Megatron-LM job
// scripts, directives, hostile content and the size bounds.
#include "jobscript/job_script.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace oomguard {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// Parses `script`; fails the test on error.
ScriptJob Parse(const std::string& script) {
  absl::StatusOr<ScriptJob> job = ParseJobScript(script);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *std::move(job) : ScriptJob{};
}

std::vector<std::string> Words(const std::string& line) {
  return absl::StrSplit(line, ' ', absl::SkipEmpty());
}

std::string AllNotes(const ScriptJob& job) { return absl::StrJoin(job.notes, "\n"); }

// Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh, as shipped
// (arrays, a comment inside an array, $1.. paths, $((...))).
constexpr char kMegatronExample[] = R"sh(#!/bin/bash

# Runs the "175B" parameter model

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
# Change for multinode config
MASTER_ADDR=localhost
MASTER_PORT=6000
NUM_NODES=1
NODE_RANK=0
WORLD_SIZE=$(($GPUS_PER_NODE*$NUM_NODES))

CHECKPOINT_PATH=$1 #<Specify path>
TENSORBOARD_LOGS_PATH=$2 #<Specify path>
VOCAB_FILE=$3 #<Specify path to file>/gpt2-vocab.json
MERGE_FILE=$4 #<Specify path to file>/gpt2-merges.txt
DATA_PATH=$5 #<Specify path and file prefix>_text_document

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE 
    --nnodes $NUM_NODES 
    --master_addr $MASTER_ADDR 
    --master_port $MASTER_PORT
)

GPT_MODEL_ARGS=(
    --num-layers 96 
    --hidden-size 12288 
    --num-attention-heads 96 
    --seq-length 2048 
    --max-position-embeddings 2048 
    --attention-backend auto # Can use (flash/fused/unfused/local)
)

TRAINING_ARGS=(
    --micro-batch-size 1 
    --global-batch-size 1536 
    --train-iters 500000 
    --weight-decay 0.1 
    --clip-grad 1.0 
    --fp16
    --lr 6.0e-5 
    --lr-decay-style cosine 
)

MODEL_PARALLEL_ARGS=(
	--tensor-model-parallel-size 8 
	--pipeline-model-parallel-size 16 
)

DATA_ARGS=(
    --data-path $DATA_PATH 
    --split 949,50,1
)

EVAL_AND_LOGGING_ARGS=(
    --log-interval 100
    --save $CHECKPOINT_PATH 
    --load $CHECKPOINT_PATH 
    --eval-iters 10
)

torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${GPT_MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    ${DATA_ARGS[@]} \
    ${EVAL_AND_LOGGING_ARGS[@]}
)sh";

TEST(JobScriptTest, MegatronExampleScriptWithArrays) {
  const ScriptJob job = Parse(kMegatronExample);
  ASSERT_TRUE(job.found);
  EXPECT_EQ(job.launch_line, 65);
  EXPECT_EQ(job.megatron_args,
            Words("--num-layers 96 --hidden-size 12288 --num-attention-heads 96 "
                  "--seq-length 2048 --max-position-embeddings 2048 "
                  "--attention-backend auto "
                  "--micro-batch-size 1 --global-batch-size 1536 --train-iters 500000 "
                  "--weight-decay 0.1 --clip-grad 1.0 --fp16 --lr 6.0e-5 "
                  "--lr-decay-style cosine --tensor-model-parallel-size 8 "
                  "--pipeline-model-parallel-size 16 --data-path --split 949,50,1 "
                  "--log-interval 100 --save --load --eval-iters 10"));
  // $5 and $1 are only known when the job runs: their words are dropped
  // and said so.
  EXPECT_THAT(AllNotes(job), HasSubstr("dropped $5: a shell parameter only known when the "
                                       "job runs"));
  EXPECT_THAT(job.env, IsEmpty());
  EXPECT_TRUE(job.preset.empty());
  EXPECT_EQ(job.num_gpus, 0u);
}

TEST(JobScriptTest, ScalarVariablesExportsAndDefaults) {
  const ScriptJob job = Parse(R"sh(#!/bin/bash
#SBATCH --nodes=2 --gpus-per-node=8
#OOMGUARD preset=llama3-8b gpu=H100 gpus=16
set -euo pipefail
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
NCCL_GRAPH_REGISTER=0
export NCCL_GRAPH_REGISTER
TP=2
MBS=${MBS:-2}
GPT_ARGS="--tensor-model-parallel-size $TP \
  --pipeline-model-parallel-size ${PP:-4}
  --micro-batch-size ${MBS} --global-batch-size 128"
GPT_ARGS+=" --recompute-granularity selective"
OUTPUT_ARGS='--log-interval 10 --save-interval "1000"'
srun --ntasks-per-node=1 \
  python -u /opt/Megatron-LM/pretrain_gpt.py $GPT_ARGS $OUTPUT_ARGS --bf16 2>&1 | tee log.txt
)sh");
  ASSERT_TRUE(job.found);
  EXPECT_EQ(job.launch_line, 15);
  EXPECT_EQ(job.megatron_args,
            std::vector<std::string>(
                {"--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "4",
                 "--micro-batch-size", "2", "--global-batch-size", "128", "--recompute-granularity",
                 "selective", "--log-interval", "10", "--save-interval", "\"1000\"", "--bf16"}));
  EXPECT_THAT(job.env,
              UnorderedElementsAre(Pair("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),
                                   Pair("NCCL_GRAPH_REGISTER", "0")));
  EXPECT_EQ(job.preset, "llama3-8b");
  EXPECT_EQ(job.gpu, "H100");
  EXPECT_EQ(job.num_gpus, 16u);
  EXPECT_THAT(AllNotes(job), HasSubstr("assumed $MBS unset"));
}

TEST(JobScriptTest, QuotedArrayElementsKeepTheirBlanks) {
  const ScriptJob job = Parse(R"sh(
ARGS=(--num-layers 4)
ARGS+=(--hidden-size 256 "--tokenizer-model" "/path with space/tok.model")
unset NOT_USED
torchrun --nproc_per_node 8 pretrain_gpt.py "${ARGS[@]}" --micro-batch-size "${ARGS[1]}"
)sh");
  ASSERT_TRUE(job.found);
  EXPECT_THAT(job.megatron_args,
              ElementsAre("--num-layers", "4", "--hidden-size", "256", "--tokenizer-model",
                          "/path with space/tok.model", "--micro-batch-size", "4"));
}

TEST(JobScriptTest, LauncherForms) {
  // python -m torch.distributed.run, a path from an unknown variable, and
  // the prefix environment of the launch command.
  ScriptJob job = Parse(
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 -m "
      "torch.distributed.run "
      "--nproc_per_node=8 ${MEGATRON_PATH}/pretrain_gpt.py --num-layers 2\n");
  ASSERT_TRUE(job.found);
  EXPECT_THAT(job.megatron_args, ElementsAre("--num-layers", "2"));
  EXPECT_THAT(job.env, ElementsAre(Pair("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")));

  job = Parse(
      "exec env NCCL_GRAPH_REGISTER=0 python -m megatron.training.pretrain_gpt "
      "--fp16\n");
  ASSERT_TRUE(job.found);
  EXPECT_THAT(job.megatron_args, ElementsAre("--fp16"));
  EXPECT_THAT(job.env, ElementsAre(Pair("NCCL_GRAPH_REGISTER", "0")));

  job = Parse(
      "ARGS=\"--num-layers 8\"\n"
      "srun --nodes=2 bash -c \"torchrun --node_rank \\$SLURM_NODEID "
      "pretrain_llama.py $ARGS\"\n");
  ASSERT_TRUE(job.found);
  EXPECT_EQ(job.launch_line, 2);
  EXPECT_THAT(job.megatron_args, ElementsAre("--num-layers", "8"));

  // Not a launch: the training script is only mentioned.
  job = Parse("echo torchrun pretrain_gpt.py --num-layers 2\nls pretrain_gpt.py\n");
  EXPECT_FALSE(job.found);
}

TEST(JobScriptTest, OtherMegatronModelsAreNotJudged) {
  const ScriptJob job = Parse("torchrun pretrain_mamba.py --num-layers 2\n");
  EXPECT_FALSE(job.found);
  EXPECT_THAT(AllNotes(job), HasSubstr("pretrain_mamba.py is not a GPT-style"));
}

TEST(JobScriptTest, NonTrainingScript) {
  const ScriptJob job = Parse(
      "#!/bin/bash\n#SBATCH -n 1\nhostname\necho \"it's fine\"\npython "
      "preprocess.py --x 1\n");
  EXPECT_FALSE(job.found);
  EXPECT_TRUE(job.megatron_args.empty());
}

TEST(JobScriptTest, HeredocsRedirectionsAndCommentsAreSkipped) {
  const ScriptJob job = Parse(R"sh(
cat > run.sh <<'EOF'
torchrun pretrain_gpt.py --num-layers 999 it's "unbalanced
EOF
cat <<-END
	python pretrain_gpt.py --num-layers 998
	END
# torchrun pretrain_gpt.py --num-layers 997
torchrun pretrain_gpt.py --num-layers 3 > out.log 2>&1 < /dev/null # trailing comment
torchrun pretrain_gpt.py --num-layers 5
)sh");
  ASSERT_TRUE(job.found);
  EXPECT_EQ(job.launch_line, 9);
  EXPECT_THAT(job.megatron_args, ElementsAre("--num-layers", "3"));
  EXPECT_THAT(AllNotes(job), HasSubstr("line 10: another Megatron-LM launch; only the first "
                                       "(line 9) is judged"));
}

TEST(JobScriptTest, CrLfScript) {
  const ScriptJob job =
      Parse("MBS=2\r\ntorchrun pretrain_gpt.py \\\r\n  --micro-batch-size $MBS\r\n");
  ASSERT_TRUE(job.found);
  EXPECT_THAT(job.megatron_args, ElementsAre("--micro-batch-size", "2"));
}

TEST(JobScriptTest, Directives) {
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

TEST(JobScriptTest, BadDirectivesNameLineAndItem) {
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

TEST(JobScriptTest, HostileContentIsNeverEvaluated) {
  const ScriptJob job = Parse(R"sh(#!/bin/bash
MBS=$(touch /tmp/PWNED_a; echo 8)
EVIL="`touch /tmp/PWNED_b`"
TP=2;rm -rf /tmp/nothing; echo "$(id)"
ARGS="--num-layers 4 --seq-length \$(touch /tmp/PWNED_c) --lr '1e-4;reboot'"
torchrun pretrain_gpt.py $ARGS \
  --micro-batch-size $(touch /tmp/PWNED_d) \
  --global-batch-size $MBS \
  --tensor-model-parallel-size $TP \
  --hidden-size "12`touch /tmp/PWNED_e`8" \
  --num-attention-heads "8" --fp16 $EVIL "--data-path=$(cat /etc/shadow)" \
  --tokenizer-type 'a"b' --vocab-size $((32000+0)) ; rm -rf / ; echo done
)sh");
  ASSERT_TRUE(job.found);
  EXPECT_EQ(job.launch_line, 6);
  // Every word that depends on a substitution is dropped with its flag
  // (--fp16 takes no value, so it stays); literal `$(...)` text inside
  // single quotes or escaped is just text.
  EXPECT_THAT(job.megatron_args,
              ElementsAre("--num-layers", "4", "--seq-length", "$(touch", "/tmp/PWNED_c)", "--lr",
                          "'1e-4;reboot'", "--tensor-model-parallel-size", "2",
                          "--num-attention-heads", "8", "--fp16", "--tokenizer-type", "a\"b"));
  const std::string notes = AllNotes(job);
  EXPECT_THAT(notes, HasSubstr("dropped --micro-batch-size $(touch /tmp/PWNED_d): a command "
                               "substitution, never run"));
  EXPECT_THAT(notes, HasSubstr("dropped --global-batch-size $(touch /tmp/PWNED_a; echo 8)"));
  EXPECT_THAT(notes, HasSubstr("dropped --hidden-size 12`touch /tmp/PWNED_e`8"));
  EXPECT_THAT(notes, HasSubstr("dropped --vocab-size $((32000+0)): arithmetic"));
  EXPECT_THAT(job.unresolved,
              ElementsAre("--micro-batch-size $(touch /tmp/PWNED_d)",
                          "--global-batch-size $(touch /tmp/PWNED_a; echo 8)",
                          "--hidden-size 12`touch /tmp/PWNED_e`8", "`touch /tmp/PWNED_b`",
                          "--data-path=$(cat /etc/shadow)", "--vocab-size $((32000+0))"));
}

TEST(JobScriptTest, UnterminatedQuoteOnTheLaunchIsAnError) {
  absl::StatusOr<ScriptJob> job =
      ParseJobScript("A=1\n\ntorchrun pretrain_gpt.py --num-layers \"4\n--fp16\n");
  ASSERT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(job.status().message(),
              AllOf(HasSubstr("line 3"), HasSubstr("unterminated double quote")));
  // Elsewhere, the reading stops with a note; nothing to judge.
  job = ParseJobScript("echo 'it is\nhostname\n");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_FALSE(job->found);
  EXPECT_THAT(AllNotes(*job), HasSubstr("line 1: unterminated single quote"));
  // After the launch, it does not matter.
  job = ParseJobScript("torchrun pretrain_gpt.py --fp16\necho \"oops\n");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(job->found);
  EXPECT_THAT(job->megatron_args, ElementsAre("--fp16"));
}

TEST(JobScriptTest, SizeBound) {
  std::string script(kMaxJobScriptBytes + 1, '#');
  absl::StatusOr<ScriptJob> job = ParseJobScript(script);
  ASSERT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(job.status().message(), AllOf(HasSubstr("16777217 bytes"), HasSubstr("16777216")));
}

TEST(JobScriptTest, TenMegabyteScriptIsReadQuickly) {
  std::string script = "#!/bin/bash\nMBS=1\n";
  const std::string pad = "# " + std::string(98, 'x') + "\n";
  while (script.size() < (size_t{10} << 20)) script += pad;
  script += "torchrun pretrain_gpt.py --micro-batch-size $MBS\n";
  const auto start = std::chrono::steady_clock::now();
  const ScriptJob job = Parse(script);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(job.found);
  EXPECT_THAT(job.megatron_args, ElementsAre("--micro-batch-size", "1"));
  EXPECT_LT(seconds, 2.0);
}

TEST(JobScriptTest, ExpansionBombIsBounded) {
  std::string script = "X=0123456789abcdef\n";
  for (int i = 0; i < 40; ++i) script += "X=\"$X$X\"\n";
  for (int i = 0; i < 200; ++i) script += "Y=\"$X\"\n";
  script += "torchrun pretrain_gpt.py --num-layers 2 --foo $X\n";
  const auto start = std::chrono::steady_clock::now();
  const ScriptJob job = Parse(script);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(job.found);
  EXPECT_THAT(job.megatron_args, ElementsAre("--num-layers", "2", "--foo"));
  EXPECT_THAT(AllNotes(job), HasSubstr("longer than 1048576 bytes"));
  EXPECT_LT(seconds, 5.0);
}

TEST(JobScriptTest, CommandWords) {
  absl::StatusOr<ScriptJob> job = ParseCommandWords(
      {"torchrun", "--nproc_per_node=8", "/workspace/megatron/pretrain_gpt.py", "--num-layers", "2",
       "--micro-batch-size", "$(MBS)", "--bf16", "$(touch /tmp/x)"});
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(job->found);
  EXPECT_THAT(job->megatron_args, ElementsAre("--num-layers", "2", "--bf16"));
  EXPECT_THAT(AllNotes(*job), HasSubstr("dropped --micro-batch-size $(MBS)"));

  job = ParseCommandWords({"/bin/bash", "-lc",
                           "#OOMGUARD preset=qwen3-8b\nexport MBS=4\n"
                           "torchrun pretrain_gpt.py --micro-batch-size $MBS"});
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(job->found);
  EXPECT_EQ(job->preset, "qwen3-8b");
  EXPECT_THAT(job->megatron_args, ElementsAre("--micro-batch-size", "4"));

  job = ParseCommandWords({"python", "serve.py", "--port", "80"});
  ASSERT_TRUE(job.ok());
  EXPECT_FALSE(job->found);
}

}  // namespace
}  // namespace oomguard
