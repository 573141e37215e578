// Tests of the `oomguard-job 1` job file (tools/job_envelope.h): the header,
// the script kept verbatim, every rejected line, and the bounded file read.
#include "tools/job_envelope.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/service_test_util.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;

TEST(JobEnvelopeTest, ParsesHeaderAndKeepsTheScriptVerbatim) {
  const std::string script = "#!/bin/bash\n\ngpus=99\n\n torchrun pretrain_gpt.py\n";
  absl::StatusOr<JobEnvelope> e = ParseJobEnvelope(
      "oomguard-job "
      "1\ngpus=16\ngpus_per_node=8\ngpu=h100\ndefault_gpu=A100-40GB\n"
      "partition=gpu-a\nenv.NCCL_GRAPH_REGISTER=0\n\n" +
      script);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->gpus, 16u);
  EXPECT_EQ(e->gpus_per_node, 8u);
  EXPECT_EQ(e->gpu, "h100");
  EXPECT_EQ(e->default_gpu, "A100-40GB");
  EXPECT_EQ(e->partition, "gpu-a");
  EXPECT_THAT(e->env, ::testing::ElementsAre(::testing::Pair("NCCL_GRAPH_REGISTER", "0")));
  EXPECT_EQ(e->script, script);

  e = ParseJobEnvelope("oomguard-job 1\n\n");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->gpus, 0u);
  EXPECT_EQ(e->script, "");
}

TEST(JobEnvelopeTest, RejectsAnythingUnexpected) {
  const std::pair<std::string, std::string> cases[] = {
      {"#!/bin/bash\n\n", "first line must be \"oomguard-job 1\""},
      {"oomguard-job 2\n\n", "first line"},
      {"oomguard-job 1\ngpus=8\n", "must end with an empty line"},
      {"oomguard-job 1\ncolour=blue\n\n", "line 2: \"colour=blue\": unknown key"},
      {"oomguard-job 1\ngpus=8\ngpus=8\n\n", "line 3: \"gpus=8\": key given twice"},
      {"oomguard-job 1\ngpus=0\n\n", "expected a whole number"},
      {"oomguard-job 1\ngpus=8x\n\n", "expected a whole number"},
      {"oomguard-job 1\ngpu=h100 $(reboot)\n\n", "expected 1-128 of"},
      {"oomguard-job 1\ngpu=\n\n", "expected 1-128 of"},
      {"oomguard-job 1\nno equals sign\n\n", "expected key=value"},
      {"oomguard-job 1\nenv.LD_PRELOAD=x\n\n", "unknown key"},
      {"oomguard-job 1\nenv.NCCL_GRAPH_REGISTER=0;x\n\n", "expected 0-256 of"},
  };
  for (const auto& [text, error] : cases) {
    absl::StatusOr<JobEnvelope> e = ParseJobEnvelope(text);
    ASSERT_FALSE(e.ok()) << text;
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(e.status().message(), HasSubstr(error)) << text;
  }
}

TEST(JobEnvelopeTest, RejectsATooLargeText) {
  const std::string text = "oomguard-job 1\n\n" + std::string(kMaxJobFileBytes, '#');
  absl::StatusOr<JobEnvelope> e = ParseJobEnvelope(text);
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("more than"));
}

TEST(JobEnvelopeTest, ShowsBadLinesEscaped) {
  absl::StatusOr<JobEnvelope> e = ParseJobEnvelope("oomguard-job 1\ngpu=a\x1b[2J\n\n");
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("\"gpu=a\\x1b[2J\": expected 1-128 of"));
}

TEST(ReadJobFileTest, ReadsUpToTheLimitAndNamesTheFlag) {
  const std::string dir = testing::MakeTempDir();
  const std::string small = absl::StrCat(dir, "/small");
  testing::WriteFile(small, "oomguard-job 1\n\necho\n");
  absl::StatusOr<std::string> text = ReadJobFile("--job-file", small);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "oomguard-job 1\n\necho\n");

  const std::string large = absl::StrCat(dir, "/large");
  testing::WriteFile(large, std::string(kMaxJobFileBytes + 1, '#'));
  text = ReadJobFile("--script", large);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().message(),
              HasSubstr(absl::StrCat("--script: \"", large, "\" is larger than ")));

  text = ReadJobFile("--job-file", absl::StrCat(dir, "/missing"));
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr("--job-file: cannot read \""));
  std::system(absl::StrCat("rm -rf '", dir, "'").c_str());
}

}  // namespace
}  // namespace oomguard
