// Tests of JSON fields read with their paths: paths for plain and odd keys,
// absent and null fields, and type errors naming the path and the value.
#include "webhook/json_node.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard::webhook {
namespace {

using json = nlohmann::json;
using ::testing::IsEmpty;
using ::testing::Optional;

TEST(JsonNodeTest, PathsNameEveryField) {
  const json object = json::parse(R"({"spec": {"containers": [
      {"resources": {"limits": {"nvidia.com/gpu": "8"}}}], "gone": null}})");
  const JsonNode root{&object, "", ""};
  const JsonNode gpus =
      root.Get("spec").Get("containers").At(0).Get("resources").Get("limits").Get("nvidia.com/gpu");
  ASSERT_TRUE(gpus);
  EXPECT_EQ(gpus.path, "spec.containers[0].resources.limits[\"nvidia.com/gpu\"]");
  EXPECT_EQ(*gpus.value, "8");
  // The JSON Pointer (RFC 6901) of the same field, '/' escaped as "~1".
  EXPECT_EQ(gpus.pointer, "/spec/containers/0/resources/limits/nvidia.com~1gpu");
  EXPECT_EQ(object.at(json::json_pointer(gpus.pointer)), "8");
  EXPECT_EQ(root.Get("a~b/c").pointer, "/a~0b~1c");
  // Null, absent, and members of something that is not an object: absent,
  // still with their path.
  EXPECT_FALSE(root.Get("spec").Get("gone"));
  const JsonNode deeper = root.Get("status").Get("phase");
  EXPECT_FALSE(deeper);
  EXPECT_EQ(deeper.path, "status.phase");
  EXPECT_FALSE(root.Get("spec").Get("containers").Get("name"));
  EXPECT_FALSE(root.Get("spec").At(0));
}

TEST(JsonNodeTest, WrongTypesNameThePathAndTheValue) {
  const json object = json::parse(R"({"spec": [1, 2], "name": 5, "args": ["a", 1]})");
  const JsonNode root{&object, "", ""};
  EXPECT_TRUE(ExpectObject(root.Get("missing")).ok());
  EXPECT_TRUE(ExpectArray(root.Get("spec")).ok());
  EXPECT_EQ(ExpectObject(root.Get("spec")).message(), "spec = [1,2]: expected an object");
  EXPECT_EQ(ExpectArray(root.Get("name")).message(), "name = 5: expected a list");
  EXPECT_EQ(ReadString(root.Get("name")).status().message(), "name = 5: expected a string");
  EXPECT_EQ(*ReadString(root.Get("missing")), std::nullopt);
  EXPECT_THAT(*ReadString(root.Get("args").At(0)), Optional(std::string("a")));
  EXPECT_EQ(ReadStringList(root.Get("args")).status().message(), "args[1] = 1: expected a string");
  EXPECT_EQ(ReadStringList(root.Get("args")).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(*ReadStringList(root.Get("missing")), IsEmpty());
}

TEST(JsonNodeTest, ValuesInMessagesAreCutShort) {
  const std::string shown = ShowJson(json(std::string(100, 'a')));
  EXPECT_EQ(shown.size(), 64u);
  EXPECT_EQ(shown.substr(0, 4), "\"aaa");
  EXPECT_EQ(shown.substr(61), "...");
  // Invalid UTF-8 is replaced, not thrown on.
  EXPECT_EQ(ShowJson(json(std::string("\xff"))), "\"\xEF\xBF\xBD\"");
}

TEST(JsonNodeTest, WholeNumbers) {
  EXPECT_THAT(WholeNumber(json::parse("18446744073709551615")),
              Optional(uint64_t{18446744073709551615u}));
  EXPECT_THAT(WholeNumber(json(int64_t{7})), Optional(uint64_t{7}));
  EXPECT_EQ(WholeNumber(json(-1)), std::nullopt);
  EXPECT_EQ(WholeNumber(json(1.5)), std::nullopt);
  EXPECT_EQ(WholeNumber(json("8")), std::nullopt);
}

}  // namespace
}  // namespace oomguard::webhook
