// Tests of the `oomguard check` command line (tools/check_flags.h): every
// flag in both spellings, --help, and each error naming the flag and value.
#include "tools/check_flags.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(CheckFlagsTest, ReadsEveryFlag) {
  absl::StatusOr<CheckFlags> f = ParseCheckFlags({"--server",
                                                  "h:1",
                                                  "--deadline-ms=50",
                                                  "--gpu",
                                                  "H100",
                                                  "--gpus",
                                                  "16",
                                                  "--gpus-per-node=8",
                                                  "--preset",
                                                  "llama3-8b",
                                                  "--safety-margin",
                                                  "0.1",
                                                  "--env",
                                                  "A=b=c",
                                                  "--ignore-skip",
                                                  "--json",
                                                  "--tls-ca",
                                                  "ca",
                                                  "--tls-cert",
                                                  "c",
                                                  "--tls-key=k",
                                                  "--",
                                                  "--fp16",
                                                  "--gpus",
                                                  "3"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_FALSE(f->help);
  EXPECT_EQ(f->server, "h:1");
  EXPECT_EQ(f->deadline_ms, 50);
  EXPECT_EQ(f->gpu, "H100");
  EXPECT_EQ(f->gpus, 16u);
  EXPECT_EQ(f->gpus_per_node, 8u);
  EXPECT_EQ(f->preset, "llama3-8b");
  EXPECT_EQ(f->safety_margin, 0.1);
  EXPECT_THAT(f->env, ElementsAre(Pair("A", "b=c")));
  EXPECT_TRUE(f->ignore_skip);
  EXPECT_TRUE(f->json);
  EXPECT_EQ(f->tls_ca, "ca");
  EXPECT_EQ(f->tls_cert, "c");
  EXPECT_EQ(f->tls_key, "k");
  EXPECT_TRUE(f->args_given);
  // Everything after `--` is the job's, even what looks like a flag.
  EXPECT_THAT(f->args, ElementsAre("--fp16", "--gpus", "3"));

  f = ParseCheckFlags({"--server=h:1", "--gpu-memory-gib", "80", "--script", "s.sh"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->gpu_memory_gib, 80);
  EXPECT_EQ(f->script_path, "s.sh");
  EXPECT_FALSE(f->args_given);
  EXPECT_EQ(f->deadline_ms, 2000);
  EXPECT_EQ(f->judge_unmodelled, std::nullopt);  // The server's default.

  // The last of --judge-unmodelled / --no-judge-unmodelled wins.
  f = ParseCheckFlags({"--server=h:1", "--judge-unmodelled", "--script", "s.sh"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->judge_unmodelled, true);
  f = ParseCheckFlags(
      {"--server=h:1", "--judge-unmodelled", "--no-judge-unmodelled", "--script", "s.sh"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->judge_unmodelled, false);
}

TEST(CheckFlagsTest, HelpStopsReading) {
  absl::StatusOr<CheckFlags> f = ParseCheckFlags({"--json", "-h", "--bogus"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->help);
  // A bad flag before --help is still an error.
  EXPECT_FALSE(ParseCheckFlags({"--bogus", "--help"}).ok());
}

TEST(CheckFlagsTest, ErrorsNameTheFlagAndTheValue) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--gpus", "8", "--", "--fp16"}, "--server: expected HOST:PORT, got \"\""},
      {{"--server", "a b", "--", "x"}, "--server: expected HOST:PORT, got \"a b\""},
      {{"--server", "h:1", "--gpus"}, "--gpus: missing value"},
      {{"--server", "h:1", "--gpus", "eight", "--", "x"},
       "--gpus: expected a whole number in [1, 1048576], got \"eight\""},
      {{"--server", "h:1", "--gpus-per-node", "0", "--", "x"},
       "--gpus-per-node: expected a whole number in [1, 1048576], got \"0\""},
      {{"--server", "h:1", "--deadline-ms", "0", "--", "x"},
       "--deadline-ms: expected milliseconds in [1, 600000], got \"0\""},
      {{"--server", "h:1", "--gpu-memory-gib", "inf", "--", "x"},
       "--gpu-memory-gib: expected a positive number of GiB, got \"inf\""},
      {{"--server", "h:1", "--gpu=", "--", "x"}, "--gpu: expected a GPU name"},
      {{"--server", "h:1", "--safety-margin", "1", "--", "x"},
       "--safety-margin: expected a fraction in [0, 1), got \"1\""},
      {{"--server", "h:1", "--env", "=x", "--", "x"}, "--env: expected NAME=VALUE, got \"=x\""},
      {{"--server", "h:1", "--bo\ngus"}, "unknown flag \"--bo\\x0agus\""},
      {{"--server", "h:1"}, "give exactly one of --script FILE, --job-file FILE or --"},
      {{"--server", "h:1", "--script", "a", "--", "x"}, "give exactly one of"},
      {{"--server", "h:1", "--gpu", "H100", "--gpu-memory-gib", "8", "--", "x"},
       "give either --gpu or --gpu-memory-gib, not both"},
      {{"--server", "h:1", "--tls-cert", "c", "--tls-key", "k", "--", "x"},
       "--tls-cert/--tls-key need --tls-ca"},
      {{"--server", "h:1", "--tls-ca", "a", "--tls-cert", "c", "--", "x"},
       "give both --tls-cert and --tls-key, or neither"},
  };
  for (const auto& [args, error] : cases) {
    absl::StatusOr<CheckFlags> f = ParseCheckFlags(args);
    ASSERT_FALSE(f.ok()) << error;
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(f.status().message(), HasSubstr(error));
  }
}

// --rl-config FILE is a job source of its own: with no other, and the
// errors of the others name it.
TEST(CheckFlagsTest, RlConfigIsAJobSource) {
  absl::StatusOr<CheckFlags> f = ParseCheckFlags({"--server", "h:1", "--rl-config", "verl.yaml"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->rl_config_path, "verl.yaml");
  EXPECT_FALSE(f->args_given);
  f = ParseCheckFlags({"--server", "h:1", "--rl-config", "verl.yaml", "--", "x"});
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(), HasSubstr("(or, for an RL job, --rl-config FILE)"));
}

}  // namespace
}  // namespace oomguard
