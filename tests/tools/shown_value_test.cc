// Tests of how `oomguard check` shows user values (tools/shown_value.h).
#include "tools/shown_value.h"

#include <string>

#include "gtest/gtest.h"

namespace oomguard {
namespace {

TEST(ShownValueTest, EscapesControlAndNonAsciiBytes) {
  EXPECT_EQ(ShownValue("h100"), "h100");
  EXPECT_EQ(ShownValue("a\nb\x1b\x7f\xc3\xa9"), "a\\x0ab\\x1b\\x7f\\xc3\\xa9");
  EXPECT_EQ(ShownValue(""), "");
}

TEST(ShownValueTest, BoundsLongValues) {
  EXPECT_EQ(ShownValue(std::string(120, 'x')), std::string(120, 'x'));
  EXPECT_EQ(ShownValue(std::string(121, 'x')), std::string(120, 'x') + "...");
}

}  // namespace
}  // namespace oomguard
