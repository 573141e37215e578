#include "jobspec/layer_pattern.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "jobspec/megatron_args.h"
#include "oomguard/v1/job.pb.h"
#include "tests/jobspec/megatron_line_util.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(ParseLayerPatternTest, EvaluatesTheExpression) {
  absl::StatusOr<std::vector<uint32_t>> pattern = ParseLayerPattern("([0]*2+[1]*3)");
  ASSERT_TRUE(pattern.ok()) << pattern.status();
  EXPECT_THAT(*pattern, ElementsAre(0, 0, 1, 1, 1));
  pattern = ParseLayerPattern("2 * [1, 0,]");
  ASSERT_TRUE(pattern.ok()) << pattern.status();
  EXPECT_THAT(*pattern, ElementsAre(1, 0, 1, 0));
}

TEST(ParseLayerPatternTest, ErrorsSayWhatIsWrong) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"3", "not a list"},
      {"[]", "empty list"},
      {"[2]", "entries must be 0 (dense) or 1 (MoE)"},
      {"[1]*70000", "number too large"},
      {"[1]*65536+[1]", "list too long"},
      {"[1]+1", "cannot add a list and a number"},
      {"[1]*[1]", "cannot multiply two lists"},
      {"([1]", "missing ')'"},
      {"[1 1]", "expected ',' or ']'"},
      {"[1]x", "unexpected character at offset 3"},
      {"x", "expected a number, a list or '('"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<uint32_t>> pattern = ParseLayerPattern(c.text);
    EXPECT_EQ(pattern.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_EQ(pattern.status().message(), c.message) << c.text;
  }
  const std::string deep = std::string(40, '(') + "[1]" + std::string(40, ')');
  EXPECT_EQ(ParseLayerPattern(deep).status().message(), "nested too deeply");
}

TEST(MoeLayerFreqTest, EvaluatesListExpressions) {
  struct Case {
    const char* expression;
    std::vector<uint32_t> pattern;
  };
  const Case cases[] = {
      {"([0]*3+[1]*11)", Concat(Repeat(0, 3), Repeat(1, 11))},
      {"[1]*48", Repeat(1, 48)},
      {"[0,1,0,1]", {0, 1, 0, 1}},
      {"[0]*1+[1]*15", Concat(Repeat(0, 1), Repeat(1, 15))},
      {"( [0] * 2 + 3 * [1] )", {0, 0, 1, 1, 1}},
      {"([0,1]*2+[1,])*2", {0, 1, 0, 1, 1, 0, 1, 0, 1, 1}},
      {"[1]*(2+1)", {1, 1, 1}},
  };
  for (const Case& c : cases) {
    v1::JobSpec job;
    ASSERT_TRUE(ApplyMegatronArgs({absl::StrCat("--moe-layer-freq=", c.expression)},
                                  ArgsMode::kFullCommandLine, &job, nullptr)
                    .ok())
        << c.expression;
    EXPECT_EQ(Pattern(job), c.pattern) << c.expression;
    EXPECT_FALSE(job.model().has_moe_layer_freq()) << c.expression;
  }
}

TEST(MoeLayerFreqTest, LaterIntegerReplacesPattern) {
  const v1::JobSpec job = ParseFull("--moe-layer-freq [1]*4 --moe-layer-freq 3 --vocab-size 8");
  EXPECT_EQ(job.model().moe_layer_freq(), 3u);
  EXPECT_THAT(job.model().moe_layer_pattern(), IsEmpty());
}

TEST(MoeLayerFreqTest, RejectsOtherExpressions) {
  const std::string deep = std::string(100, '(') + "[1]" + std::string(100, ')');
  for (const std::string& expression : std::vector<std::string>{
           "[2]*3", "[1]*", "[1]*[1]", "[0]+1", "foo", "[1]*100000", "[]", "([0]*3+[1]*11",
           "[1]*3)", "[1.5]", "__import__('os')", deep, "-1"}) {
    v1::JobSpec job;
    absl::Status status = ApplyMegatronArgs({"--moe-layer-freq", expression},
                                            ArgsMode::kFullCommandLine, &job, nullptr);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << expression;
    EXPECT_THAT(status.message(), HasSubstr("--moe-layer-freq")) << expression;
    EXPECT_THAT(status.message(), HasSubstr(expression.substr(0, 40))) << expression;
  }
}

// A pattern is written one repetition per run, and read back the same.
TEST(LayerPatternTest, FormatWritesWhatParseReadsBack) {
  const std::vector<uint32_t> first_k_dense = {0, 0, 0, 1, 1, 1, 1};
  EXPECT_EQ(FormatLayerPattern(first_k_dense), "([0]*3+[1]*4)");
  EXPECT_EQ(FormatLayerPattern({1}), "([1]*1)");
  for (const std::vector<uint32_t>& pattern : std::vector<std::vector<uint32_t>>{
           first_k_dense, {1}, {0, 1, 0, 1, 1}, std::vector<uint32_t>(61, 1)}) {
    absl::StatusOr<std::vector<uint32_t>> back = ParseLayerPattern(FormatLayerPattern(pattern));
    ASSERT_TRUE(back.ok()) << FormatLayerPattern(pattern);
    EXPECT_EQ(*back, pattern);
  }
}

}  // namespace
}  // namespace oomguard
