// Tests of finding the Megatron-LM launch: launcher forms, wrappers, other
// Megatron-LM models, `bash -c`, and words only known at run time dropped
// with their flag.
#include "jobscript/launch_finder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "jobscript/expanded_word.h"
#include "jobscript/job_script.h"
#include "jobscript/shell_variables.h"
#include "tests/jobscript/job_script_test_util.h"

namespace oomguard {
namespace {

using ::oomguard::job_script_internal::Field;
using ::oomguard::job_script_internal::kMaxScriptDepth;
using ::oomguard::job_script_internal::LaunchFinder;
using ::oomguard::job_script_internal::Piece;
using ::oomguard::job_script_internal::ShellScript;
using ::oomguard::job_script_internal::ShellVariables;
using ::oomguard::job_script_internal::SlurmAllocation;
using ::oomguard::testing::AllNotes;
using ::oomguard::testing::Parse;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(LaunchFinderTest, LauncherForms) {
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

// pretrain_hybrid.py (and pretrain_mamba.py, which runs it) read the
// arguments pretrain_gpt.py reads; the hybrid model is in the flags.
TEST(LaunchFinderTest, HybridLaunchesAreRead) {
  for (const char* launch :
       {"torchrun --nproc-per-node 8 /opt/megatron/pretrain_hybrid.py",
        "torchrun --nproc-per-node 8 pretrain_mamba.py", "python -m pretrain_hybrid"}) {
    const ScriptJob job = Parse(absl::StrCat(
        launch,
        " --hybrid-layer-pattern 'M-M*' --spec megatron.core.models.hybrid.hybrid_layer_specs "
        "hybrid_stack_spec\n"));
    ASSERT_TRUE(job.found) << launch;
    EXPECT_THAT(job.megatron_args,
                ElementsAre("--hybrid-layer-pattern", "M-M*", "--spec",
                            "megatron.core.models.hybrid.hybrid_layer_specs", "hybrid_stack_spec"))
        << launch;
  }
}

TEST(LaunchFinderTest, OtherMegatronModelsAreNotJudged) {
  for (const char* script : {"pretrain_bert.py", "pretrain_vlm.py"}) {
    const ScriptJob job = Parse(absl::StrCat("torchrun ", script, " --num-layers 2\n"));
    EXPECT_FALSE(job.found) << script;
    EXPECT_THAT(AllNotes(job),
                HasSubstr(absl::StrCat(script, " is not a Megatron-LM model oomguard models")));
  }
}

TEST(LaunchFinderTest, NonTrainingScript) {
  const ScriptJob job = Parse(
      "#!/bin/bash\n#SBATCH -n 1\nhostname\necho \"it's fine\"\npython "
      "preprocess.py --x 1\n");
  EXPECT_FALSE(job.found);
  EXPECT_TRUE(job.megatron_args.empty());
}

TEST(LaunchFinderTest, HostileContentIsNeverEvaluated) {
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

// Literal fields, except those starting with '$' (inert).
std::vector<Field> Fields(const std::vector<std::string>& words) {
  std::vector<Field> fields;
  for (const std::string& w : words) {
    fields.push_back(Field{{Piece{w, w[0] == '$', w[0] == '$' ? "unknown here" : ""}}});
  }
  return fields;
}

TEST(LaunchFinderTest, CommandNames) {
  using job_script_internal::IsDashC;
  using job_script_internal::MayLaunch;
  EXPECT_TRUE(MayLaunch("torchrun"));
  EXPECT_TRUE(MayLaunch("python3.11"));
  EXPECT_TRUE(MayLaunch("numactl"));
  EXPECT_TRUE(MayLaunch("sh"));
  EXPECT_FALSE(MayLaunch("pythonic"));
  EXPECT_FALSE(MayLaunch("echo"));
  EXPECT_TRUE(IsDashC("-c"));
  EXPECT_TRUE(IsDashC("-xec"));
  EXPECT_FALSE(IsDashC("-x"));
  EXPECT_FALSE(IsDashC("--c"));
  EXPECT_EQ(job_script_internal::LiteralBasename(
                Field{{Piece{"$DIR", true, "unknown"}, Piece{"/pretrain_gpt.py", false, ""}}}),
            "pretrain_gpt.py");
  EXPECT_EQ(job_script_internal::LiteralBasename(
                Field{{Piece{"$DIR", true, "unknown"}, Piece{"torchrun", false, ""}}}),
            std::nullopt);
}

TEST(LaunchFinderTest, TakesTheFirstLaunchWithItsEnvironment) {
  ScriptJob job;
  ShellVariables variables(&job.notes);
  const SlurmAllocation allocation;
  LaunchFinder finder(&job, &variables, &allocation);
  EXPECT_EQ(
      finder.Find(Fields({"exec", "env", "NCCL_GRAPH_REGISTER=1", "numactl", "-N0", "torchrun",
                          "pretrain_gpt.py", "--micro-batch-size", "$MBS", "--fp16"}),
                  {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}, {"OTHER", "x"}}, 7, 0),
      std::nullopt);
  ASSERT_TRUE(job.found);
  EXPECT_EQ(job.launch_line, 7);
  EXPECT_THAT(job.megatron_args, ElementsAre("--fp16"));
  EXPECT_THAT(job.unresolved, ElementsAre("--micro-batch-size $MBS"));
  EXPECT_THAT(job.env, ElementsAre(Pair("NCCL_GRAPH_REGISTER", "1"),
                                   Pair("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")));
  EXPECT_THAT(AllNotes(job), HasSubstr("line 7: dropped --micro-batch-size $MBS: unknown here"));

  finder.Find(Fields({"python", "pretrain_llama.py", "--bf16"}), {}, 9, 0);
  EXPECT_EQ(job.launch_line, 7);
  EXPECT_THAT(job.megatron_args, ElementsAre("--fp16"));
  EXPECT_THAT(AllNotes(job), HasSubstr("line 9: another Megatron-LM launch; only the first "
                                       "(line 7) is judged"));
}

TEST(LaunchFinderTest, ShellScriptsAreHandedBack) {
  ScriptJob job;
  ShellVariables variables(&job.notes);
  const SlurmAllocation allocation;
  LaunchFinder finder(&job, &variables, &allocation);
  const std::optional<ShellScript> script =
      finder.Find(Fields({"srun", "-N2", "bash", "-lc", "torchrun pretrain_gpt.py"}), {}, 4, 0);
  ASSERT_TRUE(script.has_value());
  EXPECT_EQ(script->shell, "bash");
  EXPECT_EQ(script->script, "torchrun pretrain_gpt.py");
  EXPECT_FALSE(job.found);

  // Too deep, or only known at run time: not read, with a note.
  EXPECT_EQ(finder.Find(Fields({"sh", "-c", "torchrun pretrain_gpt.py"}), {}, 5, kMaxScriptDepth),
            std::nullopt);
  EXPECT_EQ(finder.Find(Fields({"sh", "-c", "$SCRIPT"}), {}, 6, 0), std::nullopt);
  EXPECT_THAT(job.notes,
              ElementsAre("line 5: the sh -c script is not known before the job runs; not read",
                          "line 6: the sh -c script is not known before the job runs; not read"));
  EXPECT_FALSE(job.found);
}

}  // namespace
}  // namespace oomguard
