// Tests of `oomguard plan` (tools/plan_command.h): the JSON the acceptance
// checks read, the table, and the errors (one line, exit 2).
#include "tools/plan_command.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace oomguard {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

const std::vector<std::string> kLlama8b = {"--gpus",       "16",       "--gpu",
                                           "H100",         "--preset", "llama3-8b",
                                           "--seq-length", "4096",     "--global-batch-size",
                                           "256"};

std::vector<std::string> With(std::vector<std::string> flags) {
  flags.insert(flags.begin(), kLlama8b.begin(), kLlama8b.end());
  return flags;
}

TEST(PlanCommand, JsonHoldsTheCandidatesBestFirst) {
  std::string out, err;
  ASSERT_EQ(RunPlanCommand(With({"--json", "--top", "5"}), out, err), 0) << err;
  EXPECT_THAT(err, IsEmpty());
  const nlohmann::json plan = nlohmann::json::parse(out);
  ASSERT_TRUE(plan["candidates"].is_array());
  ASSERT_FALSE(plan["candidates"].empty());
  EXPECT_LE(plan["candidates"].size(), 5u);
  double previous = 1e300;
  for (const auto& c : plan["candidates"]) {
    for (const char* key : {"tp", "pp", "vpp", "cp", "ep", "etp", "micro_batch_size"}) {
      EXPECT_TRUE(c[key].is_number_unsigned()) << key;
    }
    EXPECT_TRUE(c["recompute"].is_string());
    EXPECT_TRUE(c["peak_device_bytes"].is_number_unsigned());
    EXPECT_TRUE(c["megatron_args"].is_string());
    EXPECT_THAT(c["megatron_args"].get<std::string>(), HasSubstr("--tensor-model-parallel-size"));
    const double tokens = c["tokens_per_gpu_per_second"].get<double>();
    EXPECT_LE(tokens, previous);
    previous = tokens;
  }
}

TEST(PlanCommand, TableByDefaultAndFixedSizesKept) {
  std::string out, err;
  ASSERT_EQ(RunPlanCommand(With({"--tensor-model-parallel-size", "2"}), out, err), 0) << err;
  EXPECT_THAT(out, HasSubstr("tok/GPU/s"));
  EXPECT_THAT(out, HasSubstr("args: --tensor-model-parallel-size 2 "));
  EXPECT_THAT(out, Not(HasSubstr("args: --tensor-model-parallel-size 1 ")));
}

// Expert-parallel groups may span nodes by default (the step-time model
// ranks them), as with --allow-cross-node-expert-parallel;
// --no-cross-node-expert-parallel keeps them inside the NVLink domain: the
// search holds fewer settings and says so. (Before, inside was the default.)
TEST(PlanCommand, CrossNodeExpertParallelUnlessForbidden) {
  const std::vector<std::string> moe = {"--gpus",       "32",       "--gpu",
                                        "H100",         "--preset", "qwen3-30b-a3b",
                                        "--seq-length", "4096",     "--global-batch-size",
                                        "256",          "--json"};
  std::string out, err;
  ASSERT_EQ(RunPlanCommand(moe, out, err), 0) << err;
  const nlohmann::json by_default = nlohmann::json::parse(out)["summary"];
  std::vector<std::string> allowed = moe;
  allowed.push_back("--allow-cross-node-expert-parallel");
  ASSERT_EQ(RunPlanCommand(allowed, out, err), 0) << err;
  const nlohmann::json across = nlohmann::json::parse(out)["summary"];
  std::vector<std::string> forbidden = moe;
  forbidden.push_back("--no-cross-node-expert-parallel");
  ASSERT_EQ(RunPlanCommand(forbidden, out, err), 0) << err;
  const nlohmann::json in_node = nlohmann::json::parse(out)["summary"];
  EXPECT_THAT(in_node["search_space"].get<std::string>(),
              HasSubstr("EP x ETP within the NVLink domain (crossing it forbidden)"));
  for (const nlohmann::json& s : {by_default, across}) {
    EXPECT_THAT(s["search_space"].get<std::string>(),
                HasSubstr("EP x ETP within and across NVLink domains"));
    EXPECT_GT(s["candidates_considered"].get<uint64_t>(),
              in_node["candidates_considered"].get<uint64_t>());
  }
  EXPECT_EQ(by_default, across);
}

// Each candidate says whether it adds --overlap-moe-expert-parallel-comm,
// in the JSON and in the table's a2a column, as its arguments do.
TEST(PlanCommand, SaysWhichCandidatesOverlapTheAllToAll) {
  const std::vector<std::string> moe = {"--gpus",
                                        "64",
                                        "--gpu",
                                        "H100",
                                        "--preset",
                                        "qwen3-30b-a3b",
                                        "--top",
                                        "50",
                                        "--seq-length",
                                        "4096",
                                        "--global-batch-size",
                                        "256",
                                        "--micro-batch-size",
                                        "1",
                                        "--moe-token-dispatcher-type",
                                        "flex"};
  std::string out, err;
  std::vector<std::string> json = moe;
  json.push_back("--json");
  ASSERT_EQ(RunPlanCommand(json, out, err), 0) << err;
  int overlapped = 0;
  const nlohmann::json plan = nlohmann::json::parse(out);
  for (const auto& c : plan["candidates"]) {
    const bool flag = c["megatron_args"].get<std::string>().find(
                          "--overlap-moe-expert-parallel-comm") != std::string::npos;
    EXPECT_EQ(c["expert_parallel_overlap"].get<bool>(), flag);
    overlapped += flag;
  }
  EXPECT_GT(overlapped, 0);
  ASSERT_EQ(RunPlanCommand(moe, out, err), 0) << err;
  EXPECT_THAT(out, HasSubstr(" a2a "));
  EXPECT_THAT(out, HasSubstr(" ovl "));
  // --no-expert-parallel-overlap (PlanConstraints.no_expert_parallel_overlap).
  json.push_back("--no-expert-parallel-overlap");
  ASSERT_EQ(RunPlanCommand(json, out, err), 0) << err;
  const nlohmann::json without = nlohmann::json::parse(out);
  ASSERT_FALSE(without["candidates"].empty());
  for (const auto& c : without["candidates"]) {
    EXPECT_FALSE(c["expert_parallel_overlap"].get<bool>()) << c["megatron_args"];
  }
}

// --bound NAME=MIN:MAX bounds a size of the search (either end optional).
TEST(PlanCommand, BoundsNarrowTheSearch) {
  std::string out, err;
  ASSERT_EQ(RunPlanCommand(With({"--top", "20", "--json", "--bound", "tp=:2", "--bound",
                                 "pp=2:", "--bound", "mbs=1:1"}),
                           out, err),
            0)
      << err;
  const nlohmann::json plan = nlohmann::json::parse(out);
  ASSERT_FALSE(plan["candidates"].empty());
  for (const auto& c : plan["candidates"]) {
    EXPECT_LE(c["tp"].get<uint32_t>(), 2u);
    EXPECT_GE(c["pp"].get<uint32_t>(), 2u);
    EXPECT_EQ(c["micro_batch_size"].get<uint32_t>(), 1u);
  }
  EXPECT_THAT(plan["summary"]["search_space"].get<std::string>(),
              HasSubstr("bounded: TP [1, 2], PP [2, any], micro-batch [1, 1]"));
  for (const char* bad : {"tp=4:2", "xx=1:2", "tp", "tp=:", "tp=0:4", "pp=a:"}) {
    EXPECT_EQ(RunPlanCommand(With({"--bound", bad}), out, err), 2) << bad;
    EXPECT_THAT(err, HasSubstr("--bound")) << bad;
    EXPECT_THAT(err, HasSubstr(bad)) << bad;
  }
}

TEST(PlanCommand, BadInputIsOneLineAndExit2) {
  std::string out, err;
  EXPECT_EQ(RunPlanCommand({"--gpu", "H100", "--preset", "llama3-8b"}, out, err), 2);
  EXPECT_THAT(err, HasSubstr("--gpus"));
  EXPECT_EQ(RunPlanCommand({"--gpus", "8", "--gpu", "H100"}, out, err), 2);
  EXPECT_THAT(err, HasSubstr("--preset"));
  EXPECT_EQ(RunPlanCommand({"--gpus", "8", "--gpu", "Z80", "--preset", "llama3-8b"}, out, err), 2);
  EXPECT_THAT(err, HasSubstr("Z80"));
  EXPECT_EQ(RunPlanCommand(With({"--top", "0"}), out, err), 2);
  EXPECT_THAT(err, HasSubstr("--top"));
}

TEST(PlanCommand, NothingFitsIsExit4) {
  std::string out, err;
  EXPECT_EQ(RunPlanCommand({"--gpus", "1", "--gpu", "A100-40GB", "--preset", "llama3-405b",
                            "--seq-length", "4096", "--global-batch-size", "8"},
                           out, err),
            4)
      << err;
  EXPECT_THAT(out, HasSubstr("no configuration fits"));
}

}  // namespace
}  // namespace oomguard
