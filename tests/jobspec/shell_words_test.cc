#include "jobspec/shell_words.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(SplitArgumentLineTest, SplitsOnWhitespace) {
  absl::StatusOr<std::vector<std::string>> words =
      SplitArgumentLine("  --num-layers\t32 \n --bf16  ");
  ASSERT_TRUE(words.ok()) << words.status();
  EXPECT_THAT(*words, ElementsAre("--num-layers", "32", "--bf16"));
}

TEST(SplitArgumentLineTest, EmptyLineHasNoWords) {
  absl::StatusOr<std::vector<std::string>> words = SplitArgumentLine(" \t\n");
  ASSERT_TRUE(words.ok());
  EXPECT_THAT(*words, IsEmpty());
}

TEST(SplitArgumentLineTest, QuotesAndEscapes) {
  absl::StatusOr<std::vector<std::string>> words =
      SplitArgumentLine(R"(--moe-layer-freq '([0]*3+[1]*58)' --layout "Et|(tt|)*30mL" )"
                        R"(a\ b "q\"d\\e\$f\`g\n" 'x\y' '' "")");
  ASSERT_TRUE(words.ok()) << words.status();
  EXPECT_THAT(*words, ElementsAre("--moe-layer-freq", "([0]*3+[1]*58)", "--layout", "Et|(tt|)*30mL",
                                  "a b", R"(q"d\e$f`g\n)", R"(x\y)", "", ""));
}

TEST(SplitArgumentLineTest, AdjacentQuotedPartsFormOneWord) {
  absl::StatusOr<std::vector<std::string>> words = SplitArgumentLine(R"(--a='x y'"z"w)");
  ASSERT_TRUE(words.ok());
  EXPECT_THAT(*words, ElementsAre("--a=x yzw"));
}

TEST(SplitArgumentLineTest, BackslashNewlineIsAContinuation) {
  absl::StatusOr<std::vector<std::string>> words =
      SplitArgumentLine("--num-layers 4 \\\n  --hidden-size 1\\\n024 \\\r\n --bf16 \"a\\\nb\"");
  ASSERT_TRUE(words.ok()) << words.status();
  EXPECT_THAT(*words, ElementsAre("--num-layers", "4", "--hidden-size", "1024", "--bf16", "ab"));
}

TEST(SplitArgumentLineTest, NeverExpandsOrExecutes) {
  absl::StatusOr<std::vector<std::string>> words =
      SplitArgumentLine("--data-path $(rm -rf /) `id` ${HOME} $HOME a;b c|d \"$(x)\" '`y`'");
  ASSERT_TRUE(words.ok()) << words.status();
  EXPECT_THAT(*words, ElementsAre("--data-path", "$(rm", "-rf", "/)", "`id`", "${HOME}", "$HOME",
                                  "a;b", "c|d", "$(x)", "`y`"));
}

TEST(SplitArgumentLineTest, TrailingBackslashStaysLiteral) {
  absl::StatusOr<std::vector<std::string>> words = SplitArgumentLine("a\\");
  ASSERT_TRUE(words.ok());
  EXPECT_THAT(*words, ElementsAre("a\\"));
}

TEST(SplitArgumentLineTest, UnterminatedQuotesAreErrors) {
  for (const char* line : {"--a 'open", "--a \"open", "--a \"x\\\""}) {
    absl::StatusOr<std::vector<std::string>> words = SplitArgumentLine(line);
    EXPECT_EQ(words.status().code(), absl::StatusCode::kInvalidArgument) << line;
    EXPECT_THAT(words.status().message(), HasSubstr("unterminated")) << line;
  }
}

TEST(SplitArgumentLineTest, RejectsLinesOverOneMebibyte) {
  const std::string at_limit(size_t{1} << 20, 'x');
  EXPECT_TRUE(SplitArgumentLine(at_limit).ok());
  absl::StatusOr<std::vector<std::string>> words = SplitArgumentLine(at_limit + "x");
  EXPECT_EQ(words.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(words.status().message(), HasSubstr("argument line longer than 1048576 bytes"));
}

// Joined words are split back into the same words; a word the shell would
// change or split is single-quoted.
TEST(JoinShellWordsTest, SplitsBackIntoTheSameWords) {
  const std::vector<std::string> words = {"--pipeline-model-parallel-layout",
                                          "Et|(tt|)*30mL",
                                          "--moe-layer-freq",
                                          "([0]*3+[1]*58)",
                                          "two words",
                                          "it's",
                                          "",
                                          "$HOME",
                                          "--optimizer-offload-fraction",
                                          "1.0",
                                          "a=b,c:d/e"};
  const std::string line = JoinShellWords(words);
  EXPECT_EQ(line,
            "--pipeline-model-parallel-layout 'Et|(tt|)*30mL' --moe-layer-freq '([0]*3+[1]*58)' "
            "'two words' 'it'\\''s' '' '$HOME' --optimizer-offload-fraction 1.0 a=b,c:d/e");
  absl::StatusOr<std::vector<std::string>> back = SplitArgumentLine(line);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, words);
  EXPECT_EQ(JoinShellWords({}), "");
}

}  // namespace
}  // namespace oomguard
