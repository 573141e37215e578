// Tests of `oomguard calibrate --store` (tools/store_calibration.h through
// tools/calibrate_command.h) on a real SQLite store in a temporary
// directory: the cluster's rows and summary, worked out by hand on the
// shared two-stage record (tests/feedback/feedback_test_records.h).
#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/check_store.h"
#include "tests/feedback/feedback_test_records.h"
#include "tests/testing/temp_sqlite_store.h"
#include "tools/calibrate_command.h"

namespace oomguard {
namespace {

using feedback::testing::Allocated;
using feedback::testing::DeviceUsed;
using feedback::testing::Report;
using feedback::testing::TwoStageRecord;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

class StoreCalibrationTest : public ::testing::Test {
 protected:
  std::string Put(const std::string& cluster, v1::CheckRecord record,
                  const v1::StoredReport& report) {
    return store_.PutWithReport(cluster, std::move(record), report);
  }

  testing::TempSqliteStore store_;
  const std::string& path_ = store_.path();
  const std::string& dir_ = store_.dir();
};

TEST_F(StoreCalibrationTest, TheClustersOwnTable) {
  // Cluster "a": a dense job whose rank 0 used 40 of an estimated 50 GiB
  // (+25.0 %, under 55) and rank 4 46 of 40 (-13.0 %, over 44); a MoE job's
  // GPUs (DCGM) at most 65 of 60 on its largest stage (-7.7 %, under 66); an
  // admitted job that died of a CUDA OOM. Cluster "b": one job, not shown.
  v1::CheckRecord dense = TwoStageRecord();
  dense.mutable_job_spec()->mutable_model()->set_num_layers(2);
  const std::string first = Put("a", dense, Report({Allocated(0, 40), Allocated(4, 46)}));
  v1::CheckRecord moe = TwoStageRecord();
  moe.mutable_job_spec()->mutable_model()->set_num_experts(8);
  v1::StoredReport dcgm = Report({DeviceUsed("node1/0", 30), DeviceUsed("node1/1", 65)});
  dcgm.set_source(v1::MEASUREMENT_SOURCE_DCGM);
  Put("a", moe, dcgm);
  Put("a", TwoStageRecord(), Report({}, v1::JOB_OUTCOME_CUDA_OOM));
  Put("b", TwoStageRecord(), Report({Allocated(0, 10)}));

  std::string out, err;
  ASSERT_EQ(RunCalibrateCommand({"--store", "sqlite:" + path_, "--cluster=a"}, out, err), 0) << err;
  EXPECT_THAT(err, IsEmpty());
  EXPECT_THAT(out, StartsWith("check "));
  EXPECT_THAT(
      out, HasSubstr(absl::StrFormat(
               "%-32s %-9s %-16s %5d %-9s %9.3f %9.3f %+7.1f %9.3f %-5s  %s\n", first, "dense",
               "H100-SXM-80GB", 0, "allocated", 40.0, 50.0, 25.0, 55.0, "under", "megatron_log")));
  EXPECT_THAT(out, HasSubstr(" OVER   megatron_log\n"));
  EXPECT_THAT(out, HasSubstr("moe       H100-SXM-80GB        0 device       65.000    60.000    "
                             "-7.7    66.000 under  dcgm\n"));
  EXPECT_THAT(out, Not(HasSubstr("10.000")));  // Cluster b's row.
  // |err| of the allocated peaks: 0.25 and 6/46 = 0.1304: median 19.0 %.
  EXPECT_THAT(out, HasSubstr("cluster \"a\": 3 checks with reports, 3 measured"));
  EXPECT_THAT(out, HasSubstr("allocated (2 peaks): point |err| median 19.0%, worst 25.0%; worst "
                             "underestimate -13.0%; upper bound covers 50.0%\n"));
  EXPECT_THAT(out, HasSubstr("device (1 peaks): point |err| median 7.7%, worst 7.7%; worst "
                             "underestimate -7.7%; upper bound covers 100.0%\n"));
  EXPECT_THAT(out, HasSubstr("admitted then CUDA OOM: 1 of 3 admitted checks\n"));
  EXPECT_THAT(out, HasSubstr("learned widening: none (3 of the 20 measured jobs it needs)\n"));

  // Without --cluster, every cluster's.
  ASSERT_EQ(RunCalibrateCommand({"--store=sqlite:" + path_}, out, err), 0) << err;
  EXPECT_THAT(out, HasSubstr("every cluster: 4 checks with reports, 4 measured"));
}

TEST_F(StoreCalibrationTest, WhatCannotBeReadIsExit2) {
  std::string out, err;
  EXPECT_EQ(RunCalibrateCommand({"--store", "sqlite:" + dir_ + "/none.db"}, out, err), 2);
  EXPECT_EQ(err, "cannot read " + dir_ + "/none.db: no such store");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/none.db"));
  EXPECT_EQ(RunCalibrateCommand({"--store", "mysql://x"}, out, err), 2);
  EXPECT_THAT(err, HasSubstr("--store"));
  EXPECT_EQ(RunCalibrateCommand({"--store", "sqlite:" + path_, "--cluster"}, out, err), 2);
  EXPECT_EQ(err, "--cluster: needs a value");
  EXPECT_EQ(RunCalibrateCommand({"--store", "sqlite:" + path_, "cases.jsonl"}, out, err), 2);
  EXPECT_EQ(err,
            "cases.jsonl: not an argument of calibrate --store (--store URL [--cluster NAME])");
}

}  // namespace
}  // namespace oomguard
