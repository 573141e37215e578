#include "common/quoted_value.h"

#include <gtest/gtest.h>

#include <string>

namespace oomguard {
namespace {

TEST(QuotedValueTest, QuoteEscapesAndCutsShort) {
  EXPECT_EQ(Quote("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(Quote("x\x01\xff"), R"("x\x01\xff")");
  EXPECT_EQ(Quote(std::string(100, 'y')), "\"" + std::string(80, 'y') + "...\"");
}

TEST(QuotedValueTest, QuoteMarkOfChoiceIsEscaped) {
  EXPECT_EQ(Quote("H100", '\''), "'H100'");
  EXPECT_EQ(Quote("it's", '\''), R"('it\'s')");
  EXPECT_EQ(Quote(std::string(10000, 'z'), '\''), "'" + std::string(80, 'z') + "...'");
}

TEST(QuotedValueTest, EscapedValueHasNoQuotes) {
  EXPECT_EQ(EscapedValue("--num-layers"), "--num-layers");
  EXPECT_EQ(EscapedValue("a\nb"), R"(a\x0ab)");
  EXPECT_EQ(EscapedValue(std::string(81, 'w')), std::string(80, 'w') + "...");
  EXPECT_EQ(EscapedValue(std::string(80, 'w')), std::string(80, 'w'));
}

}  // namespace
}  // namespace oomguard
