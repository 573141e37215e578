// Tests of `oomguard calibrate` (tools/calibrate_command.h): a file it cannot
// read, and a small file of each kind.
#include "tools/calibrate_command.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

TEST(CalibrateCommandTest, UnreadableFileIsExit2) {
  std::string out, err;
  EXPECT_EQ(RunCalibrateCommand({"/nonexistent/cases.jsonl"}, out, err), 2);
  EXPECT_EQ(err, "cannot read /nonexistent/cases.jsonl");
  EXPECT_THAT(out, IsEmpty());
}

TEST(CalibrateCommandTest, ReadsCsvAsTheSweepAndTheRestAsJsonLines) {
  const std::string dir = ::testing::TempDir();
  const std::string csv = dir + "/calibrate_command_test.csv";
  std::ofstream(csv) << "config_id,argv,static_alloc_mib,peak_alloc_mib\n"
                        "tiny,\"--num-layers 2 --hidden-size 256 --num-attention-heads 4 "
                        "--seq-length 128 --max-position-embeddings 128 --micro-batch-size 1 "
                        "--vocab-size 1024\",100,200\n";
  const std::string jsonl = dir + "/calibrate_command_test.jsonl";
  std::ofstream(jsonl) << "{\"case\":\"bert/x\",\"argv\":[],\"env\":{}}\n";
  std::string out, err;
  EXPECT_EQ(RunCalibrateCommand({csv, jsonl}, out, err), 0) << err;
  EXPECT_THAT(err, IsEmpty());
  EXPECT_THAT(out, StartsWith("case "));
  EXPECT_THAT(out, HasSubstr("sweep/tiny "));
  // Out-of-scope families (bert/) are not read.
  EXPECT_THAT(out, Not(HasSubstr("bert/x")));
  EXPECT_THAT(out, HasSubstr("\n1 cases, "));
  std::remove(csv.c_str());
  std::remove(jsonl.c_str());
}

}  // namespace
}  // namespace oomguard
