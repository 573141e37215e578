// Tests of `oomguard estimate` (tools/estimate_command.h): the flags, --help,
// the errors (one line each, exit 2) and the outputs it chooses between.
#include "tools/estimate_command.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "admission/gpu_catalog.h"
#include "admission/rl_admission.h"
#include "estimator/rl_step.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/rl_job_builder.h"
#include "nlohmann/json.hpp"
#include "tests/testing/examples.h"
#include "tests/testing/rl_test_jobs.h"
#include "tools/report_format.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

const std::vector<std::string> kLlama = {"--preset",
                                         "llama3-8b",
                                         "--seq-length",
                                         "4096",
                                         "--micro-batch-size",
                                         "1",
                                         "--use-distributed-optimizer"};

std::vector<std::string> With(std::vector<std::string> flags) {
  flags.insert(flags.end(), kLlama.begin(), kLlama.end());
  return flags;
}

TEST(EstimateCommandTest, TableJsonAndTree) {
  std::string out, err;
  EXPECT_EQ(RunEstimateCommand(With({"--gpus", "8", "--gpu-memory-gib", "80"}), out, err), 0);
  EXPECT_THAT(err, IsEmpty());
  EXPECT_THAT(out, StartsWith("8 GPUs: TP 1, PP 1,"));
  EXPECT_THAT(out, HasSubstr("  vs GPU\n"));

  EXPECT_EQ(RunEstimateCommand(With({"--gpus=8", "--json"}), out, err), 0);
  EXPECT_THAT(out, StartsWith("{\"num_gpus\":8,"));
  EXPECT_THAT(out, Not(HasSubstr("capacity_bytes")));

  EXPECT_EQ(RunEstimateCommand(With({"--gpus", "8", "--tree"}), out, err), 0);
  EXPECT_THAT(out, HasSubstr("\n\npp_rank_0: GPTModel /* n_params="));
}

// Issue 27: the table ends with the estimate's notes, those on the settings
// oomguard does not model first; --json holds them too.
TEST(EstimateCommandTest, PrintsTheNotesOnSettingsItDoesNotModel) {
  std::string out, err;
  ASSERT_EQ(RunEstimateCommand(
                With({"--gpus", "8", "--tp-comm-overlap-cfg", "x.yaml", "--fp8-recipe", "custom"}),
                out, err),
            0)
      << err;
  EXPECT_THAT(out, HasSubstr("\nnote: --tp-comm-overlap-cfg is not modelled (a custom TP "
                             "communication overlap configuration is not read: Transformer "
                             "Engine's default userbuffers are assumed): estimated as if it were "
                             "absent\nnote: --fp8-recipe custom is not modelled (a custom FP8 "
                             "recipe (a quantizer factory) is not modelled: its quantized copies "
                             "are unknown): estimated as if it were absent\n"));
  ASSERT_EQ(RunEstimateCommand(With({"--gpus", "8", "--json", "--no-such-flag"}), out, err), 0)
      << err;
  EXPECT_THAT(out, HasSubstr("\"notes\":[\"--no-such-flag is not modelled (not a flag of "
                             "Megatron-LM up to Megatron-Core 0.20"));
}

// A Linux path is bytes (issue 25, item 8): an argument that is not UTF-8
// leaves the job judged as without it; a value that matters is refused
// naming its flag and showing the byte.
TEST(EstimateCommandTest, BytesThatAreNotUtf8AreJudged) {
  std::string plain, out, err;
  ASSERT_EQ(RunEstimateCommand(With({"--gpus", "8", "--json"}), plain, err), 0) << err;
  EXPECT_EQ(RunEstimateCommand(With({"--gpus", "8", "--json", "--data-path", "/data/\xff\xfe"}),
                               out, err),
            0)
      << err;
  EXPECT_EQ(out, plain);
  EXPECT_EQ(RunEstimateCommand(With({"--gpus", "8", "--num-layers", "32\xff"}), out, err), 2);
  EXPECT_EQ(err, "--num-layers: expected a non-negative integer, got \"32\\xff\"");
}

TEST(EstimateCommandTest, HelpPrintsTheUsage) {
  std::string out, err;
  EXPECT_EQ(RunEstimateCommand({"--gpus", "8", "-h", "--bogus"}, out, err), 0);
  EXPECT_THAT(out, StartsWith("usage: oomguard estimate --gpus N"));
  EXPECT_THAT(err, IsEmpty());
}

TEST(EstimateCommandTest, ErrorsAreOneMessage) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--preset", "llama3-8b"}, "--gpus: required (the job's total GPU count)"},
      {{"--gpus", "0"}, "--gpus: expected a positive integer, got \"0\""},
      {{"--gpus"}, "--gpus: missing value"},
      {{"--gpus", "8", "--gpu-memory-gib", "-1"},
       "--gpu-memory-gib: expected a positive number of GiB, got \"-1\""},
      {{"--gpus", "8", "--env", "X"}, "--env: expected NAME=VALUE, got \"X\""},
      {{"--gpus", "8", "--hf-config", "/nonexistent.json"},
       "--hf-config: cannot read \"/nonexistent.json\""},
      // Issue 12: a directory and an empty file are named as such (they
      // blamed model.num_layers), and /dev/zero is refused after 4 MiB + 1
      // bytes instead of being read for ever.
      {{"--gpus", "8", "--hf-config", "/"}, "--hf-config: \"/\" is a directory, not a file"},
      {{"--gpus", "8", "--hf-config", "/dev/null"},
       "--hf-config: \"/dev/null\" is empty; expected a config.json"},
      {{"--gpus", "8", "--hf-config", "/dev/zero"},
       "--hf-config: \"/dev/zero\" is larger than 4194304 bytes"},
  };
  for (const auto& [args, error] : cases) {
    std::string out, err;
    EXPECT_EQ(RunEstimateCommand(args, out, err), 2) << error;
    EXPECT_EQ(err, error);
    EXPECT_THAT(out, IsEmpty());
  }
  // The job builder's and the estimator's errors.
  std::string out, err;
  EXPECT_EQ(
      RunEstimateCommand(With({"--gpus", "8", "--tensor-model-parallel-size", "3"}), out, err), 2);
  EXPECT_THAT(err, HasSubstr("not divisible"));
}

// Issue 25: Llama 3 70B, TP 8 PP 8 VPP 5 on 64 GPUs (DP 1), global batch 20:
// 20 micro-batches in groups of PP = 8 leave a last group of 4 < PP, which
// Megatron-Core's interleaved schedule refuses at the first step. It was
// estimated (worst rank 63.61 GiB, "fits" on an H100); now it is refused
// naming the flags, like any setting Megatron refuses.
TEST(EstimateCommandTest, RefusesAMicroBatchGroupMegatronRefuses) {
  std::string out, err;
  EXPECT_EQ(
      RunEstimateCommand(
          {"--gpus", "64", "--preset", "llama3-70b", "--", "--tensor-model-parallel-size", "8",
           "--pipeline-model-parallel-size", "8", "--num-virtual-stages-per-pipeline-rank", "5",
           "--micro-batch-size", "1", "--global-batch-size", "20", "--seq-length", "4096"},
          out, err),
      2);
  EXPECT_EQ(err,
            "training.global_batch_size = 20: Megatron-Core's interleaved schedule refuses a last "
            "micro-batch group of 4 < PP 8: 20 micro-batches per iteration (--global-batch-size 20 "
            "/ (--micro-batch-size 1 x data-parallel size 1)) in groups of 8 "
            "(--microbatch-group-size-per-virtual-pipeline-stage, default PP) leave 4 over, fewer "
            "than --pipeline-model-parallel-size 8 (it raises at the first step, with 5 virtual "
            "stages per pipeline rank); make the micro-batches a multiple of 8 or leave at least 8 "
            "over");
  EXPECT_THAT(out, IsEmpty());
}

// The RL job's flags: --gpus may be left out with --rl-config (the config
// gives the world size), one GPU flag, one job source.
TEST(EstimateCommandTest, RlFlagErrors) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--rl-config", "/nonexistent.yaml"}, "--rl-config: cannot read \"/nonexistent.yaml\""},
      {{"--rl-config", "/"}, "--rl-config: \"/\" is a directory, not a file"},
      {{"--rl-config", "/dev/zero"}, "--rl-config: \"/dev/zero\" is larger than 1048576 bytes"},
      {{"--rl-config", "a.yaml", "--", "--colocate"},
       "give either --rl-config FILE or the RL arguments after --, not both"},
      {{"--rl-config", "a.yaml", "--gpu", "H100", "--gpu-memory-gib", "80"},
       "give either --gpu or --gpu-memory-gib, not both"},
      {{"--gpus", "8", "--gpu="}, "--gpu: expected a GPU name (see ListGpus), got \"\""},
  };
  for (const auto& [args, error] : cases) {
    std::string out, err;
    EXPECT_EQ(RunEstimateCommand(args, out, err), 2) << error;
    EXPECT_EQ(err, error);
    EXPECT_THAT(out, IsEmpty());
  }
}

// --gpu NAME for a pretraining job: the table compares with its memory, as
// --gpu-memory-gib does.
TEST(EstimateCommandTest, GpuNameIsTheCapacity) {
  std::string by_name, by_gib, err;
  ASSERT_EQ(RunEstimateCommand(With({"--gpus", "8", "--gpu", "H100-SXM-80GB"}), by_name, err), 0)
      << err;
  ASSERT_EQ(
      RunEstimateCommand(With({"--gpus", "8", "--gpu-memory-gib", "79.1103515625"}), by_gib, err),
      0)
      << err;
  EXPECT_EQ(by_name, by_gib);
  EXPECT_THAT(by_name, HasSubstr("vs GPU"));
  EXPECT_EQ(RunEstimateCommand(With({"--gpus", "8", "--gpu", "P100"}), by_name, err), 2);
  EXPECT_THAT(err, StartsWith("--gpu: "));
}

// --rl-config: the step the estimator gives for the job the reader reads,
// on H100-SXM-80GB when no GPU is named (noted), as FormatRlTable and
// FormatRlJson write it.
TEST(EstimateCommandTest, RlConfig) {
  const std::string path = ::testing::TempDir() + "/estimate_command_test_verl.yaml";
  std::ofstream(path) << testing::VerlQwen3Yaml();
  std::string out, err;
  ASSERT_EQ(RunEstimateCommand({"--rl-config", path, "--preset", "qwen3-8b", "--json"}, out, err),
            0)
      << err;
  v1::RlJob rl;
  rl.set_config_yaml(testing::VerlQwen3Yaml());
  rl.set_preset("qwen3-8b");
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> job = BuildRlJob(rl, &notes);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<v1::GpuSpec> h100 = GpuCatalog::Builtin().Find("H100-SXM-80GB");
  ASSERT_TRUE(h100.ok());
  RlStepOptions options;
  options.gpu_memory_bytes = h100->memory_bytes();
  options.gpu_name = h100->name();
  absl::StatusOr<v1::RlStepReport> step = EstimateRlStep(RlJobOnGpu(*job, *h100), options);
  ASSERT_TRUE(step.ok()) << step.status();
  for (const std::string& note : notes) step->add_notes(note);
  step->add_notes(
      "no GPU given: the RL step is estimated on H100-SXM-80GB (79.1 GiB); name another GPU or "
      "its memory");
  EXPECT_EQ(out, FormatRlJson(*step));
  const nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_FALSE(j["phases"].empty());
  EXPECT_FALSE(j["binding_phase"].get<std::string>().empty());

  ASSERT_EQ(RunEstimateCommand({"--rl-config", path, "--preset", "qwen3-8b"}, out, err), 0) << err;
  EXPECT_EQ(out, FormatRlTable(*step));
  // Another GPU: its memory.
  ASSERT_EQ(RunEstimateCommand(
                {"--rl-config", path, "--preset", "qwen3-8b", "--gpu-memory-gib", "141", "--json"},
                out, err),
            0)
      << err;
  EXPECT_EQ(nlohmann::json::parse(out)["gpu_memory_bytes"], uint64_t{141} << 30);
  std::remove(path.c_str());
}

// slime's argv after --: recognised as the RL job (--gpus optional: slime
// gives its actor's nodes and GPUs).
TEST(EstimateCommandTest, RlArgv) {
  std::vector<std::string> args = {"--json", "--"};
  for (const std::string& word : testing::ExampleArgs("rl/slime_qwen3_30b_a3b.args")) {
    args.push_back(word);
  }
  std::string out, err;
  ASSERT_EQ(RunEstimateCommand(args, out, err), 0) << err;
  const nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j["framework"], "slime");
  EXPECT_FALSE(j["phases"].empty());
}

}  // namespace
}  // namespace oomguard
