#include "jobspec/config_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// `{"x": <depth - 1 nested arrays>}`: `depth` levels in all.
std::string Nested(int depth) {
  return "{\"x\": " + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
}

std::string ReadError(std::string_view text) {
  absl::StatusOr<nlohmann::json> json = ReadConfigJson(text);
  EXPECT_EQ(json.status().code(), absl::StatusCode::kInvalidArgument) << json.status();
  return std::string(json.status().message());
}

TEST(ReadConfigJsonTest, ReadsAnObject) {
  absl::StatusOr<nlohmann::json> json = ReadConfigJson(R"({"a": [1, {"b": "c"}], "d": null})");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ((*json)["a"][1]["b"], "c");
  EXPECT_TRUE((*json)["d"].is_null());
}

TEST(ReadConfigJsonTest, NestingUpToTheLimitIsRead) {
  EXPECT_TRUE(ReadConfigJson(Nested(kMaxConfigDepth)).ok());
  // Brackets inside strings are text, escaped quotes included.
  EXPECT_TRUE(ReadConfigJson(R"({"x": "[[[[\"[[[[", "y": )" + std::string(62, '[') +
                             std::string(62, ']') + "}")
                  .ok());
}

// Issue 12 (A): nesting is bounded before anything is parsed. `{"x": ` is
// 6 bytes, so the 65th level opens at byte 6 + 64.
TEST(ReadConfigJsonTest, NestingBeyondTheLimitIsRefusedWithItsPosition) {
  EXPECT_EQ(ReadError(Nested(kMaxConfigDepth + 1)),
            "config.json: nesting deeper than 64 levels at byte 70");
  EXPECT_EQ(ReadError("\xEF\xBB\xBF" + Nested(kMaxConfigDepth + 1)),
            "config.json: nesting deeper than 64 levels at byte 73");
}

// Issue 12 (A): "an extra key holding arrays nested 10^4 deep takes 3.8 s,
// 10^5 deep over 60 s (the 4 MiB cap allows ~2*10^6)".
TEST(ReadConfigJsonTest, DeepNestingAtTheSizeCapIsRefusedInMilliseconds) {
  const std::string deepest = Nested(2'000'000);
  ASSERT_LE(deepest.size(), kMaxConfigBytes);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(ReadError(deepest), HasSubstr("nesting deeper than 64 levels"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
}

// Issue 12 (B).
TEST(ReadConfigJsonTest, EmptyTextSaysSo) {
  for (const char* empty : {"", " \n\t", "\xEF\xBB\xBF", "\xEF\xBB\xBF\r\n"}) {
    EXPECT_EQ(ReadError(empty), "config.json: the file is empty; expected a JSON object");
  }
}

// Issue 12 (B): some editors save config.json with a UTF-8 byte order mark.
// It says nothing about the model, so it is skipped (transformers' own
// json.loads would stop at it: "Unexpected UTF-8 BOM").
TEST(ReadConfigJsonTest, ByteOrderMarkIsSkipped) {
  absl::StatusOr<nlohmann::json> json = ReadConfigJson("\xEF\xBB\xBF{\"a\": 1}");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ((*json)["a"], 1);
}

TEST(ReadConfigJsonTest, SyntaxErrorsGiveLineAndColumn) {
  EXPECT_EQ(ReadError("{\"a\": 1,\n \"b\" 2}"),
            "config.json: parse error at line 2, column 6: syntax error while parsing object "
            "separator - unexpected number literal; expected ':'");
  EXPECT_EQ(ReadError("[1]"), "config.json: the top level must be a JSON object");
  EXPECT_THAT(ReadError("{\"a\": 1} x"), StartsWith("config.json: parse error at line 1"));
}

// Issue 12 (C): the token the parser last read (here a 4 MB string) is not
// echoed.
TEST(ReadConfigJsonTest, BadTokenIsNotEchoed) {
  const std::string message = ReadError("{\"a\": \"" + std::string(4'000'000, 'y') + "\x01\"}");
  EXPECT_THAT(message, StartsWith("config.json: parse error at line 1, column 4000008: "));
  EXPECT_LT(message.size(), 300u);
  EXPECT_LT(ReadError("{\"a\": 1" + std::string(1'000'000, '0') + "e999999}").size(), 300u);
}

TEST(ReadConfigJsonTest, SizeIsCapped) {
  EXPECT_THAT(ReadError("{\"a\": \"" + std::string(kMaxConfigBytes, 'x') + "\"}"),
              HasSubstr("exceeds the limit of 4194304 bytes"));
}

}  // namespace
}  // namespace oomguard
