#include "jobspec/flag_values.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;

FlagUse Use(const char* value) { return {"--flag", {value}}; }

TEST(FlagValuesTest, Uint32) {
  absl::StatusOr<uint32_t> value = ParseUint32(Use("4294967295"));
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, 4294967295u);
  for (const char* bad : {"-1", "+1", "1.0", "", "0x10"}) {
    absl::Status status = ParseUint32(Use(bad)).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("--flag: expected a non-negative integer, got"));
  }
}

// Issue 12 (D): a value above 32 bits is a non-negative integer out of
// range, and the message says which range.
TEST(FlagValuesTest, Uint32OutOfRangeGivesTheRange) {
  EXPECT_EQ(ParseUint32(Use("4294967296")).status().message(),
            R"(--flag: expected an integer in [0, 4294967295], got "4294967296")");
  absl::Status status = ParseUint32(Use("99999999999999999999999")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("expected an integer in [0, 4294967295]"));
}

TEST(FlagValuesTest, RealsStayInTheirRange) {
  EXPECT_EQ(*ParseReal(Use("0"), kProbability), 0.0);
  EXPECT_EQ(*ParseReal(Use("1"), kFraction), 1.0);
  EXPECT_EQ(ParseReal(Use("1"), kProbability).status().message(),
            R"(--flag: expected a number in [0, 1), got "1")");
  EXPECT_FALSE(ParseReal(Use("0"), kPositive).ok());
  EXPECT_FALSE(ParseReal(Use("nan"), kFraction).ok());
  EXPECT_FALSE(ParseReal(Use("inf"), kPositive).ok());
}

TEST(FlagValuesTest, WordsAreCaseSensitiveChoices) {
  const std::vector<FlagWord> words = {{"LayerNorm", 1}, {"RMSNorm", 2}};
  EXPECT_EQ(*ParseWord(Use("RMSNorm"), "RMSNorm", words), 2);
  EXPECT_EQ(ParseWord(Use("rmsnorm"), "rmsnorm", words).status().message(),
            R"(--flag: expected one of LayerNorm|RMSNorm, got "rmsnorm")");
}

TEST(FlagValuesTest, IsDigits) {
  EXPECT_TRUE(IsDigits("0123"));
  EXPECT_FALSE(IsDigits(""));
  EXPECT_FALSE(IsDigits("1a"));
}

// A real is written as Python writes a float, and read back the same.
TEST(FlagValuesTest, FormatRealWritesWhatParseRealReadsBack) {
  EXPECT_EQ(FormatReal(1.0), "1.0");
  EXPECT_EQ(FormatReal(0.5), "0.5");
  EXPECT_EQ(FormatReal(0.1), "0.1");
  EXPECT_EQ(FormatReal(1e-05), "1e-05");
  EXPECT_EQ(FormatReal(1.0 / 3), "0.3333333333333333");
  for (double value : {1.0, 0.5, 0.1, 1e-05, 1.0 / 3, 123456.75}) {
    const std::string text = FormatReal(value);
    absl::StatusOr<double> back = ParseReal(Use(text.c_str()), kPositive);
    ASSERT_TRUE(back.ok()) << text;
    EXPECT_EQ(*back, value) << text;
  }
}

TEST(FlagValuesTest, WordForGivesTheFirstWordOfAValue) {
  const std::vector<FlagWord> words = {{"rope", 2}, {"yarn", 2}, {"none", 3}};
  EXPECT_EQ(WordFor(words, 2), "rope");
  EXPECT_EQ(WordFor(words, 3), "none");
  EXPECT_EQ(WordFor(words, 1), std::nullopt);
}

}  // namespace
}  // namespace oomguard
