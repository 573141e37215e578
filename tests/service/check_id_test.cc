// Check ids (service/check_id.h): the form report_limits' rule takes, and no
// two alike.
#include "service/check_id.h"

#include <string>

#include "absl/container/flat_hash_set.h"
#include "feedback/report_limits.h"
#include "gtest/gtest.h"

namespace oomguard::service {
namespace {

TEST(CheckIdTest, IsThirtyTwoLowercaseHexDigitsAndNeverRepeats) {
  absl::flat_hash_set<std::string> seen;
  for (int i = 0; i < 10000; ++i) {
    const std::string id = NewCheckId();
    ASSERT_TRUE(feedback::ValidateCheckId(id).ok()) << id;
    ASSERT_TRUE(seen.insert(id).second) << id;
  }
}

}  // namespace
}  // namespace oomguard::service
