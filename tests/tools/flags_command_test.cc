// Tests of `oomguard flags` (tools/flags_command.h): the flags asked for,
// each class with its field or reason, the filter by class, JSON, bad
// options.
#include "tools/flags_command.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace oomguard {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using ::testing::Not;

TEST(FlagsCommandTest, PrintsTheFlagsAskedForWithFieldOrReason) {
  std::string out, err;
  ASSERT_EQ(RunFlagsCommand({"--num-layers", "--lr", "--rl-partial-rollouts", "--use-custom-fsdp",
                             "--frobnicate", "--fp8-recipe=delayed"},
                            out, err),
            0)
      << err;
  EXPECT_THAT(err, IsEmpty());
  EXPECT_THAT(out, HasSubstr("Megatron-Core 0.20.0"));
  EXPECT_THAT(out, HasSubstr("--num-layers"));
  EXPECT_THAT(out, MatchesRegex("(.|\n)*--num-layers +modelled +model\\.num_layers\n(.|\n)*"));
  EXPECT_THAT(out, MatchesRegex("(.|\n)*--lr +no memory effect +learning rate(.|\n)*"));
  EXPECT_THAT(out,
              MatchesRegex("(.|\n)*--rl-partial-rollouts +not modelled +RL post-training(.|\n)*"));
  EXPECT_THAT(out, MatchesRegex("(.|\n)*--use-custom-fsdp +refused +Megatron-LM removed(.|\n)*"));
  EXPECT_THAT(out, MatchesRegex("(.|\n)*--frobnicate +unknown +not a flag of Megatron-LM(.|\n)*"));
  // A modelled flag's not-modelled choice, under it.
  EXPECT_THAT(out, MatchesRegex("(.|\n)*--fp8-recipe +modelled +precision\\.fp8_recipe\n"
                                "  custom +not modelled +a custom FP8 recipe(.|\n)*"));
  EXPECT_THAT(out, HasSubstr("# 6 flags: 2 modelled, 1 no memory effect, 1 not modelled, 1 "
                             "refused, 1 unknown\n"));
}

TEST(FlagsCommandTest, EveryFlagByDefaultAndAFilterByClass) {
  std::string all, err;
  ASSERT_EQ(RunFlagsCommand({}, all, err), 0) << err;
  EXPECT_THAT(all, HasSubstr("--hybrid-layer-pattern"));
  EXPECT_THAT(all, HasSubstr("--tensor-model-parallel-size"));

  std::string refused;
  ASSERT_EQ(RunFlagsCommand({"--class", "refused"}, refused, err), 0) << err;
  EXPECT_THAT(refused, HasSubstr("--batch-size"));
  EXPECT_THAT(refused, Not(HasSubstr("\n--tensor-model-parallel-size ")));
  EXPECT_THAT(refused, HasSubstr("--checkpoint-activations"));
  EXPECT_THAT(refused, HasSubstr("# 5 flags: 5 refused\n"));

  std::string silent;
  ASSERT_EQ(RunFlagsCommand({"--class=no-memory-effect", "--lr", "--num-layers"}, silent, err), 0);
  EXPECT_THAT(silent, HasSubstr("--lr "));
  EXPECT_THAT(silent, Not(HasSubstr("--num-layers")));

  std::string none;
  ASSERT_EQ(RunFlagsCommand({"--class", "unknown", "--lr"}, none, err), 0) << err;
  EXPECT_THAT(none, ::testing::EndsWith("\n# 0 flags\n"));
}

TEST(FlagsCommandTest, JsonHasTheSameClassification) {
  std::string out, err;
  ASSERT_EQ(RunFlagsCommand(
                {"--json", "--", "--num-layers", "--disable-mamba-mem-eff-path", "--fp4-recipe"},
                out, err),
            0)
      << err;
  const nlohmann::json doc = nlohmann::json::parse(out);
  EXPECT_EQ(doc["megatron_core_version"], "0.20.0");
  ASSERT_EQ(doc["flags"].size(), 3u);
  EXPECT_EQ(doc["flags"][0]["flag"], "--num-layers");
  EXPECT_EQ(doc["flags"][0]["class"], "modelled");
  EXPECT_EQ(doc["flags"][0]["fields"], nlohmann::json({"model.num_layers"}));
  EXPECT_EQ(doc["flags"][1]["class"], "not modelled");
  EXPECT_THAT(doc["flags"][1]["reason"].get<std::string>(), HasSubstr("Mamba"));
  EXPECT_EQ(doc["flags"][2]["unmodelled_choices"][0]["value"], "custom");
}

TEST(FlagsCommandTest, BadOptionsAreExit2) {
  std::string out, err;
  EXPECT_EQ(RunFlagsCommand({"--class", "silent"}, out, err), 2);
  EXPECT_THAT(err, HasSubstr("--class: expected modelled, no-memory-effect"));
  EXPECT_THAT(err, HasSubstr("\"silent\""));
  err.clear();
  EXPECT_EQ(RunFlagsCommand({"lr"}, out, err), 2);
  EXPECT_THAT(err, HasSubstr("unexpected argument \"lr\""));
  err.clear();
  EXPECT_EQ(RunFlagsCommand({"--class"}, out, err), 2);
  EXPECT_THAT(err, HasSubstr("--class: missing value"));
}

}  // namespace
}  // namespace oomguard
