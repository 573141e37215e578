// Tests of the flag reading of estimate and check (tools/command_flags.h).
#include "tools/command_flags.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace oomguard {
namespace {

TEST(IsFlagTest, AloneOrWithValue) {
  EXPECT_TRUE(IsFlag("--gpus", "--gpus"));
  EXPECT_TRUE(IsFlag("--gpus=8", "--gpus"));
  EXPECT_FALSE(IsFlag("--gpus-per-node", "--gpus"));
  EXPECT_FALSE(IsFlag("--gpu", "--gpus"));
}

TEST(TakeFlagValueTest, AfterEqualsOrNextArgument) {
  const std::vector<std::string> args = {"--gpus=8", "--preset", "", "--env"};
  size_t i = 0;
  absl::StatusOr<std::string> value = TakeFlagValue(args, i, "--gpus");
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, "8");
  EXPECT_EQ(i, 0u);

  i = 1;
  value = TakeFlagValue(args, i, "--preset");
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, "");
  EXPECT_EQ(i, 2u);

  i = 3;
  value = TakeFlagValue(args, i, "--env");
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(value.status().message(), "--env: missing value");
  EXPECT_EQ(i, 3u);
}

}  // namespace
}  // namespace oomguard
