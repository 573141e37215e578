// Tests of the entry points ParseJobScript / ParseCommandWords: real-looking
// Megatron-LM job scripts end to end, what the lexer skips, unterminated
// quotes, container argv and the size bounds. The parts have their own
// tests: directives_test, shell_variables_test, launch_finder_test.
#include "jobscript/job_script.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/deadline.h"
#include "tests/jobscript/job_script_test_util.h"

namespace oomguard {
namespace {

using ::oomguard::testing::AllNotes;
using ::oomguard::testing::Parse;
using ::oomguard::testing::Words;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

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

// Issue 25 item 5: array-doubling lines pass the expansion work bound and the
// reading stops there, naming the line, rather than copying 65,536 elements
// a line for thousands of lines (17 s). Each reference costs its elements'
// bytes plus 64 each (kExpansionWorkPerElement). With `A=(a b)`, line k
// copies min(2^(k-1), 2^16) one-byte elements: lines 2..17 copy 2^17 - 2 of
// them, 8,519,550 bytes of work, and each later line 65,536 x 65 =
// 4,259,840, so line 19 passes 16 MiB (16,779,230 > 16,777,216).
// With empty elements each costs 64: 64 x (2^17 - 2) after line 17, then
// 4,194,304 a line: line 19 reaches 16,777,088, line 20 passes.
TEST(JobScriptTest, ArrayDoublingStopsAtTheExpansionWorkBound) {
  absl::StatusOr<ScriptJob> job = ParseJobScript(testing::ArrayDoublingScript("a b"));
  ASSERT_EQ(job.status().code(), absl::StatusCode::kResourceExhausted) << job.status();
  EXPECT_THAT(job.status().message(),
              HasSubstr("line 19: the script's variable expansions pass 16 MiB of work"));
  EXPECT_TRUE(IsUnreadableScript(job.status()));

  job = ParseJobScript(testing::ArrayDoublingScript("\"\" \"\""));
  ASSERT_EQ(job.status().code(), absl::StatusCode::kResourceExhausted) << job.status();
  EXPECT_THAT(job.status().message(), HasSubstr("line 20: "));

  // Inside a container's `bash -c`, and inside `srun bash -c` of a batch
  // script (its lines counted from the srun line, 3): the whole reading
  // stops, not only the inner script's.
  job = ParseCommandWords({"bash", "-c", testing::ArrayDoublingScript("a b")});
  ASSERT_EQ(job.status().code(), absl::StatusCode::kResourceExhausted) << job.status();
  job = ParseJobScript("#!/bin/bash\n#SBATCH --gpus=8\nsrun bash -c '" +
                       testing::ArrayDoublingScript("a b") + "'\n");
  ASSERT_EQ(job.status().code(), absl::StatusCode::kResourceExhausted) << job.status();
  EXPECT_THAT(job.status().message(), HasSubstr("line 21: "));
}

TEST(JobScriptTest, ThePassedDeadlineStopsTheReading) {
  const Deadline passed(absl::InfinitePast());
  absl::StatusOr<ScriptJob> job =
      ParseJobScript("#!/bin/bash\nMBS=1\ntorchrun pretrain_gpt.py\n", passed);
  ASSERT_EQ(job.status().code(), absl::StatusCode::kDeadlineExceeded) << job.status();
  EXPECT_EQ(job.status().message(), "deadline passed while reading the job script (line 2)");
  EXPECT_TRUE(IsUnreadableScript(job.status()));
  job = ParseCommandWords({"bash", "-c", "torchrun pretrain_gpt.py"}, {}, passed);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kDeadlineExceeded) << job.status();
  // An invalid script is not an unreadable one.
  EXPECT_FALSE(IsUnreadableScript(ParseJobScript("torchrun pretrain_gpt.py 'x\n").status()));
}

// Issue 25 item 10: a launch line past the words bound was not read and the
// job taken as having no launch (accepted even under policy=closed), with a
// note blaming 1 MiB. It is a launch oomguard cannot read, and the error
// names the bound it passed: the words, or the bytes.
TEST(JobScriptTest, ALaunchPastTheCommandBoundsIsUnreadableNamingTheBound) {
  // 4 + 65,536 words: past kMaxCommandWords, 0.9 MB of them.
  absl::StatusOr<ScriptJob> job = ParseJobScript(testing::DataBlendScript(32768));
  ASSERT_EQ(job.status().code(), absl::StatusCode::kResourceExhausted) << job.status();
  EXPECT_EQ(job.status().message(),
            "line 2: the command has more than 65536 words, the most oomguard reads in one "
            "command");
  EXPECT_TRUE(IsUnreadableScript(job.status()));
  // 65,000 words are read.
  job = ParseJobScript(testing::DataBlendScript(32498));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(job->found);
  EXPECT_EQ(job->megatron_args.size(), 3u + 2 * 32498);
  // Few words, over 1 MiB: the bytes are named. 2 words of 600,000 bytes
  // each, the launch's 4 words with theirs: 1,200,002 + 40 + ... bytes.
  const std::string big(600000, 'x');
  job = ParseJobScript("torchrun pretrain_gpt.py --num-layers 2 --data-path " + big + " " + big);
  ASSERT_EQ(job.status().code(), absl::StatusCode::kResourceExhausted) << job.status();
  EXPECT_THAT(job.status().message(),
              AllOf(HasSubstr("line 1: the command is 1200"), HasSubstr(" bytes, more than the "
                                                                        "1048576 bytes")));
  // A container's words: the same bounds.
  std::vector<std::string> words = {"torchrun", "pretrain_gpt.py", "--data-path"};
  words.resize(kMaxCommandWords + 1, "1");
  job = ParseCommandWords(words);
  ASSERT_EQ(job.status().code(), absl::StatusCode::kResourceExhausted) << job.status();
  EXPECT_THAT(job.status().message(), HasSubstr("more than 65536 words"));
}

// Issue 25 item 12: each launch word keeps the variables whose values it
// holds (sent as MegatronJob.argv_sources, named in errors instead of the
// value): a script's own and exported variables, the container's env in
// `bash -c`, and a Kubernetes $(NAME) the webhook expanded.
TEST(JobScriptTest, LaunchWordsKeepTheVariablesTheyHold) {
  absl::StatusOr<ScriptJob> job = ParseJobScript(
      "export WANDB_API_KEY=sk-secret-123\nARGS=(--seq-length 4096)\nL=2\n"
      "torchrun pretrain_gpt.py --num-layers $L --micro-batch-size=$WANDB_API_KEY "
      "\"${ARGS[@]}\" --lr x${L}y $L$WANDB_API_KEY\n");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_THAT(job->megatron_args,
              ElementsAre("--num-layers", "2", "--micro-batch-size=sk-secret-123", "--seq-length",
                          "4096", "--lr", "x2y", "2sk-secret-123"));
  EXPECT_THAT(job->megatron_arg_sources, ElementsAre("", "$L", "$WANDB_API_KEY", "$ARGS", "$ARGS",
                                                     "", "$L", "$L, $WANDB_API_KEY"));

  job = ParseCommandWords({"bash", "-c", "torchrun pretrain_gpt.py --micro-batch-size $KEY"},
                          {{"KEY", "sk-secret-123"}});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_THAT(job->megatron_args, ElementsAre("--micro-batch-size", "sk-secret-123"));
  EXPECT_THAT(job->megatron_arg_sources, ElementsAre("", "$KEY"));

  job = ParseCommandWords({"torchrun", "pretrain_gpt.py", "--micro-batch-size", "sk-secret-123"},
                          {}, Deadline(), {"", "", "", "$(WANDB_API_KEY)"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_THAT(job->megatron_arg_sources, ElementsAre("", "$(WANDB_API_KEY)"));
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
