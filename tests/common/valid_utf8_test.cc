#include "common/valid_utf8.h"

#include <gtest/gtest.h>

#include <string>

#include "oomguard/v1/service.pb.h"

namespace oomguard {
namespace {

constexpr char kFffd[] = "\xEF\xBF\xBD";

TEST(ValidUtf8Test, WellFormedTextIsKept) {
  for (const std::string& text :
       {std::string(), std::string("ascii /data/x"),
        std::string("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), std::string("nul\0inside", 10),
        std::string("\xF4\x8F\xBF\xBF")}) {
    EXPECT_TRUE(IsValidUtf8(text)) << text;
    EXPECT_EQ(ValidUtf8(text), text);
  }
}

// Each byte outside a well-formed sequence becomes one U+FFFD (table 3-7).
TEST(ValidUtf8Test, EachBadByteBecomesOneReplacementCharacter) {
  const std::string f = kFffd;
  const std::pair<std::string, std::string> cases[] = {
      {"/data/\xff", "/data/" + f},
      {"\xC3(", f + "("},                         // a lead without its continuation
      {"\xE2\x82", f + f},                        // cut short
      {"\x80", f},                                // a lone continuation
      {"\xC0\xAF", f + f},                        // overlong '/'
      {"\xE0\x80\xAF", f + f + f},                // overlong
      {"\xED\xA0\x80", f + f + f},                // a surrogate, U+D800
      {"\xF4\x90\x80\x80", f + f + f + f},        // above U+10FFFF
      {"\xF5\x80\x80\x80", f + f + f + f},        // no such lead
      {"ok\xff\xC3\xA9", "ok" + f + "\xC3\xA9"},  // the valid rest is kept
  };
  for (const auto& [bytes, valid] : cases) {
    EXPECT_FALSE(IsValidUtf8(bytes)) << bytes;
    EXPECT_EQ(ValidUtf8(bytes), valid) << bytes;
    EXPECT_TRUE(IsValidUtf8(ValidUtf8(bytes)));
  }
}

// Every string field, repeated and in nested messages; the message then
// goes through protobuf's own parse, which checks UTF-8. (Maps are their
// builders' to make valid: BuildCheckRequestTest.)
TEST(ValidUtf8Test, MessagesStringsAreMadeValidSoTheyParse) {
  v1::CheckRequest request;
  request.set_gpu_name("H100\xff");
  v1::MegatronJob& job = *request.mutable_job()->mutable_megatron();
  job.add_argv("--data-path");
  job.add_argv("/data/\xfe");
  job.set_preset("llama3-8b");
  MakeStringsValidUtf8(request);
  const std::string f = kFffd;
  EXPECT_EQ(request.gpu_name(), "H100" + f);
  EXPECT_EQ(request.job().megatron().argv(0), "--data-path");
  EXPECT_EQ(request.job().megatron().argv(1), "/data/" + f);
  EXPECT_EQ(request.job().megatron().preset(), "llama3-8b");
  v1::CheckRequest parsed;
  EXPECT_TRUE(parsed.ParseFromString(request.SerializeAsString()));
  EXPECT_EQ(parsed.job().megatron().argv(1), "/data/" + f);
}

}  // namespace
}  // namespace oomguard
