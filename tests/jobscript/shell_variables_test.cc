// Tests of shell variables and their expansion: scalars, arrays, exports,
// defaults, bash's quoting and splitting, and the bounds.
#include "jobscript/shell_variables.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "jobscript/job_script.h"
#include "jobscript/job_script_lexer.h"
#include "tests/jobscript/job_script_test_util.h"

namespace oomguard {
namespace {

using ::oomguard::job_script_internal::Command;
using ::oomguard::job_script_internal::Field;
using ::oomguard::job_script_internal::Lexer;
using ::oomguard::job_script_internal::ShellVariables;
using ::oomguard::job_script_internal::WhyInert;
using ::oomguard::job_script_internal::Word;
using ::oomguard::testing::AllNotes;
using ::oomguard::testing::Parse;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

TEST(ShellVariablesTest, ScalarVariablesExportsAndDefaults) {
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

TEST(ShellVariablesTest, QuotedArrayElementsKeepTheirBlanks) {
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

TEST(ShellVariablesTest, ExpansionBombIsBounded) {
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

// The first word of `text`, as the lexer cuts it.
Word FirstWord(const std::string& text) {
  Lexer lexer(text);
  Command command;
  EXPECT_TRUE(lexer.Next(&command)) << text;
  return command.words.empty() ? Word{} : command.words[0];
}

// The literal text of each field `word` expands to.
std::vector<std::string> Expanded(ShellVariables& variables, const std::string& word) {
  std::vector<std::string> texts;
  for (const Field& field : variables.Expand(FirstWord(word).parts, true, 1)) {
    texts.push_back(field.text());
  }
  return texts;
}

TEST(ShellVariablesTest, ArraysExpandAsBashDoes) {
  std::vector<std::string> notes;
  ShellVariables variables(&notes);
  variables.Assign(FirstWord("A=(x 'y z')"), false, 1);
  EXPECT_THAT(Expanded(variables, "\"${A[@]}\""), ElementsAre("x", "y z"));
  EXPECT_THAT(Expanded(variables, "\"${A[*]}\""), ElementsAre("x y z"));
  EXPECT_THAT(Expanded(variables, "${A[*]}"), ElementsAre("x", "y", "z"));
  EXPECT_THAT(Expanded(variables, "${A[1]}"), ElementsAre("y", "z"));
  EXPECT_THAT(Expanded(variables, "\"$A\""), ElementsAre("x"));
  variables.Assign(FirstWord("A+=(w)"), false, 2);
  EXPECT_THAT(Expanded(variables, "\"${A[@]}\""), ElementsAre("x", "y z", "w"));
  variables.Unset("A");
  EXPECT_THAT(Expanded(variables, "${A:-gone}"), ElementsAre("gone"));
  EXPECT_THAT(notes, ElementsAre("line 1: ${A:-gone}: assumed $A unset"));
}

TEST(ShellVariablesTest, UnknownValuesStayInertAndNoted) {
  std::vector<std::string> notes;
  ShellVariables variables(&notes);
  const std::vector<Field> fields =
      variables.Expand(FirstWord("--data-path=$DATA/x").parts, true, 3);
  ASSERT_EQ(fields.size(), 1u);
  EXPECT_TRUE(fields[0].inert());
  EXPECT_EQ(WhyInert(fields[0].pieces), "$DATA is not assigned in the script");
  EXPECT_THAT(notes, ElementsAre("line 3: $DATA is not assigned in the script; its value is only "
                                 "known when the job runs"));
  // `${X:=v}` assigns X for later.
  EXPECT_THAT(Expanded(variables, "${X:=v}"), ElementsAre("v"));
  EXPECT_THAT(Expanded(variables, "$X"), ElementsAre("v"));
}

TEST(ShellVariablesTest, OnlyExportedKnownValuesReachTheLaunch) {
  std::vector<std::string> notes;
  ShellVariables variables(&notes);
  variables.Assign(FirstWord("NCCL_GRAPH_REGISTER=0"), false, 1);
  EXPECT_EQ(variables.ExportedValue("NCCL_GRAPH_REGISTER"), std::nullopt);
  variables.Export("NCCL_GRAPH_REGISTER");
  EXPECT_THAT(variables.ExportedValue("NCCL_GRAPH_REGISTER"), Optional(std::string("0")));
  // Exported but set outside the script: unknown.
  variables.Export("PYTORCH_CUDA_ALLOC_CONF");
  EXPECT_EQ(variables.ExportedValue("PYTORCH_CUDA_ALLOC_CONF"), std::nullopt);
  // `set -a`: later assignments are exported.
  variables.SetAllexport(true);
  variables.Assign(FirstWord("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"), false, 2);
  EXPECT_THAT(variables.ExportedValue("PYTORCH_CUDA_ALLOC_CONF"),
              Optional(std::string("expandable_segments:True")));
  // A value holding a command substitution is not known.
  variables.Assign(FirstWord("EVIL=$(id)"), true, 3);
  EXPECT_EQ(variables.ExportedValue("EVIL"), std::nullopt);
  EXPECT_THAT(notes, IsEmpty());
}

}  // namespace
}  // namespace oomguard
